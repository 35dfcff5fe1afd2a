import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'tcp-buffer-flood',
  class: 'uncharged-memory',
  languages: ['any'],
  why: 'opens 64 loopback TCP connections whose receivers never read and fills every socket buffer (up to 384 MiB in all): kernel memory that cgroup v1 charges only with its TCP accounting on',
  commands: [
    String.raw`${NODE} - <<'JS'
const net = require('net');
const fs = require('fs');
const cap = 384 * 1024 * 1024;
let queued = 0;
const server = net.createServer((s) => s.pause()).listen(0, '127.0.0.1', async () => {
  const port = server.address().port;
  const chunk = Buffer.alloc(256 * 1024, 7);
  const fill = (i) => new Promise((resolve) => {
    const c = net.connect(port, '127.0.0.1', () => {
      const more = () => {
        while (queued < cap) {
          queued += chunk.length;
          if (!c.write(chunk)) {
            const t = setTimeout(resolve, 300);
            c.once('drain', () => { clearTimeout(t); more(); });
            return;
          }
        }
        resolve();
      };
      more();
    });
    c.on('error', (e) => { console.log('connection ' + i + ': ' + e.code); resolve(); });
  });
  await Promise.all(Array.from({ length: 64 }, (_, i) => fill(i)));
  console.log('queued ' + (queued >> 20) + ' MiB');
  try { console.log(fs.readFileSync('/proc/net/sockstat', 'utf8').split('\n')[1]); } catch {}
  setTimeout(() => process.exit(0), 2000);
});
JS
echo "exit $?" `,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'MEMORY_LIMIT'],
});
