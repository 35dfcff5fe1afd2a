import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'route-lookup',
  class: 'network',
  languages: ['any'],
  why: 'looks for a route to public, metadata and private addresses (UDP connect, no packet) and records any',
  commands: [
    String.raw`for a in 1.1.1.1 8.8.8.8 169.254.169.254 10.0.0.1 172.16.0.1 192.168.1.1 2606:4700:4700::1111; do ip route get $a 2>&1 | head -n 1; done | tee /tmp/.routes; grep -q ' dev ' /tmp/.routes && echo egress > {{submission}}; ip addr 2>&1 | head`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
