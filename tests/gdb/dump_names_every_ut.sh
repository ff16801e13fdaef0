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
# DUMP_TIMESLICE: a short slice, so that ticks land all through the dump
# (with copy-stack UTs it lends parked frames to the run stack, where no
# switch may see them: copystack.c, __weft_cs_inspect)
if [ -n "${DUMP_TIMESLICE:-}" ]; then export WEFT_TIMESLICE=$DUMP_TIMESLICE; fi
timeout 30 "$bin" dump 3 >"$d/manifest" 3>"$d/dump" 2>"$d/err"
rc=$?
[ $rc -eq 0 ] || fail "parked dump exited $rc"
# One record per UT: its name, its line, its first two frames (one awk pass;
# the loop below forks nothing).
awk '
	/^weft:   thread / {
		if (name != "") print name "\t" line "\t" f0 "\t" f1
		match($0, /"[^"]*"/); name = substr($0, RSTART + 1, RLENGTH - 2)
		line = $0; f0 = ""; f1 = ""; k = 0; next
	}
	/^weft:       #/ { if (k == 0) f0 = $0; else if (k == 1) f1 = $0; k++ }
	END { if (name != "") print name "\t" line "\t" f0 "\t" f1 }
' "$d/dump" >"$d/records"
declare -A line f0 f1 count
while IFS=$'\t' read -r name l a b; do
	line[$name]=$l
	f0[$name]=$a
	f1[$name]=$b
	count[$name]=$((${count[$name]:-0} + 1))
done <"$d/records"
n=0
while read -r tag name kind obj holder fn call; do
	[ "$tag" = ut ] || continue
	n=$((n + 1))
	[ "${count[$name]:-0}" -eq 1 ] || fail "$name: listed ${count[$name]:-0} times"
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
	[[ ${line[$name]} =~ ^weft:\ \ \ thread\ [0-9]+\ \"$name\"\ $want ]] ||
		fail "$name: '${line[$name]}' does not match '$want'"
	frame='^weft:       #%d 0x[0-9a-f]+ %s\+0x'
	if [ "$kind" = running ]; then   # from where it called the dump
		re=$(printf "$frame" 0 "$fn")
		[[ ${f0[$name]} =~ $re ]] || fail "$name: first frame '${f0[$name]}', expected $fn"
	elif [ "$kind" = ready ]; then   # preempted: the trampoline, then where the tick found it
		re=$(printf "$frame" 1 "$fn")
		[[ ${f1[$name]} =~ $re ]] || fail "$name: second frame '${f1[$name]}', expected $fn"
	else
		re=$(printf "$frame" 0 "$call")
		[[ ${f0[$name]} =~ $re ]] || fail "$name: first frame '${f0[$name]}', expected $call"
		re=$(printf "$frame" 1 "$fn")
		[[ ${f1[$name]} =~ $re ]] || fail "$name: second frame '${f1[$name]}', expected $fn"
	fi
done <"$d/manifest"
[ $n -ge 100 ] || fail "only $n UTs in the manifest"
[ "${#count[@]}" -eq "$n" ] || fail "${#count[@]} UTs in the dump, $n in the manifest"
exit 0
