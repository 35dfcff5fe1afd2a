// The app README's commands, run as written (root, CI=true): every `npm run --silent karotte
// -- …` line of its ```sh blocks, from the repository root, through a shell as a person would
// paste it. A trailing `# exit N` is the status it must exit with (none: 0); `# writes <file>…`
// names files it must leave behind. Any other command in a ```sh block fails the test, so
// the README cannot hold an example this test does not run (except `npm run setup`, which
// is what made this checkout testable in the first place).
//
// The one exception is `## Example`: its ```sh block is for a user who installed the package
// (not a checkout), so its lines are `npx karotte …`, run from a directory where the package is
// installed. scripts/check-install.mjs runs them from the packed tarball and compares their
// stdout with the ```text block after them; this test only checks that the block holds
// nothing else, and that `npx` lines appear nowhere else (where nothing would run them).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmCommand } from '../../../scripts/tools.mjs';

const app = path.resolve(import.meta.dirname, '..');
const root = path.resolve(app, '..', '..');
const readme = fs.readFileSync(path.join(app, 'README.md'), 'utf8');
const PREFIX = 'npm run --silent karotte -- ';
/** The installed-package example's commands (run by scripts/check-install.mjs, not here). */
const INSTALLED_PREFIX = 'npx karotte ';

interface Example {
  readonly line: string;
  readonly command: string;
  readonly exit: number;
  readonly writes: readonly string[];
}

/** Every line of every ```sh block, continuation lines joined. */
function shellLines(markdown: string): string[] {
  const lines: string[] = [];
  for (const block of markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)) {
    const joined = block[1]!.replace(/\s*\\\n\s*/g, ' ');
    for (const line of joined.split('\n')) if (line.trim() !== '') lines.push(line.trim());
  }
  return lines;
}

/** A README line as a command with its claims: `cmd  # exit 1; writes a b`. */
function parseExample(line: string): Example {
  const hash = line.search(/\s#\s/);
  const command = (hash === -1 ? line : line.slice(0, hash)).trim();
  const note = hash === -1 ? '' : line.slice(hash).replace(/^\s#\s*/, '');
  const exit = /(?:^|;\s*)exit (\d+)/.exec(note);
  const writes = /(?:^|;\s*)writes ([^;]+)/.exec(note);
  return {
    line,
    command,
    exit: exit === null ? 0 : Number(exit[1]),
    writes: writes === null ? [] : writes[1]!.trim().split(/\s+/),
  };
}

/** `markdown` split into its `## Example` section and everything else (fences respected). */
function splitExample(markdown: string): { example: string; rest: string } {
  const example: string[] = [];
  const rest: string[] = [];
  let inExample = false;
  let fence = false;
  for (const line of markdown.split('\n')) {
    if (/^```/.test(line)) fence = !fence;
    if (!fence && /^## /.test(line)) inExample = line.slice(3).trim() === 'Example';
    (inExample ? example : rest).push(line);
  }
  return { example: example.join('\n'), rest: rest.join('\n') };
}

const { example: exampleSection, rest } = splitExample(readme);
const installedLines = shellLines(exampleSection);
const lines = shellLines(rest);
const examples = lines.filter((line) => line.startsWith(PREFIX)).map(parseExample);
const claimed = examples.flatMap((example) => example.writes);

// This test's own PATH (scripts/test.mjs gives every child the project's toolchain PATH) with the
// running node in front, and npm's directory (found as the project's scripts find it: beside
// node, else /usr/local/bin, /usr/bin, /bin) last when the PATH lacks it.
const examplePath = [
  path.dirname(process.execPath),
  ...(process.env['PATH'] ?? '').split(':'),
  path.dirname(npmCommand()),
]
  .filter((entry, i, all) => entry !== '' && all.indexOf(entry) === i)
  .join(':');

/** What the examples write: only the temporary directories they name (karotte-… under /tmp). */
function removeClaimedDirs(): void {
  for (const file of claimed) {
    const dir = path.dirname(file);
    if (/^\/tmp\/karotte-[^/]+/.test(dir)) {
      fs.rmSync(/^\/tmp\/karotte-[^/]+/.exec(dir)![0], { recursive: true, force: true });
    }
  }
}
// Before too: a run killed half-way leaves them, and `init` refuses a directory that is not empty.
beforeAll(removeClaimedDirs);
afterAll(removeClaimedDirs);

describe('the app README', () => {
  it('holds only commands this test runs, with claims it can check', () => {
    expect(examples.length).toBeGreaterThanOrEqual(10);
    const others = lines.filter((line) => !line.startsWith(PREFIX) && line !== 'npm run setup');
    expect(others).toEqual([]);
    // `## Example` holds the installed-package commands only (check-install runs them), and its
    // output block after them.
    expect(installedLines.length).toBeGreaterThan(0);
    expect(installedLines.filter((line) => !line.startsWith(INSTALLED_PREFIX))).toEqual([]);
    expect(exampleSection).toMatch(/^```sh\n[\s\S]*?^```\n[\s\S]*?^```text\n/m);
    // Claimed outputs are absolute paths in a temporary directory named for karotte, so running
    // the examples never writes into the checkout and the cleanup above finds them.
    for (const file of claimed) expect(file).toMatch(/^\/tmp\/karotte-[^/]+\//);
    // The contract is linked where docs/ keeps it.
    expect(readme).toContain('](../../docs/contract.md)');
    expect(fs.existsSync(path.join(root, 'docs', 'contract.md'))).toBe(true);
  });

  it.each(examples.map((example) => [example.command, example] as const))(
    '%s',
    (_, example) => {
      for (const file of example.writes) fs.rmSync(file, { force: true });
      const child = spawnSync('/bin/sh', ['-c', example.command], {
        cwd: root,
        encoding: 'utf8',
        env: { ...process.env, CI: 'true', PATH: examplePath },
        timeout: 900_000,
        maxBuffer: 64 * 1024 * 1024,
      });
      const shown = `${example.line}\n--- stdout\n${child.stdout}\n--- stderr\n${child.stderr}`;
      expect(child.status, shown).toBe(example.exit);
      for (const file of example.writes) expect(fs.existsSync(file), `${file}\n${shown}`).toBe(true);
      // A person never sees a stack trace.
      expect(child.stderr, shown).not.toMatch(/\n\s+at .+:\d+:\d+\)?\n/);
      if (example.exit === 0) expect(child.stdout.length, shown).toBeGreaterThan(0);
    },
    900_000,
  );
});
