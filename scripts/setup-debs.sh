#!/bin/sh
# Install the Debian packages iowall needs, once. As root: apt-get; otherwise print the line.
set -eu
PKGS="fio xfsprogs e2fsprogs btrfs-progs linux-perf fsmark build-essential python3-venv util-linux kmod fdisk lvm2 procps postgresql chromium openssh-server qemu-system-x86 busybox-static"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "iowall setup: missing Debian packages; as root run:" >&2
    echo "  apt-get update && apt-get install -y$missing" >&2
    exit 0
fi
echo "iowall setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends $missing >/dev/null
