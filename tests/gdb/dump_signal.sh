#!/bin/bash
# The dump signal's action: every UT with what it waits on and its
# backtrace on stderr between a header and a trailer, then the program goes
# on, or ends by the signal; and WEFT_DUMP_SIGNAL's values.
#   usage: dump_signal.sh DUMP_SIGNAL_BINARY
set -u
bin=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() {
	echo "FAIL: $*"
	echo "--- stdout"
	cat "$d/out"
	echo "--- stderr"
	cat "$d/err"
	exit 1
}
: >"$d/out"
: >"$d/err"
"$bin" parse >"$d/out" 2>"$d/err" || fail "parse cases"

timeout 20 "$bin" continue >"$d/out" 2>"$d/err" || fail "continue: exited $?"
grep -q '^continued$' "$d/out" || fail "continue: the program did not go on"
grep -q '^weft: thread dump on SIGQUIT: 4 threads$' "$d/err" || fail "continue: no header"
grep -Eq '^weft:   thread 1 "main" is running$' "$d/err" || fail "continue: main not listed"
[ "$(grep -Ec '^weft:   thread [234] "worker-[123]" waits for mutex 0x[0-9a-f]+ held by thread 1 "main"$' "$d/err")" -eq 3 ] ||
	fail "continue: the three blocked UTs not listed"
[ "$(grep -Ec '^weft:       #1 0x[0-9a-f]+ blocked_in_lock\+0x' "$d/err")" -eq 3 ] ||
	fail "continue: no backtraces through blocked_in_lock"
grep -q '^weft: end of thread dump$' "$d/err" || fail "continue: no trailer"

# The runtime's own handler, set by WEFT_DUMP_SIGNAL: two dumps, the
# program's handler never runs; with :exit the first one ends the process.
WEFT_DUMP_SIGNAL=SIGQUIT timeout 20 "$bin" setting >"$d/out" 2>"$d/err" || fail "setting: exited $?"
grep -q '^continued$' "$d/out" || fail "setting: the program did not go on"
[ "$(grep -c '^weft: thread dump on SIGQUIT: 4 threads$' "$d/err")" -eq 2 ] || fail "setting: not two dumps"
[ "$(grep -Ec '^weft:   thread [234] "worker-[123]" waits for mutex 0x[0-9a-f]+ held by thread 1 "main"$' "$d/err")" -eq 6 ] ||
	fail "setting: the three blocked UTs not listed in both dumps"
WEFT_DUMP_SIGNAL=SIGQUIT timeout 60 "$bin" storm >"$d/out" 2>"$d/err" || fail "storm: exited $?"
grep -q '^storm over, [0-9]* deferred$' "$d/out" || fail "storm: the program did not finish"
# Each dump lists as many threads as its header says: 3 while the storm
# runs; under several VPs a dump deferred on another VP may come as the
# yielders end (2 or 1).
heads=$(grep -Ec '^weft: thread dump on SIGQUIT: [1-3] threads?$' "$d/err")
tails=$(grep -c '^weft: end of thread dump$' "$d/err")
[ "$heads" -ge 1 ] && [ "$heads" -eq "$tails" ] || fail "storm: $heads headers, $tails trailers"
listed=$(sed -n 's/^weft: thread dump on SIGQUIT: \([0-9]*\) threads\{0,1\}$/\1/p' "$d/err" | awk '{ n += $1 } END { print n + 0 }')
[ "$(grep -c '^weft:   thread ' "$d/err")" -eq "$listed" ] || fail "storm: a dump without all its threads"
(ulimit -c 0; WEFT_DUMP_SIGNAL=QUIT:exit exec timeout 20 "$bin" setting >"$d/out" 2>"$d/err")
rc=$?
[ $rc -eq $((128 + 3)) ] || fail "setting :exit: status $rc, expected death by SIGQUIT (131)"
grep -q '^weft: end of thread dump; exiting$' "$d/err" || fail "setting :exit: no trailer"
WEFT_DUMP_SIGNAL=SIGKILL "$bin" parse >"$d/out" 2>"$d/err" || fail "a refused setting stopped the program"
grep -q '^weft: WEFT_DUMP_SIGNAL=SIGKILL is not a usable signal' "$d/err" || fail "a refused setting: no warning"
WEFT_PREEMPT_SIGNAL=SIGUSR2 WEFT_DUMP_SIGNAL=USR2 "$bin" parse >"$d/out" 2>"$d/err" || fail "tick's signal: stopped"
grep -q "is the time slice's signal" "$d/err" || fail "the tick's signal as dump signal: no warning"

(ulimit -c 0; exec timeout 20 "$bin" exit >"$d/out" 2>"$d/err")
rc=$?
[ $rc -eq $((128 + 3)) ] || fail "exit: status $rc, expected death by SIGQUIT (131)"
grep -q '^weft: end of thread dump; exiting$' "$d/err" || fail "exit: no trailer"
grep -q continued "$d/out" && fail "exit: the program went on"
exit 0
