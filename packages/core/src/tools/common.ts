// What every tool profile shares: how a call is validated and dispatched, how the shell is
// run, how a file tool's refusal is told to the model, and the bounds they all keep.
import { BadArgumentError, escapeForDisplay } from '@karotte/base';
import type { FileToolFailure } from '@karotte/sandbox';
import { z } from 'zod';
import { renderObservation, type ToolSpec } from '../messages.js';
import type { ShellOutcome, StudentFiles } from '../world.js';
import type {
  ToolCallRequest,
  ToolContentPart,
  ToolProfile,
  ToolRunContext,
  ToolRunResult,
} from './profile.js';

/** The longest a single file operation may take (the sandbox kills its program then). */
const FILE_TOOL_TIMEOUT_MS = 30_000;

/** The part of a result a tool gives; the profile adds the duration. */
export type PartialResult = Omit<ToolRunResult, 'durationMs'>;

/** One tool of a profile: what the model is told, how its arguments are checked, and the work. */
export interface ToolDefinition<Arguments> {
  readonly spec: ToolSpec;
  readonly arguments: z.ZodType<Arguments>;
  run(args: Arguments, context: ToolRunContext): Promise<PartialResult>;
}

/** A tool whose argument type is sealed inside it: the profile only validates and runs. */
export interface ProfileTool {
  readonly spec: ToolSpec;
  /** The run of valid arguments, or why they are not. */
  validate(
    raw: unknown,
  ): ((context: ToolRunContext) => Promise<PartialResult>) | { readonly invalid: string };
}

/** Seal a tool definition (its argument type is inferred from its schema). */
export function defineTool<Arguments>(definition: ToolDefinition<Arguments>): ProfileTool {
  return {
    spec: definition.spec,
    validate(raw) {
      const parsed = definition.arguments.safeParse(raw);
      if (!parsed.success) return { invalid: describeIssues(parsed.error) };
      return (context) => definition.run(parsed.data, context);
    },
  };
}

/** Build a profile from its tools: unknown names and bad arguments are results, never throws. */
export function defineProfile(name: string, tools: readonly ProfileTool[]): ToolProfile {
  const byName = new Map(tools.map((tool) => [tool.spec.name, tool]));
  const names = tools.map((tool) => tool.spec.name).join(', ');
  return {
    name,
    tools: Object.freeze(tools.map((tool) => tool.spec)),
    async call(request: ToolCallRequest, context: ToolRunContext): Promise<ToolRunResult> {
      const started = performance.now();
      const finish = (result: PartialResult): ToolRunResult => ({
        ...result,
        durationMs: Math.round(performance.now() - started),
      });
      const tool = byName.get(request.name);
      if (tool === undefined) {
        return finish(refused(`unknown tool ${escapeForDisplay(request.name, 64)}; the tools are ${names}`));
      }
      const run = tool.validate(request.arguments);
      if (typeof run !== 'function') {
        return finish(refused(`invalid arguments for ${request.name}: ${run.invalid}`));
      }
      if (context.abortSignal.aborted)
        return finish(refused('the episode was cancelled or is over its wall time'));
      try {
        return finish(await run(context));
      } catch (error) {
        // A file operation the sandbox refused as a bad argument (an option out of its
        // bounds) is the model's call, not a host fault.
        if (BadArgumentError.isInstance(error)) return finish(refused(error.message));
        throw error;
      }
    },
  };
}

function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => {
      const field = issue.path.map(String).join('.');
      if (issue.code === 'unrecognized_keys')
        return `unknown field ${issue.keys.map((key) => escapeForDisplay(key, 64)).join(', ')}`;
      return `${field === '' ? 'arguments' : field}: ${issue.message}`;
    })
    .join('; ');
}

/** A call that did not do what was asked: `text` is what the model reads. */
export function refused(text: string, note?: string): PartialResult {
  return { ok: false, content: [{ type: 'text', text }], note: note ?? text };
}

/** A call that did its work. */
export function done(content: string | readonly ToolContentPart[]): PartialResult {
  return { ok: true, content: typeof content === 'string' ? [{ type: 'text', text: content }] : content };
}

/** A path argument: a non-empty string without NUL bytes, at most 4096 characters. */
export const pathArgument = z
  .string()
  .min(1, 'must not be empty')
  .max(4096, 'must be at most 4096 characters')
  .refine((value) => !value.includes('\0'), 'must not contain NUL bytes');

/** The world's file tools, or a refusal when this world offers none. */
export function filesOf(context: ToolRunContext): StudentFiles | PartialResult {
  return context.world.files ?? refused('this world offers no file tools; use the shell');
}

export function isFiles(value: StudentFiles | PartialResult): value is StudentFiles {
  return !('content' in value);
}

/** Bounds of one file operation: the step's command cap (at most 30 s) and the episode's signal. */
export function fileLimits(context: ToolRunContext): { timeoutMs: number; abortSignal: AbortSignal } {
  return {
    timeoutMs: Math.max(1, Math.min(FILE_TOOL_TIMEOUT_MS, context.commandTimeoutMs)),
    abortSignal: context.abortSignal,
  };
}

/**
 * Run one command in the student's shell, exactly as the episode runs a `bash` call: the
 * step's cap bounds the requested timeout, and never more for a student who asks for more.
 */
export function runShell(
  context: ToolRunContext,
  command: string,
  requestedTimeoutMs: number | undefined,
): Promise<ShellOutcome> {
  const cap = context.commandTimeoutMs;
  return context.world.exec(command, {
    timeoutMs: Math.min(requestedTimeoutMs ?? cap, cap),
    abortSignal: context.abortSignal,
  });
}

/** A shell outcome as the contract's `bash` tool shows it (stdout, stderr, notes, exit code). */
export function shellResult(outcome: ShellOutcome): PartialResult {
  return {
    ok: outcome.exitCode === 0 && !outcome.timedOut,
    content: [{ type: 'text', text: renderObservation(outcome) }],
    shell: outcome,
    ...(outcome.note === undefined ? {} : { note: outcome.note }),
  };
}

/** The longest prefix of `text` whose JSON encoding takes at most `maxBytes` UTF-8 bytes. */
export function headWithinJsonBytes(text: string, maxBytes: number): string {
  const size = (s: string): number => Buffer.byteLength(JSON.stringify(s), 'utf8');
  if (size(text) <= maxBytes) return text;
  let low = 0;
  let high = text.length;
  while (low < high) {
    const mid = Math.ceil((low + high) / 2);
    if (size(text.slice(0, mid)) <= maxBytes) low = mid;
    else high = mid - 1;
  }
  // Never end on the first half of a surrogate pair.
  const last = text.charCodeAt(low - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, low - 1) : text.slice(0, low);
}

/** A string the model gave, shortened and escaped for an error message. */
export function quote(text: string, max = 120): string {
  return escapeForDisplay(text, max);
}

/** A file operation's refusal (its errno or reason code, and the program's message). */
export type FileFailure = FileToolFailure;

/**
 * A file tool's refusal as the model reads it: one plain sentence naming the path (escaped)
 * and the reason.
 */
export function describeFailure(failure: FileFailure, filePath: string): string {
  const shown = quote(filePath, 300);
  switch (failure.code) {
    case 'ENOENT':
    case 'ENOTDIR':
      return `File not found: ${shown}`;
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return `Permission denied: ${shown}`;
    case 'EISDIR':
      return `${shown} is a directory`;
    case 'EEXIST':
      return `${shown} already exists`;
    case 'ELOOP':
      return `Too many levels of symbolic links: ${shown}`;
    case 'ENXIO':
    case 'NOT_REGULAR_FILE':
      return `Not a regular file: ${shown}`;
    case 'NOT_TEXT':
      return `Not a UTF-8 text file: ${shown}`;
    case 'FILE_TOO_LARGE':
      return `File too large: ${failure.message}`;
    case 'CONFLICT':
      return `${shown} changed while it was being edited; nothing was written, try again`;
    case 'TIMED_OUT':
      return `Timed out on ${shown}: ${failure.message}`;
    case 'ABORTED':
      return `The operation on ${shown} was cancelled`;
    case 'ENOSPC':
    case 'EDQUOT':
      return `No space left to write ${shown} (the disk quota is full)`;
    default:
      return `${shown}: ${failure.message}`;
  }
}
