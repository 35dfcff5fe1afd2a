// Constant shell scripts. (`${'$'}{` writes a literal `${` inside String.raw.)
// Constant shell scripts. Every variable datum reaches them as a positional argument or on a
// pipe, never by string interpolation, so no path or value can change what they run.

/**
 * Root setup, run by bash as PID 1 of the fresh PID/mount/IPC/UTS/net namespaces.
 *
 * Arguments: mount-binary ip-binary mkdir-binary init-shell cat-binary, then directives:
 *   lo                       bring the loopback interface up
 *   hostname NAME            set the UTS hostname
 *   sweep                    remount every mount read-only and nosuid (keeping nodev/noexec)
 *   tmpfs PATH OPTIONS       mount a fresh tmpfs
 *   mkdir PATH MODE          create a directory (in a tmpfs mounted before)
 *   bind SRC DST OPTIONS     bind SRC at DST, then remount the bind with OPTIONS
 *   remount PATH OPTIONS     change a mount's options (e.g. make a tmpfs read-only)
 *   cover PATH EMPTYFILE     hide PATH: an empty read-only root-only tmpfs over a directory,
 *                            a read-only bind of EMPTYFILE over anything else; missing: skipped
 *
 * Order matters and is the caller's: sweep first (so every host mount is read-only), then the
 * writable places, binds and covers. Any failure exits non-zero before the student exists.
 * On success it prints `karotte-ready` and execs the init with a constant argv (the
 * directives with their paths do not stay visible in /proc/1/cmdline).
 */
export const SETUP_SCRIPT = String.raw`
set -u
fail() { printf 'karotte-setup: %s\n' "$*" >&2; exit 1; }
fds=(/proc/$$/fd/*)
for f in "${'$'}{fds[@]}"; do n=${'$'}{f##*/}; if (( n > 2 )); then exec {n}>&-; fi; done
MOUNT=$1 IP=$2 MKDIR=$3 INITSH=$4 CAT=$5
shift 5
sweep() {
  local line id parent mm root mp opts rest o i
  local -a mps=() optss=()
  while read -r id parent mm root mp opts rest; do mps+=("$mp"); optss+=("$opts"); done < /proc/self/mountinfo
  for i in "${'$'}{!mps[@]}"; do
    mp=${'$'}{mps[i]} opts=${'$'}{optss[i]}
    if [[ $mp == *\\* ]]; then mp=$(printf '%b' "${'$'}{mp//\\/\\0}"); fi
    o=ro,nosuid
    [[ ,$opts, == *,nodev,* ]] && o+=,nodev
    [[ ,$opts, == *,noexec,* ]] && o+=,noexec
    "$MOUNT" --options-source=disable -o "remount,bind,$o" "$mp" || fail "cannot make $mp read-only"
  done
}
while (( $# > 0 )); do
  case $1 in
    lo) "$IP" link set lo up || fail 'cannot bring up loopback'; shift ;;
    hostname) printf '%s' "$2" > /proc/sys/kernel/hostname || fail 'cannot set hostname'; shift 2 ;;
    sweep) sweep; shift ;;
    tmpfs) "$MOUNT" -t tmpfs -o "$3" karotte "$2" || fail "cannot mount tmpfs at $2"; shift 3 ;;
    mkdir) "$MKDIR" -m "$3" -- "$2" || fail "cannot create $2"; shift 3 ;;
    bind)
      "$MOUNT" --bind "$2" "$3" || fail "cannot bind $2 at $3"
      "$MOUNT" --options-source=disable -o "remount,bind,$4" "$3" || fail "cannot set $4 on $3"
      shift 4 ;;
    remount) "$MOUNT" --options-source=disable -o "remount,$3" "$2" || fail "cannot remount $2"; shift 3 ;;
    cover)
      if [[ -d $2 ]]; then
        "$MOUNT" -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,nr_inodes=1,mode=000 karotte-cover "$2" || fail "cannot cover $2"
      elif [[ -e $2 || -L $2 ]]; then
        "$MOUNT" --bind "$3" "$2" || fail "cannot cover $2"
        "$MOUNT" --options-source=disable -o remount,bind,ro,nosuid,nodev,noexec "$2" || fail "cannot cover $2"
      fi
      shift 3 ;;
    *) fail "unknown directive $1" ;;
  esac
done
printf 'karotte-ready\n'
exec 3<&0 0</dev/null 1>/dev/null 2>&1
exec "$INITSH" -c "$INIT" karotte-init "$CAT"
`;

/**
 * PID 1 after setup (run by sh; reaches it through the INIT environment variable of the
 * setup, so its own argv is only this constant text). A root `cat` holds the harness's pipe:
 * when the harness closes it or dies, `cat` ends, init returns and the kernel kills every
 * process of the namespace. `wait` reaps every child, orphans adopted by PID 1 included.
 */
export const INIT_SCRIPT = `"$1" <&3 >/dev/null 2>&1 &
exec 3<&-
wait $!
`;

/**
 * Root launcher for every student process, run by bash inside the sandbox's namespaces (after
 * nsenter). Closes every inherited descriptor above KEEP (a harness may inherit descriptors
 * without close-on-exec from its own parent), then drops to the student for good: setpriv
 * sets real, effective and saved uid/gid, clears supplementary groups, sets no_new_privs and
 * empties the inheritable, ambient and bounding capability sets.
 *
 * Arguments: setpriv-binary uid keep-fd-max program [args...]
 */
export const LAUNCH_SCRIPT = String.raw`
SETPRIV=$1 ID=$2 KEEP=$3
shift 3
fds=(/proc/$$/fd/*)
for f in "${'$'}{fds[@]}"; do n=${'$'}{f##*/}; if (( n > KEEP )); then exec {n}>&-; fi; done
exec "$SETPRIV" --reuid="$ID" --regid="$ID" --clear-groups --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"
`;

/**
 * The student's persistent shell (bash, as the student, started in the working directory).
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
 * Completion: the shell reports `E <status>` on fd 4; only then does the harness send a fresh
 * nonce, which the shell prints on stdout, stderr (end-of-output tokens) and as `M <nonce>`
 * on fd 4. The nonce does not exist anywhere in the sandbox before the command is over.
 */
export const SHELL_SCRIPT = String.raw`
exec 2> >(exec 5<&0; "$1" <&5 >&2 &) 1> >(exec 5<&0; "$1" <&5 &)
exec 5>&1 6>&2 7</dev/null
shift
while builtin read -r -d '' -u 3 __karotte_command; do
  builtin eval "$__karotte_command" 0<&7 1>&5 2>&6 3<&- 4>&- 5>&- 6>&- 7<&-
  __karotte_status=$?
  builtin printf 'E %d\n' "$__karotte_status" >&4 || builtin exit 97
  builtin read -r -u 3 __karotte_nonce || builtin exit 98
  builtin printf '%s' "$__karotte_nonce" >&5
  builtin printf '%s' "$__karotte_nonce" >&6
  builtin printf 'M %s\n' "$__karotte_nonce" >&4 || builtin exit 97
done
builtin exit 0
`;
