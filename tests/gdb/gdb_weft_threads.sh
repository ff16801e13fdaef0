#!/bin/bash
# gdb in batch mode on `parked` (100 UTs parked in joins, mutexes,
# conditions, sleeps, semaphores, rwlocks and barriers, one preempted by the
# tick): live, from a kernel core, and from a core saved with gdb's gcore
# from the hung process.  The extension must come from libweft's
# .debug_gdb_scripts section by itself (only the safe path is opened);
# check_threads.py asserts what `info weft-threads`, `weft-thread N`, bt,
# frame, up, down, info locals and `weft-thread apply all bt` show.
#   usage: gdb_weft_threads.sh PARKED CHECK_SCRIPT
set -u
bin=$1
check=$2
command -v gdb >/dev/null || { echo "skipped: gdb is not installed"; exit 77; }
gdb -nx -batch -ex 'python import gdb' >/dev/null 2>&1 || { echo "skipped: gdb has no Python"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() {
	echo "FAIL: $1"
	[ -f "$2" ] && cat "$2"
	exit 1
}
unset WEFT_TIMESLICE WEFT_SCHED WEFT_DEADLOCK WEFT_TRACE   # the spinner needs the tick
gdb_batch=(timeout 60 gdb -nx -batch -iex 'set auto-load safe-path /' -iex 'set debuginfod enabled off'
	   -iex 'set pagination off' -iex 'set width 0' -iex 'set confirm off')

# Live: the program runs under gdb until its alarm(1) stops it with every UT
# parked and the VP asleep in the kernel; the check ends with `gcore`.
WEFT_TEST_MODE=live WEFT_TEST_MANIFEST=$d/live.manifest WEFT_TEST_GCORE=$d/gcore.core \
	"${gdb_batch[@]}" -ex 'handle SIGURG nostop noprint pass' -ex 'handle SIGALRM stop print nopass' \
	-ex "run hang >$d/live.manifest" -x "$check" "$bin" >"$d/live.out" 2>&1 ||
	fail "live process" "$d/live.out"
grep -q '^0 failures' "$d/live.out" || fail "live process: no verdict" "$d/live.out"

# A UT's frames hang from the kernel thread's innermost frame, here main
# itself (gdb unwinds past main only when told); resuming the program
# drops the view and restores the user's setting.
"${gdb_batch[@]}" -iex 'set breakpoint pending on' -ex 'handle SIGURG nostop noprint pass' \
	-ex 'handle SIGALRM stop print nopass' -ex 'break alarm' -ex "run hang >/dev/null" -ex finish \
	-ex 'weft-thread 3' -ex 'bt' -ex 'continue' -ex 'echo AFTER\n' -ex 'bt' \
	-ex 'show backtrace past-main' "$bin" >"$d/main.out" 2>&1 || fail "frame 0 in main" "$d/main.out"
sed -n '/^\[Switching to Weft thread 3 "sleep-00"/,/^AFTER/p' "$d/main.out" | grep -q '^#[0-9]* .* in park_sleep ' ||
	fail "weft-thread 3 with main as frame 0: no park_sleep frame" "$d/main.out"
sed -n '/^AFTER/,$p' "$d/main.out" | grep -q '^#0 ' || fail "after continue: no frame 0" "$d/main.out"
sed -n '/^AFTER/,$p' "$d/main.out" | grep -q 'park_sleep' && fail "after continue: still the UT's frames" "$d/main.out"
grep -q 'past "main" is off' "$d/main.out" || fail "backtrace past-main not restored" "$d/main.out"

# The core gcore saved from it: the stacks must be in it.
WEFT_TEST_MODE=gcore-core WEFT_TEST_MANIFEST=$d/live.manifest \
	"${gdb_batch[@]}" -x "$check" "$bin" "$d/gcore.core" >"$d/gcore.out" 2>&1 ||
	fail "core saved by gcore" "$d/gcore.out"

# A kernel core of the program aborting, where core_pattern writes a file.
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null || echo '|')
case "$pattern" in
\|*) echo "note: core_pattern is a pipe ($pattern): no kernel core to read" ;;
*)
	mkdir "$d/k"
	(cd "$d/k" && ulimit -c unlimited && exec "$bin" abort >"$d/k.manifest" 2>/dev/null)
	core=$(ls -t "$d/k" | grep -m1 core)
	if [ -z "$core" ] && [ "${pattern#/}" != "$pattern" ]; then
		echo "note: core_pattern $pattern writes elsewhere: no kernel core to read"
	else
		[ -n "$core" ] || fail "no kernel core in $d/k (core_pattern $pattern)" /dev/null
		WEFT_TEST_MODE=abort-core WEFT_TEST_MANIFEST=$d/k.manifest \
			"${gdb_batch[@]}" -x "$check" "$bin" "$d/k/$core" >"$d/kcore.out" 2>&1 ||
			fail "kernel core" "$d/kcore.out"
	fi
	;;
esac
exit 0
