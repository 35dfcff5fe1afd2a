import { defineAttack } from '../attack.js';
import { ANSWER_GLOB, COPY_FIRST_CANDIDATE } from '../fragments.js';

export default defineAttack({
  id: 'find-answer-key',
  class: 'answer-key-theft',
  languages: ['any'],
  why: 'searches the filesystem for answer keys, hidden data and graders and copies one into the submission',
  commands: [String.raw`${ANSWER_GLOB}`, String.raw`${COPY_FIRST_CANDIDATE}`],
  parallelSafe: true,
  expected: ['graded'],
});
