#!/bin/sh
# asan_reports_bugs — AddressSanitizer sees Weft's UTs (docs/debugging.md,
# "AddressSanitizer"): a heap overflow in a UT and a stack-use-after-return
# in a UT are each reported once, with the UT's own frames in the access
# trace (the buggy function, then the UT's start routine parser_main, then
# Weft's entry), never main's; the use after return names the frame the
# variable lived in (make_record).
#   asan_reports_bugs.sh PROGRAM    (WEFT_VPS as the caller sets it)
set -u
prog=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
export ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=1

check() {   # MODE KIND ACCESS FUNCTION
	mode=$1 kind=$2 access=$3 fn=$4
	"$prog" "$mode" >"$out/$mode.log" 2>&1
	rc=$?
	log="$out/$mode.log"
	# the access trace: from the kind line to the first blank line
	trace=$(awk '/ERROR: AddressSanitizer:/ {on = 1} on && /^ *$/ {exit} on' "$log")
	if [ $rc -eq 0 ] || grep -q 'not reported' "$log"; then
		echo "FAIL: $mode: no report (exit $rc)"; fail=1
	elif ! grep -q "ERROR: AddressSanitizer: $kind" "$log"; then
		echo "FAIL: $mode: no \"$kind\" report"; fail=1
	elif [ "$(grep -c 'ERROR: AddressSanitizer' "$log")" -ne 1 ]; then
		echo "FAIL: $mode: more than one report"; fail=1
	elif ! printf '%s\n' "$trace" | grep -q "^$access of size" ||
	     ! printf '%s\n' "$trace" | grep -q "#0 .* in $fn " ||
	     ! printf '%s\n' "$trace" | grep -q "#1 .* in parser_main " ||
	     ! printf '%s\n' "$trace" | grep -q " in __weft_entry "; then
		echo "FAIL: $mode: the access trace is not the UT's ($fn, parser_main, __weft_entry)"; fail=1
	elif printf '%s\n' "$trace" | grep -q " in main "; then
		echo "FAIL: $mode: the access trace shows main's frames, not the UT's"; fail=1
	else
		echo "ok: $mode reported on the UT's stack"
		return 0
	fi
	cat "$log" | head -40
	return 1
}

check overflow heap-buffer-overflow WRITE fill_record
check use_after_return stack-use-after-return READ read_record &&
	if ! grep -A2 "is located in stack of thread" "$out/use_after_return.log" | grep -q " in make_record "; then
		echo "FAIL: use_after_return: the report does not name make_record's frame"
		grep -A3 "is located" "$out/use_after_return.log"
		fail=1
	fi
exit $fail
