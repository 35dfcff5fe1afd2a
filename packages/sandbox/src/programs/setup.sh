# shellcheck shell=bash
# Root setup, PID 1 of the sandbox's fresh namespaces (bash -c, see ../scripts.ts).
# Arguments: mount ip init-shell cat perl, then directives; INIT and DEVPL (environment): the
# init script and the /dev populator.
set -u
fail() { printf 'karotte-setup: %s\n' "$*" >&2; exit 1; }
fds=(/proc/$$/fd/*)
for f in "${fds[@]}"; do n=${f##*/}; if (( n > 2 )); then exec {n}>&-; fi; done
MOUNT=$1 IP=$2 INITSH=$3 CAT=$4 PERL=$5
shift 5
lo_pid=
# One whole snapshot of the mount table in mount_lines. Never `while read ... < mountinfo`:
# bash's read seeks back after every line, the kernel then renders the table again up to that
# offset, and a mount detached meanwhile (another episode's teardown) shifts it into the middle
# of a line, so a line is lost or cut. mapfile reads straight through. Every line is checked
# (fields, unique ids); a torn snapshot is read again, and one never read whole is fatal.
declare -a mount_lines=()
read_mounts() {
  local try line id ok
  local re='^[0-9]+ [0-9]+ [0-9]+:[0-9]+ [^ ]+ /[^ ]* [^ ]+( [^ ]+)* - [^ ]+ '
  local -A seen
  for try in 1 2 3 4 5 6 7 8; do
    mapfile -t mount_lines < /proc/self/mountinfo
    ok=$(( ${#mount_lines[@]} > 0 ))
    seen=()
    for line in "${mount_lines[@]}"; do
      id=${line%% *}
      if [[ ! $line =~ $re || -n ${seen[$id]+x} ]]; then ok=0; break; fi
      seen[$id]=1
    done
    (( ok )) && return 0
    (( try > 1 )) || printf 'karotte-setup: the mount table changed while it was read; reading it again\n' >&2
  done
  fail 'cannot read a whole mount table (/proc/self/mountinfo)'
}
mounted() {
  local line
  read_mounts
  for line in "${mount_lines[@]}"; do [[ ${line%% *} == "$1" ]] && return 0; done
  return 1
}
sweep() {
  local id parent mm root mp opts rest o p
  local -a skip=("$@") ids=() order=()
  local -A parent_of=() mp_of=() covered=() hidden=() top_id=() top_opts=()
  local line
  read_mounts
  for line in "${mount_lines[@]}"; do
    # shellcheck disable=SC2034 # mm and root hold mountinfo fields 3 and 4, read past on purpose.
    read -r id parent mm root mp opts rest <<< "$line"
    if [[ $mp == *\\* ]]; then printf -v mp '%b' "${mp//\\/\\0}"; fi
    ids+=("$id") parent_of[$id]=$parent mp_of[$id]=$mp
    # Stacked mounts share a path; a remount by path reaches the topmost, listed last.
    [[ -n ${top_id[$mp]+x} ]] || order+=("$mp")
    top_id[$mp]=$id top_opts[$mp]=$opts
  done
  # A mount stacked on its parent's root covers the parent, whose other children (and theirs)
  # are then out of reach: no path leads to them, and a remount by path would miss them.
  for id in "${ids[@]}"; do
    p=${parent_of[$id]}
    [[ -n ${mp_of[$p]+x} && ${mp_of[$p]} == "${mp_of[$id]}" ]] && covered[$p]=1
  done
  for id in "${ids[@]}"; do
    p=${parent_of[$id]}
    if [[ -n ${hidden[$p]+x} ]] || [[ -n ${covered[$p]+x} && ${mp_of[$p]} != "${mp_of[$id]}" ]]; then
      hidden[$id]=1
    fi
  done
  for mp in "${order[@]}"; do
    [[ -n ${hidden[${top_id[$mp]}]+x} ]] && continue
    opts=${top_opts[$mp]}
    [[ ,$opts, == *,ro,* && ,$opts, == *,nosuid,* ]] && continue
    for p in "${skip[@]}"; do
      [[ $mp == "$p" || $mp == "${p%/}"/* ]] && continue 2
    done
    o=ro,nosuid
    [[ ,$opts, == *,nodev,* ]] && o+=,nodev
    [[ ,$opts, == *,noexec,* ]] && o+=,noexec
    if ! "$MOUNT" --options-source=disable -o "remount,bind,$o" "$mp"; then
      mounted "${top_id[$mp]}" && fail "cannot make $mp read-only"
      printf 'karotte-setup: %s vanished while it was being made read-only\n' "$mp" >&2
    fi
  done
}
declare -a covered_dirs=()
cover() {
  local c
  for c in "${covered_dirs[@]}"; do
    [[ $1 == "$c" || $1 == "${c%/}"/* ]] && return 0
  done
  if [[ -d $1 ]]; then
    "$MOUNT" -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,nr_inodes=1,mode=000 karotte-cover "$1" || fail "cannot cover $1"
    covered_dirs+=("$1")
  elif [[ -e $1 || -L $1 ]]; then
    "$MOUNT" --options-source=disable --bind -o ro,nosuid,nodev,noexec "$2" "$1" || fail "cannot cover $1"
  fi
}
# Everything that acts runs inside main, the script's last command: bash abandons the whole
# top-level command on an error such as a bad array subscript (not fatal under set -u), and
# goes on with the next one. Here nothing follows, so setup ends without `karotte-ready`.
main() {
  while (( $# > 0 )); do
    case $1 in
      lo) "$IP" link set lo up & lo_pid=$!; shift ;;
      hostname) printf '%s' "$2" > /proc/sys/kernel/hostname || fail 'cannot set hostname'; shift 2 ;;
      sweep) n=$2; shift 2; sweep "${@:1:n}"; shift "$n" ;;
      tmpfs) "$MOUNT" -t tmpfs -o "$3" karotte "$2" || fail "cannot mount tmpfs at $2"; shift 3 ;;
      sysfs) "$MOUNT" -t sysfs -o ro,nosuid,nodev,noexec karotte-sys "$2" || fail "cannot mount sysfs at $2"; shift 2 ;;
      remount) "$MOUNT" --options-source=disable -o "remount,bind,$3" "$2" || fail "cannot remount $2 ($3)"; shift 3 ;;
      bind) "$MOUNT" --options-source=disable --bind -o "$4" "$2" "$3" || fail "cannot bind $2 at $3 ($4)"; shift 4 ;;
      cover) cover "$2" "$3"; shift 3 ;;
      dev)
        "$MOUNT" -t tmpfs -o size=64k,nr_inodes=64,mode=755,nosuid,noexec karotte-dev "$2" || fail "cannot mount tmpfs at $2"
        # From a pipe, not -e: perl -e opens /dev/null, which does not exist yet.
        printf '%s' "$DEVPL" | "$PERL" - "$2" || fail "cannot populate $2"
        "$MOUNT" -t devpts -o "ro,nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,max=$3" karotte-pts "$2/pts" || fail "cannot mount devpts at $2/pts"
        shift 3 ;;
      *) fail "unknown directive $1" ;;
    esac
  done
  if [[ -n $lo_pid ]]; then wait "$lo_pid" || fail 'cannot bring up loopback'; fi
  printf 'karotte-ready\n'
  exec 3<&0 0</dev/null 1>/dev/null 2>&1
  exec "$INITSH" -c "$INIT" karotte-init "$CAT"
}
main "$@"
fail 'setup was abandoned (a shell error)'
