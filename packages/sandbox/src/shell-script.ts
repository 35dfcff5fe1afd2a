// The student's persistent shell, kept as files in programs/ and inlined at build time.
import shellBoot from './programs/shell-boot.sh?raw';
import shellScript from './programs/shell.sh?raw';

/**
 * The persistent shell's bootstrap (programs/shell-boot.sh), what `bash -c` runs: it reads
 * {@link SHELL_SCRIPT}, NUL-terminated, from fd 3 and evaluates it, so the program is not in
 * the argv of the shell and of every process it forks (`ps` shows a line, not the program).
 * Argument: cat-binary.
 */
export const SHELL_BOOT: string = shellBoot;

/**
 * The student's persistent shell (programs/shell.sh; bash, as the student, started in the
 * working directory), sent on fd 3 to {@link SHELL_BOOT}.
 *
 * Descriptors: 0 /dev/null; 1 and 2 the harness's output sockets; 3 commands from the
 * harness; 4 markers to the harness. Argument: cat-binary.
 *
 * Output goes through two relays (cat, detached from the shell so the student's `wait`
 * never waits for them) so that 1 and 2 are real pipes the student owns: `echo > /dev/stdout`
 * works. Each command is NUL-terminated on fd 3. The shell never runs one itself: each runs
 * in a subshell forked for it that closes every descriptor but 0 (/dev/null), 1 and 2 first,
 * so nothing the command runs, builtins and background jobs included, can read a command or
 * write a marker (its saved descriptors included: bash keeps copies of redirected descriptors
 * while a builtin runs). The command is over when its subshell has exited. The subshell
 * restores the shell state the previous command left (working directory, variables with their
 * attributes, functions, aliases, set and shopt options, traps, umask, positional parameters)
 * and, after the command, writes its own state back on a pipe it opens only then; whatever a
 * command does to its own descriptors (`exec >/dev/null`, closing fds) ends with it.
 *
 * Readiness: once its relays run and before it reads its first command, the shell writes `R`
 * on fd 4. A shell that dies before `R` never read a command (safe to run it elsewhere).
 *
 * Completion: the shell reports `E <status>` on fd 4; only then does the harness send a fresh
 * nonce, which the shell prints on stdout, stderr (end-of-output tokens) and as `M <nonce>`
 * on fd 4. The nonce does not exist anywhere in the sandbox before the command is over.
 */
export const SHELL_SCRIPT: string = shellScript;
