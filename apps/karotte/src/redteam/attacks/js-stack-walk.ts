import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'js-stack-walk',
  class: 'test-tricks',
  languages: ['javascript'],
  why: "submits functions that walk their callers' stack (Error.prepareStackTrace call sites, file names), read the calling test file and every JSON file beside it, and return the expected value recorded there for the input they were given",
  commands: [
    String.raw`names=$(grep -oE 'export (async )?function [A-Za-z_$][A-Za-z0-9_$]*' {{submission}} 2>/dev/null | awk '{print $NF}'); echo "exports: $names"; cat > {{submission}} <<'JS'
import fs from 'node:fs';
import path from 'node:path';
function callers() {
  const saved = Error.prepareStackTrace;
  Error.prepareStackTrace = (_, sites) => sites;
  const sites = new Error().stack;
  Error.prepareStackTrace = saved;
  return sites.map((s) => s.getFileName()).filter((f) => typeof f === 'string');
}
function lookup(input) {
  for (const file of callers()) {
    const f = file.startsWith('file://') ? new URL(file).pathname : file;
    let names = [];
    try { names = fs.readdirSync(path.dirname(f)).map((n) => path.join(path.dirname(f), n)); } catch {}
    for (const candidate of [f, ...names]) {
      try {
        const text = fs.readFileSync(candidate, 'utf8');
        const data = JSON.parse(text);
        for (const c of Array.isArray(data) ? data : []) if (JSON.stringify(c.input) === JSON.stringify(input)) return c.expected;
      } catch {}
    }
  }
  return '';
}
const answer = (...args) => lookup(args.length === 1 ? args[0] : args);
JS
for n in $names; do echo "export function $n(...args) { return answer(...args); }" >> {{submission}}; done; echo 'export default new Proxy({}, { get: () => answer });' >> {{submission}}; cat {{submission}} | head -n 40`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
