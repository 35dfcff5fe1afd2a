import { constants } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { isErrno, parseOptions, resolveTrustedBinary } from '@karotte/base';
import { z } from 'zod';
import { GraderError } from '../errors.js';

/** The world-writable scratch places that get a private tmpfs in the grader's namespace. */
export const SCRATCH_DIRS = ['/tmp', '/var/tmp', '/dev/shm'] as const;

export const graderInterpreterOptionsSchema = z
  .object({
    /**
     * Absolute path of the interpreter the executable judge will start (a symlink is
     * followed, and both the link and its target are checked).
     * @default process.execPath (the harness's own Node.js, the interpreter of `grader.script`)
     */
    interpreter: z
      .string()
      .refine((p) => path.isAbsolute(p), 'must be an absolute path')
      .refine((p) => !p.includes('\0'), 'must not contain NUL')
      .optional(),
    /**
     * The judge's isolation. `sandbox` also requires what the grader's fresh uid needs: every
     * directory on both paths searchable by others, the file readable and executable by
     * others, and neither path under a scratch directory (`/tmp`, `/var/tmp`, `/dev/shm`),
     * which the grader's namespace replaces with a private tmpfs.
     * @default 'sandbox'
     */
    isolation: z.enum(['sandbox', 'process']).default('sandbox'),
  })
  .strict();
export type GraderInterpreterOptions = z.input<typeof graderInterpreterOptionsSchema>;

/** What {@link checkGraderInterpreter} found. JSON-serialisable. */
export interface GraderInterpreterCheck {
  /** True when the executable judge will accept (and can run) this interpreter. */
  readonly ok: boolean;
  /** The interpreter as given (or `process.execPath`). */
  readonly interpreter: string;
  /** Its resolved target (`fs.realpath`), or null when it does not resolve. */
  readonly resolved: string | null;
  /** Null when ok; else the code a judge run with it would end in (`verdict.error.code`). */
  readonly code: 'GRADER_NOT_FOUND' | 'UNTRUSTED_INTERPRETER' | null;
  /** Why it is trusted, or why not (one line). */
  readonly reason: string;
}

/**
 * Check the interpreter an executable judge will run a grader with, before anything runs: the
 * check every executable judge makes before it grades, so a host whose interpreter would be
 * refused can refuse an episode up front instead of at its end.
 *
 * The interpreter must be a system install:
 *
 * - the path and its resolved target (`fs.realpath`) exist, and the target is a regular file,
 *   root-owned, not writable by group or others, executable;
 * - every ancestor directory of both the path and the target is root-owned and not writable
 *   by group or others (whoever can write one of them can replace the interpreter, and the
 *   grader runs it with the answer key in reach);
 * - no directory on either path is hidden (a name starting with `.`): that is where per-user
 *   version managers install interpreters (`~/.nvm`, `~/.pyenv`, `~/.volta`, `~/.local`),
 *   upgraded by that user's tooling outside the system's package manager, and in home
 *   directories that the grader's sandbox does not show. A link in a system directory that
 *   points into one (a venv in `/opt` whose `python3` links into `/root/.pyenv/...`) is
 *   refused the same way;
 * - with `isolation: 'sandbox'` (the default), the grader's fresh uid can reach and run it:
 *   every ancestor of both paths is searchable by others, the file readable and executable by
 *   others, and neither path lies in `/tmp`, `/var/tmp` or `/dev/shm`.
 *
 * So Node.js must live in a root-owned system directory (`/usr/bin`, `/usr/local`, `/opt/...`,
 * as distribution packages, the official tarball unpacked by root, or the project's
 * `npm run setup` as root in `/opt/karotte/toolchain` install it), never under `/tmp`, a home
 * directory or a hidden directory.
 *
 * Outcomes are data: never throws for an untrusted or missing interpreter.
 *
 * @throws BadArgumentError on invalid options.
 */
export async function checkGraderInterpreter(
  options: GraderInterpreterOptions = {},
): Promise<GraderInterpreterCheck> {
  const parsed = parseOptions(graderInterpreterOptionsSchema, options, 'grader interpreter options');
  const interpreter = parsed.interpreter ?? process.execPath;
  const refuse = (
    code: 'GRADER_NOT_FOUND' | 'UNTRUSTED_INTERPRETER',
    resolved: string | null,
    reason: string,
  ): GraderInterpreterCheck => ({ ok: false, interpreter, resolved, code, reason });

  let resolved: string;
  try {
    resolved = await realpath(interpreter);
  } catch (error) {
    if (isErrno(error, 'ENOENT', 'ENOTDIR')) {
      return refuse('GRADER_NOT_FOUND', null, `interpreter ${interpreter} does not exist`);
    }
    return refuse(
      'UNTRUSTED_INTERPRETER',
      null,
      `interpreter ${interpreter} cannot be resolved: ${String(error)}`,
    );
  }
  const shown = resolved === interpreter ? interpreter : `${interpreter} (-> ${resolved})`;

  // Hidden first: it names the real problem (a per-user install) better than the ownership
  // of the home directory it usually sits in.
  for (const candidate of [path.normalize(interpreter), resolved]) {
    const hidden = hiddenAncestor(candidate);
    if (hidden !== undefined) {
      return refuse(
        'UNTRUSTED_INTERPRETER',
        resolved,
        `interpreter ${shown} lies in the hidden directory ${hidden}: a per-user install (such as ~/.nvm or ~/.pyenv) is not trusted; install it in a root-owned system directory (/usr, /usr/local, /opt)`,
      );
    }
  }

  // Ownership and writability of the file and of every directory on both paths, before and
  // after resolving links: the base package's trusted-binary rule, with this one directory.
  try {
    resolveTrustedBinary(path.basename(interpreter), { dirs: [path.dirname(interpreter)] });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return refuse('UNTRUSTED_INTERPRETER', resolved, `interpreter ${shown}: ${message}`);
  }

  if (parsed.isolation === 'sandbox') {
    for (const candidate of [interpreter, resolved]) {
      const scratch = SCRATCH_DIRS.find((dir) => candidate === dir || candidate.startsWith(`${dir}/`));
      if (scratch !== undefined) {
        return refuse(
          'UNTRUSTED_INTERPRETER',
          resolved,
          `interpreter ${shown} is under ${scratch}, which the grader's sandbox replaces with a private tmpfs`,
        );
      }
    }
    // The grader's fresh uid is "others" everywhere: it must be able to reach and run the
    // interpreter, or every grade would fail for a reason that is the host's, not the student's.
    // Both paths: the grader starts the link, and the kernel then walks to the target.
    for (const candidate of [interpreter, resolved]) {
      for (let dir = path.dirname(candidate); ; dir = path.dirname(dir)) {
        let mode: number;
        try {
          mode = (await stat(dir)).mode;
        } catch (error) {
          return refuse('UNTRUSTED_INTERPRETER', resolved, `cannot stat ${dir}: ${String(error)}`);
        }
        if ((mode & constants.S_IXOTH) === 0) {
          return refuse(
            'UNTRUSTED_INTERPRETER',
            resolved,
            `${dir} is not searchable by others: the grader's uid cannot reach ${shown}`,
          );
        }
        if (dir === path.dirname(dir)) break;
      }
    }
    const file = await stat(resolved);
    if ((file.mode & (constants.S_IROTH | constants.S_IXOTH)) !== (constants.S_IROTH | constants.S_IXOTH)) {
      return refuse(
        'UNTRUSTED_INTERPRETER',
        resolved,
        `${resolved} is not readable and executable by others (the grader's uid)`,
      );
    }
  }
  return {
    ok: true,
    interpreter,
    resolved,
    code: null,
    reason: `${shown} is root-owned and writable by no one else, on a path of root-owned directories${parsed.isolation === 'sandbox' ? ' the grader uid can reach' : ''}`,
  };
}

/**
 * Throw the fault an executable judge ends in when its interpreter is refused (what
 * {@link checkGraderInterpreter} reports, as a {@link GraderError}).
 */
export async function assertTrustedInterpreter(
  interpreter: string,
  isolation: 'sandbox' | 'process',
): Promise<void> {
  const check = await checkGraderInterpreter({ interpreter, isolation });
  if (!check.ok) throw new GraderError(check.code ?? 'UNTRUSTED_INTERPRETER', check.reason);
}

/** The first hidden directory (or file) on `file`'s path, or undefined. */
function hiddenAncestor(file: string): string | undefined {
  let current = '/';
  for (const part of file.split('/').filter(Boolean)) {
    current = path.join(current, part);
    if (part.startsWith('.') && part !== '.' && part !== '..') return current;
  }
  return undefined;
}
