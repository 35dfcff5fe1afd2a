import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'grader-memory-bomb',
  class: 'resource-exhaustion',
  languages: ['javascript'],
  why: "submits code that allocates memory without end as soon as the grader loads it: the grader's own limit must stop it, as a failure of the submission, never an error of the run",
  commands: [
    String.raw`cat > {{submission}} <<'JS'
const hog = [];
for (;;) hog.push(Buffer.alloc(64 * 1024 * 1024, 1));
export function toRoman() { return ''; }
JS
head -c 200 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded', 'grader', 'GRADER_FAILED'],
});
