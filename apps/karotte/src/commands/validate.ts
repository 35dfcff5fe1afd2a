import { CoreError, loadTask } from '@karotte/core';
import type { Command } from './command.js';
import { parseFlags } from '../args.js';
import { EXIT_OK, EXIT_USAGE } from '../exit-codes.js';

export const validateCommand: Command = {
  summary: 'check a task directory against the task.json contract, without running anything',
  help: [
    'Usage: karotte validate --task <task-dir> [--json]',
    '',
    'Checks task.json (unknown fields are errors), the grader script and the student/ and',
    'hidden/ directories. Exit 0 when valid, 2 when not; stderr names the offending field.',
  ].join('\n'),
  async run(argv, { io }) {
    const flags = parseFlags(argv, { task: { type: 'string' }, json: { type: 'boolean' } }, ['task']);
    try {
      const task = await loadTask(flags.task!);
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
        if (flags.json === true) {
          io.stdout.write(
            `${JSON.stringify({ valid: false, code: error.code, field: error.field ?? null, message: error.message })}\n`,
          );
        }
        io.stderr.write(
          `karotte validate: invalid task${error.field === undefined ? '' : ` (field ${error.field})`}: ${error.message}\n`,
        );
        return EXIT_USAGE;
      }
      throw error;
    }
  },
};
