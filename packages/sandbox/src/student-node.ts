// The Node.js executable the student runs the network check and file tools with, and the
// hidden paths as they resolve.
import { constants, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { resolveTrustedBinary } from '@karotte/base';

export function studentNodeCandidates(explicit: string | undefined): string[] {
  if (explicit !== undefined) return [explicit];
  const out = [process.execPath];
  try {
    out.push(resolveTrustedBinary('node'));
  } catch {
    // none installed system-wide
  }
  return out;
}

/**
 * A Node.js executable the student can run inside the sandbox: not under a covered or
 * replaced directory, every ancestor traversable by others, the file readable and executable
 * by others.
 */
export function pickStudentNode(
  candidates: readonly string[],
  hidden: readonly string[],
): string | undefined {
  for (const candidate of candidates) {
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch {
      continue;
    }
    const blocked = [...hidden, '/tmp', '/dev/shm', '/home'].some(
      (dir) =>
        real === dir ||
        real.startsWith(`${dir.replace(/\/$/, '')}/`) ||
        candidate.startsWith(`${dir.replace(/\/$/, '')}/`),
    );
    if (blocked) continue;
    let ok = true;
    for (let dir = path.dirname(real); ; dir = path.dirname(dir)) {
      if ((statSync(dir).mode & constants.S_IXOTH) === 0) ok = false;
      if (dir === '/') break;
    }
    const mode = statSync(real).mode;
    if ((mode & constants.S_IXOTH) === 0 || (mode & constants.S_IROTH) === 0) ok = false;
    if (ok) return candidate;
  }
  return undefined;
}

export function resolvedHidden(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const raw of paths) {
    out.add(raw);
    try {
      out.add(realpathSync(raw));
    } catch {
      // missing: covered only if it appears later under its given name (it is skipped then)
    }
  }
  return [...out];
}
