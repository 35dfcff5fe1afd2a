# shellcheck shell=bash
# PID 1 of a sandbox's PID namespace (bash -c, see ../init.ts). $@ is the command.
child=0
pending=
interrupted=0
# shellcheck disable=SC2317 # called by the traps below, which shellcheck cannot see.
forward() {
  interrupted=1
  if [ "$child" -gt 0 ]; then kill -s "$1" "$child" 2>/dev/null; else pending="$pending $1"; fi
}
# shellcheck disable=SC2064 # $sig is meant to expand now: one trap per signal, naming it.
for sig in HUP INT QUIT TERM USR1 USR2; do trap "forward $sig" "$sig"; done
# An async command of a shell without job control starts with INT and QUIT ignored (POSIX);
# reset them, or a forwarded Ctrl-C would be dropped by the command.
( trap - INT QUIT; exec "$@" ) &
child=$!
exec 2>/dev/null
for sig in $pending; do kill -s "$sig" "$child"; done
while :; do
  interrupted=0
  wait "$child"
  status=$?
  # `wait` also returns (with 128+n) when a trapped signal interrupts it: wait again. Never
  # ask `kill -0` whether the command still runs: bash may already have reaped it in its
  # SIGCHLD handler, and only a second `wait` returns the status it saved.
  if [ "$interrupted" = 1 ]; then continue; fi
  break
done
exit "$status"
