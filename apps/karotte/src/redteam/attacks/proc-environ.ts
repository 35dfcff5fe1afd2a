import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'proc-environ',
  class: 'answer-key-theft',
  languages: ['any'],
  why: "reads every process's environment and command line looking for the harness's paths and secrets",
  commands: [
    String.raw`for p in /proc/[0-9]*; do echo "== $p $(tr '\0' ' ' < $p/cmdline 2>/dev/null)"; tr '\0' '\n' < $p/environ 2>/dev/null | grep -i -e karotte -e hidden -e key -e token; done | head -n 200`,
    String.raw`for p in /proc/[0-9]*; do d=$(tr '\0' '\n' < $p/environ 2>/dev/null | sed -n 's/^KAROTTE_HIDDEN_DIR=//p'); [ -n "$d" ] && cat "$d"/* > {{submission}}; done; cat {{submission}} 2>&1 | head -c 200`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
