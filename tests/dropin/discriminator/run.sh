#!/bin/sh
# run.sh PROGRAM WEFTRUN — the discriminator: PROGRAM (built against glibc
# alone) keeping 60,000 threads alive at once must fail on NPTL with EAGAIN
# and succeed, unchanged, under weftrun on one kernel thread.
#
# The NPTL side never runs unconfined: kernel threads count against the
# machine-wide pid_max (32768 here), and a process that takes them all
# leaves no pid for anybody else.  It runs in a cgroup-v1 pids group capped
# at PIDS_CAP (8000) tasks, which stands in for pid_max and fails the same
# way (clone: EAGAIN) far sooner.  Without such a group (not root, no
# cgroup v1 pids controller) the NPTL run is skipped, and the test asserts
# only that 60,000 exceeds pid_max or threads-max, and says so.
set -u
prog=$1 weftrun=$2
N=60000
PIDS_CAP=${PIDS_CAP:-8000}
fail() { echo "FAIL: $*" >&2; exit 1; }

# ---- Weft: all 60,000 alive, on one kernel thread ----
# (and Weft's monitor, which watches for blocking in unwrapped calls, with
# its spawner, which makes the spare kernel threads a takeover needs: two
# kernel threads that run no thread of the program's)
out=$("$weftrun" "$prog" $N) || fail "under weftrun: exit $? ($out)"
case "$out" in
"alive $N kernel-threads 1" | "alive $N kernel-threads 3") ;;
*) fail "under weftrun: '$out'" ;;
esac

# ---- NPTL, in a pids cgroup ----
cg_root=/sys/fs/cgroup/pids
cg=$cg_root/weft-discriminator-$$
if [ -w "$cg_root" ] && mkdir "$cg" 2>/dev/null; then
	trap 'rmdir "$cg" 2>/dev/null' EXIT
	echo "$PIDS_CAP" >"$cg/pids.max" || fail "cannot set $cg/pids.max"
	# The child shell enters the group, then becomes the program.
	out=$(sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" "$3"' sh "$cg" "$prog" $N)
	rc=$?
	[ $rc -eq 1 ] || fail "on NPTL: exit $rc, want 1 ($out)"
	case "$out" in
	"failed at "*": pthread_create: EAGAIN "*) ;;
	*) fail "on NPTL: '$out'" ;;
	esac
	echo "NPTL (pids cgroup, max $PIDS_CAP tasks): $out"
else
	pid_max=$(cat /proc/sys/kernel/pid_max)
	threads_max=$(cat /proc/sys/kernel/threads-max)
	[ "$pid_max" -lt $N ] || [ "$threads_max" -lt $N ] ||
		fail "pid_max $pid_max and threads-max $threads_max allow $N kernel threads here"
	echo "NPTL side not run (no writable pids cgroup); pid_max $pid_max < $N"
fi
exit 0
