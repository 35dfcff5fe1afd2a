import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSandboxWorld, type WorldFactory } from '@karotte/core';

/** The app's own directory (`apps/karotte`): its examples, their answer keys, its test fixtures. */
export const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * The app's sandbox: the task's own paths are hidden by core; the app hides its whole
 * directory too (every example's answer key and the test fixtures' copies of them are there,
 * world-readable in a checkout) and the output directories (earlier runs' results).
 */
export function appWorld(outDirs: readonly string[] = []): WorldFactory {
  return (spec) => createSandboxWorld(spec, { hiddenPaths: appHiddenPaths(outDirs) });
}

/** The host paths the app hides besides the task's own: its directory and the output directories. */
export function appHiddenPaths(outDirs: readonly string[] = []): string[] {
  return [APP_DIR, ...outDirs];
}
