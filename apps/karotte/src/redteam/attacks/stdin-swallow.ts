import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'stdin-swallow',
  class: 'shell-protocol',
  languages: ['any'],
  why: 'reads the shell input hoping to swallow the harness marker and learn the nonce',
  commands: [
    String.raw`cat; read -r line; echo "read: $line"`,
    String.raw`timeout 1 cat /proc/$$/fd/0 2>&1 | head -c 200; echo`,
  ],
  timeoutMs: 5_000,
  parallelSafe: true,
  expected: ['graded'],
});
