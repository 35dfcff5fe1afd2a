import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { checkReadmes, checkSections, LIBRARY_SECTIONS } from './check-readmes.mjs';

const repoRoot = path.resolve(import.meta.dirname, '..');
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function fixture(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-readmes-'));
  made.push(root);
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

const library = (name: string, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ name, exports: { '.': './dist/index.js' }, files: ['dist', 'README.md'], ...extra });

/** A README with the given level-2 sections, each with a line of text. */
const readme = (name: string, sections: readonly string[]): string =>
  `# ${name}\n\nWhat it does.\n\n${sections.map((title) => `## ${title}\n\nText.\n`).join('\n')}`;

const ALL: string[] = LIBRARY_SECTIONS.map((section: { title: string }) => section.title);
const REQUIRED = [
  'Install',
  'Example',
  'API',
  'Errors',
  'Platform support',
  'What it does NOT protect against',
];

describe('check-readmes', () => {
  it('passes on this repository', () => {
    expect(checkReadmes(repoRoot)).toEqual([]);
  });

  it('passes with every section, and with the optional ones left out', () => {
    expect(checkSections(readme('@karotte/x', ALL), { name: '@karotte/x', kind: 'library' })).toEqual([]);
    expect(checkSections(readme('@karotte/x', REQUIRED), { name: '@karotte/x', kind: 'library' })).toEqual(
      [],
    );
  });

  it('fails on a missing section', () => {
    const root = fixture({
      'packages/limits/package.json': library('@karotte/limits'),
      'packages/limits/README.md': readme(
        '@karotte/limits',
        REQUIRED.filter((title) => title !== 'Errors'),
      ),
    });
    expect(checkReadmes(root)).toEqual(['packages/limits/README.md: missing section `## Errors`']);
  });

  it('fails on an out-of-order section', () => {
    const root = fixture({
      'packages/limits/package.json': library('@karotte/limits'),
      'packages/limits/README.md': readme('@karotte/limits', [
        'Install',
        'API',
        'Example',
        'Errors',
        'Platform support',
        'What it does NOT protect against',
      ]),
    });
    expect(checkReadmes(root)).toEqual([
      'packages/limits/README.md: section `## Example` comes after `## API`; the order is `## Install`, `## Example`, `## API`, `## Errors`, `## Platform support`, `## What it does NOT protect against`',
    ]);
  });

  it('fails on an unknown or repeated section, a wrong title and a missing sentence', () => {
    const text = `# karotte-limits\n\n${[...REQUIRED, 'Usage', 'Install'].map((t) => `## ${t}\n`).join('\n')}`;
    const problems = checkSections(text, { name: '@karotte/limits', kind: 'library' });
    expect(problems).toContain('the title is `# karotte-limits`, expected `# @karotte/limits`');
    expect(problems).toContain('no sentence under the title saying what it does');
    expect(problems).toContain('section `## Install` appears twice');
    expect(problems.some((p: string) => p.startsWith('unknown section `## Usage`'))).toBe(true);
  });

  it('ignores headings inside fenced code blocks', () => {
    const text = readme('@karotte/x', REQUIRED).replace(
      '## Example\n\nText.\n',
      '## Example\n\n```md\n## Benchmarks\n```\n',
    );
    expect(checkSections(text, { name: '@karotte/x', kind: 'library' })).toEqual([]);
  });

  it('requires Benchmarks once bench/<package>/ exists', () => {
    const root = fixture({
      'packages/grader/package.json': library('@karotte/grader'),
      'packages/grader/README.md': readme('@karotte/grader', REQUIRED),
      'bench/grader/run.mjs': '',
    });
    expect(checkReadmes(root)).toEqual([
      'packages/grader/README.md: missing section `## Benchmarks` (bench/ has a directory for this package: record its figures)',
    ]);
  });

  it('fails on a package without a README or whose files leave it out', () => {
    const root = fixture({
      'packages/base/package.json': library('@karotte/base'),
      'packages/core/package.json': library('@karotte/core', { files: ['dist'] }),
      'packages/core/README.md': readme('@karotte/core', REQUIRED),
    });
    expect(checkReadmes(root)).toEqual([
      'packages/base/README.md: missing (every package has a README)',
      'packages/core/package.json: `files` does not include README.md',
    ]);
  });

  it('checks a publishable command-line app by its own rule, and skips a private one', () => {
    const cli = (extra: Record<string, unknown> = {}): string =>
      JSON.stringify({
        name: 'karotte',
        bin: { karotte: './dist/cli.js' },
        files: ['dist', 'README.md'],
        ...extra,
      });
    const good = readme('karotte', [
      'Install',
      'Commands',
      'Errors and exit status',
      'Platform support',
      'The red-team catalog',
      'What it does NOT protect against',
    ]);
    const swapped = readme('karotte', [
      'Install',
      'Platform support',
      'Errors and exit status',
      'What it does NOT protect against',
    ]);
    expect(
      checkReadmes(fixture({ 'apps/karotte/package.json': cli(), 'apps/karotte/README.md': good })),
    ).toEqual([]);
    expect(
      checkReadmes(fixture({ 'apps/karotte/package.json': cli(), 'apps/karotte/README.md': swapped })),
    ).toEqual([
      'apps/karotte/README.md: section `## Errors and exit status` comes after `## Platform support`; the order is `## Install`, `## Errors and exit status`, `## Platform support`, `## What it does NOT protect against`',
    ]);
    expect(
      checkReadmes(
        fixture({ 'apps/karotte/package.json': cli({ private: true }), 'apps/karotte/README.md': '' }),
      ),
    ).toEqual([]);
  });

  it('fails a command-line README whose first or last section is another one', () => {
    const text = readme('karotte', [
      'Commands',
      'Install',
      'Errors and exit status',
      'Platform support',
      'What it does NOT protect against',
      'License',
    ]);
    expect(checkSections(text, { name: 'karotte', kind: 'command-line' })).toEqual([
      '`## Install` must be the first section, not `## Commands`',
      '`## What it does NOT protect against` must be the last section, not `## License`',
    ]);
  });
});
