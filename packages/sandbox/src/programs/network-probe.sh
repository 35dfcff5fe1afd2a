# shellcheck shell=bash
# The network probe, as the student (bash -c, see ../network.ts). Arguments: udp/<address>/<port>
# or tcp/<address>/<port>, one per probe.
i=0
for p in "$@"; do
  printf '\n@%d\n' "$i"
  if { : 3<>"/dev/$p"; } 2>&1; then printf 'reachable'; fi
  i=$((i + 1))
done
printf '\n@end\n'
