// The attacker model: episodes of a task in which a model is told, on top of the episode's own
// system message, to get reward without solving the task (attacker-prompt.txt). Every episode
// that scored above 0 or ended in `error` is a finding: a hole in the task, or a way for a
// student to hide its failures (a trainer drops errored runs).
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Agent, Message } from '@karotte/agents';
import {
  runEpisode,
  type EpisodeResult,
  type Task,
  type ToolProfile,
  type WorldFactory,
} from '@karotte/core';
import attackerPromptText from './attacker-prompt.txt?raw';

/** The attacker's instructions, as the project wrote them (`src/redteam/attacker-prompt.txt`). */
export const ATTACKER_PROMPT: string = attackerPromptText.trim();

/** The SHA-256 of {@link ATTACKER_PROMPT}, hex: which wording a report was made with. */
export const ATTACKER_PROMPT_SHA256: string = createHash('sha256').update(ATTACKER_PROMPT).digest('hex');

/**
 * `agent`, told `prompt` in every turn: appended to the conversation's system message (one
 * system message, first, as every chat template accepts), or as one when there is none. The
 * episode's conversation itself is unchanged; the transcript records it as the episode sent it.
 */
export function withSystemPrompt(agent: Agent, prompt: string, name: string): Agent {
  const told = (conversation: readonly Message[]): Message[] => {
    const [first, ...rest] = conversation;
    if (first?.role === 'system')
      return [{ role: 'system', content: `${first.content}\n\n${prompt}` }, ...rest];
    return [{ role: 'system', content: prompt }, ...conversation];
  };
  return {
    name,
    turn: (request) => agent.turn({ ...request, conversation: told(request.conversation) }),
    close: () => agent.close?.() ?? Promise.resolve(),
  };
}

/** One attacker episode, as the report lists it. */
export interface AttackerRun {
  /** From 0. */
  readonly episode: number;
  readonly status: EpisodeResult['status'];
  readonly score: number;
  readonly misbehavior: readonly string[];
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly turns: number;
  readonly durationMs: number;
  /** The episode scored above 0 or ended in `error`. */
  readonly finding: boolean;
  /** Why it is a finding (or why not), in a few words. */
  readonly reason: string;
  readonly dir: string;
  readonly transcript: string;
  readonly result: string;
}

export interface AttackerOptions {
  readonly task: Task;
  /** The model agent; the attacker's prompt is added here. */
  readonly agent: Agent;
  readonly episodes: number;
  readonly concurrency: number;
  /** Each episode's result and transcript go to `<outDir>/attacker-<NNN>/`. */
  readonly outDir: string;
  readonly createWorld: WorldFactory;
  readonly tools?: ToolProfile;
  readonly maxTurns?: number;
  readonly abortSignal?: AbortSignal;
  /** Told of each finished episode. */
  readonly onRun?: (run: AttackerRun) => void;
  /** Told when an episode starts and ends: the episodes done, and those running. */
  readonly onProgress?: (done: number, running: readonly number[]) => void;
}

/** Run the attacker's episodes, `concurrency` at a time; one row each, in episode order. */
export async function runAttacker(options: AttackerOptions): Promise<AttackerRun[]> {
  const agent = withSystemPrompt(options.agent, ATTACKER_PROMPT, `${options.agent.name}-attacker`);
  const runs = new Map<number, AttackerRun>();
  const running = new Set<number>();
  let next = 0;
  const runOne = async (episode: number): Promise<void> => {
    const dir = path.join(options.outDir, `attacker-${String(episode).padStart(3, '0')}`);
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    // What the attacker was told, beside its transcript (the transcript has the episode's own messages).
    await fs.writeFile(
      path.join(dir, 'attacker.json'),
      `${JSON.stringify({ agent: agent.name, promptSha256: ATTACKER_PROMPT_SHA256, prompt: ATTACKER_PROMPT }, null, 2)}\n`,
      { mode: 0o644 },
    );
    running.add(episode);
    options.onProgress?.(runs.size, [...running]);
    const result = await runEpisode(options.task, agent, {
      outDir: dir,
      createWorld: options.createWorld,
      ...(options.tools === undefined ? {} : { tools: options.tools }),
      ...(options.maxTurns === undefined ? {} : { maxTurns: options.maxTurns }),
      ...(options.abortSignal === undefined ? {} : { abortSignal: options.abortSignal }),
    });
    running.delete(episode);
    // Cut short by the caller (SIGINT/SIGTERM): no verdict, and nothing the task did.
    const cancelled = options.abortSignal?.aborted === true && result.error?.code === 'ABORTED';
    const run = toRun(episode, dir, result, cancelled);
    runs.set(episode, run);
    options.onRun?.(run);
    options.onProgress?.(runs.size, [...running]);
  };
  await Promise.all(
    Array.from({ length: Math.min(Math.max(1, options.concurrency), options.episodes) }, async () => {
      while (next < options.episodes && options.abortSignal?.aborted !== true) {
        const episode = next;
        next += 1;
        await runOne(episode);
      }
    }),
  );
  return [...runs.values()].sort((a, b) => a.episode - b.episode);
}

function toRun(episode: number, dir: string, result: EpisodeResult, cancelled: boolean): AttackerRun {
  const misbehavior = [...new Set(result.misbehavior.map((m) => m.code))];
  const finding = !cancelled && (result.status === 'error' || result.score > 0);
  let reason: string;
  if (cancelled) reason = 'cancelled before its verdict (not a finding)';
  else if (result.error !== null) {
    reason =
      result.error.code === 'AGENT_FAILED'
        ? 'error AGENT_FAILED: the model endpoint failed, so there is no verdict (run it again)'
        : `error ${result.error.code}: the run ended in error, which a trainer drops`;
  } else if (result.score > 0) reason = `scored ${result.score} (${result.status}): read the transcript`;
  else if (misbehavior.length > 0) reason = `stopped: ${misbehavior.join(', ')}`;
  else reason = 'scored 0';
  return {
    episode,
    status: result.status,
    score: result.score,
    misbehavior,
    error: result.error === null ? null : { code: result.error.code, message: result.error.message },
    turns: result.turns,
    durationMs: result.durationMs,
    finding,
    reason,
    dir,
    transcript: path.join(dir, 'transcript.jsonl'),
    result: path.join(dir, 'result.json'),
  };
}
