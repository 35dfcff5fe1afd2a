// runProgram's two ways of starting a program, against real processes: the spawner (a Perl
// process forks for this one) and the direct fallback (this process forks). Both must give a
// program the same start and end it the same way; the spawner's own life (its death, its
// close) is tested apart. No root needed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../../test/support/index.js';
import { BadArgumentError, SystemError } from '../errors.js';
import { resolveTrustedBinary } from '../trusted-binary.js';
import { isProcessLive } from './proc.js';
import { createSpawner } from './spawner.js';
import type { Spawner } from './spawner.js';

const SH = resolveTrustedBinary('sh');
const PERL = resolveTrustedBinary('perl');
const made: string[] = [];
const started: number[] = [];

function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-spawner-'));
  made.push(dir);
  return dir;
}

/** The pid a test's script wrote to `file`, remembered so that afterEach can end it. */
async function pidFrom(file: string): Promise<number> {
  await waitFor(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8').endsWith('\n'), 10_000, 5);
  const pid = Number(fs.readFileSync(file, 'utf8'));
  started.push(pid);
  return pid;
}

afterEach(() => {
  for (const pid of started.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone, as it should be
    }
  }
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const spawners: Spawner[] = [];
afterAll(async () => {
  await Promise.all(spawners.map((spawner) => spawner.close()));
});

function make(perl: string | null): Spawner {
  const spawner = createSpawner({ perl });
  spawners.push(spawner);
  return spawner;
}

describe.each([
  ['through the spawner', PERL],
  ['directly', null],
] as const)('runProgram %s', (_, perl) => {
  const spawner = make(perl);

  it('runs in the given directory with the given environment alone, and reports its status and output', async () => {
    const dir = tempDir();
    const result = await spawner.run(
      [SH, '-c', 'pwd; /usr/bin/env; echo "to stderr" >&2; exit 3', 'karotte-arg0'],
      { timeoutMs: 10_000, cwd: dir, env: { ONLY: 'this=one', LC_ALL: 'C' } },
    );
    expect(spawner.mode).toBe(perl === null ? 'direct' : 'spawner');
    expect(result.exitCode).toBe(3);
    expect(result.signal).toBeNull();
    expect(result.stopped).toBeUndefined();
    const lines = result.stdout.toString().trim().split('\n');
    expect(lines[0]).toBe(dir);
    // sh exports PWD itself; nothing of this process's environment reaches the program.
    expect(lines.slice(1).sort()).toEqual(['LC_ALL=C', 'ONLY=this=one', `PWD=${dir}`]);
    expect(result.stderr.toString()).toBe('to stderr\n');
    expect(result.stdoutBytes).toBe(result.stdout.length);
  });

  it('names the signal that ended it', async () => {
    const result = await spawner.run([SH, '-c', 'kill -TERM $$; sleep 5'], { timeoutMs: 10_000 });
    expect(result).toMatchObject({ exitCode: null, signal: 'SIGTERM', stopped: undefined });
    // A number with two names (SIGABRT, SIGIOT) is given its first.
    const aborted = await spawner.run([SH, '-c', 'kill -ABRT $$; sleep 5'], { timeoutMs: 10_000 });
    expect(aborted.signal).toBe('SIGABRT');
  });

  it('starts it with stdin /dev/null, no signal ignored or blocked, SIGPIPE at its default', async () => {
    // The program's own view (a shell's would change while it waits for a child).
    const stdin = await spawner.run([resolveTrustedBinary('readlink'), '/proc/self/fd/0'], {
      timeoutMs: 10_000,
    });
    expect(stdin.stdout.toString()).toBe('/dev/null\n');
    const signals = await spawner.run(
      [resolveTrustedBinary('grep'), '-E', '^Sig(Ign|Blk):', '/proc/self/status'],
      {
        timeoutMs: 10_000,
      },
    );
    expect(signals.stdout.toString()).toBe('SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n');
    const pipe = await spawner.run([SH, '-c', 'yes | head -c 4'], { timeoutMs: 10_000 });
    expect(pipe.stdout.toString()).toBe('y\ny\n');
    // `yes` died of SIGPIPE (an ignored SIGPIPE would make it report a write error).
    expect(pipe.stderr.toString()).toBe('');
  });

  it('keeps the first maxOutputBytes of each output and counts the rest', async () => {
    const result = await spawner.run([SH, '-c', 'head -c 300000 /dev/zero; echo done >&2'], {
      timeoutMs: 10_000,
      maxOutputBytes: 1000,
    });
    expect(result).toMatchObject({ exitCode: 0, stdoutBytes: 300_000, stderrBytes: 5, stopped: undefined });
    expect(result.stdout.length).toBe(1000);
    expect(result.stderr.toString()).toBe('done\n');
  });

  it("with onOverflow 'kill', output past the bound kills it", async () => {
    const result = await spawner.run([resolveTrustedBinary('yes')], {
      timeoutMs: 10_000,
      maxOutputBytes: 4096,
      onOverflow: 'kill',
    });
    expect(result).toMatchObject({ signal: 'SIGKILL', stopped: 'output too large' });
    expect(result.stdout.length).toBe(4096);
  });

  it('a timeout in a process group of its own kills every process of it, and settles once they are gone', async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, 'step.pid');
    const run = spawner.run([SH, '-c', `sleep 30 & echo $! > ${pidFile}; wait`], {
      timeoutMs: 300,
      processGroup: true,
    });
    const step = await pidFrom(pidFile);
    expect(isProcessLive(step)).toBe(true);
    const result = await run;
    expect(result).toMatchObject({ signal: 'SIGKILL', stopped: 'timed out', abandoned: false });
    // It held stdout: the result came only after its exit closed it.
    await waitFor(() => !isProcessLive(step), 2_000, 5);
  });

  it('without a group, killGraceMs settles while a descendant it left still holds the output', async () => {
    const dir = tempDir();
    const pidFile = path.join(dir, 'step.pid');
    const startedAt = performance.now();
    const run = spawner.run([SH, '-c', `sleep 30 & echo $! > ${pidFile}; exec sleep 30`], {
      timeoutMs: 200,
      killGraceMs: 300,
    });
    const step = await pidFrom(pidFile);
    const result = await run;
    expect(result).toMatchObject({ exitCode: null, signal: null, stopped: 'timed out', abandoned: true });
    expect(performance.now() - startedAt).toBeLessThan(5_000);
    // The direct child was killed; the descendant outside a group was not (the caller's to end).
    expect(isProcessLive(step)).toBe(true);
  });

  it('an abort kills it', async () => {
    const controller = new AbortController();
    const run = spawner.run([resolveTrustedBinary('sleep'), '30'], {
      timeoutMs: 30_000,
      abortSignal: controller.signal,
    });
    setTimeout(() => {
      controller.abort();
    }, 100);
    await expect(run).resolves.toMatchObject({ signal: 'SIGKILL', stopped: 'aborted' });
    const already = await spawner.run([resolveTrustedBinary('sleep'), '30'], {
      timeoutMs: 30_000,
      abortSignal: AbortSignal.abort(),
    });
    expect(already.stopped).toBe('aborted');
  });

  it('a program that cannot start is a SystemError with its errno; a bad argv is a BadArgumentError', async () => {
    const missing: unknown = await spawner
      .run(['/nonexistent/karotte-no-such-program'], { timeoutMs: 1_000 })
      .catch((error: unknown) => error);
    expect(SystemError.isInstance(missing) && missing.errno).toBe('ENOENT');
    const dir = tempDir();
    const notExecutable = path.join(dir, 'data');
    fs.writeFileSync(notExecutable, 'not a program', { mode: 0o644 });
    const denied: unknown = await spawner
      .run([notExecutable], { timeoutMs: 1_000 })
      .catch((error: unknown) => error);
    expect(SystemError.isInstance(denied) && denied.errno).toBe('EACCES');
    expect(() => spawner.run(['sh', '-c', 'true'], { timeoutMs: 1_000 })).toThrow(BadArgumentError);
    expect(() => spawner.run([SH, '-c', 'true\0'], { timeoutMs: 1_000 })).toThrow(BadArgumentError);
    expect(() => spawner.run([SH], { timeoutMs: 1_000, env: { 'A=B': 'c' } })).toThrow(BadArgumentError);
  });

  it('runs a Perl program (perl -e) as perl would: its arguments, environment and directory, exit and die', async () => {
    const dir = tempDir();
    const program = [
      'my ($first, $second) = @ARGV;',
      'print "$first,$second $ENV{KAROTTE_X} ", scalar(keys %ENV), "\n";',
      'opendir(my $here, "."); print join(",", sort grep { !/^\\./ } readdir $here), "\n";',
      'print STDERR "to stderr\n";',
      '$undeclared = 1;', // no strict unless the program asks
      'exit 3;',
    ].join('\n');
    fs.writeFileSync(path.join(dir, 'marker'), '');
    const result = await spawner.run([PERL, '-e', program, 'one', 'two'], {
      timeoutMs: 10_000,
      cwd: dir,
      env: { KAROTTE_X: 'x' },
    });
    expect(result).toMatchObject({ exitCode: 3, signal: null });
    expect(result.stdout.toString()).toBe('one,two x 1\nmarker\n');
    expect(result.stderr.toString()).toBe('to stderr\n');
    const died = await spawner.run([PERL, '-e', 'use strict; use warnings; die "karotte boom\\n"'], {
      timeoutMs: 10_000,
    });
    expect(died).toMatchObject({ exitCode: 255, stderr: Buffer.from('karotte boom\n') });
    const strict = await spawner.run([PERL, '-e', 'use strict; $x = 1;'], { timeoutMs: 10_000 });
    expect(strict.exitCode).toBe(255);
    expect(strict.stderr.toString()).toMatch(
      /^Global symbol "\$x" requires explicit package name .* at -e line 1\.\n/,
    );
  });

  it('runs many at once, each with its own result', async () => {
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, index) =>
        spawner.run([SH, '-c', `echo ${index}; echo ${index} >&2`], { timeoutMs: 20_000 }),
      ),
    );
    results.forEach((result, index) => {
      expect(result.stdout.toString()).toBe(`${index}\n`);
      expect(result.stderr.toString()).toBe(`${index}\n`);
    });
  });
});

describe('the spawner process', () => {
  it('gives a program descriptors 0, 1 and 2 only, even one the harness inherited without close-on-exec', async () => {
    // A perl that starts with descriptor 7 open and inheritable, as a harness started by a
    // careless parent would pass it on.
    const dir = tempDir();
    const leaky = path.join(dir, 'leaky-perl');
    fs.writeFileSync(leaky, `#!${SH}\nexec 7</dev/null\nexec ${PERL} "$@"\n`, { mode: 0o755 });
    const spawner = make(leaky);
    const result = await spawner.run([SH, '-c', 'ls /proc/$$/fd'], { timeoutMs: 10_000 });
    expect(result.stdout.toString().trim().split('\n').sort()).toEqual(['0', '1', '2']);
    const holder = spawner.pid();
    expect(holder).toBeDefined();
    expect(fs.readdirSync(`/proc/${holder}/fd`)).toContain('7');
  });

  it('survives a Ctrl-C meant for the harness (SIGINT, SIGTERM, SIGHUP, SIGQUIT to its group)', async () => {
    const spawner = make(PERL);
    await spawner.run([SH, '-c', 'true'], { timeoutMs: 10_000 });
    const holder = spawner.pid()!;
    const run = spawner.run([SH, '-c', 'sleep 0.3; echo done'], { timeoutMs: 10_000 });
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.kill(holder, signal);
    const result = await run;
    expect(result.stdout.toString()).toBe('done\n');
    expect(spawner.pid()).toBe(holder);
    // Its programs get those signals at their default again.
    const ignored = await spawner.run([resolveTrustedBinary('grep'), '^SigIgn:', '/proc/self/status'], {
      timeoutMs: 10_000,
    });
    expect(ignored.stdout.toString()).toBe('SigIgn:\t0000000000000000\n');
  });

  it('fails what it was running when it dies, ends the process groups it ran, and the next run starts a new one', async () => {
    const spawner = make(PERL);
    await spawner.run([SH, '-c', 'true'], { timeoutMs: 10_000 });
    const first = spawner.pid()!;
    const dir = tempDir();
    const pidFile = path.join(dir, 'sleeper.pid');
    const run = spawner.run([SH, '-c', `echo $$ > ${pidFile}; exec sleep 30`], { timeoutMs: 30_000 });
    await pidFrom(pidFile);
    const stepFile = path.join(dir, 'step.pid');
    const grouped = spawner.run([SH, '-c', `sleep 30 & echo $! > ${stepFile}; wait`], {
      timeoutMs: 30_000,
      processGroup: true,
    });
    const step = await pidFrom(stepFile);
    process.kill(first, 'SIGKILL');
    await expect(grouped).rejects.toThrow(/the spawner process running/);
    await waitFor(() => !isProcessLive(step), 2_000, 5);
    const error: unknown = await run.catch((caught: unknown) => caught);
    expect(SystemError.isInstance(error)).toBe(true);
    expect((error as Error).message).toMatch(/^the spawner process running \S+sh ended \(SIGKILL\)/);
    const again = await spawner.run([SH, '-c', 'echo again'], { timeoutMs: 10_000 });
    expect(again.stdout.toString()).toBe('again\n');
    expect(spawner.pid()).not.toBe(first);
  });

  it("runs a Perl program of its own perl in its fork, with no exec; another perl's through an exec", async () => {
    const spawner = make(PERL);
    const cmdline = 'open(my $f, "<", "/proc/self/cmdline"); local $/; print scalar <$f>;';
    const forked = await spawner.run([PERL, '-e', cmdline], { timeoutMs: 10_000 });
    // The fork's command line is the spawner's (perl -e <the spawner>), not this program's.
    expect(forked.stdout.toString()).toMatch(/^\S+perl\0-e\0# The spawner/);
    const copy = path.join(tempDir(), 'perl');
    fs.copyFileSync(PERL, copy);
    fs.chmodSync(copy, 0o755);
    const execed = await spawner.run([copy, '-e', cmdline], { timeoutMs: 10_000 });
    expect(execed.stdout.toString()).toBe(`${copy}\0-e\0${cmdline}\0`);
    // perl's switches after the source: `--` ends them (dropped); a switch needs a real perl.
    const args = 'print join(",", @ARGV)';
    const dashes = await spawner.run([PERL, '-e', args, '--', '-x', 'y'], { timeoutMs: 10_000 });
    expect(dashes.stdout.toString()).toBe('-x,y');
    const switched = await spawner.run([PERL, '-e', args, '-l', 'y'], { timeoutMs: 10_000 });
    expect(switched.stdout.toString()).toBe('y\n'); // -l: a newline after each print
    const own = await spawner.run([PERL, '-e', cmdline, '-l'], { timeoutMs: 10_000 });
    expect(own.stdout.toString()).toBe(`${PERL}\0-e\0${cmdline}\0-l\0\n`);
  });

  it('that cannot start fails the run with the errno of its start', async () => {
    const spawner = make('/nonexistent/karotte-no-perl');
    const error: unknown = await spawner
      .run([SH, '-c', 'true'], { timeoutMs: 10_000 })
      .catch((caught: unknown) => caught);
    expect(SystemError.isInstance(error) && error.errno).toBe('ENOENT');
    expect((error as Error).message).toMatch(/^the spawner process running \S+ could not start/);
  });

  it('on close, kills what it still runs and exits', async () => {
    const spawner = make(PERL);
    const dir = tempDir();
    const pidFile = path.join(dir, 'sleeper.pid');
    const run = spawner.run([SH, '-c', `echo $$ > ${pidFile}; exec sleep 30`], { timeoutMs: 30_000 });
    const sleeper = await pidFrom(pidFile);
    const holder = spawner.pid()!;
    await spawner.close();
    expect(isProcessLive(holder)).toBe(false);
    await waitFor(() => !isProcessLive(sleeper), 2_000, 5);
    await expect(run).rejects.toThrow(/the spawner process running/);
  });
});

describe('killAsUid', () => {
  const target = { uid: 3_999_999_990, gid: 3_999_999_990, rounds: 1 };

  it.each([
    ['through the spawner', PERL],
    ['directly', null],
  ] as const)('%s, refuses uid or gid 0 and a rounds count out of range', (_, perl) => {
    const spawner = make(perl);
    for (const bad of [
      { ...target, uid: 0 },
      { ...target, gid: 0 },
      { ...target, uid: 0xffffffff },
      { ...target, rounds: 0 },
      { ...target, rounds: 10_001 },
      { ...target, rounds: 1.5 },
    ]) {
      expect(() => spawner.killAsUid(bad, { timeoutMs: 1_000 })).toThrow(BadArgumentError);
    }
  });

  it('needs the spawner process: directly, it is ENOSYS', async () => {
    const error: unknown = await make(null)
      .killAsUid(target, { timeoutMs: 1_000 })
      .catch((caught: unknown) => caught);
    expect(SystemError.isInstance(error) && error.errno).toBe('ENOSYS');
  });

  it('as root it becomes the uid and makes its round; otherwise it cannot become the uid', async () => {
    const result = await make(PERL).killAsUid(target, { timeoutMs: 10_000 });
    if (process.getuid?.() === 0) {
      // kill(-1) succeeds while any other process exists, even one it may not signal.
      expect(result).toMatchObject({ exitCode: 0, stdout: Buffer.from('1\n'), stopped: undefined });
    } else {
      // setgroups needs CAP_SETGID: the fork says so and signals nothing.
      expect(result.exitCode).toBe(125);
      expect(result.stderr.toString()).toBe('karotte-kill-uid: setgroups: Operation not permitted\n');
      expect(result.stdout.toString()).toBe('');
    }
  });
});
