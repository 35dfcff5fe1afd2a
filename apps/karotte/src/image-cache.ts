// Where the app unpacks task images: the core's default (/var/lib/karotte/task-images), or the
// directory KAROTTE_IMAGE_CACHE_DIR names (a root-owned directory: tests keep their own).
import type { LoadTaskOptions } from '@karotte/core';

/** The image cache the app's commands use, from KAROTTE_IMAGE_CACHE_DIR when it is set. */
export function imageCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = env['KAROTTE_IMAGE_CACHE_DIR'];
  return dir === undefined || dir === '' ? undefined : dir;
}

/** `loadTask` options of the app's commands. */
export function loadTaskOptions(env: NodeJS.ProcessEnv = process.env): LoadTaskOptions {
  const dir = imageCacheDir(env);
  return dir === undefined ? {} : { imageCacheDir: dir };
}
