# shellcheck shell=sh
# The launch prefix (sh -c, see ../launch.ts): the files to write its pid to, then --, then
# the command.
# 1000 is STUDENT_OOM_SCORE_ADJ (../constants.ts; a unit test keeps the two equal).
pid=$$
while [ "$#" -gt 0 ]; do
  f=$1
  shift
  if [ "$f" = -- ]; then break; fi
  if ! printf '%s\n' "$pid" > "$f"; then
    printf 'karotte-launch: cannot join cgroup %s\n' "$f" >&2
    exit 125
  fi
done
if ! printf '%s\n' 1000 > /proc/self/oom_score_adj; then
  printf 'karotte-launch: cannot set oom_score_adj\n' >&2
  exit 125
fi
exec "$@"
