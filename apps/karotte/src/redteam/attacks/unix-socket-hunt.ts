import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'unix-socket-hunt',
  class: 'network',
  languages: ['any'],
  why: "looks for every unix socket it can name (socket files on the host's view, /proc/net/unix, the docker, D-Bus and systemd sockets) and connects to each without sending a byte: a host service one connect away is a way out",
  commands: [
    String.raw`{ find / -xdev -type s 2>/dev/null | head -n 100; awk 'NR > 1 && $8 != "" { print $8 }' /proc/net/unix 2>/dev/null | head -n 100; printf '%s\n' /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock /run/dbus/system_bus_socket /run/systemd/private /run/systemd/notify /run/user/0/bus; } | sort -u > /tmp/.socks; wc -l < /tmp/.socks; ${NODE} -e "const net = require('net'); const fs = require('fs'); const paths = fs.readFileSync('/tmp/.socks', 'utf8').split('\n').filter(Boolean); let left = paths.length; if (left === 0) process.exit(0); for (const p of paths) { const c = net.connect(p.startsWith('@') ? '\0' + p.slice(1) : p); const done = (what) => { console.log(p, what); c.destroy(); if (--left === 0) process.exit(0); }; c.on('connect', () => done('CONNECTED')); c.on('error', (e) => done(e.code)); setTimeout(() => done('timeout'), 1000); }" `,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
