import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'setuid-hunt',
  class: 'kernel-surface',
  languages: ['any'],
  why: 'looks for setuid, setgid and file-capability programs in its view and tries the ones that hand out root (sudo, su, pkexec, newgrp, mount), hoping one runs with privileges despite no_new_privs',
  commands: [
    String.raw`find / -xdev \( -perm -4000 -o -perm -2000 \) -type f 2>/dev/null | head -n 30; getcap -r /usr/bin /usr/sbin /usr/local/bin 2>/dev/null | head -n 10; timeout 5 sudo -n true 2>&1 | head -n 1; timeout 5 su -c 'id' root < /dev/null 2>&1 | head -n 1; timeout 5 pkexec id < /dev/null 2>&1 | head -n 1; timeout 5 newgrp root < /dev/null 2>&1 | head -n 1; timeout 5 mount -o remount,rw / 2>&1 | head -n 1; id`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
