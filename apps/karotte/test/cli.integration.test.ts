// End-to-end runs of the app as a user runs it: spawn the built CLI (dist/cli.js, built by
// the README's setup), read result.json and the transcript. Real sandboxes, real graders.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_STATE_DIR, listLeases } from '@karotte/sandbox';
import { pidsOfUid } from '../../../test/support/index.js';

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

function run(task: string, replay: string, out: string): Run {
  const child = spawnSync(
    process.execPath,
    [cli, 'run', '--task', task, '--agent', 'replay', '--replay', replay, '--out', out],
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
  if (listLeases(DEFAULT_STATE_DIR).some((lease) => lease.uid === uid)) found.push(`the lease of uid ${uid}`);
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
    const r = run(path.join(examples, name), path.join(examples, name, 'control.json'), out);
    expect(r.stderr).toBe('');
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

  it('a wrong answer fails with score 0 and exit 0', () => {
    const dir = tmp('wrong');
    const r = run(
      path.join(examples, 'quarterly-revenue'),
      writeReplay(dir, ['echo 12345 > answer.txt']),
      path.join(dir, 'out'),
    );
    expect(r.status).toBe(0);
    expect(r.result).toMatchObject({ status: 'failed', score: 0, misbehavior: [] });
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
        'memory',
        'pids',
        'reaping',
      ]),
    );
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
    const lease = listLeases(DEFAULT_STATE_DIR).find((candidate) => candidate.uid === uid);
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
