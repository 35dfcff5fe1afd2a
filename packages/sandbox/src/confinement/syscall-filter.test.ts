// The filter program as bytes: its shape, what loosening removes, and the refusals a caller
// cannot ask for. What it does to real processes is syscall-filter.integration.test.ts.
import { describe, expect, it } from 'vitest';
import {
  CHECKED_SYSCALLS,
  LOOSENABLE_SYSCALLS,
  REFUSED_SYSCALLS,
  buildSyscallFilter,
} from './syscall-filter.js';

/** The instructions of an assembled program: [code, jt, jf, k]. */
function decode(program: Buffer): [number, number, number, number][] {
  const out: [number, number, number, number][] = [];
  for (let at = 0; at < program.length; at += 8) {
    out.push([program.readUInt16LE(at), program[at + 2]!, program[at + 3]!, program.readUInt32LE(at + 4)]);
  }
  return out;
}

if (process.arch !== 'x64') {
  // The filter is assembled for x86-64 only; elsewhere createSandbox refuses (HOST_UNSUPPORTED).
  console.log(`[karotte] buildSyscallFilter tests skipped: this host is ${process.arch}, not x64`);
}

describe.runIf(process.arch === 'x64')('buildSyscallFilter', () => {
  it('checks the architecture first and kills a foreign ABI', () => {
    const code = decode(buildSyscallFilter());
    // ld arch; jeq AUDIT_ARCH_X86_64 (else to the kill); ld nr; jge the x32 bit (to the kill).
    expect(code[0]).toEqual([0x20, 0, 0, 4]);
    expect(code[1]?.slice(0, 2)).toEqual([0x15, 0]);
    expect(code[1]?.[3]).toBe(0xc000003e);
    expect(code[2]).toEqual([0x20, 0, 0, 0]);
    expect(code[3]?.[0]).toBe(0x35);
    expect(code[3]?.[3]).toBe(0x40000000);
    const kill = 3 + 1 + code[3]![1];
    expect(code[kill]).toEqual([0x06, 0, 0, 0x80000000]);
    expect(code[1 + 1 + code[1]![2]]).toEqual(code[kill]);
    // Every jump lands inside the program.
    code.forEach(([op, jt, jf, k], at) => {
      if (op === 0x05) expect(at + 1 + k).toBeLessThan(code.length);
      else if ((op & 0x07) === 0x05) expect(at + 1 + Math.max(jt, jf)).toBeLessThan(code.length);
    });
  });

  it('refuses each listed call with its errno; loosening a name removes exactly its check', () => {
    const full = buildSyscallFilter();
    const loosened = buildSyscallFilter({ allow: ['keyctl', 'socket'] });
    // A refusal is two instructions; a checked call's dispatch is two more plus its block.
    expect(full.length - loosened.length).toBeGreaterThanOrEqual(8 * 4);
    const returns = decode(full)
      .filter(([op]) => op === 0x06)
      .map(([, , , k]) => k);
    for (const refusal of REFUSED_SYSCALLS.values()) expect(returns).toContain(0x00050000 | refusal.errno);
    expect(returns).toContain(0x7fff0000);
    expect(LOOSENABLE_SYSCALLS).toEqual([...REFUSED_SYSCALLS.keys(), ...Object.keys(CHECKED_SYSCALLS)]);
  });

  it('refuses to loosen a call it does not filter', () => {
    expect(() => buildSyscallFilter({ allow: ['read'] })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', field: 'syscallFilter.allow' }),
    );
  });
});
