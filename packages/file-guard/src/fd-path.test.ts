import { describe, expect, it } from 'vitest';
import { childPath, isComponent, joinComponents, splitComponents } from './fd-path.js';
import { isInside } from './walk.js';

const b = (text: string): Buffer => Buffer.from(text, 'latin1');

describe('path components', () => {
  it('accepts exactly one component', () => {
    for (const good of ['a', '-rf', 'line\nbreak', '..a', '.hidden', '\xff\xfe'])
      expect(isComponent(b(good)), good).toBe(true);
    for (const bad of ['', '.', '..', 'a/b', '/', 'a\0']) expect(isComponent(b(bad)), bad).toBe(false);
  });

  it('splits and joins raw bytes', () => {
    expect(splitComponents(b('/a//b/\xff/')).map((part) => part.toString('latin1'))).toEqual([
      'a',
      'b',
      '\xff',
    ]);
    expect(joinComponents([b('a'), b('b')]).toString()).toBe('a/b');
    expect(childPath(Buffer.alloc(0), b('x')).toString()).toBe('x');
    expect(childPath(b('a'), b('x')).toString()).toBe('a/x');
  });

  it('isInside compares whole components', () => {
    expect(isInside(b('/work'), b('/work'))).toBe(true);
    expect(isInside(b('/work/a'), b('/work'))).toBe(true);
    expect(isInside(b('/workshop'), b('/work'))).toBe(false);
    expect(isInside(b('/wor'), b('/work'))).toBe(false);
    expect(isInside(b('/anything'), b('/'))).toBe(true);
  });
});
