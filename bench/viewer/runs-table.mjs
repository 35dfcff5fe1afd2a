#!/usr/bin/env node
// The viewer's runs table with 1,000 runs in headless Chromium (Debian's, through playwright-core):
// how long from navigation until every row is drawn, and how long a filter takes to redraw,
// against the baseline of the same 1,000 rows as a plain server-rendered HTML table (no script:
// the least a browser can do to show them) served from the same machine. Rounds alternate the
// two so both see the same machine. Medians; the bar is under 1 s for load and for a filter.
//
//   pnpm build && node bench/viewer/runs-table.mjs [--runs N] [--rounds R]
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createViewerServer } from '../../packages/viewer/dist/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
// playwright-core is the app's dev dependency (its browser tests): resolve it from there.
const requireFromApp = createRequire(path.resolve(here, '../../apps/karotte/package.json'));
const { chromium } = requireFromApp('playwright-core');

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : Number(process.argv[i + 1]);
};
const RUNS = arg('--runs', 1000);
const ROUNDS = arg('--rounds', 5);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-bench-viewer-'));
const statuses = ['passed', 'failed', 'failed', 'error'];
const codes = ['', 'SYMLINK', 'PIDS_LIMIT', 'MEMORY_LIMIT'];
const rows = [];
for (let i = 0; i < RUNS; i += 1) {
  const status = statuses[i % statuses.length];
  const code = codes[i % codes.length];
  const misbehavior = code === '' ? [] : [{ code, message: `${code} refused in attack ${i}` }];
  const result = {
    taskId: `task-${i % 7}`,
    status,
    score: status === 'passed' ? 1 : 0,
    misbehavior,
    sandbox: { uid: 2000000000 + i },
    durationMs: 300 + (i % 50) * 13,
    startedAt: new Date(Date.UTC(2026, 11, 1, 12, 0, i % 60)).toISOString(),
    agent: 'replay',
    turns: 2,
    steps: [],
    error: status === 'error' ? { code: 'HOST', message: 'host fault' } : null,
  };
  const dir = path.join(root, `attack-${String(i).padStart(4, '0')}`);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'result.json'), JSON.stringify(result));
  fs.writeFileSync(
    path.join(dir, 'transcript.jsonl'),
    `${JSON.stringify({ type: 'episode_started', taskId: result.taskId, agent: 'replay', seq: 0 })}\n`,
  );
  rows.push({ name: path.basename(dir), ...result, misbehavior: misbehavior.map((m) => m.code) });
}

// The baseline: the same rows as one static HTML table, no script at all.
const escape = (s) => String(s).replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
const baselineHtml = `<!doctype html><meta charset="utf-8"><table><thead><tr><th>run</th><th>task</th><th>agent</th><th>status</th><th>score</th><th>misbehavior</th><th>duration</th><th>time</th></tr></thead><tbody>${rows
  .map(
    (r) =>
      `<tr data-run><td>${escape(r.name)}</td><td>${escape(r.taskId)}</td><td>${r.agent}</td><td>${r.status}</td><td>${r.score}</td><td>${escape(r.misbehavior.join(', '))}</td><td>${r.durationMs} ms</td><td>${r.startedAt}</td></tr>`,
  )
  .join('')}</tbody></table>`;
const baseline = http.createServer((_, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(baselineHtml);
});
await new Promise((resolve) => baseline.listen(0, '127.0.0.1', resolve));
const baselineUrl = `http://127.0.0.1:${baseline.address().port}/`;

const viewer = await createViewerServer({ dirs: [root] });
const viewerUrl = await viewer.listen();
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'],
});

// Measured inside the page (performance.now(), so playwright's own round trips are not
// counted): load is from navigation start until a frame with every row drawn; a filter is from
// the change event until the frame after the table was redrawn.
const watchRows = (n) => {
  const check = () => {
    if (document.querySelectorAll('tr[data-run]').length === n) window.__rowsDrawnMs = performance.now();
    else requestAnimationFrame(check);
  };
  requestAnimationFrame(check);
};
const timeFilter = async ([selector, value, kind]) => {
  const element = document.querySelector(selector);
  const started = performance.now();
  element.value = value;
  element.dispatchEvent(new Event(kind, { bubbles: true }));
  await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  return { ms: performance.now() - started, rows: document.querySelectorAll('tr[data-run]').length };
};

const load = async (url) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.addInitScript(watchRows, RUNS);
  await page.goto(url);
  await page.waitForFunction(() => window.__rowsDrawnMs !== undefined, undefined, { timeout: 60_000 });
  return { context, page, ms: await page.evaluate(() => window.__rowsDrawnMs) };
};

const results = { viewerLoad: [], viewerFilter: [], viewerSearch: [], baselineLoad: [] };
const failed = rows.filter((r) => r.status === 'failed').length;
const failedPids = rows.filter((r) => r.status === 'failed' && r.misbehavior.includes('PIDS_LIMIT')).length;
try {
  for (let round = 0; round < ROUNDS + 1; round += 1) {
    const warm = round === 0;
    const base = await load(baselineUrl);
    if (!warm) results.baselineLoad.push(base.ms);
    await base.context.close();
    const view = await load(viewerUrl);
    const filter = await view.page.evaluate(timeFilter, ['select[name=status]', 'failed', 'change']);
    const search = await view.page.evaluate(timeFilter, ['input[name=query]', 'PIDS_LIMIT', 'input']);
    if (filter.rows !== failed || search.rows !== failedPids)
      throw new Error(
        `the filters showed ${filter.rows} and ${search.rows} rows, not ${failed} and ${failedPids}`,
      );
    if (!warm) {
      results.viewerLoad.push(view.ms);
      results.viewerFilter.push(filter.ms);
      results.viewerSearch.push(search.ms);
    }
    await view.context.close();
  }
} finally {
  await browser.close();
  await viewer.close();
  await new Promise((resolve) => baseline.close(resolve));
  fs.rmSync(root, { recursive: true, force: true });
}

const m = Object.fromEntries(Object.entries(results).map(([k, v]) => [k, median(v)]));
console.log(
  `${RUNS} runs, ${ROUNDS} rounds, load average ${os.loadavg()[0].toFixed(1)}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), Node.js ${process.version}`,
);
console.log(`baseline (static HTML table, no script) load: ${m.baselineLoad.toFixed(0)} ms`);
console.log(
  `viewer load (page, script, /api/runs, every row drawn): ${m.viewerLoad.toFixed(0)} ms (${(m.viewerLoad / m.baselineLoad).toFixed(2)}x the baseline)`,
);
console.log(
  `viewer filter by status (1,000 to ${failed} rows): ${m.viewerFilter.toFixed(0)} ms; then search by text (to ${failedPids}): ${m.viewerSearch.toFixed(0)} ms`,
);
const ok = m.viewerLoad < 1000 && m.viewerFilter < 1000 && m.viewerSearch < 1000;
console.log(ok ? 'under 1 s: yes' : 'under 1 s: NO');
process.exitCode = ok ? 0 : 1;
