import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'cc-int80-abi',
  class: 'kernel-surface',
  languages: ['any'],
  requires: ['cc'],
  why: 'compiles a program that makes a 32-bit system call (int 0x80) from a 64-bit process: the i386 table has other numbers, so a filter that does not check the architecture can be walked around',
  commands: [
    String.raw`cat > /tmp/.i386.c <<'CEOF'
#include <stdio.h>
int main(void) {
  long ret;
  /* i386 getpid is 20; on x86-64, 20 is writev. */
  __asm__ volatile ("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
  printf("int 0x80 getpid returned %ld\n", ret);
  return 0;
}
CEOF
cc -O -o /tmp/.i386 /tmp/.i386.c 2>&1 && /tmp/.i386; echo "status $?" `,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
