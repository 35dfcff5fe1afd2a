# shellcheck shell=bash
# The student's persistent shell, evaluated by its bootstrap (shell-boot.sh, see
# ../shell-script.ts). $1 = cat.
#
# This process speaks the protocol and never runs a command. Each command runs in a subshell
# forked for it that first closes every descriptor but 0, 1 and 2: nothing the command runs
# (builtins included, background jobs included) can reach the command or marker channel. The
# command is over when that subshell is: an exit it cannot fake. Before the command, the
# subshell restores the shell state the previous command left (working directory, variables
# and their attributes, functions, aliases, shell options, traps, umask, positional
# parameters); after it, it writes its own state back on a pipe of this process, which it
# opens only then (through /proc), so the command never had it.
exec 2> >(exec 5<&0; "$1" <&5 >&2 &) 1> >(exec 5<&0; "$1" <&5 &)
exec 5>&1 6>&2 7</dev/null
shift
builtin unset -v __karotte_program
# States are framed in bytes (read -N counts characters in the locale): this process runs in
# the C locale; the first command's subshell puts the inherited LC_ALL back.
__karotte_lc_all_set=''
if [[ -v LC_ALL ]]; then
  __karotte_lc_all=$LC_ALL
  __karotte_lc_all_set=1
fi
LC_ALL=C
# Bash's own variables (read-only, dynamic, or about the code running): never saved, and never
# removed before a state is restored (restoring some of them, BASH_ARGV for one, would end the
# shell). A lookup by key: case and [[ == ]] would follow a
# command's nocasematch.
declare -A __karotte_special=(
  [BASH]=1 [BASHOPTS]=1 [BASHPID]=1 [BASH_ALIASES]=1 [BASH_ARGC]=1 [BASH_ARGV]=1 [BASH_ARGV0]=1
  [BASH_CMDS]=1 [BASH_COMMAND]=1 [BASH_EXECUTION_STRING]=1 [BASH_LINENO]=1 [BASH_REMATCH]=1
  [BASH_SOURCE]=1 [BASH_SUBSHELL]=1 [BASH_VERSINFO]=1 [BASH_VERSION]=1 [DIRSTACK]=1
  [EPOCHREALTIME]=1 [EPOCHSECONDS]=1 [EUID]=1 [FUNCNAME]=1 [GROUPS]=1 [HISTCMD]=1 [LINENO]=1
  [PIPESTATUS]=1 [PPID]=1 [PWD]=1 [RANDOM]=1 [SECONDS]=1 [SHELLOPTS]=1 [SRANDOM]=1 [UID]=1 [_]=1
)
# This process's own variables, once: what a state replaces (a variable the command unset stays
# unset). One fork here, none per command.
__karotte_wipe=()
for __karotte_name in $(builtin compgen -v); do
  [[ -n ${__karotte_special[$__karotte_name]-} || $__karotte_name == __karotte_* ]] ||
    __karotte_wipe+=("$__karotte_name")
done
__karotte_state=''
# The pipe the commands' subshells write their states back on (this process holds both ends).
exec 8<> <(:)
builtin printf 'R\n' >&4 || builtin exit 97
while builtin read -r -d '' -u 3 __karotte_command; do
  # Whatever is left in the pipe (a state cut short, or written by something else) goes.
  for ((__karotte_rc = 0; __karotte_rc < 64; __karotte_rc++)); do
    builtin read -r -t 0 -u 8 2>/dev/null || break
    IFS= builtin read -r -N 65536 -t 0.01 -u 8 __karotte_part
  done
  (
    # `exec`, never `builtin exec`: only exec itself makes redirections permanent.
    exec 0<&7 1>&5 2>&6 3<&- 4>&- 5>&- 6>&- 7<&- 8<&-
    for __karotte_fd in /proc/self/fd/*; do
      __karotte_fd=${__karotte_fd##*/}
      if [[ $__karotte_fd == [0-9]* ]] && ((__karotte_fd > 2)); then exec {__karotte_fd}>&-; fi
    done
    # Silenced: nothing here is the command's (and a restored xtrace would trace it).
    {
      if [[ -n $__karotte_state ]]; then
        builtin unset -v "${__karotte_wipe[@]}"
        builtin eval "$__karotte_state"
      elif [[ -n $__karotte_lc_all_set ]]; then
        LC_ALL=$__karotte_lc_all
      else
        builtin unset -v LC_ALL
      fi
      builtin unset -v __karotte_state __karotte_nonce __karotte_lc_all __karotte_lc_all_set \
        __karotte_fd __karotte_name __karotte_pid __karotte_start __karotte_header __karotte_part \
        __karotte_rc __karotte_new __karotte_status __karotte_line __karotte_fields
    } 2>/dev/null
    builtin eval "$__karotte_command"
    # The command is over. Its status and the flags that change how the rest runs (traces, the
    # inheritance of traps by subshells, errexit, nounset), untraced, then off.
    {
      __karotte_status=$?
      __karotte_flags=$-
      builtin set +o xtrace +o verbose +o functrace +o errtrace +o errexit +o nounset
    } 2>/dev/null
    # One subshell writes the whole state, as text the next command's subshell evaluates, in the
    # order it is restored: extglob before the functions that may use it; functions before
    # aliases (a body is parsed again: an alias defined first would be expanded into it);
    # variables before the options (allexport would export each, errexit end at a read-only
    # one), and the options before aliases and shopt (expand_aliases) only in the text: they
    # wait in a variable of the restored text, evaluated at its end; traps last (a DEBUG trap
    # would run before every line after it).
    if ! __karotte_saved=$(
      __karotte_options=''
      for __karotte_name in allexport braceexpand emacs hashall histexpand history ignoreeof \
        interactive-comments keyword monitor noclobber noglob nolog notify physical pipefail posix vi; do
        if [[ -o $__karotte_name ]]; then
          __karotte_options+="builtin set -o $__karotte_name"$'\n'
        else
          __karotte_options+="builtin set +o $__karotte_name"$'\n'
        fi
      done
      for __karotte_name in e:errexit u:nounset E:errtrace T:functrace v:verbose x:xtrace; do
        if [[ $__karotte_flags == *"${__karotte_name%%:*}"* ]]; then
          __karotte_options+="builtin set -o ${__karotte_name#*:}"$'\n'
        else
          __karotte_options+="builtin set +o ${__karotte_name#*:}"$'\n'
        fi
      done
      if builtin shopt -q extglob; then builtin printf 'builtin shopt -s extglob\n'; fi
      builtin declare -f
      builtin declare -Fx
      if [[ -n ${PWD-} ]]; then builtin printf 'builtin cd -- %q\n' "$PWD"; fi
      builtin printf '__karotte_deferred=%q\n' "$__karotte_options"
      # Every variable of the command's but bash's own (some cannot be unset, and assigning them
      # would end the next command's shell) and this program's: IFS first, as it is.
      if [[ -v IFS ]]; then builtin declare -p IFS; fi
      IFS=$' \t\n'
      __karotte_list=()
      for __karotte_name in $(builtin compgen -v); do
        [[ -n ${__karotte_special[$__karotte_name]-} || $__karotte_name == __karotte_* || $__karotte_name == IFS ]] ||
          __karotte_list+=("$__karotte_name")
      done
      if ((${#__karotte_list[@]})); then builtin declare -p -- "${__karotte_list[@]}" 2>/dev/null; fi
      builtin printf 'builtin set --'
      if (($#)); then builtin printf ' %q' "$@"; fi
      builtin printf '\n'
      builtin umask -p
      builtin alias -p
      builtin shopt -p
      # shellcheck disable=SC2016 # code for the next restore to run: it must not expand here.
      builtin printf '%s\n' 'builtin eval "$__karotte_deferred"' 'builtin unset -v __karotte_deferred'
      builtin trap -p
    ); then
      # Killed before it was done (the OOM killer, say), it left part of the state: none goes
      # back, and the shell keeps the state the command started from.
      __karotte_saved=''
    fi
    __karotte_saved+=$'\n'
    builtin trap - DEBUG RETURN ERR
    # The state goes back only now, on a descriptor the command never had: length, bytes, end mark.
    builtin declare LC_ALL=C 2>/dev/null
    # `command exec`: permanent like exec, and never a function of the command's.
    if command exec {__karotte_fd}>"/proc/$$/fd/8"; then
      if [[ $__karotte_saved == $'\n' ]]; then
        builtin printf '0\nkarotte-state-lost\n' >&"$__karotte_fd"
      else
        builtin printf '%d\n%s%s\n' "${#__karotte_saved}" "$__karotte_saved" 'karotte-state-end' >&"$__karotte_fd"
      fi
    fi
    builtin trap - EXIT
    builtin exit "$__karotte_status"
  ) &
  __karotte_pid=$!
  # The subshell's start time tells it apart from a later process that gets its pid.
  __karotte_start=''
  if builtin read -r __karotte_line 2>/dev/null <"/proc/$__karotte_pid/stat"; then
    # shellcheck disable=SC2206 # split on purpose: the fields after the command name
    __karotte_fields=(${__karotte_line##*) })
    __karotte_start=${__karotte_fields[19]-}
  fi
  # Read the state's header while the command runs (a state larger than the pipe would block
  # the subshell until it is read), until it comes or the subshell is gone without one.
  __karotte_header=''
  while :; do
    IFS= builtin read -r -t 0.05 -u 8 __karotte_part
    __karotte_rc=$?
    __karotte_header+=$__karotte_part
    ((__karotte_rc == 0)) && break
    if ((__karotte_rc <= 128)); then
      __karotte_header=''
      break
    fi
    __karotte_line=''
    builtin read -r __karotte_line 2>/dev/null <"/proc/$__karotte_pid/stat"
    # shellcheck disable=SC2206 # split on purpose: the fields after the command name
    __karotte_fields=(${__karotte_line##*) })
    if [[ -z $__karotte_line || ${__karotte_fields[0]-} == Z || ${__karotte_fields[19]-} != "$__karotte_start" ]]; then
      # Gone: a state it wrote is in the pipe already.
      if IFS= builtin read -r -t 0.05 -u 8 __karotte_part; then
        __karotte_header+=$__karotte_part
      else
        __karotte_header=''
      fi
      break
    fi
  done
  __karotte_new=''
  __karotte_rc=1
  if [[ $__karotte_header =~ ^[0-9]{1,8}$ ]]; then
    # No timeout here: with one, bash reads a byte at a time (milliseconds for a few KiB).
    IFS= builtin read -r -N "$__karotte_header" -u 8 __karotte_new &&
      IFS= builtin read -r -t 1 -u 8 __karotte_part &&
      [[ $__karotte_part == karotte-state-end ]] && __karotte_rc=0
  fi
  builtin wait "$__karotte_pid"
  __karotte_status=$?
  if ((__karotte_rc == 0)); then
    __karotte_state=$__karotte_new
  elif [[ -z $__karotte_header ]]; then
    # The command's shell ended before the end of its command (`exit`, `exec`, a signal): so
    # does this one, the same way, and the harness starts a fresh shell.
    if ((__karotte_status > 128 && __karotte_status < 160)); then
      builtin kill -s "$((__karotte_status - 128))" "$$"
    fi
    builtin exit "$__karotte_status"
  elif [[ $__karotte_part == karotte-state-lost ]]; then
    builtin printf 'karotte: the shell state this command left could not be kept (the process saving it was killed); the next command starts from the state before it\n' >&6
  else
    builtin printf 'karotte: the shell state this command left could not be kept (it was malformed)\n' >&6
  fi
  builtin printf 'E %d\n' "$__karotte_status" >&4 || builtin exit 97
  builtin read -r -u 3 __karotte_nonce || builtin exit 98
  builtin printf '%s' "$__karotte_nonce" >&5
  builtin printf '%s' "$__karotte_nonce" >&6
  builtin printf 'M %s\n' "$__karotte_nonce" >&4 || builtin exit 97
done
builtin exit 0
