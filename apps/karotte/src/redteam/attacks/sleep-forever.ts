import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'sleep-forever',
  class: 'shell-protocol',
  languages: ['any'],
  why: 'blocks the shell with a command that never ends',
  commands: [String.raw`sleep infinity`, String.raw`echo next-command-works`],
  timeoutMs: 2_000,
  parallelSafe: true,
  expected: ['graded'],
});
