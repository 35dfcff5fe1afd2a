import { describe, expect, it } from 'vitest';
import { jsonDepth, parseJsonStrict } from './json.js';

const limits = { maxDepth: 8, maxStringLength: 1000 };

describe('parseJsonStrict', () => {
  it('parses what JSON.parse parses, for valid input', () => {
    const samples = [
      '{"score":1,"metadata":{"a":[1,2,{"b":null}],"c":"x\\n\\u00e9\\ud83d\\ude00"}}',
      '[]',
      '{}',
      ' 0.5 ',
      '-0',
      '"\\"\\\\\\/\\b\\f\\n\\r\\t"',
      '[true,false,null,1e3,-2.5E-3]',
    ];
    for (const text of samples) {
      const result = parseJsonStrict(text, limits);
      expect(result.ok).toBe(true);
      if (result.ok) expect(JSON.stringify(result.value)).toBe(JSON.stringify(JSON.parse(text)));
    }
  });

  it.each([
    ['NaN', '{"score": NaN}'],
    ['Infinity literal', '{"score": Infinity}'],
    ['1e309 overflows to Infinity', '{"score": 1e309}'],
    ['-1e309', '{"score": -1e309}'],
    ['duplicate keys', '{"score": 0, "score": 1}'],
    ['trailing data', '{"score": 1} x'],
    ['trailing comma', '{"score": 1,}'],
    ['single quotes', "{'score': 1}"],
    ['leading zero', '{"score": 01}'],
    ['hex', '{"score": 0x1}'],
    ['raw control char', '{"s": "a\u0001b"}'],
    ['bad escape', '{"s": "\\x41"}'],
    ['unterminated', '{"s": "abc'],
    ['empty', ''],
    ['comment', '{"score": 1 /* hi */}'],
  ])('refuses %s', (_, text) => {
    expect(parseJsonStrict(text, limits).ok).toBe(false);
  });

  it('bounds nesting without recursion (100,000 deep arrays fail fast)', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000);
    const result = parseJsonStrict(deep, limits);
    expect(result).toEqual({ ok: false, reason: expect.stringContaining('nesting deeper than 8') });
    expect(parseJsonStrict('[[[[[[[[1]]]]]]]]', limits).ok).toBe(true);
    expect(parseJsonStrict('[[[[[[[[[1]]]]]]]]]', limits).ok).toBe(false);
  });

  it('bounds string length', () => {
    expect(parseJsonStrict(`"${'a'.repeat(1001)}"`, limits).ok).toBe(false);
    expect(parseJsonStrict(`"${'a'.repeat(1000)}"`, limits).ok).toBe(true);
  });

  it('keeps __proto__ a plain key (no prototype pollution)', () => {
    const result = parseJsonStrict('{"__proto__": {"polluted": true}}', limits);
    expect(result.ok).toBe(true);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
    if (result.ok) expect(Object.keys(result.value as object)).toEqual(['__proto__']);
  });

  it('measures depth', () => {
    expect(jsonDepth(1)).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth({ a: [{ b: 1 }] })).toBe(3);
  });
});
