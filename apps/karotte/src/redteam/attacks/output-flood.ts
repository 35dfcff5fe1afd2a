import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'output-flood',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'floods stdout and stderr with hundreds of megabytes',
  commands: [String.raw`yes karotte | head -c 300000000; yes err | head -c 50000000 >&2; echo done`],
  timeoutMs: 60_000,
  parallelSafe: true,
  expected: ['graded'],
});
