import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'loader-preload',
  class: 'grader-tampering',
  languages: ['any'],
  why: 'exports LD_PRELOAD, LD_LIBRARY_PATH, NODE_OPTIONS and PYTHONPATH pointing at student files',
  commands: [
    String.raw`printf 'require("fs").writeFileSync(process.env.KAROTTE_SCORE_FILE || "/tmp/score.json", JSON.stringify({score: 1}))\n' > evil.cjs; : > libevil.so; export NODE_OPTIONS="--require $PWD/evil.cjs" LD_PRELOAD="$PWD/libevil.so" LD_LIBRARY_PATH="$PWD:" PYTHONPATH="$PWD"; env | grep -e NODE_OPTIONS -e LD_ -e PYTHONPATH`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
