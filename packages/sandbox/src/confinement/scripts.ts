// Constant shell scripts, kept as files in programs/ and inlined into the bundle at build time.
// Every variable datum reaches them as a positional argument or on a pipe, never by string
// interpolation, so no path or value can change what they run.
import initScript from '../programs/init.sh?raw';
import launchScript from '../programs/launch.sh?raw';
import devProgram from '../programs/dev.pl?raw';
import mountProgram from '../programs/mount.pl?raw';
import seccompLoader from '../programs/seccomp.pl?raw';
import setupScript from '../programs/setup.sh?raw';

/**
 * Root setup (programs/setup.sh), run by bash as PID 1 of the fresh PID/mount/IPC/UTS/net
 * namespaces.
 *
 * Arguments: ip-binary init-shell cat-binary perl-binary (every mount is one mount(2) of the
 * mounter, MOUNT_PROGRAM), then directives:
 *   lo                       bring the loopback interface up (in the background; waited for
 *                            before `karotte-ready`)
 *   hostname NAME            set the UTS hostname
 *   sweep N PREFIX...        remount every mount read-only and nosuid (keeping nodev/noexec),
 *                            except mounts at or below one of the N prefixes: the caller mounts
 *                            over each of them later in this script (fresh tmpfs, covers), so
 *                            what lies beneath is unreachable
 *   tmpfs PATH OPTIONS       mount a fresh tmpfs
 *   sysfs PATH               mount a fresh read-only sysfs (of this network namespace)
 *   remount PATH OPTIONS     set a mount's flags (a bind remount: never the file system's own)
 *   bind SRC DST OPTIONS     bind SRC at DST with OPTIONS (a bind, then its flags on the new mount)
 *   dev PATH MAXPTYS         a fresh /dev: a small tmpfs with only null, zero, full, random,
 *                            urandom and tty (DEV_PROGRAM), the fd links, and a private devpts
 *                            instance (newinstance, at most MAXPTYS ptys) with ptmx linked to it
 *   cover PATH EMPTYFILE     hide PATH: an empty read-only root-only tmpfs over a directory,
 *                            a read-only bind of EMPTYFILE over anything else; missing: skipped;
 *                            below a directory covered before: skipped (already unreachable)
 *
 * Order matters and is the caller's: sweep first (so every host mount is read-only), then the
 * writable places, binds and covers. Any failure exits non-zero before the student exists.
 * On success it prints `karotte-ready` and execs the init with a constant argv (the
 * directives with their paths do not stay visible in /proc/1/cmdline).
 *
 * Why the sweep tolerates a vanished mount: this namespace holds private copies of the host's
 * mounts. When the host removes a mount point (another episode's teardown, `ip netns del`),
 * the kernel detaches the copies in every other namespace, so a mount listed a moment ago can
 * be gone before its remount runs. A remount that fails is fatal only while the mount (by
 * its id) is still in this namespace's table; a detached mount is unreachable. The harness
 * then re-reads the final table and proves every reachable mount read-only.
 *
 * The table is read whole, in one pass (mapfile), every line checked, and read again when torn:
 * a line-by-line `read` seeks back after each line, and the kernel re-renders the table to that
 * offset, so a mount detached meanwhile made it skip a line (a mount left writable) or cut one
 * (a bad array subscript, on which bash abandons the whole command it is in). Everything runs
 * inside one function, the script's last command, so an abandoned setup ends without
 * `karotte-ready`.
 */
export const SETUP_SCRIPT: string = setupScript;

/**
 * PID 1 after setup (programs/init.sh, run by sh; reaches it through the INIT environment
 * variable of the setup, so its own argv is only this constant text). A root `cat` holds the
 * harness's pipe: when the harness closes it or dies, `cat` ends, init returns and the kernel
 * kills every process of the namespace. `wait` reaps every child, orphans adopted by PID 1 included.
 */
export const INIT_SCRIPT: string = initScript;

/**
 * Root launcher for every student process (programs/launch.sh), run by bash inside the
 * sandbox's namespaces (after nsenter). Closes every inherited descriptor above KEEP (a
 * harness may inherit descriptors without close-on-exec from its own parent), then drops to the student for good: setpriv
 * sets real, effective and saved uid/gid, clears supplementary groups, sets no_new_privs and
 * empties the inheritable, ambient and bounding capability sets.
 *
 * Arguments: setpriv-binary uid keep-fd-max perl-binary seccomp-loader filter-hex root program [args...]
 *
 * `root` is `-`, or the directory the student's root becomes (an image's tree): then setpriv
 * leaves the student CAP_SYS_CHROOT and CAP_SETPCAP (ambient, bounding and nothing else), which
 * the loader uses to chroot and then drops from every set before anything else runs.
 */
export const LAUNCH_SCRIPT: string = launchScript;

/**
 * The syscall filter's loader (programs/seccomp.pl), run by perl as the student right after
 * setpriv: installs the filter (hex of `struct sock_filter[]`, see syscall-filter.ts) with
 * prctl(PR_SET_NO_NEW_PRIVS) and seccomp(SECCOMP_SET_MODE_FILTER), then execs the program.
 * The filter then holds for the program and everything it starts. With a root other than `-`
 * it first chroots there, drops CAP_SYS_CHROOT and CAP_SETPCAP from the bounding set, empties
 * every capability set with capset and proves them empty with capget and PR_CAPBSET_READ.
 */
export const SECCOMP_LOADER: string = seccompLoader;

/**
 * The /dev populator (programs/dev.pl), run by perl as root inside the new mount namespace
 * (reaches the setup through the DEVPL environment variable): the device nodes programs need
 * (null, zero, full, random, urandom, tty), the fd, stdin, stdout, stderr and ptmx links, and
 * the directories the private devpts and /dev/shm mount on.
 */
export const DEV_PROGRAM: string = devProgram;

/**
 * The setup's mounter (programs/mount.pl), run by perl as root, a coprocess of the setup in the
 * new mount namespace (reaches it through the MOUNTPL environment variable): every mount of the
 * setup is one mount(2) call there, where it was one mount(8) process each. Requests are four
 * NUL-terminated fields (source, target, type, mount(8)-style options); answers "ok" or
 * "error: <why>" lines.
 */
export const MOUNT_PROGRAM: string = mountProgram;
