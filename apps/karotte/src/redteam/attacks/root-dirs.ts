import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'root-dirs',
  class: 'answer-key-theft',
  languages: ['any'],
  why: "lists and reads root's home, /var/lib, /run and /srv for harness state",
  commands: [
    String.raw`ls -la /root /var/lib/karotte /run/karotte /srv /opt 2>&1 | head -n 80; cat /root/* 2>&1 | head -n 20`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
