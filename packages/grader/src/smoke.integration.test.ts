import { it } from 'vitest';
import { createExecutableJudge } from './index.js';
it('smoke', async () => {
  const j = createExecutableJudge({ program: '/tmp/karotte-smoke/grade.mjs', timeoutMs: 10000 });
  const t = performance.now();
  const r = await j.evaluate({
    submissionDir: '/tmp/karotte-smoke/sub',
    hiddenDir: '/tmp/karotte-smoke/hidden',
    finalAnswer: null,
    abortSignal: new AbortController().signal,
    path: 'x',
  });
  console.log(JSON.stringify(r, null, 1), performance.now() - t);
});
