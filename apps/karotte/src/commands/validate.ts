import { CoreError, loadTask } from '@karotte/core';
import type { Command } from './command.js';
import { parseFlags } from '../args.js';
import { EXIT_OK, EXIT_USAGE } from '../exit-codes.js';
import { loadTaskOptions } from '../image-cache.js';

/**
 * What to do about an invalid task, for the mistakes a newcomer makes in a task that
 * `karotte init` scaffolded: one sentence naming the fix, or undefined.
 */
export function adviceFor(field: string | undefined, message: string): string | undefined {
  const f = field ?? '';
  if (/unknown field/u.test(message)) {
    return 'remove the field or fix its spelling: task.json has id, instructions, submission, grader (script or command, timeoutMs), passThreshold, limits, environment (image, digest) and steps';
  }
  if (f === 'task.json' && /JSON/u.test(message)) {
    return 'task.json must be valid JSON: double quotes, no trailing commas, no comments';
  }
  if (f === '--task') return 'name the task directory (the one holding task.json)';
  if (f === 'id')
    return 'use lowercase letters, digits and dashes, starting with a letter or a digit (e.g. my-task)';
  if (f === 'instructions') return 'write what the student is told, as one string';
  if (f.startsWith('submission')) {
    return 'list the files the grader reads, relative to the student\'s working directory (e.g. ["answer.txt"]): no absolute paths, no ".."';
  }
  if (/grader\.script$/u.test(f) && /does not exist/u.test(message)) {
    return 'create the grader file in the task directory, or fix grader.script to name it';
  }
  if (/grader\.(script|command)$/u.test(f) && /not both|exactly one/u.test(message)) {
    return 'keep one of grader.script (a JavaScript module) and grader.command (an argv such as ["python3", "grade.py"])';
  }
  if (/grader\.script$/u.test(f) && /required/u.test(message)) {
    return 'add "grader": {"script": "grade.mjs"} or "grader": {"command": ["python3", "grade.py"]}';
  }
  if (/grader\.script$/u.test(f) && /JavaScript module/u.test(message)) {
    return 'grader.script runs with Node.js: name a .mjs/.js/.cjs file, or use grader.command for another language';
  }
  if (/grader\.command$/u.test(f))
    return 'grader.command is an argv: ["python3", "grade.py"], run in the task directory\'s copy';
  if (f === 'grader' || f.startsWith('grader.'))
    return 'see the grader fields: script or command, and timeoutMs (milliseconds)';
  if (f === 'passThreshold') return 'a number from 0 to 1: the score at or above which the run passes';
  if (f.startsWith('limits'))
    return 'limits are numbers in bytes and milliseconds (memoryBytes, pids, diskBytes, wallTimeMs, commandTimeoutMs); leave one out for its default';
  if (f === 'environment.image') {
    return 'name an OCI image layout directory or an OCI / docker-archive tarball (absolute, or relative to the task directory); karotte image build-debian <dir> --packages python3 makes one';
  }
  if (f === 'environment.digest')
    return 'pin the digest karotte image import prints for this image, or leave digest out';
  if (f === 'student/' || f === 'hidden/')
    return `${f} must be a plain directory in the task directory (not a link), or absent`;
  return undefined;
}

export const validateCommand: Command = {
  help: [
    'Usage: karotte validate --task <task-dir> [--json]',
    '',
    'Checks task.json (unknown fields are errors), the grader (script or command), the student/',
    'and hidden/ directories and the environment image (its digest when pinned; as root it is',
    'imported into the image cache). Exit 0 when valid, 2 when not; stderr names the offending',
    'field and says what to do.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(argv, { task: { type: 'string' }, json: { type: 'boolean' } }, ['task']);
    try {
      const task = await loadTask(flags.task!, loadTaskOptions());
      const summary = {
        valid: true,
        id: task.id,
        steps: task.steps.length,
        submission: task.steps.flatMap((step) => step.submission),
        student: task.studentDir !== undefined,
        hidden: task.hiddenDir !== undefined,
      };
      io.stdout.write(
        flags.json === true
          ? `${JSON.stringify(summary)}\n`
          : `task ${task.id} is valid: ${task.steps.length} step(s), submission ${summary.submission.join(', ')}\n`,
      );
      return EXIT_OK;
    } catch (error) {
      if (CoreError.isInstance(error) && (error.code === 'INVALID_TASK' || error.code === 'TASK_NOT_FOUND')) {
        const advice = adviceFor(error.field, error.message);
        if (flags.json === true) {
          io.stdout.write(
            `${JSON.stringify({ valid: false, code: error.code, field: error.field ?? null, message: error.message, advice: advice ?? null })}\n`,
          );
        }
        io.stderr.write(
          `karotte validate: invalid task${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n` +
            (advice === undefined ? '' : `  what to do: ${advice}\n`),
        );
        return EXIT_USAGE;
      }
      throw error;
    }
  },
};
