// The viewer's page in a real browser (Debian's Chromium through playwright-core), served by
// @karotte/viewer and exported to a file: what it shows, that hostile content stays text and
// runs nothing, that no request leaves the page's origin, and that a 10 MB line keeps it usable.
// The runs here are written by the test in the shape `karotte run --out` writes, with content a
// real harness would escape or cap first (invalid UTF-8, a 10 MB line), so the viewer is proven
// to hold on its own; view-cli.integration.test.ts views real runs of the real CLI (root).
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { createViewerServer, renderExportHtml, type ViewerServer } from '@karotte/viewer';
import {
  HOSTILE,
  HOSTILE_TEXT,
  makeTempDir,
  transcriptEvents,
  writeRun,
} from '../../../packages/viewer/src/fixtures.test-support.js';
import { launchBrowser, recordPage, shownRuns, type PageLog } from './view-support.js';

declare global {
  interface Window {
    __karotteInjected?: unknown;
  }
}

let root: string;
let browser: Browser;
let server: ViewerServer;
let url: string;

beforeAll(async () => {
  root = await makeTempDir('view-browser');
  await writeRun(path.join(root, 'control'));
  await writeRun(path.join(root, 'fork-bomb'), {
    status: 'failed',
    misbehavior: [
      { code: 'PIDS_LIMIT', message: 'the student hit the 256-process limit: 1552 forks were refused' },
    ],
    durationMs: 17_300,
  });
  // The limit hit as the harness records it, after the result that hit it.
  await fs.appendFile(
    path.join(root, 'fork-bomb', 'transcript.jsonl'),
    `${JSON.stringify({ step: 0, hit: { scope: 'student', limit: 'pids', limitValue: 256, observed: 256, enforcement: 'prevented', message: 'pids max ×1552 (pids.events:max)' }, type: 'limit_hit', seq: 10, elapsedMs: 17208 })}\n`,
  );
  await writeRun(path.join(root, 'symlink-answer-key'), {
    status: 'failed',
    misbehavior: [{ code: 'SYMLINK', message: 'answer.txt is a symbolic link', path: 'answer.txt' }],
  });
  // Hostile everywhere a student's text can reach: the command, its output, the misbehavior
  // message and path, the judge's reason, and the run's directory name.
  await writeRun(path.join(root, `hostile-${'<img src=x onerror=alert(1)>'.replace(/\//g, '')}`), {
    status: 'failed',
    command: HOSTILE.script,
    stdout: HOSTILE_TEXT,
    reason: HOSTILE.closeScript,
    misbehavior: [{ code: 'SYMLINK', message: HOSTILE.img, path: HOSTILE.comment }],
  });
  await writeRun(path.join(root, 'ten-mb-line'), {
    status: 'failed',
    stdout: `${'x'.repeat(10 * 1024 * 1024)}END`,
  });
  const utf8 = await writeRun(path.join(root, 'invalid-utf8'), { status: 'failed' });
  await fs.appendFile(
    path.join(utf8, 'transcript.jsonl'),
    Buffer.concat([
      Buffer.from('{"type":"message","step":0,"message":{"role":"assistant","content":"bad '),
      Buffer.from([0xc3, 0x28, 0xff]),
      Buffer.from(' bytes"}}\n'),
    ]),
  );
  // A long transcript: 450 tool results after the usual events, paged 200 at a time.
  const long = await writeRun(path.join(root, 'long-transcript'), { status: 'failed' });
  await fs.appendFile(
    path.join(long, 'transcript.jsonl'),
    Array.from(
      { length: 440 },
      (_, i) =>
        `${JSON.stringify({ type: 'tool_result', step: 0, result: { toolCallId: `call_${i + 1}`, name: 'bash', ok: true, stdout: `line ${i + 1}\n`, stderr: '', exitCode: 0 } })}\n`,
    ).join(''),
  );
  await fs.mkdir(path.join(root, 'broken'));
  await fs.writeFile(path.join(root, 'broken', 'result.json'), '{"status": "passed", ');
  await fs.writeFile(
    path.join(root, 'broken', 'transcript.jsonl'),
    `${JSON.stringify(transcriptEvents()[0])}\n`,
  );
  browser = await launchBrowser();
  server = await createViewerServer({ dirs: [root] });
  url = await server.listen();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await fs.rm(root, { recursive: true, force: true });
});

async function openPage(): Promise<{ page: Page; log: PageLog; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1300, height: 900 } });
  const page = await context.newPage();
  const log = recordPage(page);
  return { page, log, close: () => context.close() };
}

/** The checks the served page and the exported file share: the table, the filters, one transcript, the injection. */
async function checkPage(page: Page, log: PageLog): Promise<void> {
  await page.waitForSelector('tr[data-run]');
  expect(await shownRuns(page)).toEqual([
    'broken',
    'control',
    'fork-bomb',
    'hostile-<img src=x onerror=alert(1)>',
    'invalid-utf8',
    'long-transcript',
    'symlink-answer-key',
    'ten-mb-line',
  ]);
  expect(await page.textContent('[data-testid=summary]')).toBe(
    '8 runs, 1 passed, 6 failed, 0 error, 1 unreadable · misbehavior: SYMLINK ×2, PIDS_LIMIT ×1',
  );
  const forkBomb = page.locator('tr[data-run]', { hasText: 'fork-bomb' });
  expect(await forkBomb.locator('td').allTextContents()).toEqual([
    'fork-bomb',
    'quarterly-revenue',
    'replay',
    'failed',
    '0',
    'PIDS_LIMIT',
    'PIDS_LIMIT: the student hit the 256-process limit: 1552 forks were refused',
    '2',
    '17.3 s',
    '2026-12-01 15:06:25Z',
  ]);

  // Filters: by status, by misbehavior code, by text; then sorting.
  await page.selectOption('select[name=status]', 'failed');
  expect(await shownRuns(page)).toHaveLength(6);
  await page.selectOption('select[name=code]', 'SYMLINK');
  expect(await shownRuns(page)).toEqual(['hostile-<img src=x onerror=alert(1)>', 'symlink-answer-key']);
  await page.selectOption('select[name=code]', '');
  await page.selectOption('select[name=status]', '');
  await page.fill('input[name=query]', '256-process');
  expect(await shownRuns(page)).toEqual(['fork-bomb']);
  await page.fill('input[name=query]', '');
  expect(await page.textContent('[data-testid=shown-count]')).toBe('8 shown');
  await page.click('button[data-sort=score]');
  await page.click('button[data-sort=score]');
  expect((await shownRuns(page))[0]).toBe('control');

  // One transcript: its tool calls and results, the verdict and the evidence.
  await page.click('tr[data-run] >> text=fork-bomb');
  await page.waitForSelector('[data-testid=tool-result]');
  expect(await page.locator('[data-testid=tool-call] pre').first().textContent()).toBe('cat answer.txt');
  expect(await page.locator('[data-testid=tool-result] pre').first().textContent()).toBe('6334194\n');
  expect(await page.textContent('[data-testid=event-count]')).toMatch(/^11 of 11 events/);
  expect(await page.textContent('[data-testid=limit-hit]')).toContain(
    'limit hit: student pids (limit 256, observed 256, prevented): pids max ×1552 (pids.events:max)',
  );
  expect(await page.locator('[data-testid=misbehavior]').first().textContent()).toContain('PIDS_LIMIT');
  expect(await page.textContent('[data-testid=limit-hits]')).toContain('pids max ×1552');
  expect(await page.textContent('[data-testid=custody]')).toContain(
    '6dbda14cce5a147710035138e02f06e1b2c6cbf82b80997bc2e607c61bd14efa',
  );
  expect(await page.textContent('[data-testid=network]')).toContain('network checked: isolated');
  await page.click('a.back');
  await page.waitForSelector('tr[data-run]');

  // The hostile run: every planted string shows literally, nothing runs, no element is made.
  await page.click('tr[data-run] >> text=hostile-');
  await page.waitForSelector('[data-testid=tool-result]');
  const shown = await page.locator('[data-testid=tool-result] pre').first().textContent();
  for (const line of [HOSTILE.script, HOSTILE.img, HOSTILE.closeScript, HOSTILE.comment])
    expect(shown).toContain(line);
  // Terminal escapes and the bidi override are made visible, not obeyed.
  expect(shown).toContain('␛[31mred␛[0m ␛]0;title␇');
  expect(shown).toContain('safe⟨U+202E⟩txt.exe');
  expect(await page.locator('[data-testid=tool-call] pre').first().textContent()).toBe(HOSTILE.script);
  expect(await page.locator('[data-testid=misbehavior]').first().textContent()).toContain(HOSTILE.img);
  expect(await page.locator('h2').first().textContent()).toContain('hostile-<img src=x onerror=alert(1)>');
  const dom = await page.evaluate(() => ({
    injected: window.__karotteInjected,
    images: document.querySelectorAll('img').length,
    scripts: document.querySelectorAll('script').length,
    handlers: [...document.querySelectorAll('*')].filter((e) =>
      [...e.attributes].some((a) => a.name.startsWith('on')),
    ).length,
  }));
  expect(dom).toEqual({ injected: undefined, images: 0, scripts: dom.scripts, handlers: 0 });
  expect(log.dialogs).toEqual([]);
  expect(log.errors).toEqual([]);
  await page.click('a.back');

  // A 10 MB line: the run opens at once, its output cut and marked, the page still answers.
  const started = Date.now();
  await page.click('tr[data-run] >> text=ten-mb-line');
  // The output is folded (a summary line saying it was cut); the mark is inside the fold.
  await page.waitForSelector('[data-testid=clipped]', { state: 'attached' });
  const openMs = Date.now() - started;
  expect(openMs).toBeLessThan(5000);
  expect(await page.locator('[data-testid=clipped]').first().textContent()).toBe(
    `[${(10 * 1024 * 1024 + 3 - 65536).toLocaleString('en')} more characters not shown: the file has them]`,
  );
  expect(await page.locator('details.fold summary').first().textContent()).toBe(
    '1 lines, 65,536 characters (cut): show',
  );
  await page.click('details.fold summary');
  expect(await page.locator('[data-testid=clipped]').first().isVisible()).toBe(true);
  const answered = Date.now();
  await page.evaluate(() => document.title);
  expect(Date.now() - answered).toBeLessThan(1000);
  await page.click('a.back');

  // A long transcript comes 200 events at a time.
  await page.click('tr[data-run] >> text=long-transcript');
  await page.waitForSelector('[data-testid=tool-result]');
  expect(await page.textContent('[data-testid=event-count]')).toBe('200 of 450 events');
  expect(await page.locator('[data-testid=tool-result]').count()).toBe(191);
  await page.click('button.more');
  await page.waitForFunction(
    () => document.querySelector('[data-testid=event-count]')?.textContent === '400 of 450 events',
  );
  await page.click('button.more');
  await page.waitForFunction(
    () => document.querySelector('[data-testid=event-count]')?.textContent === '450 of 450 events',
  );
  expect(await page.locator('[data-testid=tool-result] pre').last().textContent()).toBe('line 440\n');
  expect(await page.locator('button.more').count()).toBe(0);
  await page.click('a.back');

  // Invalid UTF-8 and a malformed result.json are said, not fatal.
  await page.click('tr[data-run] >> text=invalid-utf8');
  await page.waitForSelector('[data-testid=problems]');
  expect(await page.textContent('[data-testid=problems]')).toContain('transcript.jsonl is not valid UTF-8');
  expect(await page.locator('[data-testid=message]').last().textContent()).toContain(
    'bad \uFFFD(\uFFFD bytes',
  );
  await page.click('a.back');
  await page.click('tr[data-run] >> text=broken');
  await page.waitForSelector('[data-testid=problems]');
  expect(await page.textContent('[data-testid=problems]')).toContain('result.json is not valid JSON');
  expect(await page.evaluate(() => window.__karotteInjected)).toBeUndefined();
  // No Content-Security-Policy violation either: the page needs nothing its policy refuses.
  expect(log.console.filter((m) => /Content Security Policy|Refused/i.test(m))).toEqual([]);
}

describe('karotte view in Chromium', () => {
  it('serves the runs table, filters, one transcript and its evidence; hostile content stays text; every request goes to its own origin', async () => {
    const { page, log, close } = await openPage();
    try {
      await page.goto(url);
      await checkPage(page, log);
      const origin = new URL(url).origin;
      expect(log.requests.length).toBeGreaterThan(3);
      expect(log.requests.filter((r) => new URL(r).origin !== origin)).toEqual([]);
    } finally {
      await close();
    }
  });

  it("opens a run's own address on a server that has not listed the runs yet", async () => {
    const list = (await (await fetch(new URL('/api/runs', url))).json()) as {
      runs: { id: string; name: string }[];
    };
    const forkBomb = list.runs.find((r) => r.name === 'fork-bomb')!;
    const fresh = await createViewerServer({ dirs: [root] });
    const freshUrl = await fresh.listen();
    const { page, log, close } = await openPage();
    try {
      await page.goto(`${freshUrl}#run=${forkBomb.id}`);
      await page.waitForSelector('[data-testid=tool-result]');
      expect(await page.locator('h2').first().textContent()).toContain('fork-bomb');
      expect(log.errors).toEqual([]);
    } finally {
      await close();
      await fresh.close();
    }
  });

  it('shows a run still being written, and its new events as they are appended', async () => {
    const live = path.join(root, 'zz-live');
    await fs.mkdir(live);
    const events = transcriptEvents();
    const lines = events.map((e) => `${JSON.stringify(e)}\n`);
    await fs.writeFile(path.join(live, 'transcript.jsonl'), lines.slice(0, 4).join(''));
    const { page, close } = await openPage();
    try {
      await page.goto(url);
      await page.waitForSelector('tr[data-run] >> text=zz-live');
      expect(
        await page.locator('tr[data-run]', { hasText: 'zz-live' }).locator('td.status').textContent(),
      ).toBe('running');
      await page.click('tr[data-run] >> text=zz-live');
      await page.waitForSelector('[data-testid=transcript]');
      expect(await page.textContent('[data-testid=event-count]')).toBe(
        '4 of 4 events (the run is still being written)',
      );
      await fs.appendFile(path.join(live, 'transcript.jsonl'), lines.slice(4).join(''));
      await fs.writeFile(
        path.join(live, 'result.json'),
        JSON.stringify({ taskId: 'quarterly-revenue', status: 'passed', score: 1, misbehavior: [] }),
      );
      await page.waitForFunction(
        () => document.querySelector('[data-testid=event-count]')?.textContent === '10 of 10 events',
        undefined,
        { timeout: 10_000 },
      );
      expect(await page.textContent('[data-testid=run-status]')).toBe('passed');
    } finally {
      await close();
      await fs.rm(live, { recursive: true, force: true });
    }
  });

  it('exports one HTML file that opens from file:// and shows the same, making no request at all', async () => {
    const file = path.join(root, '..', `${path.basename(root)}-export.html`);
    const { html, runs } = await renderExportHtml({ dirs: [root] });
    expect(runs).toBe(8);
    await fs.writeFile(file, html);
    const { page, log, close } = await openPage();
    try {
      await page.goto(`file://${file}`);
      await checkPage(page, log);
      // The file itself is the only thing loaded: no script, style, font or data request.
      expect(log.requests).toEqual([`file://${file}`]);
    } finally {
      await close();
      await fs.rm(file, { force: true });
    }
  });
});
