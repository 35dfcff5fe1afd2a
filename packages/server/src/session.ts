// One served episode: the core Episode it drives, its stored turn answers (exactly once per
// turnId), its event log (resumable by sequence number), its idle clock and its result.
import { createHash } from 'node:crypto';
import { createOpenAIAgent, type Agent, type OpenAIAgentOptions, type TurnResponse } from '@karotte/agents';
import type {
  AssistantMessage,
  Episode,
  EpisodeProgress,
  EpisodeResult,
  Message,
  ToolSpec,
} from '@karotte/core';
import { HttpProblem } from './http.js';
import type { RunRequestBody, ServedResult, TurnAnswer, TurnRequestBody } from './schemas.js';
import { version } from './version.js';

/** The most events an episode keeps; older ones are dropped (a resume before them is told so). */
export const MAX_EVENTS_PER_EPISODE = 10_000;

/** One event of an episode's stream. */
export interface ServedEvent {
  readonly seq: number;
  readonly time: string;
  readonly type: string;
  readonly data: Readonly<Record<string, unknown>>;
}

interface StoredTurn {
  /** Digest of the turn's message: a repeat with another message is a conflict. */
  readonly key: string;
  readonly answer: Promise<TurnAnswer>;
}

interface RolloutTurn {
  readonly index: number;
  readonly finishReason: string;
  readonly usage: Record<string, unknown> | null;
  readonly tokens: Record<string, unknown> | null;
  readonly modelMs: number;
}

export interface SessionInit {
  readonly id: string;
  readonly groupId: string | null;
  readonly taskId: string;
  readonly steps: number;
  readonly seed: number;
  readonly worldFingerprint: string;
}

/** A chat-completions tool spec (`{"type": "function", "function": {…}}`). */
export function chatTool(tool: ToolSpec): {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
} {
  return {
    type: 'function',
    function: {
      name: tool.name,
      description: tool.description,
      parameters: tool.parameters,
    },
  };
}

export class Session {
  episode: Episode | undefined;
  private readonly turns = new Map<string, StoredTurn>();
  private queue: Promise<unknown> = Promise.resolve();
  private turnCount = 0;
  /** True when the episode takes no more turns. */
  private ended = false;
  /** True when a turn hit a host fault (recorded by the episode): finish does not grade. */
  private faulted = false;
  private running = 0;
  private finishing: Promise<ServedResult> | undefined;
  private readonly turnLog: Record<string, unknown>[] = [];
  private readonly events: ServedEvent[] = [];
  private nextSeq = 0;
  private readonly listeners = new Set<(event: ServedEvent | null) => void>();
  lastTouchedMs = Date.now();
  finished = false;
  /** The OpenEnv connection driving the episode now, if any (one at a time). */
  driver: object | undefined;
  /**
   * When the OpenEnv connection that drove it broke (epoch ms): the episode waits that long
   * plus the reconnect grace for a reset with its episodeId, then is cancelled and torn down.
   */
  detachedSinceMs: number | undefined;

  constructor(readonly init: SessionInit) {}

  get id(): string {
    return this.init.id;
  }

  /** True while a request works on the episode: the idle clock does not run. */
  get busy(): boolean {
    return this.running > 0;
  }

  touch(): void {
    this.lastTouchedMs = Date.now();
  }

  /** True when the episode takes no more turns (done, finishing or finished). */
  get isDone(): boolean {
    return this.ended || this.finished || this.finishing !== undefined;
  }

  /** Turns taken so far (OpenEnv's `step_count`). */
  get turnsTaken(): number {
    return this.turnCount;
  }

  /** What is left of the current step's budgets: turns and wall time. */
  remaining(): { turns: number; timeMs: number } | null {
    const episode = this.episode;
    if (episode === undefined || this.finished || this.ended) return null;
    const { turns, timeMs } = episode.turnRequest().remaining;
    return { turns, timeMs };
  }

  /** The episode's progress as events (give it to the episode's `onProgress`). */
  onProgress = (event: EpisodeProgress): void => {
    const { type, ...data } = event;
    this.emit(type, data);
  };

  emit(type: string, data: Record<string, unknown>): void {
    const event: ServedEvent = { seq: this.nextSeq++, time: new Date().toISOString(), type, data };
    this.events.push(event);
    if (this.events.length > MAX_EVENTS_PER_EPISODE) this.events.shift();
    for (const listener of this.listeners) listener(event);
  }

  /** Events from `from` on, and whether some before the first kept one were dropped. */
  eventsFrom(from: number): { events: readonly ServedEvent[]; dropped: boolean } {
    const first = this.events[0]?.seq ?? this.nextSeq;
    return { events: this.events.filter((e) => e.seq >= from), dropped: from < first };
  }

  /** Listen to new events; `null` means the stream has ended. Returns the unsubscribe. */
  subscribe(listener: (event: ServedEvent | null) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private endStream(): void {
    for (const listener of [...this.listeners]) listener(null);
    this.listeners.clear();
  }

  /** Work on the episode one request at a time, in arrival order. */
  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    this.running += 1;
    const next = this.queue.then(work).finally(() => {
      this.running -= 1;
      this.touch();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** The stored answer of `turnId`, when it was sent. */
  storedTurn(turnId: string): Promise<TurnAnswer> | undefined {
    return this.turns.get(turnId)?.answer;
  }

  /**
   * Take one turn exactly once: a `turnId` seen before returns its stored answer (the same
   * message) or is a 409 (another message); a new one runs after the turns before it. The
   * turn runs to its end whether or not the client stays connected.
   */
  turn(body: TurnRequestBody): Promise<TurnAnswer> {
    this.touch();
    const key = createHash('sha256').update(JSON.stringify(body.message)).digest('hex');
    const stored = this.turns.get(body.turnId);
    if (stored !== undefined) {
      if (stored.key !== key) {
        return Promise.reject(
          new HttpProblem(
            409,
            'TURN_CONFLICT',
            `turn ${body.turnId} was already sent with another message`,
            'turnId',
          ),
        );
      }
      return stored.answer;
    }
    if (this.finished || this.finishing !== undefined) {
      return Promise.reject(
        new HttpProblem(409, 'EPISODE_FINISHED', 'the episode is finished: it takes no more turns'),
      );
    }
    const answer = this.enqueue(() => this.runTurn(body));
    // A client that went away never reads it; the answer stays stored for a repeat.
    answer.catch(() => undefined);
    this.turns.set(body.turnId, { key, answer });
    return answer;
  }

  private async runTurn(body: TurnRequestBody): Promise<TurnAnswer> {
    const episode = this.episode!;
    if (this.ended || this.finishing !== undefined) {
      throw new HttpProblem(409, 'EPISODE_DONE', 'the episode needs no more turns: call finish');
    }
    const index = this.turnCount++;
    const message = body.message as AssistantMessage;
    const calls = message.tool_calls ?? [];
    const before = episode.messages.length;
    const response: TurnResponse = {
      message,
      finishReason: calls.length > 0 ? 'tool_calls' : 'stop',
      timing: { modelMs: 0, retryWaitMs: 0 },
      ...(body.tokens === undefined
        ? {}
        : {
            tokens: {
              completionIds: body.tokens.completionIds,
              ...(body.tokens.promptIds === undefined ? {} : { promptIds: body.tokens.promptIds }),
              ...(body.tokens.logprobs === undefined ? {} : { logprobs: body.tokens.logprobs }),
            },
          }),
    };
    this.turnLog.push({
      index,
      turnId: body.turnId,
      toolCalls: calls.length,
      ...(body.policyVersion === undefined ? {} : { policyVersion: body.policyVersion }),
      ...(body.tokens === undefined ? {} : { tokens: body.tokens }),
    });
    const answer = await this.applyTurn(episode, response, before);
    const full = { turnId: body.turnId, turnIndex: index, ...answer };
    this.emit('turn', {
      turnId: body.turnId,
      turnIndex: index,
      toolMessages: full.toolMessages.length,
      done: full.done,
    });
    return full;
  }

  /** Give `response` to the episode; grade a step that ended when another follows. */
  private async applyTurn(
    episode: Episode,
    response: TurnResponse,
    before: number,
  ): Promise<Omit<TurnAnswer, 'turnId' | 'turnIndex'>> {
    let stepEnded: boolean;
    let stopReason: string | null;
    try {
      const outcome = await episode.turn(response);
      stepEnded = outcome.stepEnded || !episode.canContinue;
      stopReason = outcome.stopReason ?? (stepEnded ? 'limit' : null);
    } catch {
      // A host fault (the episode recorded it): no more turns, finish reports `error`.
      this.faulted = true;
      stepEnded = true;
      stopReason = 'error';
    }
    const afterTools = episode.messages.length;
    const toolMessages = episode.messages
      .slice(before, afterTools)
      .filter((m): m is Extract<Message, { role: 'tool' }> => m.role === 'tool')
      .map((m) => ({
        role: 'tool' as const,
        tool_call_id: m.tool_call_id,
        content: m.content as TurnAnswer['toolMessages'][number]['content'],
      }));
    let nextMessages: Message[] = [];
    if (stepEnded && !this.faulted) {
      const last = episode.currentStep >= this.init.steps - 1;
      if (!last && !episode.cancelled) {
        try {
          await episode.endStep();
        } catch {
          this.faulted = true;
        }
        if (!episode.done && !this.faulted) nextMessages = episode.messages.slice(afterTools);
      }
    }
    const done = this.faulted || (stepEnded && nextMessages.length === 0);
    if (done) this.ended = true;
    return {
      toolMessages,
      stepEnded,
      done,
      nextMessages: nextMessages as TurnAnswer['nextMessages'],
      stopReason,
    };
  }

  /**
   * Run mode: the server drives the model itself (an OpenAI-compatible endpoint, through
   * `@karotte/agents`) until the episode is done, then finishes it. Only on an episode that has
   * taken no turn yet.
   */
  async run(
    body: RunRequestBody,
  ): Promise<{ result: ServedResult; messages: readonly Message[]; turns: RolloutTurn[] }> {
    this.touch();
    if (this.turnCount > 0 || this.finished || this.finishing !== undefined || this.running > 0) {
      throw new HttpProblem(409, 'EPISODE_NOT_FRESH', 'run mode needs an episode that has taken no turn yet');
    }
    this.turnCount = 1;
    const spec = body.agent;
    let agent: Agent;
    try {
      agent = await createOpenAIAgent({
        model: spec.model,
        baseURL: spec.baseUrl,
        ...(spec.apiKeyEnv === undefined ? {} : { apiKeyEnv: spec.apiKeyEnv }),
        ...(spec.sampling === undefined ? {} : { sampling: spec.sampling }),
        // The body was parsed from JSON text: every value in it is JSON.
        ...(spec.extraBody === undefined
          ? {}
          : { extraBody: spec.extraBody as OpenAIAgentOptions['extraBody'] & object }),
      });
    } catch (error) {
      this.turnCount = 0;
      throw new HttpProblem(
        400,
        'INVALID_AGENT',
        error instanceof Error ? error.message : String(error),
        'agent',
      );
    }
    const turns: RolloutTurn[] = [];
    await this.enqueue(async () => {
      const episode = this.episode!;
      try {
        while (!episode.done) {
          while (episode.canContinue) {
            const response = await agent.turn(episode.turnRequest());
            turns.push({
              index: turns.length,
              finishReason: response.finishReason,
              usage: (response.usage as Record<string, unknown> | undefined) ?? null,
              tokens: (response.tokens as Record<string, unknown> | undefined) ?? null,
              modelMs: response.timing.modelMs,
            });
            this.turnLog.push({
              index: turns.length - 1,
              finishReason: response.finishReason,
              ...(response.tokens === undefined ? {} : { tokens: response.tokens }),
            });
            const outcome = await episode.turn(response);
            this.emit('turn', {
              turnIndex: turns.length - 1,
              toolMessages: (response.message.tool_calls ?? []).length,
              done: outcome.stepEnded,
            });
            if (outcome.stepEnded) break;
          }
          if (episode.cancelled) break;
          await episode.endStep();
        }
      } catch (error) {
        await episode.fail(error, 'agent');
        this.faulted = true;
      } finally {
        this.ended = true;
        await agent.close?.();
      }
    });
    const result = await this.finish();
    return { result, messages: this.episode!.messages, turns };
  }

  /** Grade what exists (once), tear down, and return the result; the same result when repeated. */
  finish(): Promise<ServedResult> {
    this.touch();
    this.finishing ??= this.enqueue(async () => {
      const episode = this.episode!;
      if (!episode.done && !episode.cancelled && !this.faulted) {
        try {
          await episode.endStep();
        } catch {
          // Recorded by the episode: the result is `error`.
        }
      }
      const result = await episode.finish();
      const served = this.served(result);
      this.finished = true;
      this.emit('episode_finished', { status: served.status, reward: served.reward, blame: served.blame });
      this.endStream();
      return served;
    });
    return this.finishing;
  }

  /** Cancel: the running command stops, nothing more is graded, the world is torn down. */
  cancel(): Promise<ServedResult> {
    this.episode?.abort();
    return this.finish();
  }

  private served(result: EpisodeResult): ServedResult {
    const blame = result.status === 'error' ? 'infra' : result.misbehavior.length > 0 ? 'student' : 'none';
    return {
      ...result,
      misbehavior: result.misbehavior.map((m) => ({ ...m })),
      // Contract section 9: a number always (an `error` scores 0); `blame` and `trainable` mask it.
      reward: result.score,
      episodeId: this.init.id,
      groupId: this.init.groupId,
      seed: this.init.seed,
      worldFingerprint: this.init.worldFingerprint,
      blame,
      trainable: blame !== 'infra',
      attestation: {
        steps: result.steps.map(({ index, verdict }) => ({
          step: index,
          submissionSha256:
            verdict.custody === null || verdict.custody.dir === null
              ? null
              : `sha256:${createHash('sha256')
                  .update(
                    JSON.stringify(verdict.custody.entries.map((e) => [e.path, e.type, e.bytes, e.sha256])),
                  )
                  .digest('hex')}`,
          reaper:
            verdict.reap === null
              ? null
              : {
                  confirmed: verdict.reap.confirmed,
                  mechanism: verdict.reap.mechanism,
                  survivors: [...verdict.reap.survivors],
                },
          reclaimed: verdict.reclaim?.ok ?? null,
          grader:
            verdict.judge === null
              ? null
              : {
                  exitCode: verdict.graderFailure?.exitCode ?? (verdict.judge.status === 'scored' ? 0 : null),
                  status: verdict.judge.status,
                  confinement: verdict.confinement?.level ?? null,
                  durationMs: verdict.judge.durationMs,
                },
        })),
        network:
          result.network === null
            ? null
            : { checked: result.network.checked, isolated: result.network.isolated },
        karotteServer: version,
      },
      turnLog: this.turnLog,
    };
  }
}
