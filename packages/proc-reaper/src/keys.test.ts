import { describe, expect, it } from 'vitest';
import { keyctlSyscallNumber, parseKeyUsers } from './keys.js';

describe('parseKeyUsers', () => {
  it('reads each uid’s keys, quota keys and bytes, and skips lines it does not know', () => {
    const text = [
      '    0:    10 9/9 3/1000000 128/25000000',
      '2000227557:     3 3/3 2/200 48/20000',
      'garbage line',
      '',
    ].join('\n');
    expect([...parseKeyUsers(text)]).toEqual([
      [0, { keys: 9, quotaKeys: 3, quotaBytes: 128 }],
      [2000227557, { keys: 3, quotaKeys: 2, quotaBytes: 48 }],
    ]);
  });
});

describe('keyctlSyscallNumber', () => {
  it('knows x86-64 and arm64, and nothing it has not been told', () => {
    expect(keyctlSyscallNumber('x64')).toBe(250);
    expect(keyctlSyscallNumber('arm64')).toBe(219);
    expect(keyctlSyscallNumber('riscv64')).toBeUndefined();
  });
});
