#!/usr/bin/env bash
# bench/peers/install.sh — install the peers' Debian packages that are
# missing (bench/peers/peers.list: libst-dev, libboost-context-dev,
# golang-go), for `make bench` and `make perf-doc`; `make bench QUICK=1`
# does not call it (CI stays short and offline: it runs the peers that are
# already installed).  Only as root, only where apt-get is;
# BENCH_PEERS_INSTALL=0 skips it.  It never fails: a package that does not
# install leaves its peer's column saying "peer missing".
set -u
[ "${BENCH_PEERS_INSTALL:-1}" = 0 ] && exit 0
command -v apt-get >/dev/null && command -v dpkg-query >/dev/null || exit 0
here=$(cd "$(dirname "$0")" && pwd)
need=()
for pkg in $(grep -v '^#' "$here/peers.list" | cut -d'|' -f3 | sort -u); do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || need+=("$pkg")
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "bench: the peers' packages ${need[*]} are missing (their columns will say so); as root, make bench installs them" >&2
	exit 0
fi
echo "bench: installing the peers' packages: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
timeout 300 apt-get update -qq >/dev/null 2>&1 || echo "bench: apt-get update failed; trying the install anyway" >&2
for pkg in "${need[@]}"; do
	timeout 900 apt-get install -y -qq -o DPkg::Lock::Timeout=120 "$pkg" >/dev/null 2>&1 ||
		echo "bench: could not install $pkg: its peer column will say missing" >&2
done
exit 0
