import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'js-loader-hooks',
  class: 'test-tricks',
  languages: ['javascript'],
  why: 'submits code that registers module loader hooks (module.register, module.registerHooks) and poisons require.cache, so that every module loaded after it, the test file included, is rewritten to pass',
  commands: [
    String.raw`names=$(grep -oE 'export (async )?function [A-Za-z_$][A-Za-z0-9_$]*' {{submission}} 2>/dev/null | awk '{print $NF}'); echo "exports: $names"; cat > {{submission}} <<'JS'
import * as mod from 'node:module';
const hook = 'export async function load(url, context, next) { const r = await next(url, context); if (/test|grade|spec/.test(url)) return { ...r, source: "export default {}; process.exitCode = 0;" }; return r; }';
try { mod.register('data:text/javascript,' + encodeURIComponent(hook)); } catch {}
try { mod.registerHooks?.({ load(url, context, next) { const r = next(url, context); return /test|grade|spec/.test(url) ? { ...r, format: 'module', source: 'export default {};' } : r; } }); } catch {}
try { const require = mod.createRequire(import.meta.url); const a = require('node:assert'); require.cache[require.resolve('node:assert')] = { exports: () => {} }; a.strictEqual = () => {}; } catch {}
const answer = () => '';
JS
for n in $names; do echo "export function $n(...args) { return answer(...args); }" >> {{submission}}; done; echo 'export default new Proxy({}, { get: () => answer });' >> {{submission}}; cat {{submission}} | head -n 40`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
