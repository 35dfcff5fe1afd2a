import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'grader-timeout',
  class: 'resource-exhaustion',
  languages: ['javascript'],
  why: 'submits code that spins forever when loaded, hoping a grader that times out treats silence as success or takes the run down with it',
  commands: [
    String.raw`cat > {{submission}} <<'JS'
for (;;) {}
export function toRoman() { return ''; }
JS
head -c 200 {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded', 'grader', 'GRADER_FAILED'],
});
