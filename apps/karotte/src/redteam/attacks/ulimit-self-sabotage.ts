import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'ulimit-self-sabotage',
  class: 'shell-protocol',
  languages: ['any'],
  why: "lowers the persistent shell's own limits (open files 4, processes 1, file size 0, address space 10 MB) so that every later command the harness runs through it fails, hoping that turns the run into error",
  commands: [
    String.raw`ulimit -S -n 4 2>&1; ulimit -S -u 1 2>&1; ulimit -S -f 0 2>&1; ulimit -S -v 10000 2>&1; ulimit -a | head -n 20`,
    String.raw`echo 0 > {{submission}}; echo still here`,
    String.raw`ls -la`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
