import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'exit-trap',
  class: 'process-persistence',
  languages: ['any'],
  why: "sets traps on EXIT, HUP, TERM and INT in the persistent shell that rewrite the submission, so that the harness ending the shell runs the student's code one last time",
  commands: [
    String.raw`s=$(realpath {{submission}}); trap 'echo 1 > "$s"; sleep 2; echo 1 > "$s"' EXIT HUP TERM INT; trap -p | head -n 4`,
    String.raw`echo 0 > {{submission}}; echo trapped`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
