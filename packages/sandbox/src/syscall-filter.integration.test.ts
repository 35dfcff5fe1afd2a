// The syscall filter as the student meets it: every class of call the red team used is refused
// from inside a real sandbox, what programs need still works, a foreign ABI kills the caller,
// and a task that loosens calls by name gets exactly those back (the control that proves the
// probe can see an unfiltered call at all).
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { LOOSENABLE_SYSCALLS } from './confinement/syscall-filter.js';
import { createSandbox, type Sandbox } from './index.js';

import { keyringSyscalls } from '../../../test/support/index.js';
import { SYSCALL_PROBE } from './check.js';

const made: Sandbox[] = [];
afterEach(async () => {
  for (const box of made.splice(0)) await box.destroy().catch(() => undefined);
});

async function probe(box: Sandbox): Promise<Record<string, string>> {
  expect(await box.files.write({ path: 'probe.pl', content: SYSCALL_PROBE })).toMatchObject({ ok: true });
  // A shared, read-only host file: the page-cache channel's medium.
  const result = await box.exec('perl probe.pl /usr/bin/perl', { timeoutMs: 30_000 });
  expect(result.stderr).toBe('');
  expect(result.exitCode).toBe(0);
  return Object.fromEntries(
    result.stdout
      .trim()
      .split('\n')
      .map((line) => line.split(' ') as [string, string]),
  );
}

const ENOSYS = '38';
const EPERM = '1';

describe('syscall filter', () => {
  it('refuses keyrings, perf, AIO, io_uring, namespaces, ptrace, page-cache probes and AF_VSOCK', async () => {
    const box = await createSandbox({ limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB } });
    made.push(box);
    expect(await probe(box)).toEqual({
      add_key: ENOSYS,
      keyctl: ENOSYS,
      request_key: ENOSYS,
      perf_event_open: EPERM,
      io_setup: ENOSYS,
      io_uring_setup: ENOSYS,
      userfaultfd: EPERM,
      bpf: EPERM,
      ptrace: EPERM,
      pidfd_getfd: EPERM,
      unshare_user: EPERM,
      clone_newns: EPERM,
      mount: EPERM,
      setns: EPERM,
      fadvise_dontneed: EPERM,
      preadv2_nowait: '95',
      mincore: EPERM,
      madvise_pageout: EPERM,
      cachestat: ENOSYS,
      socket_vsock: '97',
      socket_netlink_audit: '97',
      socket_inet: 'ok',
      socket_netlink_route: 'ok',
      fadvise_normal: 'ok',
      getpid: 'ok',
    });
    // The shell, its children and the file tools all run under it: ordinary work still works.
    const work = await box.exec(
      'mkdir -p d && cd d && echo 42 > a && cat a && ls | wc -l && (sleep 0.1 &) && wait',
    );
    expect(work).toMatchObject({ stdout: '42\n1\n', exitCode: 0 });
    // A foreign ABI (x32 numbering) reaches the kernel under other numbers: the caller dies.
    const x32 = await box.exec(`perl -e 'syscall(39 | 0x40000000)'; echo "status $?"`);
    expect(x32.stdout).toBe('status 159\n'); // 128 + SIGSYS
  });

  it('gives back exactly the calls a task loosens by name (and the probe sees them)', async () => {
    const box = await createSandbox({
      limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB },
      syscallFilter: {
        allow: [
          { name: 'fadvise64', reason: 'the task benchmarks its own page-cache use' },
          { name: 'io_setup', reason: 'the task builds libaio' },
          { name: 'io_destroy', reason: 'the task builds libaio' },
        ],
      },
    });
    made.push(box);
    const seen = await probe(box);
    expect(seen['fadvise_dontneed']).toBe('ok');
    expect(seen['io_setup']).toBe('ok');
    // Everything not loosened stays refused.
    expect(seen['add_key']).toBe(ENOSYS);
    expect(seen['socket_vsock']).toBe('97');
  });

  it('a key planted by one episode (keyring calls loosened) is gone after its teardown and unreadable by the next', async () => {
    const keyrings = {
      limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB },
      syscallFilter: {
        allow: [
          { name: 'add_key' as const, reason: 'the task tests a keyring tool' },
          { name: 'keyctl' as const, reason: 'the task tests a keyring tool' },
        ],
      },
    };
    // add_key into the user keyring (-4), then KEYCTL_SETPERM others view+read; KEYCTL_READ 11.
    const { addKey, keyctl } = keyringSyscalls();
    const plant = String.raw`perl -e 'my ($t, $d, $v) = ("user", "karotte-answer", "answer-42"); my $k = syscall(${addKey}, $t, $d, $v, length($v), -4); die "add_key: $!\n" if $k < 0; syscall(${keyctl}, 5, $k, 0x3f3f0003) == 0 or die "setperm: $!\n"; print $k'`;
    const read = (serial: string): string =>
      String.raw`perl -e 'my $b = "\0" x 64; my $n = syscall(${keyctl}, 11, ` +
      serial +
      String.raw`, $b, 64); print $n >= 0 ? substr($b, 0, $n) : "refused: $!"'`;

    const first = await createSandbox(keyrings);
    made.push(first);
    const planted = await first.exec(plant, { timeoutMs: 20_000 });
    expect(planted.stderr).toBe('');
    const serial = planted.stdout.trim();
    expect(serial).toMatch(/^\d+$/);
    // While the first episode lives, a neighbour under another uid reads it by its serial:
    // the channel the teardown must close.
    const neighbour = await createSandbox(keyrings);
    made.push(neighbour);
    expect((await neighbour.exec(read(serial), { timeoutMs: 20_000 })).stdout).toBe('answer-42');

    await first.destroy();
    expect((await neighbour.exec(read(serial), { timeoutMs: 20_000 })).stdout).toMatch(/^refused: /);
    const next = await createSandbox(keyrings);
    made.push(next);
    expect((await next.exec(read(serial), { timeoutMs: 20_000 })).stdout).toMatch(/^refused: /);
  });

  it('refuses a name it does not filter, naming the field', async () => {
    expect(LOOSENABLE_SYSCALLS).toContain('keyctl');
    await expect(
      createSandbox({ syscallFilter: { allow: [{ name: 'read', reason: 'no' }] } }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      field: expect.stringContaining('syscallFilter') as unknown,
    });
  });
});
