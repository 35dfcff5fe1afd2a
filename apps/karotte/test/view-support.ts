// The viewer's browser tests: Debian's Chromium (/usr/bin/chromium) driven by playwright-core,
// no browser download; `karotte view` started as a user starts it (the built CLI).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

const app = path.resolve(import.meta.dirname, '..');
export const cli = path.join(app, 'dist', 'cli.js');
export const examples = path.join(app, 'examples');
const CHROMIUM = '/usr/bin/chromium';

/** Headless Chromium from Debian's package, with nothing of its own that calls home. */
export function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install the Debian package chromium (apt-get install chromium)`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'],
  });
}

/** What a page did: every request it made, every console message and page error. */
export interface PageLog {
  readonly requests: string[];
  readonly console: string[];
  readonly errors: string[];
  readonly dialogs: string[];
}

/** Record everything a page asks for or says, from before its first navigation. */
export function recordPage(page: Page): PageLog {
  const log: PageLog = { requests: [], console: [], errors: [], dialogs: [] };
  page.on('request', (r) => log.requests.push(r.url()));
  page.on('console', (m) => log.console.push(`${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => log.errors.push(e.message));
  page.on('dialog', (d) => {
    log.dialogs.push(d.message());
    void d.dismiss();
  });
  return log;
}

/** `karotte view ...args` running, once it printed its URL. */
export interface Viewing {
  readonly child: ChildProcess;
  readonly url: string;
  stderr(): string;
  /** Send `signal` (SIGTERM by default) and wait for the exit code (SIGKILL after 20 s, then null). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export async function startView(args: readonly string[]): Promise<Viewing> {
  const child = spawn(process.execPath, [cli, 'view', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { PATH: '/usr/bin:/bin' },
  });
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`karotte view did not listen within 20 s: ${stderr}`));
    }, 20_000);
    child.stdout!.on('data', (c: Buffer) => {
      stdout += c.toString('utf8');
      const match = /^listening on (\S+)$/m.exec(stdout);
      if (match !== null) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`karotte view exited ${code} before listening: ${stderr}`));
    });
  });
  return {
    child,
    url,
    stderr: () => stderr,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Names of the runs the runs table shows, in order. */
export async function shownRuns(page: Page): Promise<string[]> {
  return page.locator('tr[data-run] td.name').allTextContents();
}
