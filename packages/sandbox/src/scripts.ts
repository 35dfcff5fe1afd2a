// Constant shell scripts. Every variable datum reaches them as a positional argument or on a
// pipe, never by string interpolation, so no path or value can change what they run.
// (`${'$'}{` writes a literal `${` inside String.raw.)

/**
 * Root setup, run by bash as PID 1 of the fresh PID/mount/IPC/UTS/net namespaces.
 *
 * Arguments: mount-binary ip-binary init-shell cat-binary, then directives:
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
 *   bind SRC DST OPTIONS     bind SRC at DST with OPTIONS (one mount(8) run: bind, then remount)
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
 */
export const SETUP_SCRIPT = String.raw`
set -u
fail() { printf 'karotte-setup: %s\n' "$*" >&2; exit 1; }
fds=(/proc/$$/fd/*)
for f in "${'$'}{fds[@]}"; do n=${'$'}{f##*/}; if (( n > 2 )); then exec {n}>&-; fi; done
MOUNT=$1 IP=$2 INITSH=$3 CAT=$4
shift 4
lo_pid=
mounted() {
  local id rest
  while read -r id rest; do [[ $id == "$1" ]] && return 0; done < /proc/self/mountinfo
  return 1
}
sweep() {
  local id parent mm root mp opts rest o p
  local -a skip=("$@") ids=() order=()
  local -A parent_of=() mp_of=() covered=() hidden=() top_id=() top_opts=()
  while read -r id parent mm root mp opts rest; do
    if [[ $mp == *\\* ]]; then mp=$(printf '%b' "${'$'}{mp//\\/\\0}"); fi
    ids+=("$id") parent_of[$id]=$parent mp_of[$id]=$mp
    # Stacked mounts share a path; a remount by path reaches the topmost, listed last.
    [[ -n ${'$'}{top_id[$mp]+x} ]] || order+=("$mp")
    top_id[$mp]=$id top_opts[$mp]=$opts
  done < /proc/self/mountinfo
  # A mount stacked on its parent's root covers the parent, whose other children (and theirs)
  # are then out of reach: no path leads to them, and a remount by path would miss them.
  for id in "${'$'}{ids[@]}"; do
    p=${'$'}{parent_of[$id]}
    [[ -n ${'$'}{mp_of[$p]+x} && ${'$'}{mp_of[$p]} == "${'$'}{mp_of[$id]}" ]] && covered[$p]=1
  done
  for id in "${'$'}{ids[@]}"; do
    p=${'$'}{parent_of[$id]}
    if [[ -n ${'$'}{hidden[$p]+x} ]] || [[ -n ${'$'}{covered[$p]+x} && ${'$'}{mp_of[$p]} != "${'$'}{mp_of[$id]}" ]]; then
      hidden[$id]=1
    fi
  done
  for mp in "${'$'}{order[@]}"; do
    [[ -n ${'$'}{hidden[${'$'}{top_id[$mp]}]+x} ]] && continue
    opts=${'$'}{top_opts[$mp]}
    [[ ,$opts, == *,ro,* && ,$opts, == *,nosuid,* ]] && continue
    for p in "${'$'}{skip[@]}"; do
      [[ $mp == "$p" || $mp == "${'$'}{p%/}"/* ]] && continue 2
    done
    o=ro,nosuid
    [[ ,$opts, == *,nodev,* ]] && o+=,nodev
    [[ ,$opts, == *,noexec,* ]] && o+=,noexec
    if ! "$MOUNT" --options-source=disable -o "remount,bind,$o" "$mp"; then
      mounted "${'$'}{top_id[$mp]}" && fail "cannot make $mp read-only"
      printf 'karotte-setup: %s vanished while it was being made read-only\n' "$mp" >&2
    fi
  done
}
declare -a covered_dirs=()
cover() {
  local c
  for c in "${'$'}{covered_dirs[@]}"; do
    [[ $1 == "$c" || $1 == "${'$'}{c%/}"/* ]] && return 0
  done
  if [[ -d $1 ]]; then
    "$MOUNT" -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,nr_inodes=1,mode=000 karotte-cover "$1" || fail "cannot cover $1"
    covered_dirs+=("$1")
  elif [[ -e $1 || -L $1 ]]; then
    "$MOUNT" --options-source=disable --bind -o ro,nosuid,nodev,noexec "$2" "$1" || fail "cannot cover $1"
  fi
}
while (( $# > 0 )); do
  case $1 in
    lo) "$IP" link set lo up & lo_pid=$!; shift ;;
    hostname) printf '%s' "$2" > /proc/sys/kernel/hostname || fail 'cannot set hostname'; shift 2 ;;
    sweep) n=$2; shift 2; sweep "${'$'}{@:1:n}"; shift "$n" ;;
    tmpfs) "$MOUNT" -t tmpfs -o "$3" karotte "$2" || fail "cannot mount tmpfs at $2"; shift 3 ;;
    sysfs) "$MOUNT" -t sysfs -o ro,nosuid,nodev,noexec karotte-sys "$2" || fail "cannot mount sysfs at $2"; shift 2 ;;
    remount) "$MOUNT" --options-source=disable -o "remount,bind,$3" "$2" || fail "cannot remount $2 ($3)"; shift 3 ;;
    bind) "$MOUNT" --options-source=disable --bind -o "$4" "$2" "$3" || fail "cannot bind $2 at $3 ($4)"; shift 4 ;;
    cover) cover "$2" "$3"; shift 3 ;;
    *) fail "unknown directive $1" ;;
  esac
done
if [[ -n $lo_pid ]]; then wait "$lo_pid" || fail 'cannot bring up loopback'; fi
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
 * Readiness: once its relays run and before it reads its first command, the shell writes `R`
 * on fd 4. A shell that dies before `R` never read a command (safe to run it elsewhere).
 *
 * Completion: the shell reports `E <status>` on fd 4; only then does the harness send a fresh
 * nonce, which the shell prints on stdout, stderr (end-of-output tokens) and as `M <nonce>`
 * on fd 4. The nonce does not exist anywhere in the sandbox before the command is over.
 */
export const SHELL_SCRIPT = String.raw`
exec 2> >(exec 5<&0; "$1" <&5 >&2 &) 1> >(exec 5<&0; "$1" <&5 &)
exec 5>&1 6>&2 7</dev/null
shift
builtin printf 'R\n' >&4 || builtin exit 97
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
