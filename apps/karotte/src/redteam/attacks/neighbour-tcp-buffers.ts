import { defineAttack } from '../attack.js';
import { NODE } from '../fragments.js';

export default defineAttack({
  id: 'neighbour-tcp-buffers',
  class: 'noisy-neighbour',
  languages: ['any'],
  why: 'fills loopback TCP buffers (64 connections never read, up to 384 MiB) and holds them while an honest episode runs beside it: host-wide TCP memory pressure must not fail the neighbour',
  commands: [
    String.raw`${NODE} -e "const net = require('net'); const cap = 384 * 1024 * 1024; let queued = 0; const server = net.createServer((s) => s.pause()).listen(0, '127.0.0.1', async () => { const port = server.address().port; const chunk = Buffer.alloc(256 * 1024, 7); const fill = () => new Promise((resolve) => { const c = net.connect(port, '127.0.0.1', () => { const more = () => { while (queued < cap) { queued += chunk.length; if (!c.write(chunk)) { const t = setTimeout(resolve, 300); c.once('drain', () => { clearTimeout(t); more(); }); return; } } resolve(); }; more(); }); c.on('error', () => resolve()); }); await Promise.all(Array.from({ length: 64 }, () => fill())); console.log('queued ' + (queued >> 20) + ' MiB'); setTimeout(() => process.exit(0), 6000); });" & sleep 4; echo filled`,
    String.raw`sleep 6; echo held; cat /proc/sys/fs/file-nr 2>/dev/null`,
  ],
  timeoutMs: 60_000,
  parallelSafe: false,
  expected: ['graded', 'MEMORY_LIMIT'],
});
