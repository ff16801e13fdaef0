#!/bin/sh
# pi_stress_under_weftrun — Debian rt-tests' pi_stress, unmodified, under
# weftrun for a bounded time: groups of three SCHED_FIFO threads (low locks
# a PRIO_INHERIT mutex, medium spins, high waits for the mutex) in a loop;
# its watchdog fails the run if an inversion ever stalls the high thread.
# -u puts every group on one processor, which is what M:1 is (without it
# pi_stress checks its threads' CPU affinity, which Weft records but does
# not act on yet).
#   pi_stress_under_weftrun.sh WEFTRUN [SECONDS]     (PI_STRESS: another binary)
set -u
weftrun=$1
secs=${2:-10}
pis=$(command -v "${PI_STRESS:-pi_stress}" || true)
if [ -z "$pis" ]; then
	echo "skipped: pi_stress is not installed (Debian package rt-tests)"
	exit 77
fi
out=$(mktemp)
trap 'rm -f "$out" "$out.json"' EXIT
for mode in "" "-r"; do
	if ! timeout $((secs + 30)) "$weftrun" -- "$pis" -u -q $mode -D "$secs" --json="$out.json" >"$out" 2>&1; then
		echo "pi_stress $mode failed under weftrun:"
		cat "$out"
		exit 1
	fi
	n=$(sed -n 's/.*"inversion": *\([0-9][0-9]*\).*/\1/p' "$out.json")
	rc=$(sed -n 's/.*"return_code": *\([0-9-][0-9]*\).*/\1/p' "$out.json")
	if [ "${rc:-x}" != 0 ] || [ "${n:-0}" -lt 1000 ]; then
		echo "pi_stress $mode: return code ${rc:-none}, ${n:-no} inversions"
		cat "$out" "$out.json"
		exit 1
	fi
done
exit 0
