// The grader (contract section 4): it runs after the student is gone, in its own sandbox, and
// reads only copies. Replace the comparison with your task's own check.
import fs from 'node:fs';
import path from 'node:path';

const read = (dir, name) => {
  const file = path.join(dir, name);
  // A missing submission is the student's failure (score 0), not the grader's.
  if (!fs.existsSync(file)) return undefined;
  if (fs.statSync(file).size > 1024 * 1024) return undefined;
  return fs.readFileSync(file, 'utf8').trim();
};

const answer = read(process.env.KAROTTE_SUBMISSION_DIR, 'answer.txt');
const expected = read(process.env.KAROTTE_HIDDEN_DIR, 'answer.txt');
const score = answer !== undefined && answer === expected ? 1 : 0;
fs.writeFileSync(
  process.env.KAROTTE_SCORE_FILE,
  JSON.stringify({ score, metadata: { submitted: answer !== undefined } }),
);
