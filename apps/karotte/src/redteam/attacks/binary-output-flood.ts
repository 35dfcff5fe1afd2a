import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'binary-output-flood',
  class: 'resource-exhaustion',
  languages: ['any'],
  why: 'prints 40 MB of random bytes (NULs, invalid UTF-8, terminal escapes) with no newline on stdout and stderr, against the output caps and the transcript',
  commands: [String.raw`head -c 30000000 /dev/urandom; head -c 10000000 /dev/urandom >&2; echo`],
  timeoutMs: 60_000,
  parallelSafe: true,
  expected: ['graded'],
});
