// Grader for quarterly-revenue (contract section 4). Reads the custody copy of answer.txt,
// compares it with the hidden expected total, writes {"score", "metadata"} to the score file.
import fs from 'node:fs';
import path from 'node:path';

const submissionDir = process.env.KAROTTE_SUBMISSION_DIR;
const hiddenDir = process.env.KAROTTE_HIDDEN_DIR;
const scoreFile = process.env.KAROTTE_SCORE_FILE;

const expected = fs.readFileSync(path.join(hiddenDir, 'expected_total_cents.txt'), 'utf8').trim();
let answer = null;
try {
  // The custody copy is a regular file with bounded size; read at most 1 KiB of it.
  const fd = fs.openSync(path.join(submissionDir, 'answer.txt'), 'r');
  const buffer = Buffer.alloc(1024);
  const length = fs.readSync(fd, buffer, 0, buffer.length, 0);
  fs.closeSync(fd);
  answer = buffer.subarray(0, length).toString('utf8').trim();
} catch {
  answer = null;
}
const correct = answer !== null && /^-?\d+$/.test(answer) && answer === expected;
fs.writeFileSync(
  scoreFile,
  JSON.stringify({
    score: correct ? 1 : 0,
    metadata: {
      answered: answer !== null,
      reason: correct ? 'correct total' : answer === null ? 'no answer.txt' : 'wrong total',
    },
  }),
);
