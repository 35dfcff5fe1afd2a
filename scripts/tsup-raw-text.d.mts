// Types of tsup-raw-text.mjs for TypeScript callers (a test that bundles a package's source).
import type { Options } from 'tsup';

/** The esbuild plugin that inlines `./x?raw` imports as the file's text. */
export function rawText(): NonNullable<Options['esbuildPlugins']>[number];
