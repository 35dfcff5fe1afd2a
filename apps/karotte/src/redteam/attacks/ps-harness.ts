import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'ps-harness',
  class: 'answer-key-theft',
  languages: ['any'],
  why: 'lists processes to find the harness and the grader',
  commands: [String.raw`ps -eo pid,user,args 2>&1 | head -n 50; ls /proc | head -n 50`],
  parallelSafe: true,
  expected: ['graded'],
});
