# shellcheck shell=bash
# Root launcher of every student process (bash -c, see ../scripts.ts).
# Arguments: setpriv uid keep-fd-max perl seccomp-loader filter-hex root program [args...]
# root is `-` (the world's own root) or the directory the student's root becomes (an image).
SETPRIV=$1 ID=$2 KEEP=$3 PERL=$4 LOADER=$5 FILTER=$6 ROOT=$7
shift 7
fds=(/proc/$$/fd/*)
for f in "${fds[@]}"; do n=${f##*/}; if (( n > KEEP )); then exec {n}>&-; fi; done
if [[ $ROOT == - ]]; then
  exec "$SETPRIV" --reuid="$ID" --regid="$ID" --clear-groups --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$PERL" -e "$LOADER" -- "$FILTER" - "$@"
fi
# Into an image: the uid drop is setpriv's as always, but the student keeps CAP_SYS_CHROOT and
# CAP_SETPCAP (ambient, and nothing else in any set) for the loader's first instructions: it
# chroots into the image, drops both from the bounding set, empties every set and proves it,
# then loads the filter. So no binary of the image ever runs with a privilege: the loader is
# the host's perl, started before the chroot.
exec "$SETPRIV" --reuid="$ID" --regid="$ID" --clear-groups --no-new-privs --inh-caps=-all,+sys_chroot,+setpcap --ambient-caps=-all,+sys_chroot,+setpcap --bounding-set=-all,+sys_chroot,+setpcap -- "$PERL" -e "$LOADER" -- "$FILTER" "$ROOT" "$@"
