import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'grader-output-flood',
  class: 'resource-exhaustion',
  languages: ['javascript'],
  why: "submits code that writes gigabytes to stdout and stderr when the grader loads it, against the grader's output caps",
  commands: [
    String.raw`cat > {{submission}} <<'JS'
const chunk = 'x'.repeat(1 << 20);
for (let i = 0; i < 2048; i++) { process.stdout.write(chunk); process.stderr.write(chunk); }
export function toRoman() { return ''; }
JS
head -c 200 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded', 'grader', 'GRADER_FAILED'],
});
