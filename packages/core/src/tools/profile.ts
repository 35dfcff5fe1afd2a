import type { ToolSpec } from '../messages.js';
import type { ShellOutcome, StudentWorld } from '../world.js';

/** One part of a tool result as the model sees it: text, or an image (a file the student viewed). */
export type ToolContentPart =
  | { readonly type: 'text'; readonly text: string }
  | {
      readonly type: 'image';
      readonly mediaType: 'image/png' | 'image/jpeg' | 'image/gif' | 'image/webp';
      readonly dataBase64: string;
    };

/** A tool call as a profile receives it: the arguments already parsed from the model's JSON text. */
export interface ToolCallRequest {
  readonly id: string;
  readonly name: string;
  readonly arguments: unknown;
}

/** What a profile may use to run a call: the student's world and the step's bounds. */
export interface ToolRunContext {
  readonly world: StudentWorld;
  /** Cap on any one command's timeout (the task's `commandTimeoutMs`, or the default). */
  readonly commandTimeoutMs: number;
  /** Aborted when the episode is cancelled or past its wall time. */
  readonly abortSignal: AbortSignal;
}

/** The outcome of one call. */
export interface ToolRunResult {
  /** False for a refused call, bad arguments, a failed command or a failed file operation. */
  readonly ok: boolean;
  /** What the model is shown, in order. */
  readonly content: readonly ToolContentPart[];
  /** The shell's outcome, when the call ran a command (transcript and progress show it). */
  readonly shell?: ShellOutcome;
  /** Why the call did not run, or what happened to it (a refusal, a restarted shell). */
  readonly note?: string;
  readonly durationMs: number;
}

/**
 * A set of tools offered to the model with the schemas it was trained on (`karotte`,
 * `anthropic`, `openai`), all over the same hardened backend: the student's shell and the
 * sandbox's file tools, which act with the student's rights.
 */
export interface ToolProfile {
  readonly name: string;
  /** The tools as the model is told of them (JSON Schema parameters). */
  readonly tools: readonly ToolSpec[];
  /**
   * Run one call. An unknown tool, bad arguments and a failed operation are results with
   * `ok: false`, never exceptions; it throws only for a host fault (the world could not run a
   * command), which ends the episode as `error`.
   */
  call(request: ToolCallRequest, context: ToolRunContext): Promise<ToolRunResult>;
}
