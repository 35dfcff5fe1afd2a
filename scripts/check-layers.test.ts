import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without types
import { checkLayers } from './check-layers.mjs';

const repoRoot = path.resolve(import.meta.dirname, '..');
const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function fixture(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'karotte-layers-'));
  made.push(root);
  fs.copyFileSync(path.join(repoRoot, 'ARCHITECTURE.md'), path.join(root, 'ARCHITECTURE.md'));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

const manifest = (name: string, deps: Record<string, string> = {}): string =>
  JSON.stringify({ name, dependencies: deps });

describe('check-layers', () => {
  it('passes on this repository', () => {
    expect(checkLayers(repoRoot)).toEqual([]);
  });

  it('fails when a primitive imports core', () => {
    const root = fixture({
      'packages/limits/package.json': manifest('@karotte/limits'),
      'packages/limits/src/index.ts': "import { runEpisode } from '@karotte/core';\n",
    });
    expect(checkLayers(root)).toEqual([
      'packages/limits/src/index.ts: @karotte/limits may not import @karotte/core',
    ]);
  });

  it('fails on a forbidden package.json dependency, a deep import and a relative escape', () => {
    const root = fixture({
      'packages/file-guard/package.json': manifest('@karotte/file-guard', {
        '@karotte/sandbox': 'workspace:^',
      }),
      'packages/file-guard/src/a.ts': "export { x } from '@karotte/base/src/errors.js';\n",
      'packages/file-guard/src/b.ts': "import '../../limits/src/index.js';\n",
    });
    expect(checkLayers(root).sort()).toEqual([
      'packages/file-guard/package.json: @karotte/file-guard may not depend on @karotte/sandbox',
      'packages/file-guard/src/a.ts: deep import @karotte/base/src/errors.js (use the public entry point @karotte/base)',
      'packages/file-guard/src/b.ts: relative import ../../limits/src/index.js leaves the package',
    ]);
  });

  it('takes a subpath the target declares in its exports as public, and no other', () => {
    const root = fixture({
      'packages/sandbox/package.json': JSON.stringify({
        name: '@karotte/sandbox',
        exports: { '.': './dist/index.js', './confinement': './dist/confinement.js' },
      }),
      'packages/grader/package.json': manifest('@karotte/grader', { '@karotte/sandbox': 'workspace:^' }),
      'packages/grader/src/a.ts': "import { World } from '@karotte/sandbox/confinement';\n",
      'packages/grader/src/b.ts': "import { x } from '@karotte/sandbox/internal';\n",
    });
    expect(checkLayers(root)).toEqual([
      'packages/grader/src/b.ts: deep import @karotte/sandbox/internal (use the public entry point @karotte/sandbox)',
    ]);
  });

  it('fails when a primitive depends on or imports the app (the unscoped package karotte)', () => {
    const root = fixture({
      'packages/grader/package.json': manifest('@karotte/grader', { karotte: 'workspace:^' }),
      'packages/grader/src/index.ts': "import { main } from 'karotte';\nimport 'karotte-unrelated';\n",
    });
    expect(checkLayers(root).sort()).toEqual([
      'packages/grader/package.json: @karotte/grader may not depend on karotte',
      'packages/grader/src/index.ts: @karotte/grader may not import karotte',
    ]);
  });

  it('fails on a package missing from the table', () => {
    const root = fixture({ 'packages/rogue/package.json': manifest('@karotte/rogue') });
    expect(checkLayers(root)).toEqual([
      'packages/rogue: package @karotte/rogue is not in the ARCHITECTURE.md layers table',
    ]);
  });
});
