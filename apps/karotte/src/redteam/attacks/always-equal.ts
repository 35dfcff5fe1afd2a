import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'always-equal',
  class: 'test-tricks',
  languages: ['javascript'],
  why: 'returns objects that claim to equal anything (valueOf, toString, toJSON, Symbol.toPrimitive, Proxy)',
  commands: [
    String.raw`printf 'const eq = new Proxy(function () {}, { get: (t, k) => k === Symbol.toPrimitive ? () => "" : () => eq, apply: () => eq });\nexport function toRoman() { return eq; }\nexport default new Proxy({}, { get: () => () => eq });\n' > {{submission}}; cat {{submission}}`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
