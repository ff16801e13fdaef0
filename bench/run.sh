#!/usr/bin/env bash
# bench/run.sh — `make bench`: run every metric on Weft and on NPTL in one
# go and print the Markdown table; also write the CSV and the chart.
#
#   bench/run.sh BUILD_DIR [--doc FILE.md]
#   QUICK=1 bench/run.sh BUILD_DIR        (CI smoke run: short repetitions)
#   FAMILY='Seed interfaces' bench/run.sh BUILD_DIR   (one family's rows:
#                                         the group name --list prints)
#   ONLY=REGEX bench/run.sh BUILD_DIR     (only the rows whose key matches,
#                                          e.g. ONLY=^echo make bench)
#
# Each metric runs in its own process (bench-weft / bench-nptl KEY), pinned
# to CPU 0 so that Weft's one kernel thread and NPTL's threads share one
# processor; the switch-heavy rows also run NPTL unpinned, as an extra
# column, and the echo-server rows two more servers, bench-nptl's epoll
# loop and Go's net package (their load generator pins itself to CPU 1;
# the five rows of one server and size share one experiment, kept in
# BENCH_ECHO_CACHE).  The M:N rows (flag "m")
# run unpinned on both binaries, and bench-weft prints one line per VP
# count (backend weft-vpN, from its child processes) before its own.  The
# rows flagged "p" also run on each peer of bench/peers/peers.list (State
# Threads, Boost.Context's fcontext and fiber, Go with GOMAXPROCS=1),
# pinned as Weft is; a peer whose program was not built gets a "peer
# missing" line naming its package (bench/peers/install.sh, which `make
# bench` runs first, installs them as root).  A run that crashes or hangs
# becomes "n/a" with the reason: this script never writes a number the
# binaries did not print.
# Outputs: BUILD_DIR/bench/results/{results.csv,results.md,chart.png}; with
# --doc, FILE.md is regenerated from bench/performance.md.in (plus FILE.png
# and FILE.csv beside it).
set -euo pipefail

usage() { echo "usage: $0 BUILD_DIR [--doc FILE.md]" >&2; exit 2; }
[ $# -ge 1 ] || usage
build=$1; shift
doc=
while [ $# -gt 0 ]; do
	case $1 in
	--doc) [ $# -ge 2 ] || usage; doc=$2; shift 2 ;;
	*) usage ;;
	esac
done

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
quick=${QUICK:-}
[ "$quick" = 0 ] && quick=
bw=$build/bench/bench-weft
bn=$build/bench/bench-nptl
for b in "$bw" "$bn"; do
	if [ ! -x "$b" ]; then
		echo "bench: $b is missing; build first (make, or cmake with -DWEFT_BENCH=ON)" >&2
		exit 1
	fi
done
out=$build/bench/results
mkdir -p "$out"
csv=$out/results.csv
md=$out/results.md
meta=$out/metrics.txt
: >"$csv"
"$bw" --list >"$meta"
family=${FAMILY:-}
if [ -n "$family" ]; then
	if [ -n "$doc" ]; then
		echo "bench: --doc needs every family; unset FAMILY" >&2
		exit 2
	fi
	awk -F'|' -v f="$family" '$2 == f' "$meta" >"$meta.one" && mv "$meta.one" "$meta"
	if [ ! -s "$meta" ]; then
		echo "bench: no family \"$family\"; the families: $("$bw" --list | cut -d'|' -f2 | uniq | paste -sd, -)" >&2
		exit 2
	fi
fi
if [ -n "${ONLY:-}" ]; then
	awk -F'|' -v re="$ONLY" '$1 ~ re' "$meta" >"$meta.only" && mv "$meta.only" "$meta"
fi

if [ -n "$quick" ]; then limit=30; else limit=180; fi
# the echo rows: one experiment per server and connection count, its report
# kept here for that server's other rows (fam_echo.c)
export BENCH_ECHO_CACHE=$out/echo-cache
rm -rf "$BENCH_ECHO_CACHE"
mkdir -p "$BENCH_ECHO_CACHE"
pin=()
pin_note="M:1 rows, NPTL and the peers pinned to CPU 0 with taskset (Go with GOMAXPROCS=1; the M:N rows unpinned)"
if command -v taskset >/dev/null && taskset -c 0 true 2>/dev/null; then
	pin=(taskset -c 0)
else
	pin_note="NOT pinned: taskset is missing (install util-linux)"
fi

# run_one TAG BINARY KEY [pin...]: append the binary's line, or an n/a line;
# and its M:N children's lines (TAG-vpN), the last of each.
run_one() {
	local tag=$1 bin=$2 key=$3; shift 3
	local line rc=0 t0=$SECONDS all
	line=$(QUICK=$quick timeout --kill-after=5 "$limit" "$@" "$bin" --tag "$tag" "$key" 2>"$out/stderr.txt") || rc=$?
	all=$line
	{ printf '%s\n' "$all" | grep -E "^$key,$tag-vp[0-9]+," || true; } |
		awk -F, '!($2 in last) { order[++n] = $2 } { last[$2] = $0 } END { for (i = 1; i <= n; i++) print last[order[i]] }' |
		while IFS= read -r child; do
			printf '%s\n' "$child" >>"$csv"
			printf '%s' "$child" | awk -F, '{ printf "  %-10s %-9s %s\n", "", $2, ($3 == "ok" ? $4 " " : "n/a: " $10) }' >&2
		done
	line=$(printf '%s\n' "$line" | grep "^$key,$tag," | tail -n 1 || true)
	if [ -z "$line" ]; then
		local why
		if [ $rc -eq 124 ] || { [ $rc -eq 137 ] && [ $((SECONDS - t0)) -ge "$limit" ]; }; then
			why="did not finish in ${limit} s (a deadlock?)"
		elif [ $rc -eq 137 ]; then
			why="killed (SIGKILL) from outside after $((SECONDS - t0)) s: the OOM killer or a watchdog?"
		elif [ $rc -gt 128 ]; then
			why="crashed with signal $((rc - 128))"
		else
			why="exited with status $rc: $(tr ',\n' '; ' <"$out/stderr.txt" | cut -c1-160)"
		fi
		line="$key,$tag,na,,,,,,,$why"
	fi
	printf '%s\n' "$line" >>"$csv"
	printf '%s' "$line" | awk -F, '{ printf "  %-10s %-6s %s\n", "", $2, ($3 == "ok" ? $4 " " : "n/a: " $10) }' >&2
}

# The peers (bench/peers/peers.list): tag|program|package|column name.
mapfile -t peers < <(grep -v '^#' "$here/peers/peers.list")
peer_cols=
peers_built=
peers_missing=
for p in "${peers[@]}"; do
	IFS='|' read -r ptag pprog ppkg pname <<<"$p"
	peer_cols+="${peer_cols:+;}$ptag=$pname"
	if [ -x "$build/bench/peers/$pprog" ]; then
		peers_built+="${peers_built:+, }$pname"
	else
		peers_missing+="${peers_missing:+, }$pname ($ppkg)"
	fi
done

# Why peer program PROG of package PKG is not there, for its n/a cells.
peer_missing_why() {
	if dpkg-query -W -f='${Status}' "$2" 2>/dev/null | grep -q 'install ok installed'; then
		echo "peer not built: $2 is installed but $1 was not built; build again (make) and read its warnings"
	else
		echo "peer missing: install $2 (make bench does as root)"
	fi
}

# run_peers KEY: the row on every peer, or each missing peer's n/a line.
run_peers() {
	local key=$1 p ptag pprog ppkg pname bin line
	for p in "${peers[@]}"; do
		IFS='|' read -r ptag pprog ppkg pname <<<"$p"
		bin=$build/bench/peers/$pprog
		if [ -x "$bin" ]; then
			if [ "$ptag" = go ]; then
				run_one "$ptag" "$bin" "$key" env GOMAXPROCS=1 "${pin[@]}"
			else
				run_one "$ptag" "$bin" "$key" "${pin[@]}"
			fi
		else
			line="$key,$ptag,na,,,,,,,$(peer_missing_why "$pprog" "$ppkg")"
			printf '%s\n' "$line" >>"$csv"
			printf '  %-10s %-6s n/a: %s\n' "" "$ptag" "${line##*,}" >&2
		fi
	done
}

# The Activations family's database rows keep their data file (made once,
# hundreds of MiB) for each other; remove it when the run ends, however it ends.
# The places bench/fam_activations.c may choose, its name pattern only.
cleanup_data() {
	rm -f "$build/bench"/weft-bench-db-*MiB.dat* /var/tmp/weft-bench-db-*MiB.dat* /tmp/weft-bench-db-*MiB.dat*
	if [ -n "${BENCH_DATA_DIR:-}" ]; then rm -f "$BENCH_DATA_DIR"/weft-bench-db-*MiB.dat*; fi
}
trap cleanup_data EXIT

start=$(date +%s)
load=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench: $(wc -l <"$meta") metrics, Weft and NPTL${quick:+ (QUICK)}; $pin_note" >&2
echo "bench: peers built: ${peers_built:-none}${peers_missing:+; missing: $peers_missing}" >&2
while IFS='|' read -r key group unit flags label history env; do
	echo "  $key${env:+ ($env)}" >&2
	# a row's own environment (the metric's env field, e.g. WEFT_ACTIVATIONS=off)
	setenv=()
	if [ -n "$env" ]; then
		read -r -a setenv <<<"env $env"
	fi
	if [[ $flags == *m* ]]; then
		# M:N: both unpinned, and a longer limit (bench-weft runs one child per VP count)
		saved=$limit
		limit=$((limit * 3))
		run_one weft "$bw" "$key" "${setenv[@]}"
		run_one nptl "$bn" "$key" "${setenv[@]}"
		limit=$saved
		continue
	fi
	run_one weft "$bw" "$key" "${setenv[@]}" "${pin[@]}"
	run_one nptl "$bn" "$key" "${setenv[@]}" "${pin[@]}"
	if [ -z "$quick" ] && [[ $flags == *u* ]]; then
		run_one nptl2 "$bn" "$key" "${setenv[@]}"
	fi
	if [[ $flags == *e* ]]; then
		# the echo rows' other servers: the hand-written epoll loop and Go's
		# net package (fam_echo.c)
		run_one epoll "$bn" "$key" env BENCH_ECHO_SERVER=epoll "${pin[@]}"
		run_one go "$bn" "$key" env BENCH_ECHO_SERVER=go "${pin[@]}"
	fi
	if [[ $flags == *p* ]]; then
		run_peers "$key"
	fi
done <"$meta"
elapsed=$(($(date +%s) - start))

# The machine, for the record.
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
virt=
grep -qw hypervisor /proc/cpuinfo && virt=", virtual machine"
memg=$(awk '/MemTotal/ { printf "%.0f", $2 / 1048576 }' /proc/meminfo)
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null || echo "glibc ?")
ccv=$( (cc --version 2>/dev/null || echo "cc ?") | head -n 1)
rev=$(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)
when=$(date -u '+%Y-%m-%d %H:%M UTC')
machine="$cpu, $(nproc) CPUs, ${memg} GiB${virt}; $(uname -sr); $glibc; $ccv; load average $load at the start"
# The peers' versions, for the record.
pkg_version() {
	local v
	v=$(dpkg-query -W -f='${db:Status-Abbrev}${Version}' "$1" 2>/dev/null || true)
	case $v in
	ii*) echo "${v:3}" ;;
	*) echo "not installed" ;;
	esac
}
peers_line="libst-dev $(pkg_version libst-dev), libboost-context-dev $(pkg_version libboost-context-dev), \
$( (go version 2>/dev/null || echo "go not installed") | sed 's/^go version //'); \
built: ${peers_built:-none}${peers_missing:+; missing: $peers_missing}"
method="warm-up, then $([ -n "$quick" ] && echo "3 repetitions of ≥ 10 ms (QUICK)" || echo "5 repetitions of ≥ 0.2 s"); median (min–max) per operation; $pin_note"

chartdat=$out/chart.dat
awk -v chart="$chartdat" -v peers="$peer_cols" -f "$here/report.awk" "$meta" "$csv" >"$out/table.md"
{
	echo "Machine: $machine  "
	echo "Peers: $peers_line  "
	echo "Run: $when, Weft $rev, ${elapsed} s; $method."
	echo
	cat "$out/table.md"
} >"$md"

chart_note=
png=$out/chart.png
rm -f "$png"
if [ ! -s "$chartdat" ]; then
	chart_note="chart: no row in nanoseconds on both (ONLY=...?): no chart"
elif command -v gnuplot >/dev/null; then
	if ! gnuplot -e "data='$chartdat'; out='$png'; title='Weft vs NPTL, $when'" "$here/chart.gp" 2>"$out/gnuplot.txt"; then
		chart_note="chart: gnuplot failed: $(head -c 300 "$out/gnuplot.txt")"
		rm -f "$png"
	fi
else
	chart_note="chart: gnuplot is not installed; install it (apt-get install gnuplot-nox) and run again for $png"
fi

cat "$md"
echo
echo "CSV: $csv"
if [ -f "$png" ]; then echo "Chart: $png"; else echo "$chart_note"; fi

if [ -n "$doc" ]; then
	base=${doc%.md}
	run_section=$out/doc-run.md
	{
		echo "Machine: $machine  "
		echo "Peers: $peers_line  "
		echo "Date: $when; Weft $rev; the whole run took ${elapsed} s.  "
		echo "Method: $method."
		echo
		cat "$out/table.md"
		echo
		if [ -f "$png" ]; then
			cp "$png" "$base.png"
			echo "![Weft beside NPTL, log scale]($(basename "$base").png)"
		else
			echo "(No chart: $chart_note)"
		fi
	} >"$run_section"
	cp "$csv" "$base.csv"
	awk -v run="$run_section" '$0 == "@@RUN@@" { while ((getline l < run) > 0) print l; next } { print }' \
		"$here/performance.md.in" >"$doc"
	echo "Wrote $doc"
fi
