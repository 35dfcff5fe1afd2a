import fs from 'node:fs/promises';
import path from 'node:path';
import { toSystemError } from '@karotte/base';

/** Every kind of event the transcript records, in the order an episode produces them. */
export const TRANSCRIPT_EVENT_TYPES = [
  'episode_started',
  'network_checked',
  'step_started',
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
 * An append-only JSONL transcript. Each event is one `write` of one complete line, so a
 * harness killed mid-run leaves a valid transcript up to its last event; `sync()` makes what
 * was written durable (fsync of the file, and of its directory when the file was created).
 */
export class Transcript {
  private seq = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  private constructor(
    private readonly handle: fs.FileHandle,
    readonly file: string,
    private readonly startedAt: number,
  ) {}

  /** Create (or truncate) `file` and fsync its directory so the file itself survives a crash. */
  static async create(file: string, startedAt = Date.now()): Promise<Transcript> {
    try {
      await fs.mkdir(path.dirname(file), { recursive: true });
      const handle = await fs.open(file, 'w', 0o644);
      await syncDir(path.dirname(file));
      return new Transcript(handle, file, startedAt);
    } catch (error) {
      throw toSystemError(error, `cannot create the transcript ${file}`);
    }
  }

  /** Append one event. Appends are serialised; the returned promise settles when written. */
  append(type: TranscriptEventType, fields: Record<string, unknown> = {}): Promise<TranscriptEvent> {
    const now = Date.now();
    const event: TranscriptEvent = {
      ...fields,
      type,
      seq: this.seq,
      time: new Date(now).toISOString(),
      elapsedMs: now - this.startedAt,
    };
    this.seq += 1;
    const line = `${JSON.stringify(event)}\n`;
    const write = this.chain.then(async () => {
      if (this.closed) return;
      await this.handle.write(line);
    });
    this.chain = write.catch(() => undefined);
    return write.then(() => event);
  }

  /** Wait for every pending append, then fsync the file. */
  async sync(): Promise<void> {
    await this.chain;
    if (!this.closed) await this.handle.sync();
  }

  /** Sync and close. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.sync();
    this.closed = true;
    await this.handle.close();
  }
}

/** Write `data` to `file` durably: a temporary file, fsync, rename over, fsync the directory. */
export async function writeFileDurably(file: string, data: string): Promise<void> {
  const dir = path.dirname(file);
  const temporary = path.join(dir, `.${path.basename(file)}.${process.pid}.${Date.now()}.tmp`);
  try {
    await fs.mkdir(dir, { recursive: true });
    const handle = await fs.open(temporary, 'wx', 0o644);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temporary, file);
    await syncDir(dir);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw toSystemError(error, `cannot write ${file}`);
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
