import { escapeForDisplay } from '@karotte/base';
import { z } from 'zod';
import { renderObservation, type ToolSpec } from '../messages.js';
import type { ShellOutcome } from '../world.js';
import type { ToolCallRequest, ToolProfile, ToolRunContext, ToolRunResult } from './profile.js';

/** The tools of the default profile: the contract's `bash` (section 5). */
export const EPISODE_TOOLS: readonly ToolSpec[] = Object.freeze([
  {
    name: 'bash',
    description:
      'Run a command in your persistent bash shell. The working directory and exported variables carry over between calls. A command past its timeout is stopped and the shell goes on.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'the bash command to run' },
        timeoutMs: { type: 'number', description: 'timeout in milliseconds (capped by the task)' },
      },
      required: ['command'],
      additionalProperties: false,
    },
  },
]);

/** The arguments of `bash`: `{command, timeoutMs?}`, strict. */
export const bashArgumentsSchema = z
  .object({ command: z.string().max(1024 * 1024), timeoutMs: z.number().int().positive().optional() })
  .strict();

/** The note of a `bash` call whose arguments are not `{command, timeoutMs?}`. */
const MALFORMED_BASH_ARGUMENTS =
  'malformed arguments: expected JSON {"command": string, "timeoutMs"?: number}';

function refused(note: string, started: number): ToolRunResult {
  const outcome: ShellOutcome = {
    stdout: '',
    stderr: '',
    exitCode: null,
    timedOut: false,
    truncated: false,
    stdoutBytes: 0,
    stderrBytes: 0,
    durationMs: Date.now() - started,
    note,
  };
  return {
    ok: false,
    content: [{ type: 'text', text: renderObservation(outcome) }],
    note,
    durationMs: outcome.durationMs,
  };
}

/**
 * The default tool profile, `bash`: the contract's one tool. A call runs its command in the
 * student's persistent shell, as the student, with the student's timeout cut to the task's
 * `commandTimeoutMs`; the model sees the rendered outcome (`renderObservation`).
 */
export const bashProfile: ToolProfile = Object.freeze({
  name: 'bash',
  tools: EPISODE_TOOLS,
  async call(request: ToolCallRequest, context: ToolRunContext): Promise<ToolRunResult> {
    const started = Date.now();
    if (request.name !== 'bash') {
      return refused(`unknown tool ${escapeForDisplay(request.name, 64)}; the only tool is bash`, started);
    }
    const args = bashArgumentsSchema.safeParse(request.arguments);
    if (!args.success) return refused(MALFORMED_BASH_ARGUMENTS, started);
    // The one place a command's timeout is set: the task's (bounded like the sandbox's
    // exec()), or the default, and never more for a student who asks for more.
    const timeoutMs = Math.min(args.data.timeoutMs ?? context.commandTimeoutMs, context.commandTimeoutMs);
    // A world that cannot run the command throws: a host fault, which the episode records.
    const outcome = await context.world.exec(args.data.command, {
      timeoutMs,
      abortSignal: context.abortSignal,
    });
    return {
      ok: outcome.exitCode === 0 && !outcome.timedOut,
      content: [{ type: 'text', text: renderObservation(outcome) }],
      shell: outcome,
      ...(outcome.note === undefined ? {} : { note: outcome.note }),
      durationMs: outcome.durationMs,
    };
  },
});
