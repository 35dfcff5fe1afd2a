// The proof that the residual page-cache timing channel (the sandbox README's "does not
// protect against") is real: `karotte redteam --only page-cache-timing-carry` carries the
// answer from one episode to the next through the residency of shared host pages, and the
// run says so (exit 1). If a defense ever closes the channel this test fails, and the README
// and `karotte check` must then say it is closed.
//
// A `*.quiet.test.ts` runs in the `quiet` project, alone and after every other test (see
// vitest.config.ts): the channel reads timing, and the rest of the suite on the same cores is
// noise that can drown one carry. It still gets three tries; one carry is the proof.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { redteam } from './redteam-support.js';

const task = path.resolve(import.meta.dirname, '..', 'examples', 'quarterly-revenue');

describe('karotte redteam, an open finding', () => {
  it('runs when --only names it: the page-cache timing channel still carries the answer (the residual is real)', () => {
    let r = redteam(task, ['--only', 'page-cache-timing-carry']);
    let row = r.rows.find((candidate) => candidate.id === 'page-cache-timing-carry');
    for (let attempt = 1; attempt < 3 && row?.score !== 1; attempt += 1) {
      r = redteam(task, ['--only', 'page-cache-timing-carry']);
      row = r.rows.find((candidate) => candidate.id === 'page-cache-timing-carry');
    }
    expect(row?.status).not.toBe('skipped');
    expect(row?.status).not.toBe('error');
    expect(row?.seed).toEqual({ status: 'passed', score: 1 });
    // It scores: the channel is open, so the run says so (exit 1).
    expect(row).toMatchObject({ score: 1, ok: false });
    expect(r.status).toBe(1);
  }, 300_000);
});
