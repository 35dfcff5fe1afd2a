# shellcheck shell=sh
# The POSIX message-queue sweep, run by sh in a private mount namespace (see ../ipc.ts).
# $1 mount point, $2 uid, $3 mount, $4 find.
"$3" -t mqueue karotte-mqueue "$1" || exit 3
cd "$1" || exit 3
"$4" . -mindepth 1 -maxdepth 1 -uid "$2" -print0 -delete
printf '\000karotte/left\000'
"$4" . -mindepth 1 -maxdepth 1 -uid "$2" -print0
