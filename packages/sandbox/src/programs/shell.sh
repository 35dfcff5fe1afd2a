# shellcheck shell=bash
# The student's persistent shell (bash -c, see ../scripts.ts). $1 = cat.
exec 2> >(exec 5<&0; "$1" <&5 >&2 &) 1> >(exec 5<&0; "$1" <&5 &)
exec 5>&1 6>&2 7</dev/null
shift
builtin printf 'R\n' >&4 || builtin exit 97
while builtin read -r -d '' -u 3 __karotte_command; do
  builtin eval "$__karotte_command" 0<&7 1>&5 2>&6 3<&- 4>&- 5>&- 6>&- 7<&-
  __karotte_status=$?
  builtin printf 'E %d\n' "$__karotte_status" >&4 || builtin exit 97
  builtin read -r -u 3 __karotte_nonce || builtin exit 98
  builtin printf '%s' "$__karotte_nonce" >&5
  builtin printf '%s' "$__karotte_nonce" >&6
  builtin printf 'M %s\n' "$__karotte_nonce" >&4 || builtin exit 97
done
builtin exit 0
