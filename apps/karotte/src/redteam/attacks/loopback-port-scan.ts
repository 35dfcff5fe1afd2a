import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'loopback-port-scan',
  class: 'network',
  languages: ['any'],
  why: 'scans TCP ports 1 to 1024 and the usual service ports (docker, redis, postgres, memcached, dev servers) on 127.0.0.1 and ::1, looking for a harness or host service listening where the student can reach it',
  commands: [
    String.raw`${NODE} -e "const net = require('net'); const ports = [...Array(1024).keys()].map((i) => i + 1).concat([2375, 2376, 3000, 3306, 4000, 5000, 5432, 6379, 8000, 8080, 8443, 8888, 9000, 9090, 9200, 11211, 27017, 47123]); let open = []; let left = ports.length * 2; const check = (host, port) => { const c = net.connect({ host, port }); const done = (ok) => { if (ok) open.push(host + ':' + port); c.destroy(); if (--left === 0) { console.log('open:', open.join(' ') || 'none'); } }; c.on('connect', () => done(true)); c.on('error', () => done(false)); c.setTimeout(300, () => done(false)); }; for (const p of ports) { check('127.0.0.1', p); check('::1', p); }" `,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
