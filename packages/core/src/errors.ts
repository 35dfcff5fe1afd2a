import { defineKarotteError } from '@karotte/base';
import { isVerdictErrorCode } from '@karotte/grader';
import type { VerdictErrorCode } from '@karotte/grader';

/** Codes of the errors `@karotte/core` raises, and their kinds. */
const CORE_ERROR_CODES = {
  /** A task file or definition is invalid; `field` names it. */
  INVALID_TASK: 'bad_argument',
  /** The task directory does not exist. */
  TASK_NOT_FOUND: 'bad_argument',
  /** The replay file is not the contract's shape; `field` names it. */
  INVALID_REPLAY: 'bad_argument',
  /** An episode used out of order: `step()` before `start()`, `finish()` twice (a caller bug). */
  EPISODE_STATE: 'bad_argument',
  /** The host cannot give the sandbox; the message names what is missing. */
  CONFINEMENT_UNAVAILABLE: 'system',
  /** Teardown could not remove everything of the world; the message lists what is left. */
  TEARDOWN_INCOMPLETE: 'system',
  /**
   * The agent (the model's side) threw instead of producing a message: a model endpoint that
   * stayed down or kept failing (its last HTTP status is in the episode's error), or an agent
   * of the caller's that threw. An infrastructure fault, never the student's failure.
   */
  AGENT_FAILED: 'system',
} as const;

/** Codes of the errors `@karotte/core` raises. */
export type CoreErrorCode = keyof typeof CORE_ERROR_CODES;

/** An error of `@karotte/core`. `field` names the offending task or replay field when known. */
export class CoreError extends defineKarotteError({ name: 'CoreError', codes: CORE_ERROR_CODES }) {
  readonly field: string | undefined;

  constructor(code: CoreErrorCode, message: string, options: { field?: string; cause?: unknown } = {}) {
    super(code, message, { cause: options.cause });
    this.field = options.field;
  }
}

/**
 * Every code `EpisodeResult.error.code` can carry: a {@link CoreErrorCode}, a code a verdict's
 * error can carry (`VerdictErrorCode`: the grader's codes and those of every package it and
 * the sandbox run), or `NOT_GRADED` (the episode ended before any step was graded). A fault
 * that is not a Karotte error of one of these codes is `AGENT_FAILED` (the agent threw) or
 * `INTERNAL`.
 */
export type EpisodeErrorCode = CoreErrorCode | VerdictErrorCode | 'NOT_GRADED';

/** True when `code` is one of the closed {@link EpisodeErrorCode}s. */
export function isEpisodeErrorCode(code: string): code is EpisodeErrorCode {
  return (
    code === 'NOT_GRADED' || (CoreError.codes as readonly string[]).includes(code) || isVerdictErrorCode(code)
  );
}
