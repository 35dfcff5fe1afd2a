import { Linter } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';
import { noCrossPackageInstanceof } from '../eslint.config.js';

function lint(code: string): string[] {
  const linter = new Linter({ configType: 'flat' });
  const messages = linter.verify(
    code,
    [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        plugins: { karotte: { rules: { 'no-cross-package-instanceof': noCrossPackageInstanceof } } },
        rules: { 'karotte/no-cross-package-instanceof': 'error' },
      },
    ],
    'src/x.ts',
  );
  return messages.map((message) => message.message);
}

describe('karotte/no-cross-package-instanceof', () => {
  it('flags instanceof on a class imported from another Karotte package', () => {
    expect(
      lint(
        "import { CoreError } from '@karotte/core';\nexport const f = (e: unknown) => e instanceof CoreError;",
      ),
    ).toEqual([
      '`instanceof CoreError` fails across installed copies of @karotte/core: use CoreError.isInstance(value).',
    ]);
    expect(
      lint(
        "import * as base from '@karotte/base';\nexport const f = (e: unknown) => e instanceof base.SystemError;",
      ),
    ).toHaveLength(1);
    expect(
      lint(
        "import { X as Y } from '@karotte/limits/testing';\nexport const f = (e: unknown) => e instanceof Y;",
      ),
    ).toHaveLength(1);
  });

  it('allows isInstance, local classes and other packages', () => {
    expect(
      lint(
        "import { CoreError } from '@karotte/core';\nexport const f = (e: unknown) => CoreError.isInstance(e);",
      ),
    ).toEqual([]);
    expect(
      lint(
        "import { CoreError } from './errors.js';\nexport const f = (e: unknown) => e instanceof CoreError;",
      ),
    ).toEqual([]);
    expect(
      lint(
        "import { ZodError } from 'zod';\nexport const f = (e: unknown) => e instanceof ZodError || e instanceof Error;",
      ),
    ).toEqual([]);
  });
});
