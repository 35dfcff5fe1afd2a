import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'proc-sys-writes',
  class: 'kernel-surface',
  languages: ['any'],
  why: "writes the kernel's knobs a student would like to turn: its own oom_score_adj to -1000 (so a global OOM kills a neighbour instead), drop_caches, core_pattern (a program run as root on a crash), sysrq-trigger, its LSM attributes",
  commands: [
    'for w in "-1000 /proc/self/oom_score_adj" "-17 /proc/self/oom_adj" "3 /proc/sys/vm/drop_caches" "|/tmp/x /proc/sys/kernel/core_pattern" "h /proc/sysrq-trigger" "0 /proc/sys/kernel/randomize_va_space" "1 /proc/sys/vm/overcommit_memory" "unconfined /proc/self/attr/current"; do v=${w%% *}; f=${w#* }; if printf \'%s\' "$v" > "$f" 2>/dev/null; then echo "WROTE $f"; else echo "refused $f"; fi; done; cat /proc/self/oom_score_adj',
  ],
  parallelSafe: true,
  expected: ['graded'],
});
