#!/bin/bash
# The seed runner finds a race: a racy read-modify-write passes under the
# default policy, fails under `random` for some seed in 1-200, and the
# command weftrun prints reproduces the failure 10 times out of 10; the
# correct (locked) version passes 500 seeds.
# usage: random_finds_race.sh WEFTRUN RACY_PROGRAM
set -u
weftrun=$1
racy=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
fail() { echo "FAIL: $*"; cat "$log"; exit 1; }

for i in 1 2 3 4 5; do
	"$racy" >"$log" 2>&1 || fail "racy program failed under the default policy"
done

"$weftrun" --sched random --seeds 1-200 -- "$racy" >"$log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "expected the runner to report a failing seed (exit 1), got $rc"
grep -q '^weftrun: seed [0-9]* (random:[0-9]*) failed: exited with status 1' "$log" || fail "no failing seed line"
cmd=$(sed -n 's/^weftrun: reproduce with: //p' "$log")
[ -n "$cmd" ] || fail "no reproduction command"
for i in $(seq 10); do
	if bash -c "$cmd" >/dev/null 2>&1; then
		fail "reproduction $i of 10 passed: $cmd"
	fi
done

"$weftrun" --sched random --seeds 1-500 -- "$racy" locked >"$log" 2>&1 || fail "the locked version failed a seed"
grep -q 'all 500 runs passed' "$log" || fail "runner did not report 500 passes"

# usage errors
"$weftrun" --seeds 1-5 -- "$racy" >"$log" 2>&1; [ $? -eq 2 ] || fail "--seeds without --sched random must be a usage error"
"$weftrun" --sched random --seeds 5-1 -- "$racy" >"$log" 2>&1; [ $? -eq 2 ] || fail "a reversed range must be a usage error"
"$weftrun" --sched posix --seeds 1-5 -- "$racy" >"$log" 2>&1; [ $? -eq 2 ] || fail "--seeds with posix must be a usage error"
exit 0
