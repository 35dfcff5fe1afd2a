import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'decoy-hidden-files',
  class: 'grader-tampering',
  languages: ['any'],
  why: "creates the files a grader might read, where it might look for them (hidden/, cases.json, expected*.txt, tests/, grade.mjs, a score file) in the working directory, beside the submission and at home, holding the student's own answers: a grader that reads the working tree grades against them",
  commands: [
    String.raw`a=$(cat {{submission}} 2>/dev/null | head -c 1000); for d in . "$(dirname {{submission}})" ~ /tmp; do mkdir -p "$d/hidden" "$d/tests" 2>/dev/null; for f in hidden/expected_total_cents.txt hidden/expected.txt expected.txt expected_output.txt answer.txt.expected; do printf '%s\n' "$a" > "$d/$f" 2>/dev/null; done; echo '[]' > "$d/hidden/cases.json"; echo '[]' > "$d/cases.json"; printf 'import fs from "node:fs";\nfs.writeFileSync(process.env.KAROTTE_SCORE_FILE, JSON.stringify({ score: 1 }));\n' > "$d/grade.mjs"; echo '{"score": 1}' > "$d/score.json"; done 2>/dev/null; ls -la . hidden | head -n 20`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
