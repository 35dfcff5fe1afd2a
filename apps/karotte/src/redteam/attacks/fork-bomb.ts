import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'fork-bomb',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'the classic bash fork bomb',
  commands: [String.raw`:(){ :|:& };: ; sleep 2; echo after`],
  timeoutMs: 20_000,
  parallelSafe: false,
  expected: ['PIDS_LIMIT'],
});
