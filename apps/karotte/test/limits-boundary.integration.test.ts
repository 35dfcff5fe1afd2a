// `karotte validate` and `karotte run` agree on every limit of task.json (issue #13): a limit
// one past either bound of the published schema is refused by both with exit 2 before anything
// runs; a limit at either bound validates and, as far as this host can give it, runs to a
// verdict (passed or failed), never to an error; past what the host can give, run refuses
// before the episode starts (exit 1, saying what is short), as the contract says. The bounds are read from the published JSON Schema, so the test follows the schema.
// Real episodes of the quarterly-revenue control, two at a time.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { taskJsonSchema } from '@karotte/core';
import { DEFAULT_SANDBOX_STATE_DIR, listLeases } from '@karotte/sandbox';
import { pidsOfUid } from '../../../test/support/index.js';

const app = path.resolve(import.meta.dirname, '..');
const cli = path.join(app, 'dist', 'cli.js');
const example = path.join(app, 'examples', 'quarterly-revenue');
const control = path.join(example, 'control.json');
const LIMITS = ['memoryBytes', 'pids', 'diskBytes', 'wallTimeMs', 'commandTimeoutMs'] as const;
type Limit = (typeof LIMITS)[number];
const MiB = 1024 * 1024;

const made: string[] = [];
afterAll(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** The smallest and largest value task.json accepts for `limit` (integers), from the published schema. */
function bounds(limit: Limit): { min: number; max: number } {
  const schema = taskJsonSchema() as {
    properties: { limits: { properties: Record<string, Record<string, number | undefined>> } };
  };
  const rule = schema.properties.limits.properties[limit]!;
  const min = rule['minimum'] ?? rule['exclusiveMinimum']! + 1;
  return { min, max: rule['maximum']! };
}

/**
 * The largest value of `limit` this host can give an episode beside the other tests. The
 * schema's largest disk quota (1 PiB) cannot exist here: the quota image is preallocated, never
 * sparse, so the run takes a quarter of the free space where images go. The schema's largest
 * memory (past the host's RAM) and process count (PID_MAX_LIMIT × nofile open files, past the
 * file table) are more than admission lets one episode reserve (`hostCapacity()`: RAM less the
 * harness headroom, 80 % of fs.file-max), so the run takes a quarter of that. Either way, enough
 * to show no layer has a smaller bound, without starving the other tests on the machine;
 * validate still takes the schema's largest, and a run of it is refused (see below).
 */
function largestThatFits(limit: Limit, max: number): number {
  // What admission gives all episodes together (README of @karotte/limits, Admission): RAM less
  // the 1 GiB harness headroom, and 80 % of fs.file-max.
  const memTotal = Number(/^MemTotal:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;
  const fileMax = Number(fs.readFileSync('/proc/sys/fs/file-max', 'utf8').trim());
  const capacity = { memoryBytes: memTotal - 1024 * MiB, files: Math.floor(fileMax * 0.8) };
  if (limit === 'memoryBytes') return Math.min(max, Math.floor(capacity.memoryBytes / 4 / MiB) * MiB);
  if (limit === 'pids') return Math.min(max, Math.floor(capacity.files / 4 / 1024)); // nofile 1024
  if (limit !== 'diskBytes') return max;
  const free = fs.statfsSync('/var/lib/karotte'); // @karotte/limits' DEFAULT_IMAGE_DIR
  return Math.min(max, Math.floor((free.bavail * free.bsize) / 4 / MiB) * MiB);
}

/**
 * Past what the host can give (validate takes it, the schema allows it): `run` refuses before
 * the episode starts, exit 1, result.json `error` saying what is short (contract section 2).
 */
async function expectHostRefuses(limit: Limit, value: number): Promise<void> {
  const { task, out } = taskWith(limit, value);
  expect((await validate(task)).code).toBe(0);
  const ran = await run(task, out);
  expect(ran.code, `run ${limit}=${value}: ${ran.stdout}`).toBe(1);
  const result = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8')) as {
    status: string;
    error: { code: string; message: string } | null;
  };
  expect(result.status).toBe('error');
  expect(result.error?.code).toBe('CONFINEMENT_UNAVAILABLE');
  expect(result.error?.message).toContain("lower the task's limits");
}

/** A copy of the quarterly-revenue task with `limits[limit] = value`. */
function taskWith(limit: Limit, value: number): { task: string; out: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `karotte-limits-${limit}-`));
  made.push(dir);
  const task = path.join(dir, 'task');
  fs.cpSync(example, task, { recursive: true });
  const file = path.join(task, 'task.json');
  const json = JSON.parse(fs.readFileSync(file, 'utf8')) as { limits: Record<string, number> };
  json.limits[limit] = value;
  // JSON.stringify writes 2^53 as 9007199254740992: the value above the largest safe integer.
  fs.writeFileSync(file, JSON.stringify(json));
  return { task, out: path.join(dir, 'out') };
}

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

async function karotte(args: string[]): Promise<Exit> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [cli, ...args], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  }
}

const validate = (task: string): Promise<Exit> => karotte(['validate', '--task', task]);
const run = (task: string, out: string): Promise<Exit> =>
  karotte(['run', '--task', task, '--agent', 'replay', '--replay', control, '--out', out]);

/** Out of bounds: both commands exit 2 naming the field, and the run makes nothing. */
async function expectRefused(limit: Limit, value: number): Promise<void> {
  const { task, out } = taskWith(limit, value);
  const [checked, ran] = await Promise.all([validate(task), run(task, out)]);
  expect(checked.code, `validate ${limit}=${value}: ${checked.stderr}`).toBe(2);
  expect(checked.stderr).toContain(`limits.${limit}`);
  expect(ran.code, `run ${limit}=${value}: ${ran.stderr}`).toBe(2);
  expect(ran.stderr).toContain(`limits.${limit}`);
  expect(fs.existsSync(path.join(out, 'result.json'))).toBe(false);
}

/** In bounds: validate exits 0, the run reaches a verdict with the limit in force, and leaves nothing. */
async function expectVerdict(limit: Limit, value: number): Promise<void> {
  const { task, out } = taskWith(limit, value);
  const checked = await validate(task);
  expect(checked.code, `validate ${limit}=${value}: ${checked.stderr}`).toBe(0);
  const ran = await run(task, out);
  const result = JSON.parse(fs.readFileSync(path.join(out, 'result.json'), 'utf8')) as {
    status: string;
    error: { code: string; message: string } | null;
    sandbox: { uid: number | null };
  };
  expect({ limit, value, status: result.status, error: result.error }).toEqual({
    limit,
    value,
    status: expect.stringMatching(/^(passed|failed)$/) as unknown,
    error: null,
  });
  expect(ran.code, `run ${limit}=${value}: ${ran.stdout}`).toBe(0);
  const started = JSON.parse(fs.readFileSync(path.join(out, 'transcript.jsonl'), 'utf8').split('\n')[0]!) as {
    limits: Record<string, number>;
  };
  expect(started.limits[limit]).toBe(value);
  const uid = result.sandbox.uid!;
  expect(pidsOfUid(uid)).toEqual([]);
  expect(listLeases(DEFAULT_SANDBOX_STATE_DIR).some((lease) => lease.uid === uid)).toBe(false);
}

describe('validate and run agree on every limit of task.json', () => {
  it.each(LIMITS)('%s: one past a bound exits 2 in both; at the bounds, a verdict', async (limit) => {
    const { min, max } = bounds(limit);
    // Past the largest safe integer, max + 1 is not representable: max + 2 is the next value.
    const above = max === Number.MAX_SAFE_INTEGER ? max + 2 : max + 1;
    await Promise.all([expectRefused(limit, min - 1), expectRefused(limit, above)]);
    const fits = largestThatFits(limit, max);
    if (fits !== max) expect((await validate(taskWith(limit, max).task)).code).toBe(0);
    if (limit === 'memoryBytes' || limit === 'pids') await expectHostRefuses(limit, max);
    // The two episodes at once: the most this 2-core machine runs side by side.
    await Promise.all([expectVerdict(limit, min), expectVerdict(limit, fits)]);
  });
});
