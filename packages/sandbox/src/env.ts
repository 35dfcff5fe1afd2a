import { constants, lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';

/** Why an environment variable was removed or changed on its way to the student. */
export interface EnvRemoval {
  readonly name: string;
  readonly reason: string;
}

/** Variables holding `:`-separated search paths the loader or an interpreter trusts. */
const PATH_LIST_VARIABLES = new Set([
  'PATH',
  'LD_LIBRARY_PATH',
  'NODE_PATH',
  'PYTHONPATH',
  'PERL5LIB',
  'PERLLIB',
  'RUBYLIB',
  'GEM_PATH',
  'CLASSPATH',
  'MANPATH',
]);
/** Variables naming single files or directories code is loaded from. */
const PATH_VARIABLES = new Set([
  'PYTHONHOME',
  'PYTHONSTARTUP',
  'GEM_HOME',
  'GCONV_PATH',
  'LOCPATH',
  'NLSPATH',
]);
/** LD_PRELOAD and LD_AUDIT are split on spaces and colons, as glibc does. */
const PRELOAD_VARIABLES = new Set(['LD_PRELOAD', 'LD_AUDIT']);
/**
 * Variables that make a shell or the loader run code or change parsing before our script
 * runs; never passed, whatever their value.
 */
const NEVER_PASSED = new Set([
  'BASH_ENV',
  'ENV',
  'SHELLOPTS',
  'BASHOPTS',
  'PROMPT_COMMAND',
  'PS4',
  'IFS',
  'CDPATH',
  'GLOBIGNORE',
  'NODE_OPTIONS',
  'NODE_REPL_EXTERNAL_MODULE',
  'PYTHONINSPECT',
  'PERL5OPT',
  'RUBYOPT',
  'JAVA_TOOL_OPTIONS',
  '_JAVA_OPTIONS',
  'GLIBC_TUNABLES',
  'HOSTALIASES',
  'RES_OPTIONS',
  'LOCALDOMAIN',
]);

/**
 * True when `entry` is an absolute path and every directory met while resolving it
 * (component by component, following links, at most 40) is owned by root and writable by
 * no one else (group write is allowed only for gid 0). An empty, relative or missing entry is
 * unsafe: an empty PATH component means the current directory. With `root` (the tree a
 * student's root is, an image's), the entry is resolved as the student sees it: inside `root`,
 * its links followed there.
 */
export function isSafePathEntry(entry: string, root = '/'): boolean {
  if (!path.isAbsolute(entry) || entry.includes('\0')) return false;
  let pending = entry.split('/').filter(Boolean);
  let current = '/';
  let links = 0;
  if (!isTrustedNode(root)) return false;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    let stats;
    try {
      stats = lstatSync(path.join(root, next));
    } catch {
      return false;
    }
    if (stats.isSymbolicLink()) {
      links += 1;
      if (links > 40) return false;
      // The link itself lives in `current`, which is trusted; splice its target in.
      const target = readlinkSync(path.join(root, next));
      pending = [...target.split('/').filter(Boolean), ...pending];
      if (path.isAbsolute(target)) current = '/';
      continue;
    }
    if (!isTrustedStats(stats)) return false;
    current = next;
  }
  return true;
}

function isTrustedNode(file: string): boolean {
  try {
    return isTrustedStats(lstatSync(file));
  } catch {
    return false;
  }
}

function isTrustedStats(stats: { uid: number; gid: number; mode: number }): boolean {
  if (stats.uid !== 0) return false;
  if ((stats.mode & constants.S_IWOTH) !== 0) return false;
  if ((stats.mode & constants.S_IWGRP) !== 0 && stats.gid !== 0) return false;
  return true;
}

/** Keep only the safe entries of a `:`-separated list (or `:`/space-separated for preload lists). */
export function sanitizePathList(
  value: string,
  separators: RegExp = /:/,
  root = '/',
): { kept: string; dropped: string[] } {
  const kept: string[] = [];
  const dropped: string[] = [];
  for (const entry of value.split(separators)) {
    if (isSafePathEntry(entry, root)) kept.push(entry);
    else dropped.push(entry);
  }
  return { kept: kept.join(':'), dropped };
}

/**
 * Clean an environment for the student: names must be plain identifiers, variables that
 * run code early are dropped, and path variables keep only root-owned entries not writable by
 * others. Returns the cleaned environment and what was removed, with reasons.
 */
export function sanitizeEnvironment(
  env: Readonly<Record<string, string>>,
  root = '/',
): {
  env: Record<string, string>;
  removed: EnvRemoval[];
} {
  const out: Record<string, string> = {};
  const removed: EnvRemoval[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      removed.push({ name, reason: 'not a plain variable name' });
      continue;
    }
    if (value.includes('\0')) {
      removed.push({ name, reason: 'value contains NUL' });
      continue;
    }
    if (NEVER_PASSED.has(name) || name.startsWith('BASH_FUNC_')) {
      removed.push({ name, reason: 'runs code or changes parsing before the student’s command' });
      continue;
    }
    if (PRELOAD_VARIABLES.has(name)) {
      const { kept, dropped } = sanitizePathList(value, /[: ]/, root);
      if (dropped.length > 0)
        removed.push({ name, reason: `dropped unsafe entries ${JSON.stringify(dropped)}` });
      if (kept) out[name] = kept;
      continue;
    }
    if (name.startsWith('LD_') || name.startsWith('MALLOC_')) {
      removed.push({ name, reason: 'loader variable' });
      continue;
    }
    if (PATH_LIST_VARIABLES.has(name)) {
      const { kept, dropped } = sanitizePathList(value, /:/, root);
      if (dropped.length > 0)
        removed.push({ name, reason: `dropped unsafe entries ${JSON.stringify(dropped)}` });
      if (kept) out[name] = kept;
      continue;
    }
    if (PATH_VARIABLES.has(name)) {
      if (isSafePathEntry(value, root)) out[name] = value;
      else removed.push({ name, reason: 'path is not root-owned or is writable by others' });
      continue;
    }
    out[name] = value;
  }
  return { env: out, removed };
}

/** The PATH a student gets when the caller gives none. */
export const DEFAULT_STUDENT_PATH = '/usr/local/bin:/usr/bin:/bin';

/** Harness variables passed to the student by default when set (locale and time zone only). */
export const DEFAULT_PASS_ENV: readonly string[] = Object.freeze(['LANG', 'LC_ALL', 'LC_CTYPE', 'TZ']);

export interface StudentEnvOptions {
  readonly userName: string;
  readonly home: string;
  readonly shell: string;
  readonly hostname: string;
  readonly passEnv: readonly string[];
  readonly extra: Readonly<Record<string, string>>;
  readonly harnessEnv: Readonly<Record<string, string | undefined>>;
  /** The tree the student's root is (an image's); path variables are checked there. @default '/' */
  readonly root?: string | undefined;
}

/**
 * The student's whole environment: an allow-list, never the harness's environment. Only
 * the names in `passEnv` are copied from the harness; `extra` is the task's own; identity
 * variables come last and win.
 */
export function buildStudentEnv(options: StudentEnvOptions): {
  env: Record<string, string>;
  removed: EnvRemoval[];
} {
  const raw: Record<string, string> = { PATH: DEFAULT_STUDENT_PATH, LANG: 'C.UTF-8', TERM: 'dumb' };
  for (const name of options.passEnv) {
    const value = options.harnessEnv[name];
    if (value !== undefined) raw[name] = value;
  }
  Object.assign(raw, options.extra);
  const { env, removed } = sanitizeEnvironment(raw, options.root ?? '/');
  if (env['PATH'] === undefined || env['PATH'] === '') env['PATH'] = DEFAULT_STUDENT_PATH;
  Object.assign(env, {
    HOME: options.home,
    USER: options.userName,
    LOGNAME: options.userName,
    SHELL: options.shell,
    HOSTNAME: options.hostname,
    TMPDIR: '/tmp',
    PWD: options.home,
  });
  return { env, removed };
}
