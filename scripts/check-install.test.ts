import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  bareImports,
  compareOutput,
  outputBlockProblem,
  publishablePackages,
  readmeExample,
  // @ts-expect-error: a plain .mjs script without types
} from './check-install.mjs';

const repoRoot = path.resolve(import.meta.dirname, '..');

describe('check-install: output blocks', () => {
  it('matches exactly, one trailing newline aside', () => {
    expect(compareOutput('passed 1 []\ntrue', 'passed 1 []\ntrue\n')).toBeUndefined();
    expect(compareOutput('passed 1 []', 'passed 1 [] \n')).toBe(
      'line 1: expected "passed 1 []", got "passed 1 [] "',
    );
    expect(compareOutput('a\nb', 'a\n')).toBe('line 2: output ended, expected "b"');
    expect(compareOutput('a', 'a\nb\n')).toBe('line 2: unexpected extra output "b"');
  });

  it('has typed placeholders and nothing looser', () => {
    expect(compareOutput('uid {{int}} took {{number}} ms', 'uid 2000142570 took 12.5 ms')).toBeUndefined();
    expect(compareOutput('uid {{int}}', 'uid abc')).toBe('line 1: expected "uid {{int}}", got "uid abc"');
    expect(compareOutput('{{path}} {{hex}}', '/tmp/karotte-custody-x1 084c79')).toBeUndefined();
    expect(compareOutput('{{int}}', '12 13')).toBeDefined();
    // Regular-expression characters in the block are literal.
    expect(compareOutput('[ 1.5 ] (x)', '[ 105 ] (x)')).toBeDefined();
    expect(outputBlockProblem('ok {{uid}}')).toMatch(/^unknown placeholder \{\{uid\}\}/);
    expect(outputBlockProblem('ok {{int}}')).toBeUndefined();
  });
});

describe('check-install: README examples', () => {
  const readme = (body: string): string =>
    `# @karotte/x\n\nIt does x.\n\n## Install\n\nx\n\n${body}\n## API\n`;

  it('takes the first ts or js block under Example and the next text block', () => {
    const example = readmeExample(
      readme(
        '## Example\n\n```sh\nnpm i\n```\n\n```ts\nconsole.log(1);\n```\n\nOutput (as root):\n\n```text\n1\n```\n\n```ts\nlater();\n```\n',
      ),
    );
    expect(example).toEqual({ lang: 'ts', code: 'console.log(1);\n', output: '1', needsRoot: true });
  });

  it('needs root only when the sentence before the output says so', () => {
    const example = readmeExample(
      readme('## Example\n\n```js\nconsole.log(1);\n```\n\nOutput:\n\n```text\n1\n```\n'),
    );
    expect(example.needsRoot).toBe(false);
    const wrapped = readmeExample(
      readme('## Example\n\n```ts\nx;\n```\n\nOutput (as\nroot):\n\n```text\n1\n```\n'),
    );
    expect(wrapped.needsRoot).toBe(true);
  });

  it('names what is missing', () => {
    expect(readmeExample('# x\n\n## API\n').error).toBe('no `## Example` section');
    expect(readmeExample(readme('## Example\n\n```sh\nx\n```\n')).error).toBe(
      'no ```ts or ```js block under `## Example`',
    );
    expect(readmeExample(readme('## Example\n\n```ts\nx\n```\n')).error).toBe(
      'no ```text output block after the example',
    );
  });
});

describe('check-install: packages and imports', () => {
  it('finds every package without "private": true', () => {
    const names = publishablePackages(repoRoot).map(
      (pkg: { manifest: { name: string } }) => pkg.manifest.name,
    );
    expect(names).toContain('@karotte/base');
    expect(names).toContain('@karotte/core');
    expect(names).not.toContain('karotte-monorepo');
  });

  it('lists bare imports and requires, not relative ones', () => {
    const source = [
      'import { z } from "zod";',
      'import fs from "node:fs";',
      'export { x } from "./x.js";',
      'const t = await import("file-type");',
      "const e = require('@karotte/base/package.json');",
      'import "side-effect";',
    ].join('\n');
    expect(bareImports(source)).toEqual([
      '@karotte/base/package.json',
      'file-type',
      'node:fs',
      'side-effect',
      'zod',
    ]);
  });
});
