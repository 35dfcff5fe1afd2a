// End-to-end runs of the app as a user runs it: spawn the built CLI (dist/cli.js, built by
// the README's setup), read result.json and the transcript. Real sandboxes, real graders.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SANDBOX_STATE_DIR, listLeases } from '@karotte/sandbox';
import { LIST_LOADED_MODULES, loadedModules, pidsOfUid } from '../../../test/support/index.js';
import { npmCommand } from '../../../scripts/tools.mjs';

const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');
const examples = path.join(app, 'examples');
const made: string[] = [];

afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function tmp(label: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `karotte-cli-${label}-`));
  made.push(dir);
  return dir;
}

function writeReplay(dir: string, commands: string[]): string {
  const file = path.join(dir, 'replay.json');
  const messages = commands.map((command, i) => ({
    role: 'assistant',
    content: null,
    tool_calls: [
      {
        id: `call_${i}`,
        type: 'function',
        function: { name: 'bash', arguments: JSON.stringify({ command }) },
      },
    ],
  }));
  fs.writeFileSync(file, JSON.stringify([...messages, { role: 'assistant', content: 'Done.' }]));
  return file;
}

interface Run {
  pid: number | undefined;
  status: number | null;
  stdout: string;
  stderr: string;
  result: Record<string, unknown>;
  transcript: Record<string, unknown>[];
}

/**
 * `karotte run` with stderr a pipe (so no progress unless `extra` holds --progress); `nodeArgs`
 * go to Node.js, before the CLI.
 */
function run(
  task: string,
  replay: string,
  out: string,
  extra: readonly string[] = [],
  nodeArgs: readonly string[] = [],
): Run {
  const child = spawnSync(
    process.execPath,
    [
      ...nodeArgs,
      cli,
      'run',
      '--task',
      task,
      '--agent',
      'replay',
      '--replay',
      replay,
      '--out',
      out,
      ...extra,
    ],
    {
      encoding: 'utf8',
      timeout: 180_000,
    },
  );
  return {
    pid: child.pid,
    status: child.status,
    stdout: child.stdout,
    stderr: child.stderr,
    ...readOut(out),
  };
}

/** `karotte run` of the quarterly-revenue control against `task`, for the argument checks. */
function runControlSync(task: string, out: string) {
  return spawnSync(
    process.execPath,
    [
      cli,
      'run',
      '--task',
      task,
      '--agent',
      'replay',
      '--replay',
      path.join(examples, 'quarterly-revenue', 'control.json'),
      '--out',
      out,
    ],
    { encoding: 'utf8' },
  );
}

function readOut(out: string): { result: Record<string, unknown>; transcript: Record<string, unknown>[] } {
  const result = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  const lines = fs.readFileSync(path.join(out, 'transcript.jsonl'), 'utf8').split('\n').filter(Boolean);
  return { result, transcript: lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

const CGROUP_CONTROLLERS = ['memory', 'pids', 'freezer', 'cpu,cpuacct', 'unified'];

/**
 * What a run of the harness `harnessPid` with the student `uid` (and, when known, the
 * sandbox `sandboxId`) left on the host: processes of the uid, its identity lease, quota
 * images, mounts, loop devices and grader cgroups (named `karotte-<harness pid>-…`), and the
 * sandbox's cgroups (`karotte-<sandbox id>`).
 */
function leftovers(uid: number, harnessPid: number, sandboxId?: string): string[] {
  const found: string[] = [];
  if (pidsOfUid(uid).length > 0) found.push(`processes of uid ${uid}`);
  if (listLeases(DEFAULT_SANDBOX_STATE_DIR).some((lease) => lease.uid === uid))
    found.push(`the lease of uid ${uid}`);
  const tags = [`karotte-${harnessPid}-`, ...(sandboxId === undefined ? [] : [`karotte-${sandboxId}`])];
  const mounts = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  for (const tag of tags) if (mounts.includes(tag)) found.push(`a mount named ${tag}`);
  for (const controller of CGROUP_CONTROLLERS) {
    let names: string[] = [];
    try {
      names = fs.readdirSync(path.join('/sys/fs/cgroup', controller));
    } catch {
      continue;
    }
    for (const name of names)
      if (tags.some((tag) => name.startsWith(tag))) found.push(`cgroup ${controller}/${name}`);
  }
  for (const device of fs.readdirSync('/sys/block').filter((name) => name.startsWith('loop'))) {
    try {
      const backing = fs.readFileSync(path.join('/sys/block', device, 'loop', 'backing_file'), 'utf8');
      if (tags.some((tag) => backing.includes(tag))) found.push(`${device} on ${backing.trim()}`);
    } catch {
      // not attached
    }
  }
  return found;
}

function assertNothingLeft(uid: unknown, harnessPid: number | undefined, sandboxId?: string): void {
  expect(typeof uid).toBe('number');
  expect(harnessPid).toBeGreaterThan(0);
  expect(leftovers(uid as number, harnessPid!, sandboxId)).toEqual([]);
}

/**
 * Start `karotte run` on a command that never ends and wait (bounded) until the student's
 * command is running: its tool_call is in the transcript. Returns the child and the uid.
 */
async function startLongRun(dir: string): Promise<{ child: ChildProcess; out: string; uid: number }> {
  const out = path.join(dir, 'out');
  const replay = writeReplay(dir, ['echo started; sleep 600']);
  const task = path.join(examples, 'quarterly-revenue');
  const child = spawn(
    process.execPath,
    [cli, 'run', '--task', task, '--agent', 'replay', '--replay', replay, '--out', out],
    {
      stdio: 'pipe',
    },
  );
  const file = path.join(out, 'transcript.jsonl');
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error('the run never started its command');
    await new Promise((r) => setTimeout(r, 50));
    if (!fs.existsSync(file)) continue;
    const events = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const uid = events.find((e) => e['type'] === 'network_checked')?.['uid'];
    if (typeof uid === 'number' && events.some((e) => e['type'] === 'tool_call')) return { child, out, uid };
  }
}

describe('karotte run (contract sections 2 to 6)', () => {
  it.each(['quarterly-revenue', 'roman-numerals'])('the %s control passes with score 1', (name) => {
    const out = tmp(name);
    const r = run(path.join(examples, name), path.join(examples, name, 'control.json'), out, ['--progress']);
    // stderr holds progress lines only: the sandbox, each call as it starts and ends, collect, grade.
    const progress = r.stderr.split('\n').filter(Boolean);
    // On a failure, say why (the CLI's summary names the misbehavior), not only the progress line.
    const why = `${r.stdout}${JSON.stringify(r.transcript.find((e) => e['type'] === 'reaped') ?? null).slice(0, 3000)}`;
    for (const line of progress) expect(line).toMatch(/^\[(sandbox|call \d+|collect|grade)\] /);
    expect(progress[0]).toMatch(/^\[sandbox\] ready: uid \d+ \(/);
    expect(progress.at(-1), why).toMatch(/^\[grade\] passed score=1 \(collect \d+ ms, grade [\d.]+ m?s\)$/);
    expect(r.status).toBe(0);
    expect(r.result).toMatchObject({ taskId: name, status: 'passed', score: 1, misbehavior: [] });
    expect(typeof (r.result['sandbox'] as { uid: unknown }).uid).toBe('number');
    expect(typeof r.result['durationMs']).toBe('number');
    const types = r.transcript.map((e) => e['type']);
    expect(types[0]).toBe('episode_started');
    expect(types.at(-1)).toBe('episode_ended');
    for (const t of ['network_checked', 'tool_call', 'tool_result', 'reaped', 'custody', 'scored'])
      expect(types).toContain(t);
    expect(r.transcript.map((e) => e['seq'])).toEqual(r.transcript.map((_, i) => i));
    assertNothingLeft((r.result['sandbox'] as { uid: unknown }).uid, r.pid);
  });

  it('a replay run loads the packages from the CLI bundle, and neither the OpenAI SDK, execa nor file-type', () => {
    const task = path.join(examples, 'quarterly-revenue');
    const r = run(task, path.join(task, 'control.json'), tmp('modules'), [], LIST_LOADED_MODULES);
    expect(r.status, r.stderr).toBe(0);
    expect(r.result).toMatchObject({ status: 'passed', score: 1 });
    const loaded = loadedModules(r.stderr).filter((url) => url.startsWith('file:'));
    // The episode's code (the reaper's in-cohort helper among it) comes from the app's own
    // dist; no package's dist and no zod module is loaded on its own.
    expect(
      loaded.every((url) => url.startsWith(pathToFileURL(path.join(app, 'dist')).href)),
      loaded.join('\n'),
    ).toBe(true);
    expect(
      loaded.some((url) => fs.readFileSync(fileURLToPath(url), 'utf8').includes('karotte-in-cohort')),
    ).toBe(true);
    expect(loaded.length).toBeLessThan(20);
    for (const name of ['openai', 'execa', 'file-type'])
      expect(loaded.filter((url) => url.includes(`/node_modules/${name}/`))).toEqual([]);
  });

  it("a wrong answer fails with score 0 and exit 0, and says why (the grader's reason) and what ran", () => {
    const dir = tmp('wrong');
    const r = run(
      path.join(examples, 'quarterly-revenue'),
      writeReplay(dir, [
        'echo 12345 > answer.txt',
        `cat orders.csv | head -3\n${'sort -u orders.csv '.repeat(20)}`,
      ]),
      path.join(dir, 'out'),
      ['--progress'],
    );
    expect(r.status).toBe(0);
    expect(r.result).toMatchObject({ status: 'failed', score: 0, misbehavior: [] });
    const [summary, ...why] = r.stdout.trimEnd().split('\n');
    expect(summary).toMatch(/^quarterly-revenue: failed score=0 \(uid \d+, .*\) -> .*result\.json$/);
    expect(why).toEqual(['  why: the grader scored 0 (needs 1 to pass): wrong total']);
    const progress = r.stderr.split('\n').filter(Boolean);
    expect(progress).toContain('[call 1] $ echo 12345 > answer.txt');
    expect(progress.find((line) => line.startsWith('[call 1] exit 0 ('))).toBeDefined();
    // A long command is one line, shortened to the width (80 off a terminal).
    const second = progress.find((line) => line.startsWith('[call 2] $ '))!;
    expect(second).toMatch(/^\[call 2\] \$ cat orders\.csv \| head -3 ⏎ sort -u orders\.csv .*…$/);
    expect(second.length).toBe(80);
    expect(progress.at(-2)).toBe("[collect] reaping the student's processes, taking custody of answer.txt");
    expect(progress.at(-1)).toMatch(/^\[grade\] failed score=0 /);
  });

  it('stderr a pipe and no flag: no progress, nothing on stderr (a caller that never reads it cannot block)', () => {
    const dir = tmp('no-progress');
    const r = run(
      path.join(examples, 'quarterly-revenue'),
      path.join(examples, 'quarterly-revenue', 'control.json'),
      path.join(dir, 'out'),
    );
    expect(r.status).toBe(0);
    expect(r.result).toMatchObject({ status: 'passed', score: 1 });
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^quarterly-revenue: passed score=1 \(uid \d+, .*\) -> .*result\.json\n$/);
    // --json with stderr merged into stdout (2>&1) is one JSON document; --progress and --quiet
    // together are a usage error naming both.
    const merged = spawnSync(
      '/bin/sh',
      [
        '-c',
        '"$0" "$@" 2>&1',
        process.execPath,
        cli,
        'run',
        '--task',
        path.join(examples, 'quarterly-revenue'),
        '--agent',
        'replay',
        '--replay',
        path.join(examples, 'quarterly-revenue', 'control.json'),
        '--out',
        path.join(dir, 'json'),
        '--json',
      ],
      { encoding: 'utf8', timeout: 180_000 },
    );
    expect(merged.status, merged.stdout).toBe(0);
    expect(JSON.parse(merged.stdout)).toMatchObject({ taskId: 'quarterly-revenue', status: 'passed' });
    const both = spawnSync(
      process.execPath,
      [
        cli,
        'run',
        '--task',
        path.join(examples, 'quarterly-revenue'),
        '--agent',
        'replay',
        '--replay',
        path.join(examples, 'quarterly-revenue', 'control.json'),
        '--out',
        path.join(dir, 'both'),
        '--progress',
        '--quiet',
      ],
      { encoding: 'utf8' },
    );
    expect(both.status).toBe(2);
    expect(both.stderr).toContain('--progress and --quiet');
    expect(fs.existsSync(path.join(dir, 'both'))).toBe(false);
  });

  it("a copy of the answer key elsewhere in the app's directory is out of reach (the app hides its directory)", () => {
    const dir = tmp('app-dir');
    // A test fixture on the host holds the same key, world-readable in a checkout.
    const copy = path.join(app, 'test', 'fixtures', 'weakened-revenue', 'hidden', 'expected_total_cents.txt');
    expect(fs.readFileSync(copy, 'utf8').trim()).toMatch(/^\d+$/);
    const r = run(
      path.join(examples, 'quarterly-revenue'),
      writeReplay(dir, [`cat ${copy} > answer.txt; ls -A ${app} ${examples} 2>/dev/null | wc -l`]),
      path.join(dir, 'out'),
    );
    expect(r.status).toBe(0);
    expect(r.result).toMatchObject({ status: 'failed', score: 0 });
    const listed = r.transcript.find((event) => event['type'] === 'tool_result') as
      { result: { stdout: string } } | undefined;
    expect(listed?.result.stdout).toBe('0\n');
  });

  it('a symlink to the answer key scores 0 with a SYMLINK misbehavior', () => {
    const dir = tmp('symlink');
    const r = run(
      path.join(examples, 'quarterly-revenue'),
      writeReplay(dir, ['ln -s /etc/hostname answer.txt']),
      path.join(dir, 'out'),
    );
    expect(r.status).toBe(0);
    expect(r.result).toMatchObject({ status: 'failed', score: 0 });
    expect((r.result['misbehavior'] as { code: string }[]).map((m) => m.code)).toContain('SYMLINK');
    expect(r.stdout).toMatch(/\n {2}why: SYMLINK: /);
  });

  it('an --out that cannot be a directory exits 2 naming --out, and nothing runs', () => {
    const dir = tmp('bad-out');
    const out = path.join(dir, 'a-file');
    fs.writeFileSync(out, 'in the way');
    const child = runControlSync(path.join(examples, 'quarterly-revenue'), out);
    expect(child.status).toBe(2);
    expect(child.stderr).toContain(`--out ${out}`);
    expect(fs.readFileSync(out, 'utf8')).toBe('in the way');
  });

  it('check: as root every defense is enforced on this host (exit 0, --json)', () => {
    const asRoot = spawnSync(process.execPath, [cli, 'check', '--json'], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    expect(asRoot.status).toBe(0);
    const report = JSON.parse(asRoot.stdout) as { ok: boolean; root: boolean; defenses: { name: string }[] };
    expect(report).toMatchObject({ ok: true, root: true });
    expect(report.defenses.map((d) => d.name)).toEqual(
      expect.arrayContaining([
        'user_separation',
        'pid_namespace',
        'network_isolation',
        'syscall_filter',
        'private_devices',
        'host_budgets',
        'memory',
        'pids',
        'reaping',
        'grader_interpreter',
      ]),
    );
    // The human form fits 80 columns off a terminal; --verbose shows everything, still fitting.
    const human = spawnSync(process.execPath, [cli, 'check'], { encoding: 'utf8', timeout: 120_000 });
    expect(human.status).toBe(0);
    for (const line of human.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(80);
    expect(human.stdout).toMatch(/^grader interpreter +prevented /m);
    const verbose = spawnSync(process.execPath, [cli, 'check', '--verbose'], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, COLUMNS: '120' },
    });
    expect(verbose.status).toBe(0);
    for (const line of verbose.stdout.split('\n')) expect(line.length).toBeLessThanOrEqual(120);
    expect(verbose.stdout).not.toContain('…');
    expect(verbose.stdout).toMatch(/^grader interpreter +prevented /m);
  });

  it('invalid task files exit 2 naming the field, and nothing runs', () => {
    const dir = tmp('invalid');
    fs.cpSync(path.join(examples, 'quarterly-revenue'), path.join(dir, 'task'), { recursive: true });
    const taskFile = path.join(dir, 'task', 'task.json');
    const task = JSON.parse(fs.readFileSync(taskFile, 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(taskFile, JSON.stringify({ ...task, limits: { memoryBytes: -1 } }));
    const out = path.join(dir, 'out');
    const child = runControlSync(path.join(dir, 'task'), out);
    expect(child.status).toBe(2);
    expect(child.stderr).toContain('limits.memoryBytes');
    expect(fs.existsSync(out)).toBe(false);
    const badFlag = spawnSync(process.execPath, [cli, 'run', '--task', dir, '--agent', 'gpt', '--out', out], {
      encoding: 'utf8',
    });
    expect(badFlag.status).toBe(2);
    expect(badFlag.stderr).toContain('--agent');
  });

  it('SIGTERM during a run tears everything down and leaves a valid transcript', async () => {
    const { child, out, uid } = await startLongRun(tmp('sigterm'));
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    const { result, transcript } = readOut(out);
    expect(code).toBe(1);
    expect(result['status']).toBe('error');
    expect(transcript.at(-1)!['type']).toBe('episode_ended');
    assertNothingLeft(uid, child.pid);
  });

  it('after a SIGKILLed run, the next run reclaims its leftovers', async () => {
    const dir = tmp('sigkill');
    const { child, uid } = await startLongRun(dir);
    child.kill('SIGKILL');
    await new Promise((resolve) => child.on('exit', resolve));
    // The killed harness left its world behind (the check below can fail): its lease, its
    // quota (image, loop device, mount), its cgroups.
    // Its transcript is valid up to its last event (every line fdatasync'ed whole).
    const lines = fs.readFileSync(path.join(dir, 'out', 'transcript.jsonl'), 'utf8').split('\n');
    expect(lines.at(-1)).toBe('');
    const events = lines.slice(0, -1).map((line) => JSON.parse(line) as { seq: number; type: string });
    expect(events.map((event) => event.seq)).toEqual(events.map((_, i) => i));
    expect(events.map((event) => event.type)).toContain('tool_call');
    const lease = listLeases(DEFAULT_SANDBOX_STATE_DIR).find((candidate) => candidate.uid === uid);
    expect(lease).toBeDefined();
    expect(leftovers(uid, child.pid!, lease!.record?.sandboxId).length).toBeGreaterThan(1);
    const second = run(
      path.join(examples, 'quarterly-revenue'),
      path.join(examples, 'quarterly-revenue', 'control.json'),
      path.join(dir, 'out2'),
    );
    expect(second.result['status']).toBe('passed');
    assertNothingLeft(uid, child.pid, lease!.record?.sandboxId);
  });
});

/** A copy of this Node.js at `file` (its directory made 0755 with its parents). */
function copyNode(file: string): string {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o755 });
  fs.copyFileSync(process.execPath, file);
  fs.chmodSync(file, 0o755);
  return file;
}

/** A fresh root-owned directory (0755) outside the scratch places, for the interpreter cases. */
function rootOwnedDir(label: string): string {
  fs.mkdirSync('/var/lib/karotte', { recursive: true, mode: 0o755 });
  const dir = fs.mkdtempSync(`/var/lib/karotte/karotte-test-${label}-`);
  fs.chmodSync(dir, 0o755);
  made.push(dir);
  return dir;
}

describe('an untrusted grader interpreter (the harness run by Node.js in /tmp or a hidden directory)', () => {
  const interpreters: Record<string, () => string> = {
    'a copy of Node.js in a mkdtemp directory under /tmp': () => copyNode(path.join(tmp('node'), 'node')),
    'a copy in a hidden directory (~/.nvm)': () =>
      copyNode(path.join(rootOwnedDir('nvm'), 'root', '.nvm', 'versions', 'node', 'bin', 'node')),
  };

  it.each(Object.keys(interpreters))(
    '%s: run is refused before the episode starts (exit 1, error UNTRUSTED_INTERPRETER)',
    (label) => {
      const node = interpreters[label]!();
      const out = path.join(tmp('untrusted-run'), 'out');
      const started = Date.now();
      const child = spawnSync(
        node,
        [
          cli,
          'run',
          '--task',
          path.join(examples, 'quarterly-revenue'),
          '--agent',
          'replay',
          '--replay',
          path.join(examples, 'quarterly-revenue', 'control.json'),
          '--out',
          out,
          '--progress',
        ],
        { encoding: 'utf8', timeout: 120_000 },
      );
      expect(child.status).toBe(1);
      const { result, transcript } = readOut(out);
      expect(result).toMatchObject({
        status: 'error',
        score: 0,
        sandbox: { uid: null },
        error: { code: 'UNTRUSTED_INTERPRETER' },
      });
      expect((result['error'] as { message: string }).message).toContain(node);
      // Nothing ran: no sandbox, no tool call, and well before an episode's length.
      expect(transcript.map((event) => event['type'])).toEqual(['episode_started', 'error', 'episode_ended']);
      expect(child.stderr).not.toContain('[sandbox]');
      expect(child.stdout).toContain('error=UNTRUSTED_INTERPRETER');
      expect(Date.now() - started).toBeLessThan(30_000);
    },
  );

  it('check reports the grader interpreter missing (exit 1, with the reason), here behind a root-owned link into a directory a user owns', () => {
    const base = rootOwnedDir('link');
    const userDir = path.join(base, 'user');
    const target = copyNode(path.join(userDir, 'node'));
    fs.chownSync(userDir, 3_999_999_000, 3_999_999_000);
    const link = path.join(base, 'venv', 'bin', 'node');
    fs.mkdirSync(path.dirname(link), { recursive: true, mode: 0o755 });
    fs.symlinkSync(target, link);
    const json = spawnSync(link, [cli, 'check', '--json'], { encoding: 'utf8', timeout: 120_000 });
    expect(json.status).toBe(1);
    const report = JSON.parse(json.stdout) as {
      ok: boolean;
      defenses: { name: string; contract: string; reason: string }[];
    };
    expect(report.ok).toBe(false);
    const row = report.defenses.find((defense) => defense.name === 'grader_interpreter')!;
    expect(row.contract).toBe('not_supported');
    // The harness's own path as the kernel gives it (process.execPath is already resolved).
    expect(row.reason).toContain(`${userDir} is owned by uid 3999999000, not root`);
    // Every other defense is still enforced: only the interpreter fails.
    expect(
      report.defenses
        .filter((d) => d.contract !== 'prevented' && d.name !== 'rootless_tier')
        .map((d) => d.name),
    ).toEqual(['grader_interpreter']);
    const human = spawnSync(link, [cli, 'check'], { encoding: 'utf8', timeout: 120_000 });
    expect(human.status).toBe(1);
    expect(human.stdout.replace(/\s+/g, ' ')).toContain(
      `1 defense(s) are weaker or missing on this host: grader_interpreter. grader interpreter: interpreter ${target}`,
    );
  });
});

describe("relative paths are the caller's (npm run --silent karotte from another directory)", () => {
  const root = path.resolve(app, '..', '..');
  // This test's own PATH (scripts/test.mjs gives every child the project's toolchain PATH) with
  // the running node in front; npm itself is found as the project's scripts find it (beside node,
  // else /usr/local/bin, /usr/bin, /bin), never from a PATH written here.
  const npm = npmCommand();
  const toolchainPath = [path.dirname(process.execPath), ...(process.env['PATH'] ?? '').split(':')]
    .filter((entry, i, all) => entry !== '' && all.indexOf(entry) === i)
    .join(':');

  it('validate --task <relative> from a subdirectory of the repository resolves from there', () => {
    const cwd = path.join(root, 'packages');
    const relative = path.relative(cwd, path.join(examples, 'quarterly-revenue'));
    expect(relative.startsWith('..')).toBe(true);
    // From the repository root the same path names nothing: only the caller's directory works.
    expect(fs.existsSync(path.join(root, relative))).toBe(false);
    const child = spawnSync(npm, ['run', '--silent', 'karotte', '--', 'validate', '--task', relative], {
      cwd,
      encoding: 'utf8',
      env: { ...process.env, PATH: toolchainPath },
      timeout: 120_000,
    });
    expect(child.stderr).toBe('');
    expect(child.status).toBe(0);
    expect(child.stdout).toBe('task quarterly-revenue is valid: 1 step(s), submission answer.txt\n');
  });

  it("run --task, --replay and --out relative to the caller's directory", () => {
    const cwd = tmp('relative');
    fs.cpSync(path.join(examples, 'quarterly-revenue'), path.join(cwd, 'task'), { recursive: true });
    const child = spawnSync(
      npm,
      [
        '--prefix',
        root,
        'run',
        '--silent',
        'karotte',
        '--',
        'run',
        '--task',
        'task',
        '--agent',
        'replay',
        '--replay',
        'task/control.json',
        '--out',
        'runs/first',
      ],
      { cwd, encoding: 'utf8', env: { ...process.env, PATH: toolchainPath }, timeout: 180_000 },
    );
    expect(child.status).toBe(0);
    const { result } = readOut(path.join(cwd, 'runs', 'first'));
    // On a failure, say why: the misbehavior and the verdicts' failures, not only the status.
    const why = JSON.stringify({
      misbehavior: result['misbehavior'],
      error: result['error'],
      steps: result['steps'],
    });
    expect(result, why.slice(0, 4000)).toMatchObject({
      taskId: 'quarterly-revenue',
      status: 'passed',
      score: 1,
    });
    expect(child.stdout).toContain(`-> ${path.join(cwd, 'runs', 'first', 'result.json')}`);
    expect(fs.existsSync(path.join(root, 'runs'))).toBe(false);
  });
});
