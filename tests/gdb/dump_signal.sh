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

(ulimit -c 0; exec timeout 20 "$bin" exit >"$d/out" 2>"$d/err")
rc=$?
[ $rc -eq $((128 + 3)) ] || fail "exit: status $rc, expected death by SIGQUIT (131)"
grep -q '^weft: end of thread dump; exiting$' "$d/err" || fail "exit: no trailer"
grep -q continued "$d/out" && fail "exit: the program went on"
exit 0
