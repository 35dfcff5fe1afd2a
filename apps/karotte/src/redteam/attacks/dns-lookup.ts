import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'dns-lookup',
  class: 'network',
  languages: ['any'],
  why: 'tries DNS resolution, only after a route lookup to the resolver succeeded',
  commands: [
    String.raw`ns=$(awk '/^nameserver/ {print $2; exit}' /etc/resolv.conf); echo "resolver $ns"; if [ -n "$ns" ] && ip route get "$ns" >/dev/null 2>&1 && ! ip route get "$ns" | grep -q ' lo '; then getent hosts example.com && echo dns > {{submission}}; else echo 'no route to the resolver'; fi`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
