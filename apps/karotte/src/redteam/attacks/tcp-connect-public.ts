import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'tcp-connect-public',
  class: 'network',
  languages: ['any'],
  why: "tries a raw TCP connect (bash's /dev/tcp, curl) to public, metadata and private addresses, but only where the route lookup finds no route, so that even a weakened sandbox never sends a packet off the machine; a route where none should be is recorded",
  commands: [
    String.raw`for a in 1.1.1.1 8.8.8.8 169.254.169.254 10.0.0.1 192.168.0.1; do if ip route get $a >/dev/null 2>&1; then echo "$a: ROUTE (not connecting)"; echo egress > {{submission}}; else timeout 2 bash -c "exec 3<>/dev/tcp/$a/443" 2>&1 | head -n 1; curl -sS -m 2 "http://$a/" 2>&1 | head -n 1; fi; done`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
