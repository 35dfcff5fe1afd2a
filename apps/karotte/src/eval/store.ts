// Where `karotte eval` keeps its runs, and what it reads back: `<out>/<task-id>/<NNN>/` holds
// one episode's result.json and transcript.jsonl (NNN the episode's number from 000), and
// `<out>/eval.json` the settings the runs were made with. An episode is done when its
// result.json is there and whole (core writes it last, by an atomic rename); a directory
// without one is an interrupted episode, removed and run again.
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import readline from 'node:readline';
import { z } from 'zod';
import { parseJsonStrict, readJsonFile } from '@karotte/base';
import { CoreError, loadTask, type Task } from '@karotte/core';
import { NO_USAGE, type EpisodeRecord, type TokenUsage } from './summary.js';

/** The most episodes of one task an eval runs (`--n`). */
export const MAX_EPISODES_PER_TASK = 1000;

/** The largest result.json read back, in bytes (a result holds every step's verdict). */
const MAX_RESULT_BYTES = 64 * 1024 * 1024;

/** The longest transcript line read back for its usage, in characters (model_call events are small). */
const MAX_USAGE_LINE_CHARS = 4 * 1024 * 1024;

/** The directory of episode `index` (from 0) of task `taskId`. */
export function episodeDir(outDir: string, taskId: string, index: number): string {
  return path.join(outDir, taskId, String(index).padStart(3, '0'));
}

/** A task directory that could not be loaded: its path and what is wrong (the field named). */
export interface InvalidTask {
  readonly dir: string;
  readonly message: string;
}

/**
 * The tasks of `dir`: every subdirectory holding a `task.json` (in name order; a link to a task
 * directory counts, so a suite can be a directory of links), or `dir` itself when it is a task
 * directory. Each is loaded and checked as `run` checks one.
 */
export async function discoverTasks(
  dir: string,
): Promise<{ readonly tasks: Task[]; readonly invalid: InvalidTask[] }> {
  const root = path.resolve(dir);
  let entries: string[];
  try {
    entries = (await fs.readdir(root)).sort();
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      tasks: [],
      invalid: [
        { dir: root, message: `cannot be read (${typeof code === 'string' ? code : String(error)})` },
      ],
    };
  }
  const candidates: string[] = [];
  if (await isFile(path.join(root, 'task.json'))) candidates.push(root);
  for (const name of entries) {
    if (await isFile(path.join(root, name, 'task.json'))) candidates.push(path.join(root, name));
  }
  const tasks: Task[] = [];
  const invalid: InvalidTask[] = [];
  for (const candidate of candidates) {
    try {
      tasks.push(await loadTask(candidate));
    } catch (error) {
      if (!(CoreError.isInstance(error) && error.kind === 'bad_argument')) throw error;
      invalid.push({
        dir: candidate,
        message: `${error.field === undefined ? '' : `(field ${error.field}) `}${error.message}`,
      });
    }
  }
  const seen = new Map<string, string>();
  for (const task of tasks) {
    const other = seen.get(task.id);
    if (other !== undefined) {
      invalid.push({
        dir: task.dir ?? '',
        message: `(field id) the id ${task.id} is also the id of ${other}`,
      });
    }
    seen.set(task.id, task.dir ?? '');
  }
  return { tasks, invalid };
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await fs.stat(file)).isFile();
  } catch {
    return false;
  }
}

/** The part of result.json (contract section 6) the summary reads; the rest is kept as it is. */
const resultSchema = z
  .object({
    taskId: z.string(),
    status: z.enum(['passed', 'failed', 'error']),
    score: z.number().min(0).max(1),
    misbehavior: z.array(z.object({ code: z.string(), message: z.string() }).loose()),
    durationMs: z.number().nonnegative(),
    turns: z.number().int().nonnegative().optional(),
    error: z.object({ code: z.string() }).loose().nullable().optional(),
  })
  .loose();

/** What an episode directory holds: a whole result, or nothing usable (never run, or interrupted). */
export type EpisodeState =
  | { readonly kind: 'done'; readonly record: EpisodeRecord }
  | { readonly kind: 'missing' }
  | { readonly kind: 'partial'; readonly reason: string };

/** Read back episode `dir` of task `taskId`. */
export async function readEpisode(dir: string, taskId: string): Promise<EpisodeState> {
  try {
    await fs.lstat(dir);
  } catch {
    return { kind: 'missing' };
  }
  const file = path.join(dir, 'result.json');
  const read = await readJsonFile(file, {
    maxBytes: MAX_RESULT_BYTES,
    schema: resultSchema,
    what: 'result.json',
  });
  if (!read.ok)
    return { kind: 'partial', reason: read.refusal === 'missing' ? 'no result.json' : read.message };
  const result = read.value;
  if (result.taskId !== taskId) {
    return { kind: 'partial', reason: `result.json is of task ${result.taskId}, not ${taskId}` };
  }
  return {
    kind: 'done',
    record: {
      status: result.status,
      score: result.status === 'error' ? 0 : result.score,
      misbehavior: result.misbehavior.map((m) => m.code),
      errorCode: result.status === 'error' ? (result.error?.code ?? 'UNKNOWN') : null,
      durationMs: result.durationMs,
      turns: result.turns ?? 0,
      usage: await readUsage(path.join(dir, 'transcript.jsonl')),
    },
  };
}

const modelCallSchema = z
  .object({
    type: z.literal('model_call'),
    usage: z
      .object({
        inputTokens: z.number().nonnegative(),
        outputTokens: z.number().nonnegative(),
        cachedInputTokens: z.number().nonnegative().optional(),
        reasoningTokens: z.number().nonnegative().optional(),
      })
      .loose()
      .nullable(),
  })
  .loose();

/** The model usage of a transcript: the `usage` of every `model_call` event, summed. */
export async function readUsage(transcript: string): Promise<TokenUsage> {
  let usage = { ...NO_USAGE };
  try {
    await fs.access(transcript);
  } catch {
    return usage;
  }
  const stream = createReadStream(transcript, { encoding: 'utf8' });
  const lines = readline.createInterface({ input: stream, crlfDelay: Infinity });
  try {
    for await (const line of lines) {
      // Only model_call lines are parsed (a tool result's text holds that word only escaped).
      if (!line.includes('"type":"model_call"') || line.length > MAX_USAGE_LINE_CHARS) continue;
      const parsed = parseJsonStrict(line, { maxDepth: 64, maxStringLength: MAX_USAGE_LINE_CHARS });
      if (!parsed.ok) continue;
      const event = modelCallSchema.safeParse(parsed.value);
      if (!event.success) continue;
      const u = event.data.usage;
      usage = {
        inputTokens: usage.inputTokens + (u?.inputTokens ?? 0),
        outputTokens: usage.outputTokens + (u?.outputTokens ?? 0),
        cachedInputTokens: usage.cachedInputTokens + (u?.cachedInputTokens ?? 0),
        reasoningTokens: usage.reasoningTokens + (u?.reasoningTokens ?? 0),
        calls: usage.calls + 1,
      };
    }
  } finally {
    lines.close();
    stream.destroy();
  }
  return usage;
}

/** The settings an eval's runs were made with; a second invocation must match them. */
const evalSettingsSchema = z
  .object({
    agent: z.enum(['openai', 'replay']),
    model: z.string().nullable(),
    baseUrl: z.string().nullable(),
    tools: z.string(),
    maxTurns: z.number().int().nullable(),
    replay: z.string().nullable(),
  })
  .strict();
export type EvalSettings = z.infer<typeof evalSettingsSchema>;

const evalFileSchema = z.object({ version: z.literal(1), settings: evalSettingsSchema }).loose();

/**
 * The flag of each setting that a resumed eval must keep, for the refusal of a mismatched
 * `--out`. The base URL is recorded but may change (a server restarted on another port serves
 * the same model).
 */
const SETTING_FLAGS: Readonly<Partial<Record<keyof EvalSettings, string>>> = {
  agent: '--agent',
  model: '--model',
  tools: '--tools',
  maxTurns: '--max-turns',
  replay: '--replay',
};

/**
 * Check `settings` against those `<out>/eval.json` records, or record them when it has none.
 * Returns null when they agree (or were recorded), else the mismatch as a sentence naming the flag.
 */
export async function reconcileSettings(outDir: string, settings: EvalSettings): Promise<string | null> {
  const file = path.join(outDir, 'eval.json');
  const read = await readJsonFile(file, { maxBytes: 1024 * 1024, schema: evalFileSchema, what: 'eval.json' });
  if (read.ok) {
    for (const key of Object.keys(SETTING_FLAGS) as (keyof EvalSettings)[]) {
      if (read.value.settings[key] !== settings[key]) {
        return `${SETTING_FLAGS[key]!}: ${outDir} holds an eval made with ${key} ${JSON.stringify(read.value.settings[key])}, not ${JSON.stringify(settings[key])}; give another --out (or the same settings to resume it)`;
      }
    }
    return null;
  }
  if (read.refusal !== 'missing') return `--out: ${file} is not an eval's record (${read.message})`;
  await writeJsonAtomically(file, { version: 1, settings });
  return null;
}

/** Write `value` as JSON to `file` by a rename, so a reader sees the old file or the new one whole. */
export async function writeJsonAtomically(file: string, value: unknown): Promise<void> {
  const temp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temp, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o644 });
  await fs.rename(temp, file);
}
