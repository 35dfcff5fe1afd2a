# shellcheck shell=bash
# The persistent shell's bootstrap (bash -c, see ../shell-script.ts). $1 = cat.
# The shell's program (shell.sh) comes first on the command channel, NUL-terminated: it is then
# in this process's memory only, not in the argv every process of the shell shows in `ps`.
builtin read -r -d '' -u 3 __karotte_program || builtin exit 96
builtin eval "$__karotte_program"
