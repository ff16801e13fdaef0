#!/bin/bash
# The same seed gives the same schedule: two runs under random:SEED (and
# under pct) write identical traces; another seed gives another schedule.
# usage: same_seed_same_trace.sh PROGRAM
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run() { WEFT_SCHED=$1 WEFT_TRACE=$dir/$2 timeout 20 "$bin" >"$dir/$2.out" 2>"$dir/$2.err" || fail "$1 run $2 failed: $(cat "$dir/$2.out" "$dir/$2.err")"; }
for policy in random:7 random:12345 pct:3:4 rrswitch mutexswitch; do
	run "$policy" a
	run "$policy" b
	[ -s "$dir/a" ] || fail "$policy: empty trace"
	cmp -s "$dir/a" "$dir/b" || fail "$policy: two runs differ"
	grep -q 'fully seed-determined' "$dir/a.err" || fail "$policy: run not reported seed-determined: $(cat "$dir/a.err")"
	grep -q 'not fully' "$dir/a.err" && fail "$policy: a tick or timer forced a switch"
done
run random:1 c
run random:2 d
cmp -s "$dir/c" "$dir/d" && fail "seeds 1 and 2 gave the same schedule"
exit 0
