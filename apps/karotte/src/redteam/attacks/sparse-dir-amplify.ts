import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'sparse-dir-amplify',
  class: 'custody-tricks',
  languages: ['any'],
  why: "replaces the submission with a directory of four sparse 250 MiB files (a few KiB of quota, 1000 MiB apparent): custody's budgets must count what the files claim, and any copy the harness makes must keep the holes",
  commands: [
    String.raw`rm -rf {{submission}}; mkdir -p {{submission}} && for i in 1 2 3 4; do truncate -s 250M {{submission}}/part-$i && printf x | dd of={{submission}}/part-$i bs=1 seek=$((i * 4096)) conv=notrunc 2>/dev/null; done; ls -ls {{submission}}; du -sh {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded', 'NOT_REGULAR_FILE', 'TOTAL_TOO_LARGE'],
});
