import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { readJsonFile } from '@karotte/base';
import {
  assistantMessageSchema,
  createReplayAgent,
  loadReplay,
  MAX_REPLAY_FILE_BYTES,
  runEpisode,
  type AssistantMessage,
  type EpisodeProgress,
  type EpisodeResult,
  type Task,
  type WorldFactory,
} from '@karotte/core';
import type { Attack } from './attack.js';
import { ATTACKS, appliesTo, missingRequirement, taskLanguages } from './catalog.js';
import { attackReplay, seedReplay } from './replay.js';

/** Invalid input for a red-team run (an unknown attack id, a malformed attacks/*.json). */
export class RedteamInputError extends Error {
  override readonly name = 'RedteamInputError';
}

/** One row of the red-team report. */
export interface RedteamRow {
  readonly id: string;
  readonly class: string;
  readonly kind: 'control' | 'attack';
  readonly source: 'catalog' | 'task' | 'control';
  /** The attack's verdict, or `skipped` when it could not run here (`reason` says why). */
  readonly status: EpisodeResult['status'] | 'skipped';
  readonly score: number;
  readonly reason: string;
  readonly durationMs: number;
  /** The control passed, or the attack scored 0 without turning the run into `error`. */
  readonly ok: boolean;
  /**
   * What stopped the attack: its misbehavior codes, else `grader` (the grader refused the
   * submission) or `graded` (the judge scored it 0); empty for the control and for errors.
   */
  readonly stoppedBy: readonly string[];
  /** The attack's expected outcome (any of these stopped it), when it declares one. */
  readonly expected: readonly string[] | null;
  /** Stopped as the attack expects (true when it declares no expectation). */
  readonly asExpected: boolean;
  /**
   * A noisy-neighbour attack's honest neighbour (the task's control, run at the same time):
   * its verdict, which must be the control's own (`passed`, same score, no error).
   */
  readonly neighbour?: NeighbourOutcome;
  /** A cross-episode attack's earlier episode (the control, then the seed that plants the answer). */
  readonly seed?: { readonly status: EpisodeResult['status']; readonly score: number };
}

/** What happened to the honest neighbour of a noisy-neighbour attack. */
interface NeighbourOutcome {
  readonly status: EpisodeResult['status'];
  readonly score: number;
  readonly reason: string;
  /** Passed with the control's score and no error: unaffected by the attack. */
  readonly ok: boolean;
  /** The neighbour was graded before the attack's episode ended (it ran wholly beside the flood). */
  readonly overlapped: boolean;
}

/** An attack a task author added as `<task>/attacks/<id>.json`. */
const taskAttackSchema = z
  .object({
    id: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/),
    class: z.string().min(1).max(64).default('task'),
    description: z.string().max(1000).default(''),
    replay: z.array(assistantMessageSchema).min(1),
    parallelSafe: z.boolean().default(false),
    /** What should stop it (misbehavior codes, `graded`, `grader`); any of them. */
    expected: z.array(z.string().min(1).max(64)).min(1).max(32).optional(),
  })
  .strict();

interface Planned {
  readonly id: string;
  readonly class: string;
  readonly kind: 'control' | 'attack';
  readonly source: RedteamRow['source'];
  readonly replay: AssistantMessage[];
  readonly parallelSafe: boolean;
  readonly expected: readonly string[] | null;
  /** Why it cannot run here: its row says so, and nothing runs. */
  readonly skip?: string;
  /** A cross-episode attack's earlier episode: the control's tool calls, then the seed's. */
  readonly seed?: AssistantMessage[];
  /** Run beside the task's control, which must not be affected. */
  readonly neighbour?: boolean;
}

export interface RedteamOptions {
  readonly task: Task;
  readonly createWorld: WorldFactory;
  /** Only these attack ids (and the control). */
  readonly only?: readonly string[];
  /** Attacks run at once when they are parallel-safe. @default 2 */
  readonly concurrency?: number;
  /** Where each run's transcript and result go. @default a fresh temporary directory */
  readonly outDir?: string;
  readonly onProgress?: (done: number, total: number, running: readonly string[]) => void;
  /** Called with each finished run. */
  readonly onResult?: (row: RedteamRow, done: number, total: number) => void;
  readonly abortSignal?: AbortSignal;
}

/** The attacks of the catalog and of `<task>/attacks/`, filtered by `only`. */
async function planRedteam(task: Task, only?: readonly string[]): Promise<Planned[]> {
  const submission = task.steps[0]!.submission[0]!;
  const planned: Planned[] = [];
  const controlFile = task.dir === undefined ? undefined : path.join(task.dir, 'control.json');
  let control: AssistantMessage[] | undefined;
  if (controlFile !== undefined && (await exists(controlFile))) {
    control = await loadReplay(controlFile);
    planned.push({
      id: 'control',
      class: 'control',
      kind: 'control',
      source: 'control',
      replay: control,
      parallelSafe: true,
      expected: null,
    });
  }
  // The attacks of the task's languages; one named in `only` runs whatever its language.
  const languages = await taskLanguages(task);
  for (const attack of ATTACKS) {
    if (only?.includes(attack.id) === true || appliesTo(attack, languages))
      planned.push(await fromCatalog(attack, submission, control, only?.includes(attack.id) === true));
  }
  const attacksDir = task.dir === undefined ? undefined : path.join(task.dir, 'attacks');
  if (attacksDir !== undefined && (await exists(attacksDir))) {
    for (const name of (await fs.readdir(attacksDir)).filter((n) => n.endsWith('.json')).sort()) {
      const what = `attacks/${name}`;
      const read = await readJsonFile(path.join(attacksDir, name), {
        maxBytes: MAX_REPLAY_FILE_BYTES,
        schema: taskAttackSchema,
        what,
      });
      if (!read.ok) {
        if (read.refusal !== 'invalid_shape') throw new RedteamInputError(read.message);
        const field = read.field === undefined ? '' : ` (field ${read.field})`;
        throw new RedteamInputError(`${what} is not a valid attack${field}: ${read.message}`);
      }
      const parsed = read.value;
      planned.push({
        id: parsed.id,
        class: parsed.class,
        kind: 'attack',
        source: 'task',
        replay: parsed.replay,
        parallelSafe: parsed.parallelSafe,
        expected: parsed.expected ?? null,
      });
    }
  }
  if (only === undefined || only.length === 0) return planned;
  const unknown = only.filter((id) => !planned.some((p) => p.id === id));
  if (unknown.length > 0) throw new RedteamInputError(`unknown attack id(s): ${unknown.join(', ')}`);
  return planned.filter((p) => p.kind === 'control' || only.includes(p.id));
}

async function fromCatalog(
  attack: Attack,
  submission: string,
  control: AssistantMessage[] | undefined,
  named: boolean,
): Promise<Planned> {
  const missing = await missingRequirement(attack);
  let skip = missing === null ? undefined : `skipped: ${missing}`;
  if (attack.openFinding !== undefined && !named) {
    skip ??= `skipped: an open finding (run it with --only ${attack.id}): ${attack.openFinding}`;
  }
  if (attack.seed !== undefined && control === undefined) {
    skip ??=
      "skipped: a cross-episode attack needs the task's control.json (an honest episode to plant from)";
  }
  return {
    id: attack.id,
    class: attack.class,
    kind: 'attack',
    source: 'catalog',
    replay: attackReplay(attack, submission),
    parallelSafe: attack.parallelSafe,
    expected: attack.expected === 'any' ? null : attack.expected,
    ...(skip === undefined ? {} : { skip }),
    ...(attack.seed === undefined || control === undefined
      ? {}
      : { seed: seedReplay(control, attack.seed, submission) }),
    ...(attack.class === 'noisy-neighbour' ? { neighbour: true } : {}),
  };
}

/**
 * Run the control and every attack, parallel-safe ones `concurrency` at a time and the rest
 * alone, and return one row each in catalog order.
 */
export async function runRedteam(options: RedteamOptions): Promise<RedteamRow[]> {
  const planned = await planRedteam(options.task, options.only);
  const outRoot = options.outDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'karotte-redteam-')));
  const rows = new Map<string, RedteamRow>();
  const running = new Set<string>();
  const report = (): void => options.onProgress?.(rows.size, planned.length, [...running]);

  const episode = (
    replay: AssistantMessage[],
    dir: string,
    onProgress?: (event: EpisodeProgress) => void,
  ): Promise<EpisodeResult> =>
    runEpisode(options.task, createReplayAgent(replay), {
      outDir: path.join(outRoot, dir),
      createWorld: options.createWorld,
      ...(options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
      ...(onProgress === undefined ? {} : { onProgress }),
    });
  const control = planned.find((p) => p.kind === 'control');

  const runOne = async (plan: Planned): Promise<void> => {
    running.add(plan.id);
    report();
    let row: RedteamRow;
    if (plan.skip !== undefined) row = skippedRow(plan, plan.skip);
    else if (plan.neighbour === true && control !== undefined) {
      // The neighbour starts once the attack's first command has finished (its flood is in
      // place), and is graded while the attack holds it; both teardowns are awaited.
      let neighbourRun: Promise<{ result: EpisodeResult; gradedAt: number }> | undefined;
      const startNeighbour = (): void => {
        let gradedAt = Number.POSITIVE_INFINITY;
        neighbourRun ??= episode(control.replay, `${plan.id}.neighbour`, (event) => {
          if (event.type === 'graded') gradedAt = Date.now();
        }).then((result) => ({ result, gradedAt }));
      };
      const result = await episode(plan.replay, plan.id, (event) => {
        if (event.type === 'tool_result') startNeighbour();
      });
      const attackEnded = Date.now();
      startNeighbour();
      const neighbour = await neighbourRun!;
      const controlRow = rows.get(control.id);
      row = toRow(plan, result, {
        neighbour: neighbourOutcome(neighbour.result, controlRow, neighbour.gradedAt <= attackEnded),
      });
    } else if (plan.seed !== undefined) {
      const seed = await episode(plan.seed, `${plan.id}.seed`);
      row = toRow(plan, await episode(plan.replay, plan.id), { seed });
    } else {
      const result = await episode(plan.replay, plan.id);
      row = toRow(
        plan,
        result,
        plan.neighbour === true ? { note: 'no neighbour: the task has no control.json' } : {},
      );
    }
    running.delete(plan.id);
    rows.set(plan.id, row);
    options.onResult?.(row, rows.size, planned.length);
    report();
  };

  const parallel = planned.filter((p) => p.parallelSafe);
  const serial = planned.filter((p) => !p.parallelSafe);
  const concurrency = Math.max(1, options.concurrency ?? 2);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, parallel.length) }, async () => {
      while (next < parallel.length && options.abortSignal?.aborted !== true) {
        const plan = parallel[next]!;
        next += 1;
        await runOne(plan);
      }
    }),
  );
  for (const plan of serial) {
    if (options.abortSignal?.aborted === true) break;
    await runOne(plan);
  }
  if (options.outDir === undefined) await fs.rm(outRoot, { recursive: true, force: true });
  return planned.flatMap((p) => rows.get(p.id) ?? []);
}

/** What ran beside or before an attack's own episode. */
interface Companions {
  readonly neighbour?: NeighbourOutcome;
  readonly seed?: EpisodeResult;
  /** Said after the reason. */
  readonly note?: string;
}

function neighbourOutcome(
  result: EpisodeResult,
  controlRow: RedteamRow | undefined,
  overlapped: boolean,
): NeighbourOutcome {
  const score = controlRow?.status === 'passed' ? controlRow.score : null;
  const ok =
    result.status === 'passed' && result.error === null && (score === null || result.score === score);
  const why =
    result.error !== null
      ? `error ${result.error.code}: ${result.error.message}`
      : result.misbehavior.length > 0
        ? result.misbehavior.map((m) => m.code).join(', ')
        : `graded ${result.score}`;
  return { status: result.status, score: result.score, reason: why, ok, overlapped };
}

function skippedRow(plan: Planned, reason: string): RedteamRow {
  return {
    id: plan.id,
    class: plan.class,
    kind: plan.kind,
    source: plan.source,
    status: 'skipped',
    score: 0,
    reason,
    durationMs: 0,
    ok: true,
    stoppedBy: [],
    expected: plan.expected,
    asExpected: true,
  };
}

function toRow(plan: Planned, result: EpisodeResult, companions: Companions = {}): RedteamRow {
  const verdict = result.steps.at(-1)?.verdict;
  let reason: string;
  let stoppedBy: string[] = [];
  if (result.error !== null) reason = `error ${result.error.code}: ${result.error.message}`;
  else if (result.misbehavior.length > 0) {
    stoppedBy = [...new Set(result.misbehavior.map((m) => m.code))];
    reason = stoppedBy.join(', ');
  } else if (verdict?.graderFailure != null) {
    stoppedBy = ['grader'];
    reason = `grader ${verdict.graderFailure.reason}`;
  } else {
    stoppedBy = ['graded'];
    reason = `graded ${result.score}`;
  }
  if (plan.kind === 'control' || result.status !== 'failed' || result.score !== 0) stoppedBy = [];
  const { neighbour, seed } = companions;
  // Nothing the student does, in the attack's episode or the ones beside and before it, may
  // turn a run into `error`; a neighbour must end as the control does.
  const ok =
    plan.kind === 'control'
      ? result.status === 'passed'
      : result.status === 'failed' &&
        result.score === 0 &&
        (neighbour === undefined || neighbour.ok) &&
        (seed === undefined || seed.status !== 'error');
  if (neighbour !== undefined) {
    reason += `; neighbour ${neighbour.status} ${neighbour.score}${neighbour.ok ? '' : ` (${neighbour.reason})`}`;
    if (!neighbour.overlapped) reason += ', graded after the attack ended';
  }
  if (seed !== undefined) reason += `; seed episode ${seed.status} ${seed.score}`;
  if (companions.note !== undefined) reason += `; ${companions.note}`;
  const expected = plan.kind === 'control' ? null : plan.expected;
  const asExpected = expected === null ? ok : ok && stoppedBy.some((stopper) => expected.includes(stopper));
  return {
    id: plan.id,
    class: plan.class,
    kind: plan.kind,
    source: plan.source,
    status: result.status,
    score: result.score,
    reason,
    durationMs: result.durationMs,
    ok,
    stoppedBy,
    expected,
    asExpected,
    ...(neighbour === undefined ? {} : { neighbour }),
    ...(seed === undefined ? {} : { seed: { status: seed.status, score: seed.score } }),
  };
}

async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}
