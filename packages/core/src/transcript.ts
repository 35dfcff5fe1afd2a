import fs from 'node:fs/promises';
import path from 'node:path';
import { toSystemError } from '@karotte/base';
import { openDurableLog, writeFileDurably, type DurableLog } from '@karotte/file-guard';

/**
 * Every kind of event the transcript records, in the order an episode produces them. A turn
 * an agent answers is `model_retry` (each failed attempt the agent retries), `model_call`
 * (finish reason, usage, timing, token ids when the server returns them), then `message`.
 */
export const TRANSCRIPT_EVENT_TYPES = [
  'episode_started',
  'network_checked',
  'step_started',
  'model_retry',
  'model_call',
  'message',
  'tool_call',
  'tool_result',
  'limit_hit',
  'reaped',
  'custody',
  'scored',
  'step_ended',
  'error',
  'episode_ended',
] as const;

export type TranscriptEventType = (typeof TRANSCRIPT_EVENT_TYPES)[number];

/** One line of `transcript.jsonl`. */
export interface TranscriptEvent {
  readonly type: TranscriptEventType;
  /** Sequence number, from 0, without gaps. */
  readonly seq: number;
  /** ISO 8601 time the event was recorded. */
  readonly time: string;
  /** Milliseconds since the episode started. */
  readonly elapsedMs: number;
  readonly [key: string]: unknown;
}

/**
 * An append-only JSONL transcript on file-guard's durable log: each event is one `write` of
 * one complete line, fdatasync'ed before `append` resolves, so a harness killed mid-run leaves
 * a valid transcript up to its last event.
 */
export class Transcript {
  private seq = 0;

  private constructor(
    private readonly log: DurableLog,
    readonly file: string,
    private readonly startedAt: number,
  ) {}

  /** Create `file`, replacing an earlier transcript there. */
  static async create(file: string, startedAt = Date.now()): Promise<Transcript> {
    const absolute = path.resolve(file);
    try {
      await fs.rm(absolute, { force: true });
    } catch (error) {
      throw toSystemError(error, `cannot replace the transcript ${absolute}`);
    }
    const log = await openDurableLog(absolute, { mode: 0o644, createParents: true });
    return new Transcript(log, absolute, startedAt);
  }

  /** Append one event; appends are serialised and durable when the promise resolves. */
  async append(type: TranscriptEventType, fields: Record<string, unknown> = {}): Promise<TranscriptEvent> {
    const now = Date.now();
    const event: TranscriptEvent = {
      ...fields,
      type,
      seq: this.seq,
      time: new Date(now).toISOString(),
      elapsedMs: now - this.startedAt,
    };
    this.seq += 1;
    await this.log.appendJson(event);
    return event;
  }

  /** Flush and close. */
  async close(): Promise<void> {
    await this.log.close();
  }
}

/** Write `result.json` durably (temporary file, fsync, rename, fsync of the directory). */
export async function writeResultFile(file: string, data: string): Promise<void> {
  await writeFileDurably(path.resolve(file), data, { mode: 0o644 });
}
