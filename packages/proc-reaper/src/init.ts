// A minimal PID 1 for a sandbox's PID namespace, as a constant bash script (no compiler):
// programs/init.sh, inlined into the bundle at build time.
//
// PID 1 has duties no ordinary program fulfils: orphans are reparented to it and stay zombies
// until it reaps them, and the kernel drops signals sent to it from inside its namespace
// unless it installed a handler. bash fits: while it waits it calls waitpid(-1), which reaps
// every child, including reparented orphans it never started; `trap` installs handlers.
import { BadArgumentError, resolveTrustedBinary } from '@karotte/base';
import initScript from './programs/init.sh?raw';

/**
 * The init script (programs/init.sh). `$@` is the command. Signals HUP, INT, QUIT, TERM,
 * USR1 and USR2 are forwarded to the command; one that arrives before the command has a pid
 * is kept and sent right after. The script exits with the command's status (128 + n when signal n killed it).
 * bash's own messages ("Killed") go to /dev/null after the fork: the command keeps stderr.
 */
export const INIT_SCRIPT: string = initScript;

/** Options of {@link initArgv}. */
export interface InitArgvOptions {
  /**
   * Absolute path of bash.
   * @default resolveTrustedBinary('bash')
   */
  readonly bash?: string;
}

/**
 * Argv that runs `command` under the PID-1 shim: reaps orphans and zombies, forwards
 * HUP/INT/QUIT/TERM/USR1/USR2, exits with the command's status (128 + signal). Use it as the
 * first process of a PID namespace, e.g. `['unshare', '--pid', '--fork', '--', ...initArgv(cmd)]`.
 * Outside a PID namespace it still forwards signals and maps the status, but orphans go to the
 * real init.
 *
 * @throws BadArgumentError when `command` is empty or not absolute.
 */
export function initArgv(command: readonly string[], options: InitArgvOptions = {}): string[] {
  const [file] = command;
  if (file === undefined || !file.startsWith('/')) {
    throw new BadArgumentError('initArgv needs a command whose first element is an absolute path', {
      field: 'command',
    });
  }
  const bash = options.bash ?? resolveTrustedBinary('bash');
  if (!bash.startsWith('/')) throw new BadArgumentError('bash must be an absolute path', { field: 'bash' });
  return [bash, '-c', INIT_SCRIPT, 'karotte-init', ...command];
}
