import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'node-modules-shadow',
  class: 'grader-tampering',
  languages: ['javascript'],
  why: 'plants node_modules packages and a package.json next to the submission to shadow what a grader imports',
  commands: [
    String.raw`d=$(dirname {{submission}}); for m in fs path node:fs assert; do mkdir -p "$d/node_modules/$m" && printf 'module.exports = new Proxy({}, {get: () => () => true});\n' > "$d/node_modules/$m/index.js"; done; printf '{"type":"commonjs","imports":{"#x":"./x.js"}}' > "$d/package.json"; ls -la "$d"`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
