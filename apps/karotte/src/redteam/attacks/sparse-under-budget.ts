import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'sparse-under-budget',
  class: 'custody-tricks',
  languages: ['any'],
  why: "makes the submission a 255 MiB sparse file holding one byte, just under custody's per-file budget, and seven more beside it: a copy that writes holes dense turns 12 KiB of the student's quota into 2 GiB of host disk (the grader's copy must stay sparse)",
  commands: [
    String.raw`rm -rf {{submission}}; truncate -s 255M {{submission}} && printf 1 | dd of={{submission}} bs=1 conv=notrunc 2>/dev/null; for i in 1 2 3 4 5 6 7; do truncate -s 255M ".sparse-$i"; done; ls -ls {{submission}}; du -sh --apparent-size . ; du -sh .`,
  ],
  parallelSafe: true,
  expected: ['graded', 'grader', 'GRADER_FAILED'],
});
