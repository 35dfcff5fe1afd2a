# shellcheck shell=sh
# The in-cohort kill, run by sh as the student (see ../in-cohort.ts). $1 = rounds.
i=0; while [ "$i" -lt "$1" ]; do kill -9 -1 || break; i=$((i+1)); done; printf "karotte-in-cohort %s\n" "$i"
