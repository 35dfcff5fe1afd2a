import { constants, lstatSync, mkdirSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { SandboxError } from './errors.js';

/**
 * Create `dir` (and its parents) root-only, or verify an existing one: owned by root, a real
 * directory (not a link), and mode 0700. Every ancestor must be root-owned and not writable
 * by others, or a local user could swap a component and make root write through it.
 */
export function ensureRootOnlyDir(dir: string): void {
  const parts = path.resolve(dir).split('/').filter(Boolean);
  let current = '/';
  for (const [index, part] of parts.entries()) {
    current = path.join(current, part);
    const last = index === parts.length - 1;
    try {
      mkdirSync(current, { mode: last ? 0o700 : 0o755 });
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') {
        throw new SandboxError('SETUP_FAILED', `cannot create state directory ${current}`, { cause: error });
      }
    }
    const stats = lstatSync(current);
    if (!stats.isDirectory()) {
      throw new SandboxError(
        'SETUP_FAILED',
        `${current} is not a directory (a link or a file); refusing it as state`,
      );
    }
    if (stats.uid !== 0) {
      throw new SandboxError(
        'SETUP_FAILED',
        `${current} is owned by uid ${stats.uid}, not root; refusing it as state`,
      );
    }
    if ((stats.mode & constants.S_IWOTH) !== 0 && (stats.mode & 0o1000) === 0) {
      throw new SandboxError('SETUP_FAILED', `${current} is writable by others; refusing it as state`);
    }
    if (last && (stats.mode & 0o777) !== 0o700) chmodSync(current, 0o700);
  }
}
