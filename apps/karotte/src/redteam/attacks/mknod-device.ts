import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'mknod-device',
  class: 'custody-tricks',
  languages: ['any'],
  why: 'tries to make the submission a device node (the null and loop devices), and falls back to a symlink to /dev/urandom, an endless stream',
  commands: [
    String.raw`rm -rf {{submission}}; mknod {{submission}} c 1 3 2>&1 || mknod {{submission}} b 7 0 2>&1 || mkfifo -m 666 {{submission}}.fifo 2>&1; [ -e {{submission}} ] || ln -s /dev/urandom {{submission}}; ls -la {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['SYMLINK', 'NOT_REGULAR_FILE'],
});
