// The world's own /dev: only the devices programs need, and a private devpts instance, so a
// student who takes every pty it can takes none of the host's (a red-team finding: /dev/ptmx
// was the host's instance, and host root's openpty() failed).
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { MiB } from '@karotte/base';
import { createSandbox, type Sandbox } from './index.js';

const made: Sandbox[] = [];
afterEach(async () => {
  for (const box of made.splice(0)) await box.destroy().catch(() => undefined);
});

// Opens /dev/ptmx until the kernel refuses, reports how many and why, then holds them.
const HOLD_PTYS = String.raw`$| = 1; my @held; while (1) { open(my $pty, '+<', '/dev/ptmx') or do { print scalar(@held), " $!\n"; last }; push @held, $pty; last if @held > 4096 } opendir(my $d, '/dev/pts') or die; my @n = grep { /^\d+$/ } readdir($d); print scalar(@n), "\n"; sleep 4;`;

describe('the sandbox /dev', () => {
  it('holds only the devices programs need, read-only', async () => {
    const box = await createSandbox({ limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB } });
    made.push(box);
    const listing = await box.exec(
      'ls -A /dev | tr "\\n" " "; echo; readlink /dev/ptmx; echo x > /dev/null && head -c 4 /dev/zero | wc -c; touch /dev/new 2>&1 | grep -c "Read-only"',
    );
    expect(listing.stdout).toBe(
      'fd full null ptmx pts random shm stderr stdin stdout tty urandom zero \npts/ptmx\n4\n1\n',
    );
    // The world's own mounts, named by the setup (the host's, beneath them, are unreachable).
    const mounts = await box.exec(
      "grep -E ' - (tmpfs karotte-dev|devpts karotte-pts) ' /proc/self/mountinfo | cut -d' ' -f5,6",
    );
    expect(mounts.stdout).toMatch(/^\/dev ro,nosuid,noexec\S*\n\/dev\/pts ro,nosuid,noexec\S*\n$/);
    const pts = await box.exec("grep -E ' - devpts karotte-pts ' /proc/self/mountinfo");
    expect(pts.stdout).toContain('max=32');
  });

  it('gives the student ptys of its own instance only, bounded, and leaves the host’s alone', async () => {
    const box = await createSandbox({ limits: { diskBytes: 16 * MiB, memoryBytes: 256 * MiB } });
    made.push(box);
    const hostBefore = fs.readdirSync('/dev/pts').filter((name) => /^\d+$/.test(name)).length;
    expect(await box.files.write({ path: 'hold.pl', content: HOLD_PTYS })).toMatchObject({ ok: true });
    const holding = box.exec('perl hold.pl', { timeoutMs: 30_000 });
    // While the student holds every pty it could get, the host's instance is unchanged.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const hostDuring = fs.readdirSync('/dev/pts').filter((name) => /^\d+$/.test(name)).length;
    const result = await holding;
    expect(result.stdout).toBe('32 No space left on device\n32\n');
    expect(hostDuring).toBe(hostBefore);
  });
});
