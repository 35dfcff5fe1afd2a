import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { checkContractCopy, checkDocs, checkLinks, isCI, linksOf, markdownFiles } from './check-docs.mjs';

const script = path.join(import.meta.dirname, 'check-docs.mjs');
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

const CONTRACT = '# The contract\n\nSection 1.\n';

/** A scratch repository at <tmp>/repo with the shared contract beside it at <tmp>/shared. */
function fixture(files: Record<string, string>, shared: string | null = CONTRACT): string {
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-docs-'));
  made.push(base);
  const root = path.join(base, 'repo');
  const all = { 'docs/contract.md': CONTRACT, 'README.md': '# Repo\n', ...files };
  for (const [file, text] of Object.entries(all)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  if (shared !== null) {
    fs.mkdirSync(path.join(base, 'shared'));
    fs.writeFileSync(path.join(base, 'shared', 'contract.md'), shared);
  }
  return root;
}

/** Run the script itself on `root` (a copy of it placed in <root>/scripts). */
function runScript(root: string, env: Record<string, string | undefined>) {
  fs.mkdirSync(path.join(root, 'scripts'), { recursive: true });
  fs.copyFileSync(script, path.join(root, 'scripts', 'check-docs.mjs'));
  const clean = Object.fromEntries(
    Object.entries({ ...process.env, CI: undefined, KAROTTE_SHARED_DIR: undefined, ...env }).filter(
      (entry): entry is [string, string] => entry[1] !== undefined,
    ),
  );
  return spawnSync(process.execPath, [path.join(root, 'scripts', 'check-docs.mjs')], {
    cwd: root,
    env: clean,
    encoding: 'utf8',
    timeout: 10_000,
  });
}

describe('check-docs: the contract copy', () => {
  // The fixtures' own ../shared is what is compared: CI sets KAROTTE_SHARED_DIR for the real
  // checkout, which must not leak into these tests.
  const savedShared = process.env['KAROTTE_SHARED_DIR'];
  beforeEach(() => {
    delete process.env['KAROTTE_SHARED_DIR'];
  });
  afterEach(() => {
    if (savedShared !== undefined) process.env['KAROTTE_SHARED_DIR'] = savedShared;
  });

  it('passes when docs/contract.md equals ../shared/contract.md byte for byte', () => {
    expect(checkContractCopy(fixture({}), { ci: true })).toEqual({ errors: [], notes: [] });
  });

  it('fails on any difference, naming the first different line', () => {
    const root = fixture({}, '# The contract\n\nSection 1 changed.\n');
    const { errors } = checkContractCopy(root, { ci: false });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /docs\/contract\.md differs from .*shared\/contract\.md \(first difference on line 3\)/,
    );
  });

  it('fails on a difference only in whitespace or line endings', () => {
    expect(
      checkContractCopy(fixture({}, CONTRACT.replaceAll('\n', '\r\n')), { ci: false }).errors,
    ).toHaveLength(1);
    expect(checkContractCopy(fixture({}, `${CONTRACT}\n`), { ci: false }).errors).toHaveLength(1);
  });

  it('fails when docs/contract.md is missing', () => {
    const root = fixture({});
    fs.rmSync(path.join(root, 'docs', 'contract.md'));
    expect(checkContractCopy(root, { ci: false }).errors).toEqual([
      expect.stringMatching(/^docs\/contract\.md is missing/),
    ]);
  });

  it('skips with a reason when the shared copy is missing outside CI, and fails under CI', () => {
    const root = fixture({}, null);
    const outside = checkContractCopy(root, { ci: false });
    expect(outside.errors).toEqual([]);
    expect(outside.notes).toEqual([expect.stringMatching(/not compared: the shared contract .* is missing/)]);
    const inCI = checkContractCopy(root, { ci: true });
    expect(inCI.errors).toEqual([expect.stringMatching(/under CI the copy must be compared, never skipped/)]);
  });

  it('reads the shared directory from KAROTTE_SHARED_DIR', () => {
    const root = fixture({}, null);
    const elsewhere = path.join(path.dirname(root), 'elsewhere');
    fs.mkdirSync(elsewhere);
    fs.writeFileSync(path.join(elsewhere, 'contract.md'), 'another contract\n');
    const result = runScript(root, { KAROTTE_SHARED_DIR: elsewhere });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`docs/contract.md differs from ${elsewhere}/contract.md`);
  });

  it('as a script: exit 0 without the shared copy outside CI, exit 1 under CI=true', () => {
    const root = fixture({}, null);
    const outside = runScript(root, {});
    expect(outside.status).toBe(0);
    expect(outside.stderr).toMatch(/docs\/contract\.md not compared: the shared contract .* is missing/);
    const inCI = runScript(root, { CI: 'true' });
    expect(inCI.status).toBe(1);
    expect(inCI.stderr).toMatch(/under CI the copy must be compared/);
  });

  it('treats CI as set unless it is empty, 0 or false', () => {
    expect(isCI({})).toBe(false);
    expect(isCI({ CI: '' })).toBe(false);
    expect(isCI({ CI: 'false' })).toBe(false);
    expect(isCI({ CI: '0' })).toBe(false);
    expect(isCI({ CI: 'true' })).toBe(true);
    expect(isCI({ CI: '1' })).toBe(true);
  });
});

describe('check-docs: relative links', () => {
  it('passes on links to files and directories that exist, and ignores URLs, anchors and code', () => {
    const root = fixture({
      'ARCHITECTURE.md': '# A\n',
      'packages/base/README.md': [
        '# base',
        'See [the architecture](../../ARCHITECTURE.md#rules) and [docs](../../docs/).',
        '![logo](<../../docs/contract.md>) [site](https://example.com/x.md) [mail](mailto:a@b.c)',
        '[top](#base) `[not a link](missing.md)`',
        '```md',
        '[in a fence](missing.md)',
        '```',
        '[ref]: ../../README.md "the root"',
        '',
      ].join('\n'),
    });
    expect(checkLinks(root)).toEqual({ errors: [], count: 4 });
  });

  it('fails on a link to a file that does not exist, with file and line', () => {
    const root = fixture({ 'CONTRIBUTING.md': '# C\n\nRead [the guide](docs/missing.md).\n' });
    expect(checkLinks(root).errors).toEqual([
      'CONTRIBUTING.md:3: link docs/missing.md points at docs/missing.md, which does not exist',
    ]);
  });

  it('fails on a link that leaves the repository, even when its target exists', () => {
    const root = fixture({
      'apps/karotte/README.md': '# app\n\nThe [contract](../../../shared/contract.md).\n',
    });
    expect(fs.existsSync(path.join(root, '../shared/contract.md'))).toBe(true);
    expect(checkLinks(root).errors).toEqual([
      'apps/karotte/README.md:3: link ../../../shared/contract.md leaves the repository (a link must point at a file inside it)',
    ]);
  });

  it('fails on a symbolic link that resolves outside the repository', () => {
    const root = fixture({ 'docs/guide.md': 'The [contract](outside.md).\n' });
    fs.symlinkSync(path.join(root, '..', 'shared', 'contract.md'), path.join(root, 'docs', 'outside.md'));
    expect(checkLinks(root).errors).toEqual([
      'docs/guide.md:1: link outside.md resolves (through a symbolic link) outside the repository',
    ]);
  });

  it('fails on a link into a build directory that a fresh clone lacks', () => {
    const root = fixture({
      'README.md': 'Run [the CLI](apps/karotte/dist/cli.js).\n',
      'apps/karotte/dist/cli.js': '',
    });
    expect(checkLinks(root).errors).toEqual([
      'README.md:1: link apps/karotte/dist/cli.js points into dist/, which a fresh clone does not have',
    ]);
  });

  it('checks the root files, docs/**, packages/*/README.md and apps/*/README.md, never node_modules', () => {
    const root = fixture({
      'CONTRIBUTING.md': '',
      'docs/deep/page.md': '',
      'packages/limits/README.md': '',
      'apps/karotte/README.md': '',
      'packages/limits/node_modules/x/README.md': '[x](missing.md)\n',
      'docs/node_modules/y.md': '[y](missing.md)\n',
      'packages/limits/src/notes.md': '[z](missing.md)\n',
    });
    expect(markdownFiles(root)).toEqual([
      'CONTRIBUTING.md',
      'README.md',
      'apps/karotte/README.md',
      'docs/contract.md',
      'docs/deep/page.md',
      'packages/limits/README.md',
    ]);
    expect(checkLinks(root).errors).toEqual([]);
  });

  it('reads inline links with titles, angle brackets and parentheses, and reference definitions', () => {
    expect(
      linksOf('[a](x.md "t") [b](<y z.md>) [c](f(1).md)\n[d]: w.md\n[^1]: a footnote\n').map(
        (link: { target: string }) => link.target,
      ),
    ).toEqual(['x.md', 'y z.md', 'f(1).md', 'w.md']);
  });

  it('as a script: exit 1 and every broken link listed', () => {
    const root = fixture({ 'README.md': '[a](gone.md)\n[b](../../outside.md)\n' });
    const result = runScript(root, {});
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('README.md:1: link gone.md points at gone.md, which does not exist');
    expect(result.stderr).toContain('README.md:2: link ../../outside.md leaves the repository');
  });
});

describe('check-docs on this repository', () => {
  it('finds the repository documentation it is meant to check', () => {
    const root = path.resolve(import.meta.dirname, '..');
    const files = markdownFiles(root);
    expect(files).toEqual(
      expect.arrayContaining(['README.md', 'docs/contract.md', 'docs/task-authoring.md']),
    );
    expect(checkDocs(root, { ci: false }).links).toBeGreaterThan(0);
  });
});
