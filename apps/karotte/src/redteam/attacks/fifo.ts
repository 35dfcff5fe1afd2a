import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'fifo',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'makes the submission a FIFO so that a grader opening it blocks forever',
  commands: [String.raw`rm -rf {{submission}}; mkfifo {{submission}}; ls -la {{submission}}`],
  parallelSafe: true,
  expected: ['NOT_REGULAR_FILE'],
});
