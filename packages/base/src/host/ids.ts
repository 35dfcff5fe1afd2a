import { readFile } from 'node:fs/promises';
import { isErrno, toSystemError } from '../errors.js';

const ACCOUNT_ID_FILES: readonly string[] = Object.freeze(['/etc/passwd', '/etc/group']);
const SUBORDINATE_ID_FILES: readonly string[] = Object.freeze(['/etc/subuid', '/etc/subgid']);

/**
 * Read each file; a missing one (ENOENT, ENOTDIR) counts as empty. Any other failure throws:
 * an id database that exists but cannot be read could name the very id about to be handed
 * out, so guessing "empty" would fail open.
 */
async function readIdFiles(files: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const file of files) {
    try {
      out.push(await readFile(file, 'utf8'));
    } catch (error) {
      if (!isErrno(error, 'ENOENT', 'ENOTDIR')) throw toSystemError(error, `read ${file}`);
    }
  }
  return out;
}

/**
 * Every uid and gid named in the host's account databases (the third field of each
 * `name:password:id:...` line of passwd(5) and group(5)): an id Karotte hands to a student or
 * a grader must not be one of them, or it would share files and processes with that account.
 *
 * @param files the databases read. @default ['/etc/passwd', '/etc/group']
 * @throws SystemError when a file exists but cannot be read (a missing one is empty).
 */
export async function readAccountIds(files: readonly string[] = ACCOUNT_ID_FILES): Promise<Set<number>> {
  const ids = new Set<number>();
  for (const text of await readIdFiles(files)) {
    for (const line of text.split('\n')) {
      const field = line.split(':')[2];
      // Digits only: Number('') is 0, and a comment or a NIS `+` line has no id to take.
      if (field !== undefined && /^\d+$/.test(field)) ids.add(Number(field));
    }
  }
  return ids;
}

/** One line of /etc/subuid or /etc/subgid: `owner` may map ids `start` .. `start + count - 1`. */
export interface SubordinateRange {
  /** A user name or a numeric uid, as written in the file. */
  readonly owner: string;
  readonly start: number;
  readonly count: number;
}

/** Parse subordinate id text (subuid(5): `owner:start:count` per line; comments and junk skipped). */
export function parseSubordinateIds(text: string): SubordinateRange[] {
  const out: SubordinateRange[] = [];
  for (const line of text.split('\n')) {
    const [owner, start, count] = line.trim().split(':');
    if (owner === undefined || owner === '' || owner.startsWith('#')) continue;
    const first = Number(start);
    const size = Number(count);
    if (Number.isSafeInteger(first) && Number.isSafeInteger(size) && size > 0) {
      out.push({ owner, start: first, count: size });
    }
  }
  return out;
}

/**
 * The subordinate id ranges of the host.
 *
 * @param files the files read. @default ['/etc/subuid', '/etc/subgid']
 * @throws SystemError when a file exists but cannot be read (a missing one is empty).
 */
export async function readSubordinateIds(
  files: readonly string[] = SUBORDINATE_ID_FILES,
): Promise<SubordinateRange[]> {
  return (await readIdFiles(files)).flatMap(parseSubordinateIds);
}

/**
 * True when `uid` must not be handed out because of subordinate ids: it owns a range (it could
 * map other ids into a user namespace with newuidmap) or lies in someone's range (that user
 * could become it). Owners are matched by number only: the fresh uids Karotte hands out have
 * no name (a named uid is already refused by {@link readAccountIds}).
 */
export function hasSubordinateConflict(uid: number, ranges: readonly SubordinateRange[]): boolean {
  return ranges.some(
    (range) => range.owner === String(uid) || (uid >= range.start && uid < range.start + range.count),
  );
}
