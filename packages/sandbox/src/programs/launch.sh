# shellcheck shell=bash
# Root launcher of every student process (bash -c, see ../scripts.ts).
# Arguments: setpriv uid keep-fd-max perl seccomp-loader filter-hex program [args...]
SETPRIV=$1 ID=$2 KEEP=$3 PERL=$4 LOADER=$5 FILTER=$6
shift 6
fds=(/proc/$$/fd/*)
for f in "${fds[@]}"; do n=${f##*/}; if (( n > KEEP )); then exec {n}>&-; fi; done
exec "$SETPRIV" --reuid="$ID" --regid="$ID" --clear-groups --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$PERL" -e "$LOADER" -- "$FILTER" "$@"
