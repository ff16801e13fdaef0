#!/bin/sh
# valgrind_helgrind — Helgrind runs Weft programs (docs/debugging.md,
# "Helgrind and DRD"): each program given runs to its end under
# `valgrind --tool=helgrind`, passes its own checks (exit 0) and Helgrind
# reports nothing (`ERROR SUMMARY: 0 errors`).  Before Weft told Helgrind
# to leave its own tables alone (vp.c, kthread.c, monitor.c), the monitor's
# and the spare kernel threads' lock-free reads were reported as races in
# every program with a second UT (56 errors in the workload).
# Skipped (77) only when valgrind is not installed.
#   valgrind_helgrind.sh WORKLOAD PROGRAM...
set -u
command -v valgrind >/dev/null 2>&1 || { echo "skipped: valgrind is not installed"; exit 77; }
workload=$1
shift
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0

check_clean() {   # NAME PROGRAM ARGS...
	name=$1
	shift
	start=$(date +%s)
	valgrind --tool=helgrind --error-exitcode=99 --log-file="$out/$name.log" "$@" >"$out/$name.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: $name under helgrind: exit $rc (99: helgrind reported errors)"
		cat "$out/$name.out"
		grep -v '^==[0-9]*== *$' "$out/$name.log" | grep -v '^--' | head -60
		fail=1
	elif ! grep -q 'ERROR SUMMARY: 0 errors' "$out/$name.log"; then
		echo "FAIL: $name: no clean error summary"
		tail -5 "$out/$name.log"
		fail=1
	else
		echo "ok: $name clean under helgrind ($(( $(date +%s) - start )) s)"
	fi
}

VG_ROUNDS=3 check_clean workload "$workload"
for p in "$@"; do
	check_clean "$(basename "$p")" "$p"
done
exit $fail
