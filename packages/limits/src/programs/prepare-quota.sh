# shellcheck shell=sh
# Prepares a quota image (sh -c, see ../quota.ts): $1 fallocate, $2 mkfs.ext4, $3 mount,
# $4 bytes, $5 inodes, $6 image, $7 mount point.
set -e
"$1" -l "$4" "$6"
"$2" -q -F -m 0 -b 4096 -N "$5" -O ^has_journal,^resize_inode -E nodiscard,lazy_itable_init=1,root_owner=0:0 -L karotte "$6"
"$1" -l "$4" "$6"
"$3" -t ext4 -o loop,nosuid,nodev,noatime,noinit_itable,nodiscard "$6" "$7"
