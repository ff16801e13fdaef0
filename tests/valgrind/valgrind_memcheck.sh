#!/bin/sh
# valgrind_memcheck — memcheck sees Weft's threads (docs/debugging.md):
#  1. every program given runs under memcheck with zero errors and passes
#     its own checks (exit 0): the workload with VG_ROUNDS small, then the
#     suite's programs as they are;
#  2. a UT that reads a malloc block it never wrote, and one that writes
#     past its end, are each reported once, with the UT's own frames
#     (parse_record / fill_record called by parser_main, the UT's start
#     routine, from Weft's entry), and no "client switching stacks" warning.
# Skipped (77) only when valgrind is not installed.
#   valgrind_memcheck.sh WORKLOAD BUG PROGRAM...
set -u
command -v valgrind >/dev/null 2>&1 || { echo "skipped: valgrind is not installed"; exit 77; }
workload=$1 bug=$2
shift 2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
vg() {   # LOG PROGRAM ARGS...: memcheck, errors make the exit status 99
	log=$1
	shift
	valgrind --tool=memcheck --error-exitcode=99 --track-origins=yes --log-file="$log" "$@"
}

check_clean() {   # NAME PROGRAM ARGS...
	name=$1
	shift
	start=$(date +%s)
	vg "$out/$name.log" "$@" >"$out/$name.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "FAIL: $name under memcheck: exit $rc (99: memcheck found errors)"
		cat "$out/$name.out"
		grep -v '^==[0-9]*== *$' "$out/$name.log" | head -60
		fail=1
	elif ! grep -q 'ERROR SUMMARY: 0 errors' "$out/$name.log"; then
		echo "FAIL: $name: no clean error summary"
		tail -5 "$out/$name.log"
		fail=1
	elif grep -q 'client switching stacks' "$out/$name.log"; then
		echo "FAIL: $name: memcheck took a switch for a stack frame"
		fail=1
	else
		echo "ok: $name clean under memcheck ($(( $(date +%s) - start )) s)"
	fi
}

VG_ROUNDS=10 check_clean workload "$workload"
# the same with every UT copy-stack (runtime/copystack.c): frames copied
# between the run stack and save areas keep their definedness
VG_ROUNDS=5 WEFT_STACK_MODE=copy check_clean workload-copy-stack "$workload"
for p in "$@"; do
	check_clean "$(basename "$p")" "$p"
done

check_bug() {   # KIND KIND_LINE FUNCTION
	kind=$1 what=$2 fn=$3
	vg "$out/bug-$kind.log" "$bug" "$kind" >"$out/bug-$kind.out" 2>&1
	rc=$?
	log="$out/bug-$kind.log"
	# the report's first line and the frames where it happened (up to
	# where memcheck says where the block came from)
	report=$(awk -v w="$what" 'index($0, w) {on = 1; print; next}
		on && (/^==[0-9]*== *$/ || /Address|created by/) {exit} on' "$log")
	if [ $rc -ne 99 ]; then
		echo "FAIL: bug $kind: memcheck exit $rc, want 99 (errors found)"; fail=1
	elif [ -z "$report" ]; then
		echo "FAIL: bug $kind: no \"$what\" report"; fail=1
	elif ! printf '%s\n' "$report" | grep -q "at .*: $fn (vg_bug_in_ut.c:" ||
	     ! printf '%s\n' "$report" | grep -q "by .*: parser_main (vg_bug_in_ut.c:" ||
	     ! printf '%s\n' "$report" | grep -q "by .*: __weft_entry"; then
		echo "FAIL: bug $kind: the report does not show the UT's frames ($fn, parser_main, __weft_entry)"; fail=1
	elif printf '%s\n' "$report" | grep -q ': main (vg_bug_in_ut.c:'; then
		echo "FAIL: bug $kind: the report shows main's frames, not the UT's"; fail=1
	elif ! grep -q 'ERROR SUMMARY: 1 errors' "$log"; then
		echo "FAIL: bug $kind: more than the one error"; fail=1
	else
		echo "ok: bug $kind reported on the UT's stack"
		continue_ok=1
	fi
	if [ "${continue_ok:-0}" != 1 ]; then
		grep -v '^==[0-9]*== *$' "$log" | head -40
	fi
	continue_ok=0
}
check_bug uninit 'Conditional jump or move depends on uninitialised value' parse_record
check_bug overrun 'Invalid write of size 1' fill_record
exit $fail
