import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  bareImports,
  byOutcome,
  compareOutput,
  licenseProblem,
  outputBlockProblem,
  publishablePackages,
  readmeCommandExample,
  readmeExample,
  shellWords,
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
    // A duration as the app prints it, whichever unit a slow machine reaches.
    for (const shown of ['950 ms', '3.2 s', '2 min 5 s']) {
      expect(compareOutput('(took {{duration}})', `(took ${shown})`), shown).toBeUndefined();
    }
    expect(compareOutput('(took {{duration}})', '(took 3.25 s)')).toBeDefined();
    expect(compareOutput('a {{duration}} b', 'a 1 ms b')).toBeUndefined();
    expect(compareOutput('a {{duration}} b', 'a 1 ms x b')).toBeDefined();
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

describe("check-install: a bin-only package's example", () => {
  const readme = (body: string): string =>
    `# karotte\n\nThe command line.\n\n## Install\n\nx\n\n${body}\n## Errors and exit status\n`;
  const example = (sh: string, prose = 'Output (as root):'): ReturnType<typeof readmeCommandExample> =>
    readmeCommandExample(
      readme(`## Example\n\n\`\`\`sh\n${sh}\n\`\`\`\n\n${prose}\n\n\`\`\`text\nok {{int}}\n\`\`\`\n`),
      ['karotte'],
    );

  it('takes every npx line of the first sh block and the next text block', () => {
    expect(
      example(
        'npx karotte validate --task node_modules/karotte/examples/quarterly-revenue\n\nnpx karotte run --task t \\\n  --agent replay --out out',
      ),
    ).toEqual({
      lang: 'sh',
      commands: [
        {
          line: 1,
          text: 'npx karotte validate --task node_modules/karotte/examples/quarterly-revenue',
          args: ['karotte', 'validate', '--task', 'node_modules/karotte/examples/quarterly-revenue'],
        },
        {
          line: 3,
          text: 'npx karotte run --task t   --agent replay --out out',
          args: ['karotte', 'run', '--task', 't', '--agent', 'replay', '--out', 'out'],
        },
      ],
      output: 'ok {{int}}',
      needsRoot: true,
    });
    expect(example('npx karotte --help', 'Output:').needsRoot).toBe(false);
  });

  it('refuses every line that is not a plain npx command of the package', () => {
    expect(example('npx karotte check\nnpm run setup').error).toBe(
      'sh line 2: `npm run setup` is not an `npx karotte …` command (the only kind an example runs)',
    );
    expect(example('# validate it\nnpx karotte validate').error).toMatch(
      /^sh line 1: `# validate it` is not/,
    );
    expect(example('npx karotte-other check').error).toMatch(/^sh line 1: .* is not an `npx karotte …`/);
    expect(example('npx karotte check # exit 1').error).toBe(
      'sh line 1: "#" outside quotes (only a plain command runs): `npx karotte check # exit 1`',
    );
    expect(example('npx karotte check > out.txt').error).toMatch(/^sh line 1: ">" outside quotes/);
    expect(example('npx karotte check; rm -rf out').error).toMatch(/^sh line 1: ";" outside quotes/);
    expect(example('npx karotte check \\').error).toBe('sh line 1: a trailing \\ continues no line');
    expect(example('\n\n').error).toBe('the ```sh block under `## Example` holds no command');
  });

  it('names what is missing', () => {
    expect(readmeCommandExample('# karotte\n\n## Install\n', ['karotte']).error).toBe(
      'no `## Example` section',
    );
    expect(readmeCommandExample(readme('## Example\n\n```ts\nx;\n```\n'), ['karotte']).error).toBe(
      'no ```sh block under `## Example`',
    );
    expect(
      readmeCommandExample(readme('## Example\n\n```sh\nnpx karotte check\n```\n'), ['karotte']).error,
    ).toBe('no ```text output block after the ```sh block');
  });

  it('splits words as sh does for a plain command, and nothing more', () => {
    expect(shellWords(`npx karotte run  --task 'a b' --only "x,y"z`)).toEqual({
      words: ['npx', 'karotte', 'run', '--task', 'a b', '--only', 'x,yz'],
    });
    expect(shellWords(`echo '$HOME; *'`)).toEqual({ words: ['echo', '$HOME; *'] });
    expect(shellWords('x "$HOME"').error).toBe('"$" inside "…" (use \'…\')');
    expect(shellWords("x 'open").error).toBe("unterminated ' quote");
    for (const char of ['|', '&', ';', '<', '>', '(', '$', '`', '\\', '*', '?', '[', '{', '~', '#', '!']) {
      expect(shellWords(`x a${char}b`).error, char).toMatch(/outside quotes/);
    }
  });
});

describe('check-install: licenses and runtimes', () => {
  const apache =
    '\n                                 Apache License\n                           Version 2.0, January 2004\n';

  it('wants LICENSE with the Apache License 2.0 and "license": "Apache-2.0"', () => {
    const files = ['package/package.json', 'package/LICENSE', 'package/dist/index.js'];
    expect(licenseProblem(files, { license: 'Apache-2.0' }, apache)).toBeUndefined();
    expect(licenseProblem(files.slice(0, 1), { license: 'Apache-2.0' }, undefined)).toBe(
      'the tarball has no LICENSE',
    );
    expect(licenseProblem(files, { license: 'MIT' }, 'MIT License')).toBe(
      'its LICENSE is not the Apache License 2.0; package.json license is "MIT", not "Apache-2.0"',
    );
    expect(licenseProblem(files, {}, apache)).toBe('package.json license is undefined, not "Apache-2.0"');
  });

  it('groups the Node.js that gave the same result, in order', () => {
    const a = { version: '24.22.3' };
    const b = { version: '22.12.0' };
    const ok = { status: 'ok', head: 'import()', tail: ': all 3' };
    expect(
      byOutcome([
        { runtime: a, ...ok },
        { runtime: b, ...ok },
      ]),
    ).toEqual([{ ...ok, runtimes: [a, b] }]);
    const threw = { status: 'fail', head: 'import() threw', tail: '', block: 'Error: x' };
    expect(
      byOutcome([
        { runtime: a, ...ok },
        { runtime: b, ...threw },
      ]),
    ).toEqual([
      { ...ok, runtimes: [a] },
      { ...threw, runtimes: [b] },
    ]);
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
      // A string "import" (a subcommand name) is not an import.
      'switch (sub) { case "import": { const { values } = parse(rest, { digest: { type: "string" } }); } }',
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
