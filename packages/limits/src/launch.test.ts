// The launch prefix with real /bin/sh and prlimit. The "cgroup.procs" files here are plain
// files (joining real groups is in group.integration.test.ts): the script writes its pid to
// each, sets oom_score_adj, applies the rlimits and execs the command with the same pid.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  LAUNCH_SCRIPT,
  buildLaunchPrefix,
  createLaunchPrefix,
  prlimitArgs,
  rlimitsSchema,
} from './launch.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-launch-'));
  made.push(dir);
  return dir;
}

const binaries = { sh: '/bin/sh', prlimit: '/usr/bin/prlimit' };

describe('launch prefix', () => {
  it('writes its pid to every file, then execs the command with the same pid and the rlimits', () => {
    const dir = scratch();
    // Hostile names: spaces, quotes, $(...) stay data, never code.
    const files = [path.join(dir, 'a procs'), path.join(dir, '$(touch pwned)'), path.join(dir, "q'uote")];
    for (const file of files) fs.writeFileSync(file, '');
    const rlimits = rlimitsSchema.parse({ nofile: 99, fsizeBytes: 123_456 });
    const prefix = buildLaunchPrefix(binaries, files, rlimits);
    expect(prefix.slice(0, 4)).toEqual(['/bin/sh', '-c', LAUNCH_SCRIPT, 'karotte-launch']);
    const out = execFileSync(
      prefix[0]!,
      [
        ...prefix.slice(1),
        '/bin/sh',
        '-c',
        'echo $$; cat /proc/self/oom_score_adj; ulimit -n; ulimit -c; ulimit -f',
      ],
      {
        encoding: 'utf8',
        cwd: dir,
      },
    );
    const [pid, adj, nofile, core, fsize] = out.trim().split('\n');
    for (const file of files) expect(fs.readFileSync(file, 'utf8')).toBe(`${pid}\n`);
    expect(adj).toBe('1000');
    expect(nofile).toBe('99');
    expect(core).toBe('0');
    // sh reports RLIMIT_FSIZE in 512-byte blocks.
    expect(fsize).toBe(String(Math.floor(123_456 / 512)));
    expect(fs.existsSync(path.join(dir, 'pwned'))).toBe(false);
  });

  it('the script text is a constant: no variable data in it', () => {
    const a = buildLaunchPrefix(binaries, ['/x/cgroup.procs'], rlimitsSchema.parse({}));
    const b = buildLaunchPrefix(binaries, ['/y/other'], rlimitsSchema.parse({ nofile: 5 }));
    expect(a[2]).toBe(b[2]);
    expect(LAUNCH_SCRIPT).not.toMatch(/cgroup\.procs/);
  });

  it('fails with 125 and runs nothing when a file cannot be written', () => {
    const dir = scratch();
    const marker = path.join(dir, 'ran');
    const prefix = buildLaunchPrefix(
      binaries,
      [path.join(dir, 'missing-dir', 'cgroup.procs')],
      rlimitsSchema.parse({}),
    );
    const run = spawnSync(prefix[0]!, [...prefix.slice(1), '/usr/bin/touch', marker], { encoding: 'utf8' });
    expect(run.status).toBe(125);
    expect(run.stderr).toContain('karotte-launch: cannot join cgroup');
    expect(fs.existsSync(marker)).toBe(false);
  });

  it('maps every rlimit to prlimit soft:hard arguments', () => {
    expect(
      prlimitArgs(
        rlimitsSchema.parse({
          nofile: 10,
          coreBytes: 0,
          fsizeBytes: 1,
          nproc: 2,
          stackBytes: 3,
          addressSpaceBytes: 4,
          cpuMs: 1500,
          memlockBytes: 5,
          msgqueueBytes: 6,
        }),
      ),
    ).toEqual([
      '--nofile=10:10',
      '--core=0:0',
      '--memlock=5:5',
      '--fsize=1:1',
      '--nproc=2:2',
      '--stack=3:3',
      '--as=4:4',
      '--cpu=2:2',
      '--msgqueue=6:6',
    ]);
    expect(prlimitArgs(rlimitsSchema.parse({}))).toEqual([
      '--nofile=1024:1024',
      '--core=0:0',
      '--memlock=65536:65536',
    ]);
  });

  it('createLaunchPrefix (no group) resolves trusted binaries and joins nothing', () => {
    const prefix = createLaunchPrefix({ rlimits: { nofile: 64 } });
    expect(path.isAbsolute(prefix[0]!)).toBe(true);
    expect(prefix.indexOf('--')).toBe(4);
    const out = execFileSync(prefix[0]!, [...prefix.slice(1), '/bin/sh', '-c', 'ulimit -n'], {
      encoding: 'utf8',
    });
    expect(out.trim()).toBe('64');
  });
});
