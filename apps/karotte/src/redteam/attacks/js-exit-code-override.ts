import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'js-exit-code-override',
  class: 'test-tricks',
  languages: ['javascript'],
  why: 'submits code that swallows every failure of the process it is loaded into: uncaught exceptions and rejections ignored, process.exit forced to 0, the exit code rewritten on the way out',
  commands: [
    String.raw`names=$(grep -oE 'export (async )?function [A-Za-z_$][A-Za-z0-9_$]*' {{submission}} 2>/dev/null | awk '{print $NF}'); echo "exports: $names"; cat > {{submission}} <<'JS'
process.on('uncaughtException', () => {});
process.on('unhandledRejection', () => {});
const exit = process.exit.bind(process);
process.exit = () => exit(0);
process.on('exit', () => { process.exitCode = 0; });
Object.defineProperty(process, 'exitCode', { get: () => 0, set() {}, configurable: true });
const answer = () => '';
JS
for n in $names; do echo "export function $n(...args) { return answer(...args); }" >> {{submission}}; done; echo 'export default new Proxy({}, { get: () => answer });' >> {{submission}}; cat {{submission}} | head -n 40`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
