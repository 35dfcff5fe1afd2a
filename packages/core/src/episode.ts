import { createHash } from 'node:crypto';
import path from 'node:path';
import { createMisbehavior, escapeForDisplay, KarotteError, type MisbehaviorRecord } from '@karotte/base';
import {
  AgentError,
  type RetryNotice,
  type TurnRequest,
  type TurnResponse,
  type TurnTokens,
  type TurnUsage,
} from '@karotte/agents';
import {
  collectAndGrade,
  preflightJudge,
  prepareJudge,
  type Judge,
  type LimitHit,
  type PreparedJudge,
  type Verdict,
} from '@karotte/grader';
import {
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_EPISODE_WALL_TIME_MS,
  type StudentLimitOptions,
} from '@karotte/limits';
import { toTurnAgent, type Agent } from './agent.js';
import { CoreError, isEpisodeErrorCode, type EpisodeErrorCode } from './errors.js';
import {
  renderObservation,
  type AssistantMessage,
  type ContentPart,
  type Message,
  type ToolCall,
  type ToolObservation,
  type ToolSpec,
} from './messages.js';
import type { Task, TaskStep } from './task.js';
import { bashArgumentsSchema, bashProfile } from './tools/bash.js';
import type { ToolContentPart, ToolProfile, ToolRunResult } from './tools/profile.js';
import { Transcript, writeResultFile } from './transcript.js';
import type { StudentWorld } from './world.js';

export { EPISODE_TOOLS } from './tools/bash.js';

/**
 * Empty turns in a row (no text and no tool call: a `length` cut, or reasoning only) that get
 * a nudge; one more ends the step as `failed` (`EMPTY_TURN_LIMIT`).
 */
export const MAX_CONSECUTIVE_EMPTY_TURNS = 3;

/** The user message an empty turn gets. */
export const EMPTY_TURN_NUDGE =
  'Your last turn produced no message and no tool call. Pick up where you left off: call a tool, or answer if you are done. Do not apologize or recap.';

/** What replaces the arguments of a tool call that are not valid JSON, in the conversation. */
export const MALFORMED_ARGUMENTS_PLACEHOLDER = '{"_error": "malformed JSON in original arguments"}';

/** Why a step stopped taking turns. */
export type StepStopReason =
  /** The model answered without a tool call (its final answer). */
  | 'no_tool_calls'
  /** The provider's content filter cut the answer. */
  | 'content_filter'
  /** More than {@link MAX_CONSECUTIVE_EMPTY_TURNS} empty turns in a row. */
  | 'empty_turn_limit'
  /** The step's turns ran out (`maxTurns`). */
  | 'turn_limit'
  /** The episode's wall time ran out. */
  | 'wall_time'
  /** The episode was cancelled. */
  | 'cancelled';

/** What {@link Episode.turn} did with one turn. */
export interface TurnOutcome {
  /** The tool calls' observations, in order (none for a turn without tool calls). */
  readonly observations: ToolObservation[];
  /** True when the step takes no more turns: call `endStep()` next. */
  readonly stepEnded: boolean;
  /** Why the step ended, when it did. */
  readonly stopReason: StepStopReason | null;
  /** True when the turn was empty and a nudge was added to the conversation. */
  readonly nudged: boolean;
}

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

/** Makes a judge ahead (`prepareJudge` of `@karotte/grader`, or a judge pool's `prepare`). */
export type JudgePreparer = (
  judge: Judge,
  options: { readonly abortSignal: AbortSignal },
) => Promise<PreparedJudge | null>;

export interface EpisodeOptions {
  /** Directory for `transcript.jsonl` and `result.json`; created when missing. */
  readonly outDir: string;
  /** Builds the student's world (the sandbox). */
  readonly createWorld: WorldFactory;
  /** Name of the agent, for the transcript. @default 'external' */
  readonly agentName?: string;
  /** Turns per step (assistant messages) before the step ends. @default 200 */
  readonly maxTurns?: number;
  /**
   * The tools offered to the model and how their calls run (`bash`: the contract's one tool;
   * other profiles offer the schemas models were trained on). @default the `bash` profile
   */
  readonly tools?: ToolProfile;
  /** Cancels the episode; teardown still runs and the result is `error` (`ABORTED`). */
  readonly abortSignal?: AbortSignal;
  /**
   * Judge of a step; by default the step's grader script through an executable judge. Called
   * once per step, in `start()`, before the sandbox exists: each judge's preflight runs then.
   */
  readonly judgeFor?: (step: TaskStep, index: number) => Judge;
  /**
   * How a step's judge is made ahead, so its setup (the executable judge's grader world)
   * overlaps the student's turns instead of following them: by default `prepareJudge` of
   * `@karotte/grader`, started with the step; a {@link SandboxWorldPool}'s `prepareJudge` hands
   * out one made before the episode. Null: nothing is made ahead.
   */
  readonly prepareJudge?: JudgePreparer | null;
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
      /** The model answered a turn (after any retries). */
      readonly type: 'model_call';
      readonly step: number;
      /** The turn's number in the episode, from 1. */
      readonly turn: number;
      readonly finishReason: TurnResponse['finishReason'];
      readonly usage: TurnUsage | null;
      readonly modelMs: number;
      readonly retryWaitMs: number;
      /** Tool calls in the answer. */
      readonly toolCalls: number;
    }
  | {
      /** A model call failed and the agent retries it after `waitMs`. */
      readonly type: 'model_retry';
      readonly step: number;
      readonly attempt: number;
      readonly httpStatus: number | null;
      readonly waitMs: number;
      readonly message: string;
    }
  | {
      readonly type: 'tool_call';
      readonly step: number;
      readonly toolCallId: string;
      readonly name: string;
      /**
       * The command the call runs (its `command`, or its `commands` joined by `; `), or null
       * when it has none (a file tool, malformed arguments; with the `bash` profile: a call that
       * is not a well-formed bash call).
       */
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
  /**
   * A host or environment fault, when status is `error`; `httpStatus` is the last HTTP status
   * of a model endpoint that kept failing (`AGENT_FAILED`), when it answered at all.
   */
  readonly error: EpisodeError | null;
}

/** The fault of an episode that ended in `error`. */
export interface EpisodeError {
  readonly code: EpisodeErrorCode;
  readonly message: string;
  readonly httpStatus?: number;
}

type State = 'new' | 'running' | 'finished';

/** A tool call's arguments as parsed from the model's JSON text, or a marker that they were not JSON. */
type ParsedArguments = { readonly ok: true; readonly value: unknown } | { readonly ok: false };

/**
 * One episode of a task, steppable from outside: `start()`, then `step(message)` for every
 * assistant message (its tool calls run in order, observations come back) or `turn(response)`
 * for every answer of an agent (the same, plus the loop's rules: empty turns are nudged, a
 * content filter ends the step), `endStep()` to collect and grade the current step, and
 * `finish()` for the result. Every defense is on: the sandbox with limits, the network check,
 * collect-then-grade, teardown on every path.
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
  /** When the wall time runs out (epoch ms): pushed back by the retry waits agents report. */
  private wallDeadline = 0;
  private wallTimeExceeded = false;
  private stepIndex = 0;
  private turnsThisStep = 0;
  private turns = 0;
  private emptyTurnsInARow = 0;
  private emptyTurnLimitHit = false;
  private stopReason: StepStopReason | null = null;
  private readonly outcomes: StepOutcome[] = [];
  private readonly conversation: Message[] = [];
  private fault: EpisodeError | null = null;
  private readonly recordedFaults = new WeakSet<object>();
  private readonly misbehavior: MisbehaviorRecord[] = [];
  /** Content of the last assistant message of the current step (the judge's final answer). */
  private finalAnswer: string | null = null;
  /** Each step's judge, made once in `start()` (and preflighted there). */
  private readonly judges: Judge[] = [];
  /**
   * A step's judge made ahead (its grader's world and copies of the program started while the
   * student works): resolves to null when the judge has nothing to prepare or its preparation
   * failed (the judge then sets up when it grades, and reports that fault itself).
   */
  private prepared: { readonly step: number; readonly judge: Promise<PreparedJudge | null> } | undefined;
  private readonly preparing = new AbortController();
  private readonly profile: ToolProfile;
  /** Transcript lines written from a synchronous callback (retry notices), awaited before the next. */
  private pendingAppends: Promise<unknown>[] = [];

  constructor(
    readonly task: Task,
    private readonly options: EpisodeOptions,
  ) {
    this.profile = options.tools ?? bashProfile;
    if (options.abortSignal?.aborted === true) this.controller.abort();
    options.abortSignal?.addEventListener('abort', this.onAbort, { once: true });
  }

  /** The messages so far (system, user instructions, assistant, tool). */
  get messages(): readonly Message[] {
    return this.conversation;
  }

  /** The tools the agent may call (the tool profile's). */
  get tools(): readonly ToolSpec[] {
    return this.profile.tools;
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
  get abortSignal(): AbortSignal {
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
      tools: this.profile.name,
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
    this.prepareJudge(0);
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
    this.wallDeadline = Date.now() + (this.task.limits.wallTimeMs ?? DEFAULT_EPISODE_WALL_TIME_MS);
    this.armWallTimer();
    await this.transcript.append('network_checked', { uid: this.world.uid, network: this.world.network });
    this.progress({ type: 'sandbox_ready', uid: this.world.uid, durationMs: Date.now() - worldStarted });
    this.conversation.push({ role: 'system', content: systemPrompt(this.profile.tools) });
    await this.beginStep();
    return this.conversation;
  }

  private armWallTimer(): void {
    if (this.wallTimer !== undefined) clearTimeout(this.wallTimer);
    this.wallTimer = setTimeout(
      () => {
        this.wallTimeExceeded = true;
        this.controller.abort();
      },
      Math.max(0, this.wallDeadline - Date.now()),
    );
    this.wallTimer.unref();
  }

  /**
   * Do not charge `ms` to the student's wall time: time lost outside the student (a model
   * endpoint's failed attempts and the waits before retrying them). `runEpisode` calls it for
   * every retry an agent reports; a driver that waits on its own retries may too. No effect
   * once the wall time has run out.
   */
  excludeFromWallTime(ms: number): void {
    if (this.wallTimer === undefined || this.wallTimeExceeded || this.state !== 'running') return;
    if (!Number.isFinite(ms) || ms <= 0) return;
    this.wallDeadline += ms;
    this.armWallTimer();
  }

  private async beginStep(): Promise<void> {
    const step = this.task.steps[this.stepIndex]!;
    this.prepareJudge(this.stepIndex);
    this.turnsThisStep = 0;
    this.emptyTurnsInARow = 0;
    this.emptyTurnLimitHit = false;
    this.stopReason = null;
    this.finalAnswer = null;
    const user: Message = { role: 'user', content: step.instructions };
    this.conversation.push(user);
    await this.transcript!.append('step_started', { step: this.stepIndex, submission: step.submission });
    await this.transcript!.append('message', { step: this.stepIndex, message: user });
  }

  /**
   * What an agent is asked for the next turn: the conversation, the tools, the budgets left
   * (turns of this step, wall time), the episode's signal, and a retry listener that records
   * each retry and keeps its wait off the wall time. Hand it to `agent.turn()`, then give the
   * answer to {@link turn}.
   */
  turnRequest(): TurnRequest {
    const maxTurns = this.options.maxTurns ?? 200;
    return {
      conversation: [...this.conversation],
      tools: this.profile.tools,
      remaining: {
        turns: Math.max(0, maxTurns - this.turnsThisStep),
        timeMs: Math.max(0, this.wallDeadline - Date.now()),
      },
      turnIndex: this.turns,
      abortSignal: this.controller.signal,
      onRetry: (notice) => {
        this.onRetry(notice);
      },
    };
  }

  private onRetry(notice: RetryNotice): void {
    if (this.state !== 'running') return;
    this.excludeFromWallTime(notice.attemptMs + notice.waitMs);
    const message = escapeForDisplay(notice.message, 2000);
    // Called synchronously by the agent: the line is written in order and awaited before the
    // turn's own events.
    this.pendingAppends.push(
      this.transcript!.append('model_retry', {
        step: this.stepIndex,
        turn: this.turns + 1,
        attempt: notice.attempt,
        kind: notice.kind,
        httpStatus: notice.httpStatus,
        attemptMs: notice.attemptMs,
        waitMs: notice.waitMs,
        message,
      }).catch(() => undefined),
    );
    this.progress({
      type: 'model_retry',
      step: this.stepIndex,
      attempt: notice.attempt,
      httpStatus: notice.httpStatus,
      waitMs: notice.waitMs,
      message,
    });
  }

  private async flushPendingAppends(): Promise<void> {
    const pending = this.pendingAppends;
    this.pendingAppends = [];
    await Promise.all(pending);
  }

  /**
   * Take one turn an agent answered, as the loop of `runEpisode` does: record the model call
   * (usage, finish reason, timing, token ids when present), then
   * - a `content_filter` finish ends the step (its tool calls are answered as not run);
   * - a message without tool calls ends the step, unless it is an empty turn (no text, and a
   *   `length` cut or reasoning only): that gets a nudge, and more than
   *   {@link MAX_CONSECUTIVE_EMPTY_TURNS} in a row end the step as `failed`
   *   (`EMPTY_TURN_LIMIT`, the model's failure, not `error`);
   * - otherwise the tool calls run in order, as in {@link step}.
   */
  async turn(response: TurnResponse): Promise<TurnOutcome> {
    this.requireRunning();
    await this.flushPendingAppends();
    const message = response.message;
    const calls = message.tool_calls ?? [];
    const hasText = typeof message.content === 'string' && message.content.trim() !== '';
    const hasReasoning =
      typeof message.reasoning_content === 'string' && message.reasoning_content.trim() !== '';
    const empty = calls.length === 0 && !hasText && (response.finishReason === 'length' || hasReasoning);
    await this.transcript!.append('model_call', {
      step: this.stepIndex,
      turn: this.turns + 1,
      agent: this.options.agentName ?? 'external',
      finishReason: response.finishReason,
      ...(response.providerFinishReason === undefined
        ? {}
        : { providerFinishReason: response.providerFinishReason }),
      usage: response.usage ?? null,
      timing: { modelMs: response.timing.modelMs, retryWaitMs: response.timing.retryWaitMs },
      attempts: response.attempts ?? 1,
      ...(response.model === undefined ? {} : { model: response.model }),
      ...(response.requestId === undefined ? {} : { requestId: response.requestId }),
      ...(response.tokens === undefined ? {} : { tokens: copyTokens(response.tokens) }),
      toolCalls: calls.length,
      empty,
    });
    this.progress({
      type: 'model_call',
      step: this.stepIndex,
      turn: this.turns + 1,
      finishReason: response.finishReason,
      usage: response.usage ?? null,
      modelMs: response.timing.modelMs,
      retryWaitMs: response.timing.retryWaitMs,
      toolCalls: calls.length,
    });
    if (response.finishReason === 'content_filter') {
      const observations = await this.applyMessage(message, {
        refuseCalls: "the provider's content filter cut the answer; the step ends",
        finalAnswer: hasText,
      });
      return this.endTurns(observations, 'content_filter');
    }
    if (empty) {
      await this.applyMessage(message, { finalAnswer: false });
      this.emptyTurnsInARow += 1;
      if (this.emptyTurnsInARow > MAX_CONSECUTIVE_EMPTY_TURNS) {
        this.emptyTurnLimitHit = true;
        return this.endTurns([], 'empty_turn_limit');
      }
      const nudge: Message = { role: 'user', content: EMPTY_TURN_NUDGE };
      this.conversation.push(nudge);
      await this.transcript!.append('message', { step: this.stepIndex, message: nudge, nudge: true });
      return { observations: [], stepEnded: false, stopReason: null, nudged: true };
    }
    this.emptyTurnsInARow = 0;
    const observations = await this.applyMessage(message, { finalAnswer: true });
    if (calls.length === 0) return this.endTurns(observations, 'no_tool_calls');
    return { observations, stepEnded: false, stopReason: null, nudged: false };
  }

  private endTurns(observations: ToolObservation[], reason: StepStopReason): TurnOutcome {
    this.stopReason = reason;
    return { observations, stepEnded: true, stopReason: reason, nudged: false };
  }

  /**
   * Record one assistant message and run its tool calls in order, as the student. Returns the
   * observations (also appended to the conversation as `tool` messages). A message without
   * tool calls returns none: the caller then ends the step with {@link endStep}. Arguments
   * that are not valid JSON are answered with an error result and replaced in the conversation
   * by `{"_error": "malformed JSON in original arguments"}`, so later model calls are not
   * refused for them; an unknown tool gets an error result.
   */
  async step(message: AssistantMessage): Promise<ToolObservation[]> {
    this.requireRunning();
    return this.applyMessage(message, { finalAnswer: true });
  }

  private async applyMessage(
    message: AssistantMessage,
    options: { readonly finalAnswer: boolean; readonly refuseCalls?: string },
  ): Promise<ToolObservation[]> {
    this.turns += 1;
    this.turnsThisStep += 1;
    const calls = message.tool_calls ?? [];
    const parsed = calls.map((call) => parseArguments(call.function.arguments));
    // The conversation (what later model calls send) keeps valid JSON only: a provider that
    // parses the history refuses every later request for one malformed argument string.
    const recorded: AssistantMessage = parsed.some((p) => !p.ok)
      ? {
          ...message,
          tool_calls: calls.map((call, i) =>
            parsed[i]!.ok
              ? call
              : { ...call, function: { ...call.function, arguments: MALFORMED_ARGUMENTS_PLACEHOLDER } },
          ),
        }
      : message;
    this.conversation.push(recorded);
    if (options.finalAnswer && typeof message.content === 'string') this.finalAnswer = message.content;
    // The model's reasoning is kept beside the message, so a `message` of the transcript is
    // always a replay message (contract section 5: strict, without `reasoning_content`).
    const { reasoning_content: reasoning, ...replayable } = recorded;
    await this.transcript!.append('message', {
      step: this.stepIndex,
      message: replayable,
      ...(typeof reasoning === 'string' && reasoning !== '' ? { reasoning } : {}),
    });
    const observations: ToolObservation[] = [];
    for (const [i, call] of calls.entries()) {
      const { observation, content } = await this.runTool(call, parsed[i]!, options.refuseCalls);
      observations.push(observation);
      this.conversation.push({ role: 'tool', tool_call_id: call.id, content: toolMessageContent(content) });
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

  private async runTool(
    call: ToolCall,
    args: ParsedArguments,
    refuse: string | undefined,
  ): Promise<{ observation: ToolObservation; content: readonly ToolContentPart[] }> {
    const started = Date.now();
    await this.transcript!.append('tool_call', { step: this.stepIndex, toolCall: call });
    this.progress({
      type: 'tool_call',
      step: this.stepIndex,
      toolCallId: call.id,
      name: call.function.name,
      command: this.commandOf(call.function.name, args),
    });
    const names = this.profile.tools.map((tool) => tool.name);
    let note: string | undefined;
    if (refuse !== undefined) note = refuse;
    else if (this.controller.signal.aborted) {
      note = this.wallTimeExceeded ? 'the episode is over its wall-time limit' : 'the episode was cancelled';
    } else if (!names.includes(call.function.name)) {
      const offered =
        names.length === 1 ? `the only tool is ${names[0]!}` : `the tools are ${names.join(', ')}`;
      note = `unknown tool ${escapeForDisplay(call.function.name, 64)}; ${offered}`;
    } else if (!args.ok) {
      note =
        this.profile === bashProfile
          ? 'malformed arguments: expected JSON {"command": string, "timeoutMs"?: number}'
          : 'malformed arguments: not valid JSON; the call was not run';
    }
    let observation: ToolObservation;
    let content: readonly ToolContentPart[];
    if (note !== undefined) {
      observation = refusal(call, note, started);
      content = [{ type: 'text', text: renderObservation(observation) }];
    } else {
      let result: ToolRunResult;
      try {
        result = await this.profile.call(
          { id: call.id, name: call.function.name, arguments: (args as { value: unknown }).value },
          {
            world: this.world!,
            commandTimeoutMs: this.task.limits.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
            abortSignal: this.controller.signal,
          },
        );
      } catch (error) {
        // The world could not run the call (a rebuild that failed: SETUP_FAILED,
        // NETWORK_NOT_ISOLATED): a host fault. Recorded, and the episode stops: status error.
        await this.recordFault(error, 'tool');
        throw error;
      }
      observation = observationOf(call, result);
      content = result.content;
    }
    // The transcript keeps the observation as it always was; the content the model saw is
    // added when it is more than the observation's rendering (a file tool's text, an image,
    // whose bytes are replaced by their size and digest).
    const rendered = renderObservation(observation);
    const plain = content.length === 1 && content[0]!.type === 'text' && content[0]!.text === rendered;
    await this.transcript!.append('tool_result', {
      step: this.stepIndex,
      result: observation,
      ...(plain ? {} : { content: content.map(contentForTranscript) }),
    });
    this.progress({
      type: 'tool_result',
      step: this.stepIndex,
      toolCallId: call.id,
      exitCode: observation.exitCode,
      timedOut: observation.timedOut,
      durationMs: observation.durationMs,
      note: observation.note ?? null,
    });
    return { observation, content };
  }

  /** The command a call runs, for the progress display. */
  private commandOf(name: string, args: ParsedArguments): string | null {
    if (!args.ok) return null;
    if (this.profile === bashProfile) {
      if (name !== 'bash') return null;
      const parsed = bashArgumentsSchema.safeParse(args.value);
      return parsed.success ? parsed.data.command : null;
    }
    const value = args.value;
    if (typeof value !== 'object' || value === null) return null;
    const { command, commands } = value as { command?: unknown; commands?: unknown };
    if (typeof command === 'string') return command;
    if (Array.isArray(commands) && commands.every((c) => typeof c === 'string')) return commands.join('; ');
    return null;
  }

  /**
   * Collect and grade the current step (reap, reclaim, custody, judge), then move to the next
   * step, whose instructions are appended to the conversation. Returns the step's outcome.
   */
  async endStep(): Promise<StepOutcome> {
    this.requireRunning();
    await this.flushPendingAppends();
    const index = this.stepIndex;
    const step = this.task.steps[index]!;
    const world = this.world!;
    const stopReason = this.stopReasonOfStep();
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
    if (this.emptyTurnLimitHit) {
      misbehavior.push(
        createMisbehavior(
          'EMPTY_TURN_LIMIT',
          `the model answered ${MAX_CONSECUTIVE_EMPTY_TURNS + 1} turns in a row with no text and no tool call (a length cut or reasoning only), each of the first ${MAX_CONSECUTIVE_EMPTY_TURNS} nudged; the step ended`,
        ),
      );
    }
    // The judge made ahead may still be on its way: awaited when the judge is due, so its
    // setup overlaps the reap and custody too.
    const preparing = this.takePreparedJudge(index);
    const judge = preparedOrPlain(preparing, this.judgeOf(step, index));
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
    } finally {
      await (await preparing)?.dispose();
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
    await t.append('step_ended', { step: index, status: verdict.status, score: verdict.score, stopReason });
    const outcome = { index, verdict };
    this.outcomes.push(outcome);
    for (const m of verdict.misbehavior) this.misbehavior.push(copyMisbehavior(m));
    this.stepIndex += 1;
    if (verdict.status !== 'passed' || this.controller.signal.aborted) {
      // A failed step ends the task: later steps build on it.
      this.stepIndex = this.task.steps.length;
    } else if (this.stepIndex < this.task.steps.length) {
      await this.beginStep();
    }
    return outcome;
  }

  /** Why the current step stopped taking turns: what the last turn said, else the limit that stopped it. */
  private stopReasonOfStep(): StepStopReason | null {
    if (this.stopReason !== null) return this.stopReason;
    if (this.wallTimeExceeded) return 'wall_time';
    if (this.controller.signal.aborted) return 'cancelled';
    if (this.turnsThisStep >= (this.options.maxTurns ?? 200)) return 'turn_limit';
    return null;
  }

  /**
   * Tear down the sandbox, write `result.json` durably and return the result. Safe to call
   * on every path (after an error, an abort, or without `start()` having finished).
   */
  async finish(): Promise<EpisodeResult> {
    if (this.state === 'finished') throw new CoreError('EPISODE_STATE', 'finish() was already called');
    await this.flushPendingAppends();
    this.state = 'finished';
    this.options.abortSignal?.removeEventListener('abort', this.onAbort);
    if (this.wallTimer !== undefined) clearTimeout(this.wallTimer);
    this.preparing.abort();
    await (await this.takePreparedJudge(null))?.dispose();
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

  /** Start making step `index`'s judge ahead (once per step; see {@link prepared}). */
  private prepareJudge(index: number): void {
    if (this.prepared?.step === index || index >= this.task.steps.length) return;
    const prepare = this.options.prepareJudge === undefined ? prepareJudge : this.options.prepareJudge;
    if (prepare === null) return;
    const judge = this.judgeOf(this.task.steps[index]!, index);
    this.prepared = {
      step: index,
      judge: prepare(judge, { abortSignal: this.preparing.signal }).catch(() => null),
    };
  }

  /**
   * The judge made ahead for step `index` (any step: null), now the caller's to dispose; null
   * when there is none. One made for another step is released.
   */
  private async takePreparedJudge(index: number | null): Promise<PreparedJudge | null> {
    const prepared = this.prepared;
    this.prepared = undefined;
    if (prepared === undefined) return null;
    const judge = await prepared.judge;
    if (index === null || prepared.step === index) return judge;
    await judge?.dispose();
    return null;
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
    // A model endpoint that kept failing says with which status (a trainer tells a 429 storm
    // from a 500 or a wrong URL by it).
    const httpStatus =
      AgentError.isInstance(error) && error.httpStatus !== null ? error.httpStatus : undefined;
    this.fault ??= { code, message, ...(httpStatus === undefined ? {} : { httpStatus }) };
    await this.transcript
      ?.append('error', { phase, code, message, ...(httpStatus === undefined ? {} : { httpStatus }) })
      .catch(() => undefined);
  }
}

/** The system message: how to act, with the profile's tools named. */
function systemPrompt(tools: readonly ToolSpec[]): string {
  const names = tools.map((tool) => tool.name);
  const use =
    names.length === 1 && names[0] === 'bash'
      ? 'Use the bash tool to run commands.'
      : `Use the tools (${names.join(', ')}) to run commands and work with files.`;
  return `You are working in a Linux shell as an unprivileged user. ${use} When you are done, reply without a tool call.`;
}

function parseArguments(text: string): ParsedArguments {
  try {
    // eslint-disable-next-line no-restricted-syntax -- bounded by the message schema; the profile validates the value
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
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

/** A profile's result as the observation the transcript and the progress display know. */
function observationOf(call: ToolCall, result: ToolRunResult): ToolObservation {
  const shell = result.shell;
  const note = result.note ?? shell?.note;
  return {
    toolCallId: call.id,
    name: escapeForDisplay(call.function.name, 64),
    ok: result.ok,
    stdout: shell?.stdout ?? '',
    stderr: shell?.stderr ?? '',
    exitCode: shell?.exitCode ?? null,
    timedOut: shell?.timedOut ?? false,
    truncated: shell?.truncated ?? false,
    stdoutBytes: shell?.stdoutBytes ?? 0,
    stderrBytes: shell?.stderrBytes ?? 0,
    durationMs: shell?.durationMs ?? result.durationMs,
    ...(note === undefined ? {} : { note }),
  };
}

/** A tool result as a tool message's content: its text when that is all, else its parts. */
function toolMessageContent(content: readonly ToolContentPart[]): string | readonly ContentPart[] {
  if (content.length === 1 && content[0]!.type === 'text') return content[0]!.text;
  return content;
}

/** A content part for the transcript: an image's bytes become their size and SHA-256. */
function contentForTranscript(part: ToolContentPart): Record<string, unknown> {
  if (part.type === 'text') return { type: 'text', text: part.text };
  return {
    type: 'image',
    mediaType: part.mediaType,
    bytes: Buffer.byteLength(part.dataBase64, 'base64'),
    sha256: createHash('sha256').update(Buffer.from(part.dataBase64, 'base64')).digest('hex'),
  };
}

function copyTokens(tokens: TurnTokens): TurnTokens {
  return {
    ...(tokens.promptIds === undefined ? {} : { promptIds: tokens.promptIds }),
    completionIds: tokens.completionIds,
    ...(tokens.logprobs === undefined ? {} : { logprobs: tokens.logprobs }),
  };
}

/** Create an episode (see {@link Episode}); call `start()` next. */
export function createEpisode(task: Task, options: EpisodeOptions): Episode {
  return new Episode(task, options);
}

/**
 * Run a whole episode with `agent`: start, ask the agent for turns until it stops calling
 * tools (or the turn or wall-time limit, a content filter, too many empty turns), collect and
 * grade each step, tear down. Teardown and `result.json` happen on every path; a host fault
 * (a model endpoint that stays down included: `AGENT_FAILED`) gives status `error`.
 */
export async function runEpisode(
  task: Task,
  agent: Agent,
  options: Omit<EpisodeOptions, 'agentName'>,
): Promise<EpisodeResult> {
  const driver = toTurnAgent(agent);
  const episode = createEpisode(task, { ...options, agentName: driver.name });
  let phase = 'start';
  try {
    await episode.start();
    while (!episode.done) {
      while (episode.canContinue) {
        phase = 'agent';
        // The agent gets the episode's signal (cancel or wall time), and an agent that does
        // not honour it is not waited for: the wall-time limit bounds the agent too.
        const response = await untilAborted(driver.turn(episode.turnRequest()), episode.abortSignal);
        if (response === undefined) break;
        phase = 'step';
        const outcome = await episode.turn(response);
        if (outcome.stepEnded) break;
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

function copyMisbehavior(m: Verdict['misbehavior'][number]): MisbehaviorRecord {
  return m.path === undefined
    ? { code: m.code, message: m.message }
    : { code: m.code, message: m.message, path: m.path };
}

/**
 * A judge that evaluates the prepared one once it is ready, or `plain` when there is none
 * (its preflight and name are `plain`'s). Disposing the prepared one stays the caller's.
 */
function preparedOrPlain(prepared: Promise<PreparedJudge | null>, plain: Judge): Judge {
  return {
    kind: plain.kind,
    name: plain.name,
    evaluate: async (context) => ((await prepared) ?? plain).evaluate(context),
  };
}
