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
mounted() {
  local id rest
  while read -r id rest; do [[ $id == "$1" ]] && return 0; done < /proc/self/mountinfo
  return 1
}
sweep() {
  local id parent mm root mp opts rest o p
  local -a skip=("$@") ids=() order=()
  local -A parent_of=() mp_of=() covered=() hidden=() top_id=() top_opts=()
  # shellcheck disable=SC2034 # mm and root hold mountinfo fields 3 and 4, read past on purpose.
  while read -r id parent mm root mp opts rest; do
    if [[ $mp == *\\* ]]; then mp=$(printf '%b' "${mp//\\/\\0}"); fi
    ids+=("$id") parent_of[$id]=$parent mp_of[$id]=$mp
    # Stacked mounts share a path; a remount by path reaches the topmost, listed last.
    [[ -n ${top_id[$mp]+x} ]] || order+=("$mp")
    top_id[$mp]=$id top_opts[$mp]=$opts
  done < /proc/self/mountinfo
  (( ${#ids[@]} > 0 )) || fail 'cannot read the mount table (/proc/self/mountinfo)'
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
