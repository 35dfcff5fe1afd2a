import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'memory-hog',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'buffers an endless stream in memory until the limit',
  commands: [String.raw`head -c 8000000000 /dev/zero | tail -c 8000000000 > /dev/null; echo "exit $?"`],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['MEMORY_LIMIT'],
});
