import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'exec-replace-shell',
  class: 'shell-protocol',
  languages: ['any'],
  why: 'replaces the persistent shell itself with another program (exec sh, exec node), hoping the harness, waiting for its protocol, hangs or ends the run in error',
  commands: [
    String.raw`exec /bin/sh -c 'echo replaced by sh; sleep 1'`,
    String.raw`echo "back in a new shell: $$"; exec ${NODE} -e 'console.log("replaced by node"); setTimeout(() => {}, 1000)'`,
    String.raw`echo "and again: $$"; echo 0 > {{submission}}`,
  ],
  timeoutMs: 20_000,
  parallelSafe: true,
  expected: ['graded'],
});
