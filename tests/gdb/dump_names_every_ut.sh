#!/bin/bash
# The thread dump names every UT of `parked` (100 UTs parked in joins,
# mutexes, conditions, sleeps, semaphores, rwlocks and barriers) with what
# it waits on (object, holder, joined thread, time left) and a backtrace
# whose first frames are the Weft call it parked in and the program
# function that made it; the UT preempted by the tick is unwound through
# the trampoline into the function it was interrupted in.
#   usage: dump_names_every_ut.sh PARKED_STATIC
set -u
bin=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() {
	echo "FAIL: $*"
	echo "--- dump"
	cat "$d/dump"
	echo "--- stderr"
	cat "$d/err"
	exit 1
}
unset WEFT_SCHED WEFT_TIMESLICE
timeout 30 "$bin" dump 3 >"$d/manifest" 3>"$d/dump" 2>"$d/err"
rc=$?
[ $rc -eq 0 ] || fail "parked dump exited $rc"
n=0
while read -r tag name kind obj holder fn call; do
	[ "$tag" = ut ] || continue
	n=$((n + 1))
	line=$(grep -E "^weft:   thread [0-9]+ \"$name\" " "$d/dump")
	[ "$(printf '%s\n' "$line" | grep -c .)" -eq 1 ] || fail "$name: listed $(printf '%s' "$line" | grep -c .) times"
	case $kind in
	sleep) want='sleeps, [0-9]+\.[0-9]{3} s left$' ;;
	join) want="joins thread [0-9]+ \"$holder\"$" ;;
	mutex | rwlock) want="waits for $kind $obj held by thread [0-9]+ \"$holder\"$" ;;
	cond) want="waits for condition $obj$" ;;
	sem) want="waits for semaphore $obj$" ;;
	barrier) want="waits for barrier $obj$" ;;
	running) want='is running$' ;;
	ready) want='is ready to run$' ;;
	*) fail "manifest kind $kind" ;;
	esac
	printf '%s\n' "$line" | grep -Eq "\"$name\" $want" || fail "$name: '$line' does not match '$want'"
	# its frames: the lines after it, up to the next thread
	frames=$(awk -v n="\"$name\"" '/^weft:   thread / { on = index($0, " " n " ") > 0; next } on' "$d/dump")
	f0=$(printf '%s\n' "$frames" | sed -n 1p)
	f1=$(printf '%s\n' "$frames" | sed -n 2p)
	if [ "$kind" = running ]; then   # from where it called the dump
		printf '%s\n' "$f0" | grep -Eq "^weft:       #0 0x[0-9a-f]+ $fn\+0x" || fail "$name: first frame '$f0', expected $fn"
	elif [ "$kind" = ready ]; then   # preempted: the trampoline, then where the tick found it
		printf '%s\n' "$f1" | grep -Eq "^weft:       #1 0x[0-9a-f]+ $fn\+0x" || fail "$name: second frame '$f1', expected $fn"
	else
		printf '%s\n' "$f0" | grep -Eq "^weft:       #0 0x[0-9a-f]+ $call\+0x" || fail "$name: first frame '$f0', expected $call"
		printf '%s\n' "$f1" | grep -Eq "^weft:       #1 0x[0-9a-f]+ $fn\+0x" || fail "$name: second frame '$f1', expected $fn"
	fi
done <"$d/manifest"
[ $n -ge 100 ] || fail "only $n UTs in the manifest"
listed=$(grep -c '^weft:   thread ' "$d/dump")
[ "$listed" -eq "$n" ] || fail "$listed UTs in the dump, $n in the manifest"
exit 0
