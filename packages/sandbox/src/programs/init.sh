# shellcheck shell=sh
# PID 1 after setup (sh -c, see ../scripts.ts). $1 = cat; fd 3 the harness's pipe.
"$1" <&3 >/dev/null 2>&1 &
exec 3<&-
wait $!
