// `karotte view` over real runs: `karotte run` and `karotte redteam --out` of the real CLI make
// them (root: real sandboxes), `karotte view` serves them and exports them, and Chromium (Debian's,
// through playwright-core) reads the page as a person would.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { runBounded, tempDir } from '../../../test/support/index.js';
import { cli, examples, launchBrowser, recordPage, shownRuns, startView } from './view-support.js';

const isRoot = process.getuid?.() === 0;
const inCI = process.env['CI'] === 'true';
if (!isRoot && !inCI) console.log('[karotte] view CLI integration tests skipped: they need root (real runs)');

declare global {
  interface Window {
    __karotteInjected?: unknown;
  }
}

/** What a student prints: markup, a script end tag, terminal escapes and a bidi override. */
const HOSTILE_COMMAND = [
  "printf '%s\\n' '<script>window.__karotteInjected = 1</script>'",
  "printf '%s\\n' '<img src=x onerror=\"window.__karotteInjected = 2\">'",
  "printf '%s\\n' '</script><script>window.__karotteInjected = 3</script>'",
  "printf '\\033[31mred\\033[0m \\342\\200\\256txt.exe\\n'",
].join('; ');

interface RedteamRow {
  readonly id: string;
  readonly class: string;
  readonly kind: 'control' | 'attack';
  readonly status: string;
  readonly score: number;
  readonly ok: boolean;
  readonly stoppedBy: readonly string[];
  readonly expected: readonly string[] | null;
  readonly asExpected: boolean;
}

/** The outcome cell the page shows for a row of `redteam --json`. */
function outcomeOf(row: RedteamRow): string {
  if (row.kind === 'control') return row.ok ? 'ok: passed' : 'CONTROL FAILED';
  if (row.stoppedBy.length === 0) return 'NOT STOPPED';
  return `${row.asExpected ? 'ok' : 'ok, unexpected'}: ${row.stoppedBy.join(', ')}`;
}

describe.skipIf(!isRoot && !inCI)('karotte view over runs of the real CLI', () => {
  let out: { dir: string; cleanup: () => void };
  let browser: Browser;
  const attackRows = new Map<string, readonly RedteamRow[]>();
  const onlyAttacks = 'symlink-answer-key,hostile-names,double-fork,terminal-escape-injection';

  beforeAll(async () => {
    expect(fs.existsSync(cli), `${cli} is missing: build first (pnpm build)`).toBe(true);
    out = tempDir('view-cli');
    const control = await runBounded(
      [
        process.execPath,
        cli,
        'run',
        '--task',
        path.join(examples, 'quarterly-revenue'),
        '--agent',
        'replay',
        '--replay',
        path.join(examples, 'quarterly-revenue', 'control.json'),
        '--out',
        path.join(out.dir, 'runs', 'control'),
      ],
      120_000,
    );
    expect(control.code, control.stderr).toBe(0);
    const replay = path.join(out.dir, 'hostile.json');
    fs.writeFileSync(
      replay,
      JSON.stringify([
        {
          role: 'assistant',
          content: '<b>bold?</b> <script>window.__karotteInjected = 4</script>',
          tool_calls: [
            {
              id: 'call_0',
              type: 'function',
              function: { name: 'bash', arguments: JSON.stringify({ command: HOSTILE_COMMAND }) },
            },
          ],
        },
        { role: 'assistant', content: 'Done.' },
      ]),
    );
    const hostile = await runBounded(
      [
        process.execPath,
        cli,
        'run',
        '--task',
        path.join(examples, 'quarterly-revenue'),
        '--agent',
        'replay',
        '--replay',
        replay,
        '--out',
        path.join(out.dir, 'runs', 'hostile'),
      ],
      120_000,
    );
    expect(hostile.code, hostile.stderr).toBe(0);
    for (const task of ['quarterly-revenue', 'roman-numerals']) {
      const redteam = await runBounded(
        [
          process.execPath,
          cli,
          'redteam',
          '--task',
          path.join(examples, task),
          '--only',
          onlyAttacks,
          '--json',
          '--out',
          path.join(out.dir, 'redteam', task),
        ],
        300_000,
      );
      expect(redteam.code, redteam.stderr).toBe(0);
      attackRows.set(task, (JSON.parse(redteam.stdout) as { rows: RedteamRow[] }).rows);
    }
    browser = await launchBrowser();
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    out?.cleanup();
  });

  it('serves every run and every attack of both red-team runs with its outcome; a transcript; hostile output as text; requests only to itself; SIGTERM stops it', async () => {
    const viewing = await startView([out.dir, '--listen', '127.0.0.1:0']);
    const context = await browser.newContext({ viewport: { width: 1300, height: 900 } });
    try {
      expect(viewing.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      const page = await context.newPage();
      const log = recordPage(page);
      await page.goto(viewing.url);
      await page.waitForSelector('tr[data-run]');
      const names = await shownRuns(page);
      const expected = ['runs/control', 'runs/hostile'];
      for (const [task, rows] of attackRows)
        for (const row of rows) expected.push(`redteam/${task}/${row.id}`);
      expect([...names].sort()).toEqual([...expected].sort());
      // Every attack and control row shows the outcome redteam reported.
      for (const [task, rows] of attackRows) {
        expect(rows.map((r) => r.id).sort()).toEqual(['control', ...onlyAttacks.split(',')].sort());
        for (const row of rows) {
          const cells = await page
            .locator('tr[data-run]', {
              has: page.locator('td.name', { hasText: new RegExp(`^redteam/${task}/${row.id}$`) }),
            })
            .locator('td')
            .allTextContents();
          // run, class, task, status, score, expected, outcome, reason, duration, time
          expect(cells[1], row.id).toBe(row.class);
          expect(cells[2], row.id).toBe(task);
          expect(cells[3], row.id).toBe(row.status);
          expect(cells[4], row.id).toBe(String(row.score));
          expect(cells[5], row.id).toBe(
            row.kind === 'control'
              ? 'passes'
              : row.expected === null
                ? 'any score 0'
                : row.expected.join(', '),
          );
          expect(cells[6], row.id).toBe(outcomeOf(row));
        }
      }
      const attacks = [...attackRows.values()].flat().filter((r) => r.kind === 'attack');
      expect(await page.textContent('[data-testid=summary]')).toContain(
        `attacks: ${attacks.filter((r) => r.stoppedBy.length > 0).length} of ${attacks.length} stopped, ${attacks.filter((r) => r.asExpected).length} as expected`,
      );
      // The plain runs beside the red-team directories are no attacks.
      expect(
        await page
          .locator('tr[data-run]', { has: page.locator('td.name', { hasText: /^runs\/control$/ }) })
          .locator('td.attack-class')
          .textContent(),
      ).toBe('–');
      // Filter to the passes: the two red-team controls and the plain control run.
      await page.selectOption('select[name=status]', 'passed');
      expect((await shownRuns(page)).sort()).toEqual([
        'redteam/quarterly-revenue/control',
        'redteam/roman-numerals/control',
        'runs/control',
      ]);
      await page.selectOption('select[name=status]', '');

      // One real transcript: the control's tool calls and their outputs, the verdict, the custody manifest.
      await page.click('td.name >> text=/^runs\\/control$/');
      await page.waitForSelector('[data-testid=tool-result]');
      expect(await page.locator('[data-testid=tool-call]').count()).toBeGreaterThanOrEqual(2);
      expect(await page.locator('[data-testid=tool-result] pre').last().textContent()).toBe('6334194\n');
      expect(await page.textContent('[data-testid=custody]')).toContain('answer.txt');
      expect(await page.locator('[data-testid=network]').textContent()).toContain(
        'network checked: isolated',
      );
      await page.click('a.back');

      // The hostile run: its markup as text, nothing ran, no element made of it.
      await page.click('td.name >> text=/^runs\\/hostile$/');
      await page.waitForSelector('[data-testid=tool-result]');
      const output = await page.locator('[data-testid=tool-result] pre').first().textContent();
      expect(output).toContain('<script>window.__karotteInjected = 1</script>');
      expect(output).toContain('<img src=x onerror="window.__karotteInjected = 2">');
      expect(output).toContain('</script><script>window.__karotteInjected = 3</script>');
      expect(output).toContain('⟨U+202E⟩txt.exe');
      expect(output).not.toContain('\u202e');
      expect(await page.locator('[data-testid=message]').nth(1).textContent()).toContain(
        '<b>bold?</b> <script>window.__karotteInjected = 4</script>',
      );
      expect(
        await page.evaluate(() => ({
          injected: window.__karotteInjected,
          images: document.querySelectorAll('img').length,
          bold: document.querySelectorAll('b').length,
        })),
      ).toEqual({ injected: undefined, images: 0, bold: 0 });
      expect(log.errors).toEqual([]);
      expect(log.dialogs).toEqual([]);
      const origin = new URL(viewing.url).origin;
      expect(log.requests.filter((r) => new URL(r).origin !== origin)).toEqual([]);
    } finally {
      await context.close();
      expect(await viewing.stop('SIGTERM')).toBe(0);
    }
    expect(viewing.stderr()).toContain('karotte view: SIGTERM: stopping');
  });

  it('stops on SIGINT with exit 0, and no longer answers', async () => {
    const viewing = await startView([out.dir]);
    const ok = await fetch(new URL('/api/runs', viewing.url));
    expect(ok.status).toBe(200);
    expect(await viewing.stop('SIGINT')).toBe(0);
    await expect(fetch(new URL('/api/runs', viewing.url))).rejects.toThrow();
  });

  it('refuses a non-loopback address, no directory, a missing one and contradicting flags with exit 2', async () => {
    for (const listen of ['0.0.0.0:0', '192.168.0.1:8080', '[::]:0', 'example.com:80']) {
      const refused = await runBounded([process.execPath, cli, 'view', out.dir, '--listen', listen], 30_000);
      expect(refused.code, listen).toBe(2);
      expect(refused.stderr).toContain('loopback only');
      expect(refused.stdout).not.toContain('listening on');
    }
    const none = await runBounded([process.execPath, cli, 'view'], 30_000);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('give at least one run directory');
    const missing = await runBounded([process.execPath, cli, 'view', path.join(out.dir, 'nope')], 30_000);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('is not a directory that can be read');
    const both = await runBounded(
      [
        process.execPath,
        cli,
        'view',
        out.dir,
        '--listen',
        '127.0.0.1:0',
        '--export',
        path.join(out.dir, 'x.html'),
      ],
      30_000,
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('--listen and --export contradict each other');
  });

  it('exports one file that opens from file:// with the same runs and makes no request', async () => {
    const file = path.join(out.dir, 'karotte-view-export.html');
    const exported = await runBounded([process.execPath, cli, 'view', out.dir, '--export', file], 60_000);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toBe(`wrote ${file}: ${2 + [...attackRows.values()].flat().length} runs\n`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      const log = recordPage(page);
      await page.goto(`file://${file}`);
      await page.waitForSelector('tr[data-run]');
      expect(await shownRuns(page)).toHaveLength(2 + [...attackRows.values()].flat().length);
      await page.click('td.name >> text=/^runs\\/hostile$/');
      await page.waitForSelector('[data-testid=tool-result]');
      expect(await page.locator('[data-testid=tool-result] pre').first().textContent()).toContain(
        '</script><script>window.__karotteInjected = 3</script>',
      );
      expect(await page.evaluate(() => window.__karotteInjected)).toBeUndefined();
      expect(log.requests).toEqual([`file://${file}`]);
      expect(log.errors).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
