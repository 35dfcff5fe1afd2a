# shellcheck shell=bash
# Root setup, PID 1 of the sandbox's fresh namespaces (bash -c, see ../scripts.ts).
# Arguments: ip init-shell cat perl, then directives; INIT, DEVPL and MOUNTPL (environment):
# the init script, the /dev populator and the mounter (one perl process for every mount).
set -u
fail() { printf 'karotte-setup: %s\n' "$*" >&2; exit 1; }
fds=(/proc/$$/fd/*)
for f in "${fds[@]}"; do n=${f##*/}; if (( n > 2 )); then exec {n}>&-; fi; done
IP=$1 INITSH=$2 CAT=$3 PERL=$4
shift 4
lo_pid=
# mnt SOURCE TARGET TYPE OPTIONS: one mount(2) by the mounter coprocess (programs/mount.pl),
# started first in main; '' for no source or type. Its error goes to stderr.
mnt() {
  local reply
  printf '%s\0%s\0%s\0%s\0' "$1" "$2" "$3" "$4" >&"${MOUNTER[1]}" || fail 'the mounter is gone'
  IFS= read -r reply <&"${MOUNTER[0]}" || fail 'the mounter is gone'
  [[ $reply == ok ]] && return 0
  printf 'karotte-setup: %s\n' "$reply" >&2
  return 1
}
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
    if ! mnt '' "$mp" '' "remount,bind,$o"; then
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
    mnt karotte-cover "$1" tmpfs ro,nosuid,nodev,noexec,size=4k,nr_inodes=1,mode=000 || fail "cannot cover $1"
    covered_dirs+=("$1")
  elif [[ -e $1 || -L $1 ]]; then
    mnt "$2" "$1" '' bind,ro,nosuid,nodev,noexec || fail "cannot cover $1"
  fi
}
# Everything that acts runs inside main, the script's last command: bash abandons the whole
# top-level command on an error such as a bad array subscript (not fatal under set -u), and
# goes on with the next one. Here nothing follows, so setup ends without `karotte-ready`.
main() {
  local mounter_in mounter_out
  coproc MOUNTER { exec "$PERL" -e "$MOUNTPL"; }
  while (( $# > 0 )); do
    case $1 in
      lo) "$IP" link set lo up & lo_pid=$!; shift ;;
      hostname) printf '%s' "$2" > /proc/sys/kernel/hostname || fail 'cannot set hostname'; shift 2 ;;
      sweep) n=$2; shift 2; sweep "${@:1:n}"; shift "$n" ;;
      tmpfs) mnt karotte "$2" tmpfs "$3" || fail "cannot mount tmpfs at $2"; shift 3 ;;
      sysfs) mnt karotte-sys "$2" sysfs ro,nosuid,nodev,noexec || fail "cannot mount sysfs at $2"; shift 2 ;;
      remount) mnt '' "$2" '' "remount,bind,$3" || fail "cannot remount $2 ($3)"; shift 3 ;;
      bind) mnt "$2" "$3" '' "bind,$4" || fail "cannot bind $2 at $3 ($4)"; shift 4 ;;
      cover) cover "$2" "$3"; shift 3 ;;
      dev)
        mnt karotte-dev "$2" tmpfs size=64k,nr_inodes=64,mode=755,nosuid,noexec || fail "cannot mount tmpfs at $2"
        # From a pipe, not -e: perl -e opens /dev/null, which does not exist yet.
        printf '%s' "$DEVPL" | "$PERL" - "$2" || fail "cannot populate $2"
        mnt karotte-pts "$2/pts" devpts "ro,nosuid,noexec,newinstance,ptmxmode=0666,mode=0620,max=$3" || fail "cannot mount devpts at $2/pts"
        shift 3 ;;
      *) fail "unknown directive $1" ;;
    esac
  done
  if [[ -n $lo_pid ]]; then wait "$lo_pid" || fail 'cannot bring up loopback'; fi
  # The mounter ends at the end of its input; nothing of it reaches the init.
  mounter_in=${MOUNTER[1]} mounter_out=${MOUNTER[0]}
  exec {mounter_in}>&- {mounter_out}<&-
  wait "$MOUNTER_PID" || fail 'the mounter failed'
  printf 'karotte-ready\n'
  exec 3<&0 0</dev/null 1>/dev/null 2>&1
  exec "$INITSH" -c "$INIT" karotte-init "$CAT"
}
main "$@"
fail 'setup was abandoned (a shell error)'
