import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'fork-relay',
  class: 'process-persistence',
  languages: ['any'],
  why: 'a fork-and-die relay: each process spawns its successor and exits, so no snapshot holds it',
  commands: [
    String.raw`cat > /tmp/.relay <<'EOF'
echo 1 > "$1" 2>/dev/null; sleep 0.05; bash /tmp/.relay "$1" & disown; exit 0
EOF
bash /tmp/.relay {{submission}} & disown; sleep 0.3; echo relaying`,
  ],
  parallelSafe: true,
  expected: ['graded', 'PIDS_LIMIT'],
});
