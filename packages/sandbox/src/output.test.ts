import { describe, expect, it } from 'vitest';
import { OutputCapture, TokenScanner } from './output.js';

describe('OutputCapture', () => {
  it('keeps head and tail, counts everything and marks the cut', () => {
    const capture = new OutputCapture(4, 3);
    for (const part of ['abc', 'defgh', 'ijklmno']) capture.push(Buffer.from(part));
    expect(capture.totalBytes).toBe(15);
    expect(capture.truncated).toBe(true);
    expect(capture.text()).toBe('abcd\n[… 8 bytes of output truncated …]\nmno');
  });
  it('is exact below the caps', () => {
    const capture = new OutputCapture(10, 10);
    capture.push(Buffer.from('hello'));
    expect(capture.truncated).toBe(false);
    expect(capture.text()).toBe('hello');
  });
});

describe('TokenScanner', () => {
  it('finds a token split across chunks and hands back what follows it', () => {
    const scanner = new TokenScanner();
    scanner.arm('NONCE123');
    const a = scanner.feed(Buffer.from('out NON'));
    const b = scanner.feed(Buffer.from('CE123after'));
    expect(Buffer.concat([a.output, b.output]).toString()).toBe('out ');
    expect(b.after?.toString()).toBe('after');
    expect(scanner.found).toBe(true);
  });
  it('passes everything through while disarmed', () => {
    const scanner = new TokenScanner();
    expect(scanner.feed(Buffer.from('NONCE123')).output.toString()).toBe('NONCE123');
  });
});
