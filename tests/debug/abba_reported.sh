#!/bin/bash
# An ABBA deadlock is reported with both UTs, both mutexes and their owners,
# and the process aborts.  usage: abba_reported.sh ABBA_BINARY
set -u
bin=$1
out=$(mktemp); err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT
WEFT_DEADLOCK=report timeout 20 "$bin" >"$out" 2>"$err"
rc=$?
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$out"; echo "--- stderr"; cat "$err"; exit 1; }
[ $rc -eq 134 ] || fail "expected abort (134), got $rc"
first=$(sed -n 's/.*first=\(0x[0-9a-f]*\).*/\1/p' "$out")
second=$(sed -n 's/.*second=\(0x[0-9a-f]*\).*/\1/p' "$out")
[ -n "$first" ] && [ -n "$second" ] || fail "program did not print its mutexes"
grep -q 'deadlock' "$err" || fail "no deadlock line"
grep -Eq "thread 2 \"alpha\" waits for mutex $second held by thread 3 \"beta\"" "$err" || fail "alpha's wait not reported"
grep -Eq "thread 3 \"beta\" waits for mutex $first held by thread 2 \"alpha\"" "$err" || fail "beta's wait not reported"
grep -Eq 'thread 1 "[^"]*" joins thread 2 "alpha"' "$err" || fail "main's join not reported"
# The debug schedulers report deadlocks without being asked.
WEFT_SCHED=rrswitch timeout 20 "$bin" >"$out" 2>"$err"
rc=$?
[ $rc -eq 134 ] || fail "rrswitch: expected abort (134), got $rc"
grep -q 'deadlock' "$err" || fail "rrswitch: no deadlock report"
exit 0
