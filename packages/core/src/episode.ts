import path from 'node:path';
import { createMisbehavior, escapeForDisplay, KarotteError, type MisbehaviorRecord } from '@karotte/base';
import { collectAndGrade, preflightJudge, type Judge, type LimitHit, type Verdict } from '@karotte/grader';
import {
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_EPISODE_WALL_TIME_MS,
  type StudentLimitOptions,
} from '@karotte/limits';
import { z } from 'zod';
import type { Agent } from './agent.js';
import { CoreError, isEpisodeErrorCode, type EpisodeErrorCode } from './errors.js';
import {
  renderObservation,
  type AssistantMessage,
  type Message,
  type ToolCall,
  type ToolObservation,
  type ToolSpec,
} from './messages.js';
import type { Task, TaskStep } from './task.js';
import { Transcript, writeResultFile } from './transcript.js';
import type { ShellOutcome, StudentWorld } from './world.js';

/** The tools every episode offers. */
export const EPISODE_TOOLS: readonly ToolSpec[] = Object.freeze([
  {
    name: 'bash',
    description:
      'Run a command in your persistent bash shell. The working directory and exported variables carry over between calls. A command past its timeout is stopped and the shell goes on.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'the bash command to run' },
        timeoutMs: { type: 'number', description: 'timeout in milliseconds (capped by the task)' },
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
]);

const bashArgumentsSchema = z
  .object({ command: z.string().max(1024 * 1024), timeoutMs: z.number().int().positive().optional() })
  .strict();

/** Everything needed to build the student's world for a task. */
export interface WorldSpec {
  readonly task: Task;
  /**
   * The task's student limits, by the names and within the bounds of `@karotte/limits`'
   * `studentLimitsSchema` (what `createSandbox`'s `limits` takes as it is); an omitted one gets
   * that schema's default where the world applies it. The times are the episode's own.
   */
  readonly limits: Pick<StudentLimitOptions, 'memoryBytes' | 'pids' | 'diskBytes'>;
  readonly abortSignal: AbortSignal;
}

export type WorldFactory = (spec: WorldSpec) => Promise<StudentWorld>;

export interface EpisodeOptions {
  /** Directory for `transcript.jsonl` and `result.json`; created when missing. */
  readonly outDir: string;
  /** Builds the student's world (the sandbox). */
  readonly createWorld: WorldFactory;
  /** Name of the agent, for the transcript. @default 'external' */
  readonly agentName?: string;
  /** Turns per step (assistant messages) before the step ends. @default 200 */
  readonly maxTurns?: number;
  /** Cancels the episode; teardown still runs and the result is `error` (`ABORTED`). */
  readonly abortSignal?: AbortSignal;
  /**
   * Judge of a step; by default the step's grader script through an executable judge. Called
   * once per step, in `start()`, before the sandbox exists: each judge's preflight runs then.
   */
  readonly judgeFor?: (step: TaskStep, index: number) => Judge;
  /**
   * Told what the episode is doing as it happens (for a progress display). Called
   * synchronously; what it throws is ignored: it never changes the episode.
   */
  readonly onProgress?: (event: EpisodeProgress) => void;
}

/** What {@link EpisodeOptions.onProgress} is told, in order. */
export type EpisodeProgress =
  | {
      /** Every step's judge passed its preflight (interpreter, program): the sandbox is next. */
      readonly type: 'judges_checked';
      readonly steps: number;
    }
  | { readonly type: 'sandbox_ready'; readonly uid: number; readonly durationMs: number }
  | {
      readonly type: 'tool_call';
      readonly step: number;
      readonly toolCallId: string;
      readonly name: string;
      /** The bash command, or null when the call is not a well-formed bash call. */
      readonly command: string | null;
    }
  | {
      readonly type: 'tool_result';
      readonly step: number;
      readonly toolCallId: string;
      readonly exitCode: number | null;
      readonly timedOut: boolean;
      readonly durationMs: number;
      /** Why the call did not run, or what happened to it (a refusal, a restarted shell). */
      readonly note: string | null;
    }
  | {
      /** Collect-then-grade begins: reap, reclaim, custody of these paths, then the judge. */
      readonly type: 'collect';
      readonly step: number;
      readonly submission: readonly string[];
    }
  | {
      readonly type: 'graded';
      readonly step: number;
      readonly status: Verdict['status'];
      readonly score: number;
      /** Collecting (reap, reclaim, custody) and judging, in milliseconds. */
      readonly collectMs: number;
      readonly judgeMs: number | null;
    };

/** One step's outcome. */
export interface StepOutcome {
  readonly index: number;
  readonly verdict: Verdict;
}

/** The result of an episode: contract section 6, plus the verdict of every step. */
export interface EpisodeResult {
  readonly taskId: string;
  readonly status: 'passed' | 'failed' | 'error';
  readonly score: number;
  readonly misbehavior: readonly { readonly code: string; readonly message: string }[];
  readonly sandbox: { readonly uid: number | null };
  readonly durationMs: number;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly agent: string;
  readonly turns: number;
  readonly wallTimeExceeded: boolean;
  readonly network: Verdict['network'];
  readonly steps: readonly StepOutcome[];
  /** A host or environment fault, when status is `error`. */
  readonly error: { readonly code: EpisodeErrorCode; readonly message: string } | null;
}

type State = 'new' | 'running' | 'finished';

/**
 * One episode of a task, steppable from outside: `start()`, then `step(message)` for every
 * assistant message (its tool calls run in order, observations come back), `endStep()` to
 * collect and grade the current step, and `finish()` for the result. Every defense is on:
 * the sandbox with limits, the network check, collect-then-grade, teardown on every path.
 */
export class Episode {
  private state: State = 'new';
  private transcript: Transcript | undefined;
  private world: StudentWorld | undefined;
  private readonly controller = new AbortController();
  private readonly onAbort = (): void => {
    this.controller.abort();
  };
  private readonly started = Date.now();
  private wallTimer: NodeJS.Timeout | undefined;
  private wallTimeExceeded = false;
  private stepIndex = 0;
  private turnsThisStep = 0;
  private turns = 0;
  private readonly outcomes: StepOutcome[] = [];
  private readonly conversation: Message[] = [];
  private fault: { code: EpisodeErrorCode; message: string } | null = null;
  private readonly recordedFaults = new WeakSet<object>();
  private readonly misbehavior: MisbehaviorRecord[] = [];
  /** Content of the last assistant message of the current step (the judge's final answer). */
  private finalAnswer: string | null = null;
  /** Each step's judge, made once in `start()` (and preflighted there). */
  private readonly judges: Judge[] = [];

  constructor(
    readonly task: Task,
    private readonly options: EpisodeOptions,
  ) {
    if (options.abortSignal?.aborted === true) this.controller.abort();
    options.abortSignal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** The messages so far (system, user instructions, assistant, tool). */
  get messages(): readonly Message[] {
    return this.conversation;
  }

  /** The tools the agent may call. */
  get tools(): readonly ToolSpec[] {
    return EPISODE_TOOLS;
  }

  /** Index of the current step, from 0. */
  get currentStep(): number {
    return this.stepIndex;
  }

  /** True when every step has been graded or the episode ended early. */
  get done(): boolean {
    return this.state === 'finished' || this.stepIndex >= this.task.steps.length;
  }

  /** True when the caller cancelled the episode (its abortSignal, or abort()). */
  get cancelled(): boolean {
    return this.controller.signal.aborted && !this.wallTimeExceeded;
  }

  /** True once the wall-time limit has passed; further tool calls are refused. */
  get overWallTime(): boolean {
    return this.wallTimeExceeded;
  }

  /**
   * Aborts when the episode must stop acting: the caller cancelled it, or its wall-time limit
   * passed. Give it to whatever produces the agent's next message.
   */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Record a fault that happened outside the episode's own calls (the agent failed, the
   * driver crashed): the result becomes `error` with this code, and the transcript gets an
   * `error` event. The first fault recorded is the one reported.
   */
  async fail(error: unknown, phase = 'agent'): Promise<void> {
    await this.recordFault(error, phase);
  }

  /** The student's uid, once the world exists. */
  get uid(): number | undefined {
    return this.world?.uid;
  }

  /**
   * Build the sandbox, run the network check, put the student's files in place and return
   * the conversation (system message and the first step's instructions).
   */
  async start(): Promise<readonly Message[]> {
    if (this.state !== 'new') throw new CoreError('EPISODE_STATE', 'start() was already called');
    this.state = 'running';
    this.transcript = await Transcript.create(
      path.join(this.options.outDir, 'transcript.jsonl'),
      this.started,
    );
    await this.transcript.append('episode_started', {
      taskId: this.task.id,
      steps: this.task.steps.length,
      agent: this.options.agentName ?? 'external',
      limits: this.task.limits,
    });
    // Before the sandbox exists: a judge that cannot run on this host (an interpreter in /tmp
    // or ~/.nvm, a missing grader) would only say so after the whole episode. That is the
    // host's fault, never the student's: status error with the judge's code, nothing run.
    try {
      for (const [index, step] of this.task.steps.entries()) await preflightJudge(this.judgeOf(step, index));
    } catch (error) {
      await this.recordFault(error, 'grader');
      throw error;
    }
    this.progress({ type: 'judges_checked', steps: this.task.steps.length });
    const worldStarted = Date.now();
    const { memoryBytes, pids, diskBytes } = this.task.limits;
    try {
      this.world = await this.options.createWorld({
        task: this.task,
        limits: { memoryBytes, pids, diskBytes },
        abortSignal: this.controller.signal,
      });
    } catch (error) {
      await this.recordFault(error, 'sandbox');
      throw error;
    }
    // The wall time is the student's part: it starts once the world is ready. Started before,
    // a short limit would abort the sandbox's own setup and end a valid task as an error
    // instead of a verdict (a hung setup is bounded by the sandbox's setupTimeoutMs).
    this.wallTimer = setTimeout(() => {
      this.wallTimeExceeded = true;
      this.controller.abort();
    }, this.task.limits.wallTimeMs ?? DEFAULT_EPISODE_WALL_TIME_MS);
    this.wallTimer.unref();
    await this.transcript.append('network_checked', { uid: this.world.uid, network: this.world.network });
    this.progress({ type: 'sandbox_ready', uid: this.world.uid, durationMs: Date.now() - worldStarted });
    this.conversation.push({
      role: 'system',
      content:
        'You are working in a Linux shell as an unprivileged user. Use the bash tool to run commands. When you are done, reply without a tool call.',
    });
    await this.beginStep();
    return this.conversation;
  }

  private async beginStep(): Promise<void> {
    const step = this.task.steps[this.stepIndex]!;
    this.turnsThisStep = 0;
    this.finalAnswer = null;
    const user: Message = { role: 'user', content: step.instructions };
    this.conversation.push(user);
    await this.transcript!.append('step_started', { step: this.stepIndex, submission: step.submission });
    await this.transcript!.append('message', { step: this.stepIndex, message: user });
  }

  /**
   * Record one assistant message and run its tool calls in order, as the student. Returns the
   * observations (also appended to the conversation as `tool` messages). A message without
   * tool calls returns none: the caller then ends the step with {@link endStep}.
   */
  async step(message: AssistantMessage): Promise<ToolObservation[]> {
    this.requireRunning();
    this.turns += 1;
    this.turnsThisStep += 1;
    this.conversation.push(message);
    if (typeof message.content === 'string') this.finalAnswer = message.content;
    await this.transcript!.append('message', { step: this.stepIndex, message });
    const observations: ToolObservation[] = [];
    for (const call of message.tool_calls ?? []) {
      const observation = await this.runTool(call);
      observations.push(observation);
      this.conversation.push({
        role: 'tool',
        tool_call_id: call.id,
        content: renderObservation(observation),
      });
    }
    return observations;
  }

  /** True when the current step may take another turn (turn limit, wall time, abort). */
  get canContinue(): boolean {
    const maxTurns = this.options.maxTurns ?? 200;
    return (
      this.state === 'running' &&
      !this.controller.signal.aborted &&
      this.turnsThisStep < maxTurns &&
      this.stepIndex < this.task.steps.length
    );
  }

  private async runTool(call: ToolCall): Promise<ToolObservation> {
    const started = Date.now();
    await this.transcript!.append('tool_call', { step: this.stepIndex, toolCall: call });
    const args = call.function.name === 'bash' ? parseArguments(call.function.arguments) : undefined;
    this.progress({
      type: 'tool_call',
      step: this.stepIndex,
      toolCallId: call.id,
      name: call.function.name,
      command: args?.command ?? null,
    });
    let observation: ToolObservation;
    if (this.controller.signal.aborted) {
      observation = refusal(
        call,
        this.wallTimeExceeded ? 'the episode is over its wall-time limit' : 'the episode was cancelled',
        started,
      );
    } else if (call.function.name !== 'bash') {
      observation = refusal(
        call,
        `unknown tool ${escapeForDisplay(call.function.name, 64)}; the only tool is bash`,
        started,
      );
    } else {
      if (args === undefined) {
        observation = refusal(
          call,
          'malformed arguments: expected JSON {"command": string, "timeoutMs"?: number}',
          started,
        );
      } else {
        // The one place a command's timeout is set: the task's (bounded like the sandbox's
        // exec()), or the default, and never more for a student who asks for more.
        const cap = this.task.limits.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
        const timeoutMs = Math.min(args.timeoutMs ?? cap, cap);
        let outcome: ShellOutcome;
        try {
          outcome = await this.world!.exec(args.command, {
            timeoutMs,
            abortSignal: this.controller.signal,
          });
        } catch (error) {
          // The world could not run the command (a rebuild that failed: SETUP_FAILED,
          // NETWORK_NOT_ISOLATED): a host fault. Recorded, and the episode stops: status error.
          await this.recordFault(error, 'tool');
          throw error;
        }
        observation = {
          toolCallId: call.id,
          name: 'bash',
          ok: outcome.exitCode === 0 && !outcome.timedOut,
          stdout: outcome.stdout,
          stderr: outcome.stderr,
          exitCode: outcome.exitCode,
          timedOut: outcome.timedOut,
          truncated: outcome.truncated,
          stdoutBytes: outcome.stdoutBytes,
          stderrBytes: outcome.stderrBytes,
          durationMs: outcome.durationMs,
          ...(outcome.note === undefined ? {} : { note: outcome.note }),
        };
      }
    }
    await this.transcript!.append('tool_result', { step: this.stepIndex, result: observation });
    this.progress({
      type: 'tool_result',
      step: this.stepIndex,
      toolCallId: call.id,
      exitCode: observation.exitCode,
      timedOut: observation.timedOut,
      durationMs: observation.durationMs,
      note: observation.note ?? null,
    });
    return observation;
  }

  /**
   * Collect and grade the current step (reap, reclaim, custody, judge), then move to the next
   * step, whose instructions are appended to the conversation. Returns the step's outcome.
   */
  async endStep(): Promise<StepOutcome> {
    this.requireRunning();
    const index = this.stepIndex;
    const step = this.task.steps[index]!;
    const world = this.world!;
    // Reading the limit counters is the only proof of a limit hit: when it fails, grading as
    // if no limit was hit would pass a student the kernel stopped. A host fault, not a verdict.
    let limits: { hits: LimitHit[]; misbehavior: MisbehaviorRecord[] };
    try {
      limits = await world.limitHits();
    } catch (error) {
      await this.recordFault(error, 'limits');
      throw error;
    }
    const limitHits = limits.hits;
    for (const hit of limitHits) await this.transcript!.append('limit_hit', { step: index, hit });
    const misbehavior: MisbehaviorRecord[] = [...limits.misbehavior];
    if (this.wallTimeExceeded) {
      misbehavior.push(
        createMisbehavior(
          'WALL_TIME_LIMIT',
          `the episode ran past its wall-time limit of ${this.task.limits.wallTimeMs ?? DEFAULT_EPISODE_WALL_TIME_MS} ms`,
        ),
      );
    }
    const judge = this.judgeOf(step, index);
    this.progress({ type: 'collect', step: index, submission: step.submission });
    let verdict: Verdict;
    try {
      verdict = await collectAndGrade({
        student: world.handle,
        submission: [...step.submission],
        judge,
        hiddenDir: this.task.hiddenDir ?? null,
        finalAnswer: this.finalAnswer,
        passThreshold: step.passThreshold,
        misbehavior,
        limitHits,
        network: world.network,
        ...(world.collector === undefined ? {} : { collector: world.collector }),
        // Cancelling the episode must not cancel grading: what exists is graded.
      });
    } catch (error) {
      await this.recordFault(error, 'grading');
      throw error;
    }
    const timings = verdict.timings;
    this.progress({
      type: 'graded',
      step: index,
      status: verdict.status,
      score: verdict.score,
      collectMs: Math.round((timings.reapMs ?? 0) + (timings.reclaimMs ?? 0) + (timings.custodyMs ?? 0)),
      judgeMs: timings.judgeMs === null ? null : Math.round(timings.judgeMs),
    });
    const t = this.transcript!;
    if (verdict.reap !== null) await t.append('reaped', { step: index, reap: verdict.reap });
    if (verdict.custody !== null) await t.append('custody', { step: index, custody: verdict.custody });
    await t.append('scored', { step: index, verdict });
    await t.append('step_ended', { step: index, status: verdict.status, score: verdict.score });
    const outcome = { index, verdict };
    this.outcomes.push(outcome);
    for (const m of verdict.misbehavior) this.misbehavior.push(createMisbehaviorCopy(m));
    this.stepIndex += 1;
    if (verdict.status !== 'passed' || this.controller.signal.aborted) {
      // A failed step ends the task: later steps build on it.
      this.stepIndex = this.task.steps.length;
    } else if (this.stepIndex < this.task.steps.length) {
      await this.beginStep();
    }
    return outcome;
  }

  /**
   * Tear down the sandbox, write `result.json` durably and return the result. Safe to call
   * on every path (after an error, an abort, or without `start()` having finished).
   */
  async finish(): Promise<EpisodeResult> {
    if (this.state === 'finished') throw new CoreError('EPISODE_STATE', 'finish() was already called');
    this.state = 'finished';
    this.options.abortSignal?.removeEventListener('abort', this.onAbort);
    if (this.wallTimer !== undefined) clearTimeout(this.wallTimer);
    if (this.world !== undefined) {
      try {
        await this.world.destroy();
      } catch (error) {
        await this.recordFault(error, 'teardown');
      }
    }
    const result = this.result();
    if (this.transcript !== undefined) {
      await this.transcript.append('episode_ended', {
        status: result.status,
        score: result.score,
        durationMs: result.durationMs,
      });
      await this.transcript.close();
    }
    await writeResultFile(
      path.join(this.options.outDir, 'result.json'),
      `${JSON.stringify(result, null, 2)}\n`,
    );
    return result;
  }

  /** Cancel: the running command stops, the step is graded on what exists. */
  abort(): void {
    this.controller.abort();
  }

  private result(): EpisodeResult {
    const finished = Date.now();
    const last = this.outcomes.at(-1);
    let status: EpisodeResult['status'];
    let score = 0;
    let error = this.fault;
    if (
      error === null &&
      this.controller.signal.aborted &&
      !this.wallTimeExceeded &&
      this.outcomes.length < this.task.steps.length
    ) {
      error = { code: 'ABORTED', message: 'the episode was cancelled before every step was graded' };
    }
    if (error === null && last?.verdict.status === 'error' && last.verdict.error !== null) {
      const code = last.verdict.error.code;
      error = { code: isEpisodeErrorCode(code) ? code : 'INTERNAL', message: last.verdict.error.message };
    }
    if (error !== null) status = 'error';
    else if (last === undefined) {
      status = 'error';
      error = { code: 'NOT_GRADED', message: 'the episode ended before any step was graded' };
    } else {
      const allPassed =
        this.outcomes.length === this.task.steps.length &&
        this.outcomes.every((o) => o.verdict.status === 'passed');
      status = allPassed ? 'passed' : 'failed';
      score = last.verdict.score;
      if (this.outcomes.length < this.task.steps.length) score = 0;
    }
    return {
      taskId: this.task.id,
      status,
      score: status === 'error' ? 0 : score,
      misbehavior: this.misbehavior.map((m) => ({
        code: m.code,
        message: m.message,
        ...(m.path === undefined ? {} : { path: m.path }),
      })),
      sandbox: { uid: this.world?.uid ?? null },
      durationMs: finished - this.started,
      startedAt: new Date(this.started).toISOString(),
      finishedAt: new Date(finished).toISOString(),
      agent: this.options.agentName ?? 'external',
      turns: this.turns,
      wallTimeExceeded: this.wallTimeExceeded,
      network: this.world?.network ?? null,
      steps: this.outcomes,
      error,
    };
  }

  /** The step's judge, chosen once (the caller's `judgeFor`, else the one the task resolved when it loaded). */
  private judgeOf(step: TaskStep, index: number): Judge {
    this.judges[index] ??= this.options.judgeFor?.(step, index) ?? step.judge;
    return this.judges[index];
  }

  private progress(event: EpisodeProgress): void {
    try {
      this.options.onProgress?.(event);
    } catch {
      // A progress display that fails changes nothing about the episode.
    }
  }

  private requireRunning(): void {
    if (this.state !== 'running' || this.world === undefined) {
      throw new CoreError(
        'EPISODE_STATE',
        `the episode is ${this.state === 'new' ? 'not started' : 'finished'}`,
      );
    }
  }

  private async recordFault(error: unknown, phase: string): Promise<void> {
    // An error recorded where it happened and again by the driver it reached is one fault.
    if (typeof error === 'object' && error !== null) {
      if (this.recordedFaults.has(error)) return;
      this.recordedFaults.add(error);
    }
    const code =
      KarotteError.isInstance(error) && isEpisodeErrorCode(error.code)
        ? error.code
        : phase === 'agent'
          ? 'AGENT_FAILED'
          : 'INTERNAL';
    // A Karotte error of a code outside the closed set (a caller's own class) keeps it in the message.
    const foreign = KarotteError.isInstance(error) && error.code !== code ? `${error.code}: ` : '';
    const message = escapeForDisplay(
      `${phase}: ${foreign}${error instanceof Error ? error.message : String(error)}`,
      4096,
    );
    this.fault ??= { code, message };
    await this.transcript?.append('error', { phase, code, message }).catch(() => undefined);
  }
}

function parseArguments(text: string): z.infer<typeof bashArgumentsSchema> | undefined {
  let data: unknown;
  try {
    // eslint-disable-next-line no-restricted-syntax -- bounded by the message schema; validated next
    data = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = bashArgumentsSchema.safeParse(data);
  return parsed.success ? parsed.data : undefined;
}

function refusal(call: ToolCall, note: string, started: number): ToolObservation {
  return {
    toolCallId: call.id,
    name: escapeForDisplay(call.function.name, 64),
    ok: false,
    stdout: '',
    stderr: '',
    exitCode: null,
    timedOut: false,
    truncated: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    durationMs: Date.now() - started,
    note,
  };
}

/** Create an episode (see {@link Episode}); call `start()` next. */
export function createEpisode(task: Task, options: EpisodeOptions): Episode {
  return new Episode(task, options);
}

/**
 * Run a whole episode with `agent`: start, let the agent act until it stops calling tools
 * (or the turn or wall-time limit), collect and grade each step, tear down. Teardown and
 * `result.json` happen on every path; a host fault gives status `error`.
 */
export async function runEpisode(
  task: Task,
  agent: Agent,
  options: Omit<EpisodeOptions, 'agentName'>,
): Promise<EpisodeResult> {
  const episode = createEpisode(task, { ...options, agentName: agent.name });
  let phase = 'start';
  try {
    await episode.start();
    while (!episode.done) {
      while (episode.canContinue) {
        phase = 'agent';
        // The agent gets the episode's signal (cancel or wall time), and an agent that does
        // not honour it is not waited for: the wall-time limit bounds the agent too.
        const message = await untilAborted(
          agent.next(episode.messages, episode.tools, { abortSignal: episode.signal }),
          episode.signal,
        );
        if (message === undefined) break;
        phase = 'step';
        const observations = await episode.step(message);
        if ((message.tool_calls ?? []).length === 0 && observations.length === 0) break;
      }
      // Cancelled by the caller (not the wall-time limit): tear down without grading.
      if (episode.cancelled) break;
      phase = 'grading';
      await episode.endStep();
    }
  } catch (error) {
    // The episode's own calls record their faults; this records the rest (the agent threw).
    // The first fault recorded wins, so nothing is reported twice.
    await episode.fail(error, phase);
  }
  return episode.finish();
}

/** `promise`'s value, or undefined as soon as `signal` aborts (the promise is left to settle). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.resolve(undefined);
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const onAbort = (): void => {
      resolve(undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error instanceof Error ? error : new CoreError('AGENT_FAILED', String(error)));
      },
    );
  });
}

function createMisbehaviorCopy(m: Verdict['misbehavior'][number]): MisbehaviorRecord {
  return m.path === undefined
    ? { code: m.code, message: m.message }
    : { code: m.code, message: m.message, path: m.path };
}
