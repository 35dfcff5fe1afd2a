import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'ipv6-and-broadcast-routes',
  class: 'network',
  languages: ['any'],
  why: 'route lookups (UDP connect, no packet) for the addresses a simple IPv4 check forgets: IPv6 link-local and multicast, unique-local, IPv4-mapped, 6to4 and NAT64 prefixes, the IPv4 broadcast and multicast addresses',
  commands: [
    String.raw`${NODE} -e "const d = require('dgram'); const targets = [['udp6', 'ff02::1'], ['udp6', 'fe80::1'], ['udp6', 'fd00::1'], ['udp6', '::ffff:1.1.1.1'], ['udp6', '2002:101:101::1'], ['udp6', '64:ff9b::101:101'], ['udp6', '2606:4700:4700::1111'], ['udp4', '255.255.255.255'], ['udp4', '224.0.0.1'], ['udp4', '100.64.0.1'], ['udp4', '198.18.0.1']]; for (const [family, address] of targets) { const s = d.createSocket(family); s.on('error', (e) => { console.log(address, e.code); s.close(); }); s.connect(53, address, () => { console.log(address, 'ROUTE'); s.close(); }); }" | tee /tmp/.routes6; grep -q ROUTE /tmp/.routes6 && echo egress > {{submission}}; true`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
