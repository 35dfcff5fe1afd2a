/**
 * A strict, bounded JSON parser for untrusted text (score files, model replies).
 *
 * Why not `JSON.parse`: it accepts duplicate keys (the last one silently wins, so
 * `{"score":0,"score":1}` means 1), turns `1e309` into `Infinity` without a word, and has no
 * depth bound. This parser is iterative over an explicit depth limit, refuses duplicate keys,
 * refuses numbers that overflow to a non-finite value, and reports the offset of the problem.
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export interface JsonParseLimits {
  /** Deepest nesting of arrays and objects (the top-level value is depth 1). */
  readonly maxDepth: number;
  /** Longest string (in UTF-16 code units) accepted anywhere. */
  readonly maxStringLength: number;
}

export type JsonParseResult = { ok: true; value: JsonValue } | { ok: false; reason: string };

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Internal: unwinds the parser to its one catch; never leaves this module. */
class JsonSyntaxError extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

/** Parse `text` as one JSON value under `limits`. Never throws for bad input. */
export function parseJsonStrict(text: string, limits: JsonParseLimits): JsonParseResult {
  let i = 0;
  const fail = (what: string): never => {
    throw new JsonSyntaxError(`${what} at offset ${i}`);
  };
  const skip = (): void => {
    while (i < text.length && WS.has(text.charCodeAt(i))) i += 1;
  };

  const parseString = (): string => {
    // Opening quote already checked by the caller.
    i += 1;
    let out = '';
    let start = i;
    for (;;) {
      if (i >= text.length) fail('unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i);
        i += 1;
        break;
      }
      if (c < 0x20) fail('control character in string');
      if (c === 0x5c) {
        out += text.slice(start, i);
        const e = text[i + 1];
        i += 2;
        switch (e) {
          case '"':
            out += '"';
            break;
          case '\\':
            out += '\\';
            break;
          case '/':
            out += '/';
            break;
          case 'b':
            out += '\b';
            break;
          case 'f':
            out += '\f';
            break;
          case 'n':
            out += '\n';
            break;
          case 'r':
            out += '\r';
            break;
          case 't':
            out += '\t';
            break;
          case 'u': {
            const hex = text.slice(i, i + 4);
            if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('bad \\u escape');
            out += String.fromCharCode(Number.parseInt(hex, 16));
            i += 4;
            break;
          }
          default:
            i -= 2;
            fail('bad escape');
        }
        start = i;
      } else {
        i += 1;
      }
      if (out.length + (i - start) > limits.maxStringLength) fail('string too long');
    }
    return out;
  };

  const parseScalar = (): JsonValue => {
    const c = text[i];
    if (c === '"') return parseString();
    if (text.startsWith('true', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('false', i)) {
      i += 5;
      return false;
    }
    if (text.startsWith('null', i)) {
      i += 4;
      return null;
    }
    NUMBER.lastIndex = i;
    const match = NUMBER.exec(text);
    if (match === null || match[0].length === 0) return fail('unexpected token');
    const value = Number(match[0]);
    if (!Number.isFinite(value)) fail(`number ${match[0].slice(0, 32)} is not finite`);
    i += match[0].length;
    return value;
  };

  type Frame =
    | { kind: 'array'; value: JsonValue[] }
    | { kind: 'object'; value: Record<string, JsonValue>; key: string | undefined; seen: Set<string> };

  try {
    const stack: Frame[] = [];
    let result: JsonValue | undefined;
    let done = false;
    skip();
    while (!done) {
      // Read one value start (a container opens a frame, a scalar completes immediately).
      let value: JsonValue | undefined;
      const c = text[i];
      if (c === '[' || c === '{') {
        if (stack.length + 1 > limits.maxDepth) fail(`nesting deeper than ${limits.maxDepth}`);
        i += 1;
        skip();
        if (c === '[') {
          const frame: Frame = { kind: 'array', value: [] };
          if (text[i] === ']') {
            i += 1;
            value = frame.value;
          } else {
            stack.push(frame);
            continue;
          }
        } else {
          // Objects with a null prototype: a key named __proto__ stays a plain key.
          const frame: Frame = {
            kind: 'object',
            value: Object.create(null) as Record<string, JsonValue>,
            key: undefined,
            seen: new Set(),
          };
          if (text[i] === '}') {
            i += 1;
            value = frame.value;
          } else {
            stack.push(frame);
            readKey(frame);
            continue;
          }
        }
      } else {
        if (c === undefined) fail('unexpected end of input');
        value = parseScalar();
      }
      // Attach the completed value to its parent, closing frames as they end.
      for (;;) {
        const top = stack[stack.length - 1];
        if (top === undefined) {
          result = value;
          done = true;
          break;
        }
        if (top.kind === 'array') top.value.push(value);
        else top.value[top.key!] = value;
        skip();
        const next = text[i];
        if (next === ',') {
          i += 1;
          skip();
          if (top.kind === 'object') readKey(top);
          break;
        }
        const close = top.kind === 'array' ? ']' : '}';
        if (next !== close) fail(`expected , or ${close}`);
        i += 1;
        stack.pop();
        value = top.value;
      }
    }
    skip();
    if (i !== text.length) fail('trailing characters');
    return { ok: true, value: result as JsonValue };
  } catch (error) {
    if (error instanceof JsonSyntaxError) return { ok: false, reason: error.reason };
    throw error;
  }

  function readKey(frame: { key: string | undefined; seen: Set<string> }): void {
    if (text[i] !== '"') fail('expected a string key');
    const key = parseString();
    if (frame.seen.has(key)) fail(`duplicate key ${JSON.stringify(key.slice(0, 64))}`);
    frame.seen.add(key);
    frame.key = key;
    skip();
    if (text[i] !== ':') fail('expected :');
    i += 1;
    skip();
  }
}

/** Nesting depth of a parsed value (scalars are 0, `{}` and `[]` are 1). */
export function jsonDepth(value: JsonValue): number {
  if (value === null || typeof value !== 'object') return 0;
  let max = 0;
  const children = Array.isArray(value) ? value : Object.values(value);
  for (const child of children) max = Math.max(max, jsonDepth(child));
  return max + 1;
}
