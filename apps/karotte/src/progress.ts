import type { EpisodeProgress, EpisodeResult } from '@karotte/core';
import { displaySafe, formatDuration, indentWrapped, shortenCommand, truncate } from './format.js';

/**
 * Whether `run` prints progress on stderr: `--progress` forces it, `--quiet` turns it off, and
 * otherwise only a person at a terminal gets it (stderr a TTY, and no `--json`). A caller that
 * pipes stderr and never reads it (a trainer reading only result.json) would block once the pipe
 * is full, and one that merges stderr into stdout would break its `--json` parse.
 */
export function progressWanted(
  flags: { readonly progress?: boolean; readonly quiet?: boolean; readonly json?: boolean },
  stderrIsTTY: boolean,
): boolean {
  if (flags.progress === true) return true;
  if (flags.quiet === true || flags.json === true) return false;
  return stderrIsTTY;
}

/** How {@link createProgressPrinter} prints. */
export interface ProgressPrinterOptions {
  /** The width every line fits. */
  readonly width: number;
  /** The task's steps: more than 1 names the step in each line. */
  readonly steps: number;
  /**
   * A model drives the episode: each answered turn gets a line (its number, what it asked for,
   * the model's time and tokens, the episode's elapsed time) and so does each retry of a call.
   * A replay's turns get none. @default false
   */
  readonly model?: boolean;
  /** The clock for the elapsed time, in milliseconds. @default Date.now */
  readonly now?: () => number;
}

/**
 * Turns an episode's progress events into lines for a person watching (stderr): the sandbox,
 * each model turn (with `model`), each tool call as it starts (its tool and command on one
 * shortened line) and as it ends (exit code and duration), then collect and grade. Lines fit
 * `width`; `steps` > 1 names the step. Every string the student, the model, the replay or a
 * grader chose (a tool name, a command, a note, a server's error message) is printed through
 * {@link displaySafe}.
 */
export function createProgressPrinter(
  write: (line: string) => void,
  options: ProgressPrinterOptions,
): (event: EpisodeProgress) => void {
  let calls = 0;
  const numbers = new Map<string, number>();
  const now = options.now ?? Date.now;
  const started = now();
  const step = (index: number): string => (options.steps > 1 ? `step ${index + 1} ` : '');
  return (event) => {
    const line = formatProgress(event, {
      width: options.width,
      model: options.model === true,
      elapsedMs: () => now() - started,
      step,
      callNumber: (id, start) => {
        if (start) {
          calls += 1;
          numbers.set(id, calls);
        }
        return numbers.get(id) ?? calls;
      },
    });
    if (line !== null) write(`${truncate(line, options.width)}\n`);
  };
}

interface ProgressContext {
  readonly width: number;
  readonly model: boolean;
  /** Milliseconds since the printer was made (the episode's start). */
  readonly elapsedMs: () => number;
  readonly step: (index: number) => string;
  /** The call's number in the episode, from 1 (`start`: a new call). */
  readonly callNumber: (toolCallId: string, start: boolean) => number;
}

/** One progress line for `event` (terminal-safe), or null when it is not worth a line. */
function formatProgress(event: EpisodeProgress, context: ProgressContext): string | null {
  switch (event.type) {
    case 'judges_checked':
      return null;
    case 'model_call':
      return context.model ? formatTurn(event, context) : null;
    case 'model_retry':
      if (!context.model) return null;
      return (
        `[${context.step(event.step)}model] attempt ${event.attempt} failed` +
        `${event.httpStatus === null ? '' : ` (HTTP ${event.httpStatus})`}, retrying in ${formatDuration(event.waitMs)}: ` +
        truncate(displaySafe(event.message.replace(/\s+/g, ' ')), 200)
      );
    case 'sandbox_ready':
      return `[sandbox] ready: uid ${event.uid} (${formatDuration(event.durationMs)})`;
    case 'tool_call': {
      const label = `[${context.step(event.step)}call ${context.callNumber(event.toolCallId, true)}]`;
      const name = truncate(displaySafe(event.name), 64);
      // The contract's bash keeps its lines as they were (`$ command`); another tool is named.
      if (event.command === null)
        return event.name === 'bash' || !context.model
          ? `${label} ${name} (not a well-formed bash call)`
          : `${label} ${name}`;
      const prefix = event.name === 'bash' ? `${label} $ ` : `${label} ${name} $ `;
      return `${prefix}${shortenCommand(event.command, context.width - prefix.length)}`;
    }
    case 'tool_result': {
      const label = `[${context.step(event.step)}call ${context.callNumber(event.toolCallId, false)}]`;
      const took = formatDuration(event.durationMs);
      if (event.timedOut) return `${label} timed out after ${took}, stopped (the shell goes on)`;
      const note = event.note === null ? null : displaySafe(event.note);
      // No exit code: a refused call (with its note), or a file tool, which runs no command.
      if (event.exitCode === null)
        return note === null ? `${label} answered (${took})` : `${label} not run: ${note}`;
      return `${label} exit ${event.exitCode} (${took}${note === null ? '' : `; ${note}`})`;
    }
    case 'collect':
      return `[${context.step(event.step)}collect] reaping the student's processes, taking custody of ${displaySafe(event.submission.join(', '))}`;
    case 'graded': {
      const judged = event.judgeMs === null ? 'not judged' : `grade ${formatDuration(event.judgeMs)}`;
      return `[${context.step(event.step)}grade] ${event.status} score=${event.score} (collect ${formatDuration(event.collectMs)}, ${judged})`;
    }
  }
}

/** A model turn's line: `[turn 3] 2 tool calls (model 1.2 s, 1200 in / 56 out tokens; elapsed 12.3 s)`. */
function formatTurn(
  event: Extract<EpisodeProgress, { type: 'model_call' }>,
  context: ProgressContext,
): string {
  const asked =
    event.toolCalls > 0
      ? `${event.toolCalls} tool call${event.toolCalls === 1 ? '' : 's'}`
      : event.finishReason === 'length'
        ? 'cut at the length limit, no tool call'
        : event.finishReason === 'content_filter'
          ? 'stopped by the content filter'
          : 'answered, no tool call';
  const details = [`model ${formatDuration(event.modelMs)}`];
  if (event.retryWaitMs > 0) details.push(`retries ${formatDuration(event.retryWaitMs)}`);
  if (event.usage !== null)
    details.push(`${event.usage.inputTokens} in / ${event.usage.outputTokens} out tokens`);
  return `[${context.step(event.step)}turn ${event.turn}] ${asked} (${details.join(', ')}; elapsed ${formatDuration(context.elapsedMs())})`;
}

/**
 * Text for {@link indentWrapped}: whitespace (line breaks, tabs, carriage returns) is where it
 * wraps anyway, so it becomes spaces; any other control or format character is escaped.
 */
function prose(text: string): string {
  return displaySafe(text.replace(/\s+/g, ' '));
}

type JudgeReport = NonNullable<EpisodeResult['steps'][number]['verdict']['judge']>;

/** The first `reason` (a string) in a judge's metadata, its children's included. */
function judgeReason(report: JudgeReport | null): string | undefined {
  if (report === null) return undefined;
  const own = report.metadata['reason'];
  if (typeof own === 'string' && own.trim() !== '') return own.trim();
  for (const child of report.children ?? []) {
    const found = judgeReason(child);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Why a run did not pass, as lines for a person (each `  why: …`, wrapped to `width`): the
 * misbehavior codes and messages, else the judge's reason (a grader's `metadata.reason`, or
 * its metadata) for the score it gave. Empty for a passed run and for `error` (whose code and
 * message the summary line already holds). Codes, messages and the grader's words are printed
 * through {@link displaySafe}.
 */
export function explainResult(result: EpisodeResult, width: number): string[] {
  if (result.status !== 'failed') return [];
  const lines: string[] = [];
  for (const m of result.misbehavior)
    lines.push(indentWrapped(prose(`${m.code}: ${m.message}`), width, '  why: '));
  if (lines.length > 0) return lines;
  const verdict = result.steps.at(-1)?.verdict;
  if (verdict === undefined) return [];
  const threshold = `needs ${verdict.passThreshold} to pass`;
  if (verdict.judge === null) return [`  why: the submission was not judged (${threshold})`];
  const reason = judgeReason(verdict.judge);
  const metadata = JSON.stringify(verdict.judge.metadata);
  const detail = reason ?? (metadata === '{}' ? 'the grader gave no reason' : `metadata ${metadata}`);
  return [
    indentWrapped(
      `the grader scored ${verdict.judgeScore ?? verdict.score} (${threshold}): ${prose(detail)}`,
      width,
      '  why: ',
    ),
  ];
}
