# shellcheck shell=sh
# pid 1 of the grader's namespaces, as root, before it becomes the grader (sh -c, see
# ../launch.ts). Arguments: mount sed, cgroup.procs count and files, the writable mount,
# tmpfs count, size and paths, home uid gid, cover count and paths, then the command.
m=$1; sed=$2; shift 2
n=$1; shift
while [ "$n" -gt 0 ]; do echo 0 > "$1" || exit 125; shift; n=$((n-1)); done
keep=$1; shift
# The mount table is read inside the new namespace: a private, consistent copy taken at
# unshare time, so a mount another process adds or removes on the host meanwhile cannot
# make this list stale. Mount points come one per line (mountinfo escapes \n as \012).
# Lines are "mount-id mount-point".
list=$("$sed" -n 's/^\([^ ]*\) [^ ]* [^ ]* [^ ]* \([^ ]*\) .*$/\1 \2/p' /proc/self/mountinfo) || exit 125
mounted() { while read -r i rest; do [ "$i" = "$1" ] && return 0; done < /proc/self/mountinfo; return 1; }
printf "%s\n" "$list" | while read -r id mp; do
  case $mp in *\\*) mp=$(printf '%b' "$(printf '%s' "$mp" | "$sed" 's/\\\([0-7][0-7][0-7]\)/\\0\1/g')");; esac
  case $mp in /proc|/proc/*|/sys|/sys/*) continue;; esac
  [ "$mp" = "$keep" ] && continue
  # A mount whose mount point vanished meanwhile (another grader's score tmpfs, removed on
  # the host) has been detached from this namespace too: nothing left to protect there. A
  # failed remount is fatal only while that mount (by id) is still in this namespace's table.
  # --options-source=disable: /etc/fstab never adds options to a remount.
  # A mount whose path no longer leads to anything (shadowed by a mount over a parent) is out
  # of reach as well.
  "$m" --options-source=disable -o remount,bind,ro "$mp" 2>/dev/null || { [ -e "$mp" ] && mounted "$id" || continue; "$m" --options-source=disable -o remount,bind,ro "$mp" || exit 125; }
done || exit 125
# A fresh read-only sysfs (this is a new network namespace) hides every cgroup and other
# mount below /sys in one step instead of one remount each.
"$m" -t sysfs -o ro,nosuid,nodev,noexec karotte-grader-sys /sys || exit 125
n=$1; size=$2; shift 2
while [ "$n" -gt 0 ]; do "$m" -t tmpfs -o "size=$size,mode=1777,nosuid,nodev" karotte-grader-tmp "$1" || exit 125; shift; n=$((n-1)); done
home=$1; uid=$2; gid=$3; shift 3
"$m" -t tmpfs -o "size=$size,mode=0700,uid=$uid,gid=$gid,nosuid,nodev" karotte-grader-home "$home" || exit 125
# The host outside its system part: an empty, read-only, unreadable tmpfs over each.
n=$1; shift
while [ "$n" -gt 0 ]; do if [ -d "$1" ]; then "$m" -t tmpfs -o ro,nosuid,nodev,noexec,size=4k,mode=000 karotte-grader-cover "$1" || exit 125; fi; shift; n=$((n-1)); done
cd "$home" || exit 125
printf R >&3 || exit 125
exec 3>&-
# The script stays pid 1 (root) and runs the grader as its child: dropping privileges
# clears a process's parent-death signal, so a grader as pid 1 would outlive a killed
# harness. As long as this root init lives, its --kill-child signal is armed; when it dies
# the kernel kills everything left in the namespace.
"$@" &
wait "$!"
