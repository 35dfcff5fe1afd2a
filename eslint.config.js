// Type-aware lint for every package. Security invariants of the project live here as rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Packages allowed to start processes (they own process lifetimes and limits). */
const PROCESS_OWNERS = ['limits', 'proc-reaper', 'file-guard', 'sandbox', 'grader'];

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/coverage/**',
      '**/*.config.*',
      'bench/**',
      'scripts/**',
      'test/**',
      '.ci/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Floating promises are real bugs when they are kills or cleanups.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      '@typescript-eslint/no-unnecessary-condition': 'off',
      '@typescript-eslint/no-extraneous-class': 'off',
      // noUncheckedIndexedAccess makes `!` the honest way to say "the loop bound proves it".
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-restricted-syntax': [
        'error',
        {
          selector: "Property[key.name='shell'][value.value=true]",
          message:
            'shell: true is forbidden: pass argv arrays to binaries resolved with resolveTrustedBinary().',
        },
        {
          selector: 'ExportAllDeclaration',
          message: 'No export * : export named symbols explicitly from src/index.ts.',
        },
        {
          selector: "NewExpression[callee.name='Error']",
          message: 'Throw a KarotteError subclass with a stable code, not a bare Error.',
        },
        {
          selector: "CallExpression[callee.object.name='JSON'][callee.property.name='parse']",
          message:
            'No raw JSON.parse: parse untrusted input with a zod schema through a bounded parser (eslint-disable with a reason for trusted input).',
        },
      ],
    },
  },
  {
    files: ['**/*.test.ts'],
    rules: {
      'no-restricted-syntax': 'off',
      'no-control-regex': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
    },
  },
  {
    files: ['packages/**/*.ts', 'apps/**/*.ts'],
    ignores: [...PROCESS_OWNERS.map((name) => `packages/${name}/**`), '**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'node:child_process',
              message: 'Only process-owning packages (' + PROCESS_OWNERS.join(', ') + ') start processes.',
            },
            { name: 'child_process', message: 'Only process-owning packages start processes.' },
            { name: 'execa', message: 'Only process-owning packages start processes.' },
          ],
        },
      ],
    },
  },
);
