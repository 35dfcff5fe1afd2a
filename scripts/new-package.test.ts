import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as prettier from 'prettier';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { checkLayers } from './check-layers.mjs';
// @ts-expect-error: a plain .mjs script without types
import { checkReadmes } from './check-readmes.mjs';
// @ts-expect-error: a plain .mjs script without types
import { TEMPLATE_DIR, createPackage, fillIn, nameProblem, nextSteps } from './new-package.mjs';

const repoRoot = path.resolve(import.meta.dirname, '..');
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function scratchRoot(): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-new-package-'));
  made.push(root);
  return root;
}

const readJson = (file: string): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;

describe('new-package', () => {
  it('refuses names that are not package names', () => {
    for (const bad of [
      '',
      'Net',
      '1net',
      'net_guard',
      'net--guard',
      'net-',
      '-net',
      'a/b',
      'template-package',
    ]) {
      expect(nameProblem(bad)).not.toBeNull();
    }
    expect(nameProblem('x'.repeat(51))).toMatch(/longer than 50/);
    for (const good of ['net', 'net-guard', 'tty2-guard']) expect(nameProblem(good)).toBeNull();
  });

  it('fills in the kebab, Pascal and camel forms', () => {
    expect(
      fillIn('@karotte/template-package TemplatePackageError templatePackageOptionsSchema', 'net-guard'),
    ).toBe('@karotte/net-guard NetGuardError netGuardOptionsSchema');
  });

  it('generates packages/<name> with the name everywhere and no placeholder left', async () => {
    const root = scratchRoot();
    const { dir, files, formatted } = await createPackage({ name: 'net-guard', root });
    expect(dir).toBe(path.join(root, 'packages', 'net-guard'));
    expect(formatted).toBe(true);
    expect(files).toEqual([
      'README.md',
      'package.json',
      'src/errors.ts',
      'src/index.ts',
      'src/net-guard.test.ts',
      'src/net-guard.ts',
      'tsconfig.json',
      'tsup.config.ts',
    ]);
    for (const file of files) {
      const text = fs.readFileSync(path.join(dir, file), 'utf8');
      expect(text, file).not.toMatch(/template-package|TemplatePackage|templatePackage/);
    }
    const manifest = readJson(path.join(dir, 'package.json'));
    expect(manifest).toMatchObject({
      name: '@karotte/net-guard',
      version: '0.0.0',
      repository: { directory: 'packages/net-guard' },
    });
    expect(fs.readFileSync(path.join(dir, 'src', 'index.ts'), 'utf8')).toContain(
      "export { NetGuardError, isNetGuardError } from './errors.js';",
    );
    expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toMatch(/^# @karotte\/net-guard\n/);
    expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toContain(
      "pnpm --filter '@karotte/net-guard...' pack --pack-destination /tmp/karotte-packs",
    );
  });

  it('has the package.json shape of @karotte/base', async () => {
    const root = scratchRoot();
    const { dir } = await createPackage({ name: 'net-guard', root });
    const generated = readJson(path.join(dir, 'package.json'));
    const base = readJson(path.join(repoRoot, 'packages', 'base', 'package.json'));
    for (const key of [
      'type',
      'sideEffects',
      'exports',
      'main',
      'types',
      'files',
      'engines',
      'publishConfig',
      'scripts',
    ]) {
      expect(generated[key], key).toEqual(base[key]);
    }
    expect(Object.keys(generated.dependencies as object)).toEqual(['@karotte/base', 'zod']);
    expect((generated.dependencies as Record<string, string>).zod).toBe(
      (base.dependencies as Record<string, string>).zod,
    );
    for (const file of ['tsconfig.json', 'tsup.config.ts']) {
      expect(fs.readFileSync(path.join(dir, file), 'utf8'), file).toBe(
        fs.readFileSync(path.join(repoRoot, 'packages', 'base', file), 'utf8'),
      );
    }
  });

  it('writes files that pass prettier --check with a long name too', async () => {
    const root = scratchRoot();
    const { dir, files } = await createPackage({ name: 'very-long-primitive-name-for-line-widths', root });
    for (const file of files) {
      const target = path.join(dir, file);
      const config = (await prettier.resolveConfig(path.join(TEMPLATE_DIR, 'package.json'))) ?? {};
      const ok = await prettier.check(fs.readFileSync(target, 'utf8'), { ...config, filepath: target });
      expect(ok, file).toBe(true);
    }
  });

  it('passes the layering check once the layers table has it, and fails until then', async () => {
    const root = scratchRoot();
    await createPackage({ name: 'layers-probe', root });
    const architecture = fs.readFileSync(path.join(repoRoot, 'ARCHITECTURE.md'), 'utf8');
    fs.writeFileSync(path.join(root, 'ARCHITECTURE.md'), architecture);
    expect(checkLayers(root)).toEqual([
      'packages/layers-probe: package @karotte/layers-probe is not in the ARCHITECTURE.md layers table',
    ]);
    fs.writeFileSync(
      path.join(root, 'ARCHITECTURE.md'),
      architecture.replace(
        '"@karotte/base": [],',
        '"@karotte/base": [],\n  "@karotte/layers-probe": ["@karotte/base"],',
      ),
    );
    expect(checkLayers(root)).toEqual([]);
  });

  it('writes a README that passes the README shape check', async () => {
    const root = scratchRoot();
    fs.writeFileSync(path.join(root, 'pnpm-workspace.yaml'), 'packages:\n  - packages/*\n');
    await createPackage({ name: 'net-guard', root });
    expect(checkReadmes(root)).toEqual([]);
  });

  it('refuses a directory that exists and leaves it as it was', async () => {
    const root = scratchRoot();
    fs.mkdirSync(path.join(root, 'packages', 'net-guard'), { recursive: true });
    fs.writeFileSync(path.join(root, 'packages', 'net-guard', 'keep.txt'), 'mine');
    await expect(createPackage({ name: 'net-guard', root })).rejects.toThrow(
      /packages\/net-guard already exists/,
    );
    expect(fs.readdirSync(path.join(root, 'packages', 'net-guard'))).toEqual(['keep.txt']);
    expect(fs.readdirSync(path.join(root, 'packages'))).toEqual(['net-guard']);
  });

  it('names the next steps, the layers table first', () => {
    const steps = nextSteps('net-guard').join('\n');
    expect(steps).toContain('"@karotte/net-guard": ["@karotte/base"]');
    expect(steps).toContain('pnpm changeset');
    expect(steps).toContain('pnpm-lock.yaml');
  });
});
