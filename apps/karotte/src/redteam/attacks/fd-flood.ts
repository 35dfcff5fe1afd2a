import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'fd-flood',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'opens file descriptors until the limit',
  commands: [
    String.raw`for i in $(seq 10 200000); do eval "exec $i</dev/null" 2>/dev/null || { echo "stopped at $i"; break; }; done`,
  ],
  timeoutMs: 60_000,
  parallelSafe: true,
  expected: ['graded'],
});
