// Type-aware lint for every package. Security invariants of the project live here as rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Packages allowed to start processes (they own process lifetimes and limits). */
const PROCESS_OWNERS = ['limits', 'proc-reaper', 'file-guard', 'sandbox', 'grader'];

/**
 * No `instanceof` on a class imported from another Karotte package: two installed copies of a
 * package (two versions in one tree) have two classes, and `instanceof` is false across them.
 * Every Karotte error class has a static `isInstance()` that checks its `Symbol.for` marker.
 * Tests are exempt: they run inside one install.
 */
export const noCrossPackageInstanceof = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      crossPackage:
        '`instanceof {{name}}` fails across installed copies of {{source}}: use {{name}}.isInstance(value).',
    },
  },
  create(context) {
    const named = new Map();
    const namespaces = new Map();
    return {
      ImportDeclaration(node) {
        const source = node.source.value;
        if (typeof source !== 'string' || !source.startsWith('@karotte/') || node.importKind === 'type')
          return;
        for (const specifier of node.specifiers) {
          if (specifier.type === 'ImportNamespaceSpecifier') namespaces.set(specifier.local.name, source);
          else if (specifier.importKind !== 'type') named.set(specifier.local.name, source);
        }
      },
      BinaryExpression(node) {
        if (node.operator !== 'instanceof') return;
        const right = node.right;
        let source;
        if (right.type === 'Identifier') source = named.get(right.name);
        else if (right.type === 'MemberExpression' && right.object.type === 'Identifier')
          source = namespaces.get(right.object.name);
        if (source === undefined) return;
        context.report({
          node,
          messageId: 'crossPackage',
          data: { name: context.sourceCode.getText(right), source },
        });
      },
    };
  },
};

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
    files: ['packages/**/*.ts', 'apps/**/*.ts'],
    ignores: ['**/*.test.ts'],
    plugins: { karotte: { rules: { 'no-cross-package-instanceof': noCrossPackageInstanceof } } },
    rules: { 'karotte/no-cross-package-instanceof': 'error' },
  },
  {
    // The programs a package runs as a Node process of its own (`node -e`, as the student or a
    // target uid): plain CommonJS files inlined into the bundle as text, with no imports but
    // Node built-ins. No tsconfig holds them, so they are linted without type information.
    files: ['packages/*/src/**/programs/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['packages/*/src/**/programs/*.cjs'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', process: 'readonly', Buffer: 'readonly', TextDecoder: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
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
    // base's spawner is how the process owners run a program to its end (one small process
    // forks for the harness); nothing else in base starts a process.
    ignores: [
      ...PROCESS_OWNERS.map((name) => `packages/${name}/**`),
      'packages/base/src/host/spawner.ts',
      '**/*.test.ts',
    ],
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
