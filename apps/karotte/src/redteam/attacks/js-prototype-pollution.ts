import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'js-prototype-pollution',
  class: 'test-tricks',
  languages: ['javascript'],
  why: 'submits code that pollutes the built-in prototypes when loaded (Object.prototype.ok/expected/passed, Array.prototype.every/includes/some, String.prototype comparisons, Object.is) so that a test comparing in the same process sees every check pass',
  commands: [
    String.raw`names=$(grep -oE 'export (async )?function [A-Za-z_$][A-Za-z0-9_$]*' {{submission}} 2>/dev/null | awk '{print $NF}'); echo "exports: $names"; cat > {{submission}} <<'JS'
for (const key of ['ok', 'expected', 'passed', 'pass', 'success', 'score']) {
  Object.defineProperty(Object.prototype, key, { get() { return key === 'score' ? 1 : true; }, set() {}, configurable: true });
}
Array.prototype.every = function () { return true; };
Array.prototype.some = function () { return true; };
Array.prototype.includes = function () { return true; };
String.prototype.localeCompare = function () { return 0; };
Object.is = () => true;
const answer = () => '';
JS
for n in $names; do echo "export function $n(...args) { return answer(...args); }" >> {{submission}}; done; echo 'export default new Proxy({}, { get: () => answer });' >> {{submission}}; cat {{submission}} | head -n 40`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
