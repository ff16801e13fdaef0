#!/bin/sh
# env_invalid_values.sh WEFTRUN — each WEFT_* variable with an unusable
# value makes the program print exactly one warning line on stderr, naming
# the variable and the value and saying which default it uses instead, and
# the program still runs; usable values print nothing.
set -u
w=$1
# Each variable alone: none of the suite's own (a stage's WEFT_VPS, the
# debug stage's WEFT_SCHED, whose summary line is a line on stderr too).
for v in $(env | sed -n 's/^\(WEFT_[A-Z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done
fail() { echo "FAIL: $*" >&2; exit 1; }
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT

warns() {   # warns VAR VALUE DEFAULT-TEXT
	env "$1=$2" "$w" true 2>"$err" || fail "$1=$2: the program failed"
	[ "$(wc -l <"$err")" -eq 1 ] || { cat "$err" >&2; fail "$1=$2: want one warning line"; }
	grep -q "^weft: $1=$2[: ].*using the default $3\$" "$err" ||
		{ cat "$err" >&2; fail "$1=$2: warning does not name the variable and default $3"; }
}
quiet() {   # quiet VAR VALUE
	env "$1=$2" "$w" true 2>"$err" || fail "$1=$2: the program failed"
	[ -s "$err" ] && { cat "$err" >&2; fail "$1=$2: a usable value warned"; }
	return 0
}

warns WEFT_STACK_SIZE abc '[0-9]*'
warns WEFT_STACK_SIZE 4096 '[0-9]*'
warns WEFT_STACK_SIZE 12Q '[0-9]*'
warns WEFT_STACK_SIZE 99999999999G '[0-9]*'
warns WEFT_VPS 0 1
warns WEFT_VPS -3 1
warns WEFT_VPS 65 1          # above the 64 VPs Weft has room for
warns WEFT_SCHED fifo posix
warns WEFT_SCHED random posix
warns WEFT_TIMESLICE 10s 10ms
warns WEFT_TIMESLICE 5us 10ms
warns WEFT_TIMESLICE -1 10ms
warns WEFT_PREEMPT_SIGNAL SIGKILL SIGURG
warns WEFT_PREEMPT_SIGNAL bogus SIGURG

quiet WEFT_STACK_SIZE 256K
quiet WEFT_STACK_SIZE 65536
quiet WEFT_VPS 1
quiet WEFT_VPS 2
quiet WEFT_SCHED posix
quiet WEFT_TIMESLICE 0
quiet WEFT_TIMESLICE 100us
quiet WEFT_TIMESLICE 20
quiet WEFT_PREEMPT_SIGNAL SIGRTMIN+2

# Several bad variables: one line each.
env WEFT_VPS=x WEFT_SCHED=y "$w" true 2>"$err" || fail "two bad variables: the program failed"
[ "$(wc -l <"$err")" -eq 2 ] || { cat "$err" >&2; fail "two bad variables: want two lines"; }
exit 0
