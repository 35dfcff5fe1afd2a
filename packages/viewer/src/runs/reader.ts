import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { parseJsonStrict, parseOptions, readBounded, type JsonValue } from '@karotte/base';
import { z } from 'zod';
import { ViewerError } from '../errors.js';
import {
  CLIPPED_KEY,
  type AttackOutcome,
  type EventPage,
  type RunDetail,
  type RunList,
  type RunStatus,
  type RunSummary,
  type RunValue,
} from './model.js';

const MiB = 1024 * 1024;

/** Options of {@link createRunCatalog}: strict, so a misspelled key fails instead of vanishing. */
export const runCatalogOptionsSchema = z
  .object({
    /** The directories to show: each a run directory, or a tree of them (a red-team `--out`). */
    dirs: z.array(z.string().min(1)).min(1).max(256),
    /**
     * Largest result.json read, in bytes; a bigger one is listed as unreadable.
     * @default 16777216
     */
    maxResultBytes: z
      .number()
      .int()
      .positive()
      .max(1024 * MiB)
      .default(16 * MiB),
    /**
     * Most bytes of a transcript.jsonl read; past it the rest is left out and the run says so.
     * @default 67108864
     */
    maxTranscriptBytes: z
      .number()
      .int()
      .positive()
      .max(1024 * MiB)
      .default(64 * MiB),
    /**
     * Longest string kept whole, in UTF-16 code units; a longer one keeps its head and says how much it left out.
     * @default 65536
     */
    maxStringChars: z
      .number()
      .int()
      .min(64)
      .max(16 * MiB)
      .default(64 * 1024),
    /**
     * How deep under a given directory runs are looked for.
     * @default 6
     */
    maxDepth: z.number().int().min(0).max(32).default(6),
    /**
     * Most runs listed; past it the list says it stopped.
     * @default 20000
     */
    maxRuns: z.number().int().positive().max(1_000_000).default(20_000),
    /**
     * Known red-team attacks by id: a run whose directory is named by one (as `redteam --out`
     * names them; `control` is the control) gets its class, expected and actual outcome.
     * @default {}
     */
    attacks: z
      .record(
        z.string().min(1),
        z.object({ class: z.string().min(1), expected: z.array(z.string().min(1)).nullable() }).strict(),
      )
      .default({}),
  })
  .strict();

export type RunCatalogOptions = z.input<typeof runCatalogOptionsSchema>;
type ParsedOptions = z.output<typeof runCatalogOptionsSchema>;

/** The runs under some directories, read on demand and re-read when their files change. */
export interface RunCatalog {
  /** The directories, resolved. */
  readonly roots: readonly string[];
  /** Every run found now (a second call finds runs written since). */
  list(): Promise<RunList>;
  /** One run by its id (an id not seen yet walks the directories again); null for an id of no run. */
  detail(id: string): Promise<RunDetail | null>;
  /** Events `offset` to `offset + limit` of a run's transcript; null for an unknown id. */
  events(id: string, offset: number, limit: number): Promise<EventPage | null>;
}

interface Located {
  readonly id: string;
  readonly root: string;
  readonly dir: string;
}

interface Transcript {
  readonly events: RunValue[];
  readonly problems: string[];
  readonly ended: boolean;
}

interface CachedFile<T> {
  readonly key: string;
  readonly value: T;
}

/** How many parsed transcripts stay in memory (a large one is tens of MiB). */
const TRANSCRIPT_CACHE_SIZE = 4;

/**
 * A catalog of the run directories under `dirs`. Nothing is read until asked. Runs are found
 * by walking each directory without following symbolic links (a link to a directory is not
 * descended, a linked result.json is refused by its O_NOFOLLOW open); a run is a directory
 * that holds result.json or transcript.jsonl.
 *
 * Everything a run's files can do wrong (a missing file, bad JSON, a malformed line, invalid
 * UTF-8, a file too large) is a problem listed with the run, never a throw.
 *
 * @throws BadArgumentError on invalid options; ViewerError `INVALID_OPTIONS` for a directory that is not one.
 */
export async function createRunCatalog(options: RunCatalogOptions): Promise<RunCatalog> {
  const parsed = parseOptions(runCatalogOptionsSchema, options, 'run catalog options');
  const roots: string[] = [];
  for (const dir of parsed.dirs) {
    let real: string;
    let isDirectory: boolean;
    try {
      // The directory the user named is taken as they named it (a link to it is theirs).
      real = await fs.realpath(path.resolve(dir));
      isDirectory = (await fs.stat(real)).isDirectory();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      throw new ViewerError(
        'INVALID_OPTIONS',
        `${dir} is not a directory that can be read (${typeof code === 'string' ? code : String(error)})`,
        { field: 'dirs', cause: error },
      );
    }
    if (!isDirectory)
      throw new ViewerError('INVALID_OPTIONS', `${dir} is not a directory`, { field: 'dirs' });
    if (!roots.includes(real)) roots.push(real);
  }
  const known = new Map<string, Located>();
  const summaries = new Map<string, CachedFile<RunSummary>>();
  const transcripts = new Map<string, CachedFile<Transcript>>();

  const transcriptOf = async (run: Located): Promise<Transcript> => {
    const file = path.join(run.dir, 'transcript.jsonl');
    const key = await fileKey(file);
    const cached = transcripts.get(run.id);
    if (cached !== undefined && cached.key === key) {
      // Most recently used last.
      transcripts.delete(run.id);
      transcripts.set(run.id, cached);
      return cached.value;
    }
    const value = await readTranscript(file, parsed);
    transcripts.set(run.id, { key, value });
    while (transcripts.size > TRANSCRIPT_CACHE_SIZE) transcripts.delete(transcripts.keys().next().value!);
    return value;
  };

  const resultOf = async (run: Located): Promise<{ value: RunValue; problems: string[] }> =>
    readResult(path.join(run.dir, 'result.json'), parsed);

  // A directory is a red-team run's when one of its runs is named by a known attack's id (as
  // `redteam --out` names them): only there is `control` the control, and are ids attacks.
  const redteamDirs = new Set<string>();
  const inRedteam = (run: Located): boolean => redteamDirs.has(path.dirname(run.dir));

  const summaryOf = async (run: Located): Promise<RunSummary> => {
    const key = `${inRedteam(run)}|${await fileKey(path.join(run.dir, 'result.json'))}|${await fileKey(path.join(run.dir, 'transcript.jsonl'))}`;
    const cached = summaries.get(run.id);
    if (cached !== undefined && cached.key === key) return cached.value;
    const result = await resultOf(run);
    const transcriptHead = await readTranscriptHead(path.join(run.dir, 'transcript.jsonl'));
    const value = summarize(run, result, transcriptHead, inRedteam(run) ? parsed.attacks : null);
    summaries.set(run.id, { key, value });
    return value;
  };

  const rescan = async (problems: string[]): Promise<Located[]> => {
    const located = await locateRuns(roots, parsed, problems);
    known.clear();
    redteamDirs.clear();
    for (const run of located) {
      known.set(run.id, run);
      if (Object.hasOwn(parsed.attacks, path.basename(run.dir))) redteamDirs.add(path.dirname(run.dir));
    }
    return located;
  };
  // An id not seen yet (a page opened on a run's address before the list was read, a run
  // written since): walk again once before saying it is unknown.
  const locate = async (id: string): Promise<Located | undefined> => {
    if (!known.has(id)) await rescan([]);
    return known.get(id);
  };

  return {
    roots,
    async list() {
      const problems: string[] = [];
      const located = await rescan(problems);
      const runs: RunSummary[] = [];
      for (const run of located) runs.push(await summaryOf(run));
      return { roots, runs, problems };
    },
    async detail(id) {
      const run = await locate(id);
      if (run === undefined) return null;
      const [summary, result, transcript] = await Promise.all([
        summaryOf(run),
        resultOf(run),
        transcriptOf(run),
      ]);
      return {
        summary: { ...summary, problems: unique([...result.problems, ...transcript.problems]) },
        result: result.value,
        eventCount: transcript.events.length,
        ended: transcript.ended,
      };
    },
    async events(id, offset, limit) {
      const run = await locate(id);
      if (run === undefined) return null;
      const transcript = await transcriptOf(run);
      const start = Math.max(0, Math.min(offset, transcript.events.length));
      return {
        offset: start,
        total: transcript.events.length,
        events: transcript.events.slice(start, start + Math.max(0, limit)),
        ended: transcript.ended,
      };
    },
  };
}

/** The id of a run: a hash of its directory, so no path ever travels to the page and back. */
function runId(dir: string): string {
  return createHash('sha256').update(dir).digest('hex').slice(0, 16);
}

async function fileKey(file: string): Promise<string> {
  try {
    const stats = await fs.lstat(file);
    return `${stats.ino}:${stats.size}:${stats.mtimeMs}`;
  } catch {
    return 'absent';
  }
}

/** Walk every root breadth-first, never through a symbolic link, and return the run directories in name order. */
async function locateRuns(
  roots: readonly string[],
  options: ParsedOptions,
  problems: string[],
): Promise<Located[]> {
  const found: Located[] = [];
  for (const root of roots) {
    let level = [root];
    for (let depth = 0; depth <= options.maxDepth && level.length > 0; depth += 1) {
      const next: string[] = [];
      for (const dir of level) {
        let entries;
        try {
          entries = await fs.readdir(dir, { withFileTypes: true });
        } catch (error) {
          const code = (error as { code?: unknown }).code;
          problems.push(`${dir}: cannot be listed (${typeof code === 'string' ? code : String(error)})`);
          continue;
        }
        const names = new Set(entries.map((e) => e.name));
        if (names.has('result.json') || names.has('transcript.jsonl')) {
          if (found.length >= options.maxRuns) {
            problems.push(`more than ${options.maxRuns} runs: the rest are not listed`);
            return found;
          }
          found.push({ id: runId(dir), root, dir });
          continue;
        }
        // Only real directories: a symbolic link (to a directory or not) is never descended.
        for (const entry of entries) if (entry.isDirectory()) next.push(path.join(dir, entry.name));
      }
      level = next.sort();
    }
  }
  // A directory given inside another given one: each run once, under the first root that holds it.
  const seen = new Set<string>();
  return found
    .filter((run) => !seen.has(run.id) && seen.add(run.id))
    .sort((a, b) => (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0));
}

function decodeText(bytes: Buffer, what: string, problems: string[]): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    problems.push(`${what} is not valid UTF-8: invalid bytes are shown as U+FFFD`);
    return new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  }
}

async function readResult(
  file: string,
  options: ParsedOptions,
): Promise<{ value: RunValue; problems: string[] }> {
  const problems: string[] = [];
  const read = await readBounded(file, options.maxResultBytes);
  if (!read.ok) {
    problems.push(`result.json ${read.refusal === 'missing' ? 'is missing' : read.message}`);
    return { value: null, problems };
  }
  const text = decodeText(read.bytes, 'result.json', problems);
  const parsed = parseJsonStrict(text, { maxDepth: 64, maxStringLength: options.maxResultBytes });
  if (!parsed.ok) {
    problems.push(`result.json is not valid JSON: ${parsed.reason}`);
    return { value: null, problems };
  }
  if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value)) {
    problems.push('result.json is not a JSON object');
    return { value: null, problems };
  }
  return { value: clip(parsed.value, options.maxStringChars), problems };
}

/**
 * Read at most `maxBytes` of a regular file: O_NOFOLLOW (a symbolic link is refused, not
 * followed), O_NONBLOCK (a FIFO does not hang the viewer), fstat of the open descriptor.
 */
async function readPrefix(
  file: string,
  maxBytes: number,
): Promise<{ ok: true; bytes: Buffer; size: number } | { ok: false; problem: string | null }> {
  let handle;
  try {
    handle = await fs.open(
      file,
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY,
    );
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return { ok: false, problem: null };
    if (code === 'ELOOP')
      return { ok: false, problem: `${path.basename(file)} is a symbolic link: not followed` };
    return {
      ok: false,
      problem: `${path.basename(file)} cannot be opened (${typeof code === 'string' ? code : String(error)})`,
    };
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { ok: false, problem: `${path.basename(file)} is not a regular file` };
    const buffer = Buffer.alloc(Math.min(stats.size, maxBytes));
    let filled = 0;
    while (filled < buffer.length) {
      const { bytesRead } = await handle.read(buffer, filled, buffer.length - filled, filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return { ok: true, bytes: buffer.subarray(0, filled), size: stats.size };
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      ok: false,
      problem: `${path.basename(file)} cannot be read (${typeof code === 'string' ? code : String(error)})`,
    };
  } finally {
    await handle.close();
  }
}

async function readTranscript(file: string, options: ParsedOptions): Promise<Transcript> {
  const problems: string[] = [];
  const read = await readPrefix(file, options.maxTranscriptBytes);
  if (!read.ok) {
    problems.push(read.problem ?? 'transcript.jsonl is missing');
    return { events: [], problems, ended: false };
  }
  const cut = read.size > read.bytes.length;
  if (cut)
    problems.push(
      `transcript.jsonl is ${read.size} bytes: only the first ${read.bytes.length} are read (the rest is left out)`,
    );
  const text = decodeText(read.bytes, 'transcript.jsonl', problems);
  const lines = text.split('\n');
  const events: RunValue[] = [];
  let ended = false;
  for (let i = 0; i < lines.length; i += 1) {
    const line = lines[i]!;
    if (line.trim() === '') continue;
    const last = i === lines.length - 1;
    const parsed = parseJsonStrict(line, { maxDepth: 64, maxStringLength: options.maxTranscriptBytes });
    if (
      !parsed.ok ||
      parsed.value === null ||
      typeof parsed.value !== 'object' ||
      Array.isArray(parsed.value)
    ) {
      // The last line of a file being written, or cut by the byte bound, is not yet whole.
      if (last && (cut || !text.endsWith('\n')))
        problems.push(`transcript.jsonl line ${i + 1} is incomplete (still being written, or cut)`);
      else
        problems.push(
          `transcript.jsonl line ${i + 1} is not a JSON object${parsed.ok ? '' : `: ${parsed.reason}`}`,
        );
      continue;
    }
    if (parsed.value['type'] === 'episode_ended') ended = true;
    events.push(clip(parsed.value, options.maxStringChars));
  }
  return { events, problems, ended };
}

/** The first event of a transcript (episode_started), from its first 64 KiB: enough for a summary. */
async function readTranscriptHead(file: string): Promise<{ present: boolean; first: RunValue }> {
  const read = await readPrefix(file, 64 * 1024);
  if (!read.ok) return { present: read.problem !== null, first: null };
  const text = new TextDecoder('utf-8', { fatal: false }).decode(read.bytes);
  const newline = text.indexOf('\n');
  if (newline < 0) return { present: true, first: null };
  const parsed = parseJsonStrict(text.slice(0, newline), { maxDepth: 64, maxStringLength: 64 * 1024 });
  return { present: true, first: parsed.ok ? clip(parsed.value, 1024) : null };
}

/** A copy of `value` with every string longer than `max` replaced by its head and what was left out. */
function clip(value: JsonValue, max: number): RunValue {
  if (typeof value === 'string') {
    if (value.length <= max) return value;
    return { [CLIPPED_KEY]: value.slice(0, max), omittedChars: value.length - max };
  }
  if (Array.isArray(value)) return value.map((v) => clip(v, max));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, RunValue> = {};
    for (const [k, v] of Object.entries(value)) out[k] = clip(v, max);
    return out;
  }
  return value;
}

function field(value: RunValue, ...keys: (string | number)[]): RunValue {
  let current: RunValue = value;
  for (const key of keys) {
    if (current === null || typeof current !== 'object') return null;
    if (Array.isArray(current)) current = typeof key === 'number' ? (current[key] ?? null) : null;
    else current = typeof key === 'string' ? (current[key] ?? null) : null;
  }
  return current;
}

function text(value: RunValue): string | null {
  if (typeof value === 'string') return value;
  if (
    value !== null &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    typeof value[CLIPPED_KEY] === 'string'
  )
    return value[CLIPPED_KEY];
  return null;
}

function num(value: RunValue): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function unique(items: readonly string[]): string[] {
  return [...new Set(items)];
}

/** Why a run ended as it did, in a line: the host fault, the grader's failure, the first misbehavior, the judge's reason. */
function reasonOf(result: RunValue): string | null {
  const error = field(result, 'error');
  if (error !== null)
    return `${text(field(error, 'code')) ?? 'error'}: ${text(field(error, 'message')) ?? ''}`;
  const steps = field(result, 'steps');
  const verdicts = Array.isArray(steps) ? steps.map((s) => field(s, 'verdict')) : [];
  for (const verdict of verdicts) {
    const failure = field(verdict, 'graderFailure');
    if (failure !== null)
      return `grader ${text(field(failure, 'reason')) ?? 'failed'}: ${text(field(failure, 'message')) ?? ''}`;
  }
  const first = field(result, 'misbehavior', 0);
  if (first !== null) return `${text(field(first, 'code')) ?? '?'}: ${text(field(first, 'message')) ?? ''}`;
  for (const verdict of verdicts.reverse()) {
    const reason = text(field(verdict, 'judge', 'metadata', 'reason'));
    if (reason !== null) return reason;
  }
  return null;
}

/**
 * A red-team run's outcome, as `karotte redteam` judges it: what stopped the attack (its
 * misbehavior codes, else the grader's refusal, else a score of 0), and whether that is what
 * the attack expects. The control must pass.
 */
function attackOutcome(
  dir: string,
  result: RunValue,
  attacks: ParsedOptions['attacks'] | null,
): AttackOutcome | null {
  if (attacks === null) return null;
  const id = path.basename(dir);
  const status = text(field(result, 'status'));
  if (status === null) return null;
  if (id === 'control')
    return { class: 'control', expected: null, stoppedBy: [], asExpected: status === 'passed' };
  if (!Object.hasOwn(attacks, id)) return null;
  const attack = attacks[id]!;
  const score = num(field(result, 'score'));
  const stopped = status === 'failed' && score === 0;
  const misbehavior = field(result, 'misbehavior');
  const steps = field(result, 'steps');
  const last = Array.isArray(steps) ? field(steps.at(-1) ?? null, 'verdict') : null;
  let stoppedBy: string[];
  if (!stopped) stoppedBy = [];
  else if (Array.isArray(misbehavior) && misbehavior.length > 0)
    stoppedBy = unique(misbehavior.map((m) => text(field(m, 'code')) ?? '?'));
  else if (field(last, 'graderFailure') !== null) stoppedBy = ['grader'];
  else stoppedBy = ['graded'];
  const asExpected =
    stopped && (attack.expected === null || stoppedBy.some((s) => attack.expected!.includes(s)));
  return { class: attack.class, expected: attack.expected, stoppedBy, asExpected };
}

function summarize(
  run: Located,
  result: { value: RunValue; problems: string[] },
  head: { present: boolean; first: RunValue },
  attacks: ParsedOptions['attacks'] | null,
): RunSummary {
  const problems = [...result.problems];
  if (!head.present) problems.push('transcript.jsonl is missing');
  const r = result.value;
  const statusText = text(field(r, 'status'));
  let status: RunStatus;
  if (statusText === 'passed' || statusText === 'failed' || statusText === 'error') status = statusText;
  else if (r === null && head.first !== null && problems.every((p) => p === 'result.json is missing'))
    status = 'running';
  else status = 'unreadable';
  if (r !== null && status === 'unreadable')
    problems.push('result.json has no status of passed, failed or error');
  const misbehavior = field(r, 'misbehavior');
  const name = path.relative(run.root, run.dir) || '.';
  return {
    id: run.id,
    root: run.root,
    name,
    taskId: text(field(r, 'taskId')) ?? text(field(head.first, 'taskId')),
    agent: text(field(r, 'agent')) ?? text(field(head.first, 'agent')),
    status,
    score: num(field(r, 'score')),
    misbehavior: Array.isArray(misbehavior) ? misbehavior.map((m) => text(field(m, 'code')) ?? '?') : [],
    reason: reasonOf(r),
    turns: num(field(r, 'turns')),
    durationMs: num(field(r, 'durationMs')),
    startedAt: text(field(r, 'startedAt')) ?? text(field(head.first, 'time')),
    problems,
    attack: attackOutcome(run.dir, r, attacks),
  };
}
