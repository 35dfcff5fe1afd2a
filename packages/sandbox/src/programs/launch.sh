# shellcheck shell=bash
# Root launcher of every student process (bash -c, see ../scripts.ts).
# Arguments: setpriv uid keep-fd-max program [args...]
SETPRIV=$1 ID=$2 KEEP=$3
shift 3
fds=(/proc/$$/fd/*)
for f in "${fds[@]}"; do n=${f##*/}; if (( n > KEEP )); then exec {n}>&-; fi; done
exec "$SETPRIV" --reuid="$ID" --regid="$ID" --clear-groups --no-new-privs --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- "$@"
