// The student's persistent shell, kept as a file in programs/ and inlined at build time.
import shellScript from './programs/shell.sh?raw';

/**
 * The student's persistent shell (programs/shell.sh; bash, as the student, started in the
 * working directory).
 *
 * Descriptors: 0 /dev/null; 1 and 2 the harness's output sockets; 3 commands from the
 * harness; 4 markers to the harness. Argument: cat-binary.
 *
 * Output goes through two relays (cat, detached from the shell so the student's `wait`
 * never waits for them) so that 1 and 2 are real pipes the student owns: `echo > /dev/stdout`
 * works. Each command is NUL-terminated on fd 3 and runs with fds 3 and 4 closed and stdin
 * from /dev/null, so it cannot read later commands or write markers by accident; whatever it
 * does to its own descriptors (`exec >/dev/null`, closing fds) is undone when eval returns.
 *
 * Readiness: once its relays run and before it reads its first command, the shell writes `R`
 * on fd 4. A shell that dies before `R` never read a command (safe to run it elsewhere).
 *
 * Completion: the shell reports `E <status>` on fd 4; only then does the harness send a fresh
 * nonce, which the shell prints on stdout, stderr (end-of-output tokens) and as `M <nonce>`
 * on fd 4. The nonce does not exist anywhere in the sandbox before the command is over.
 */
export const SHELL_SCRIPT: string = shellScript;
