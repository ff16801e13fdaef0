#!/bin/bash
# gdb shows a parked copy-stack UT's frames by putting them back on its run
# stack (tools/gdb/weft-gdb.py); the program must go on intact afterwards:
# after `continue`, after an explicit `detach`, and after gdb quits an
# attached process.  Every UT of copy_resume checks its frames when woken.
#   usage: gdb_copy_stack_resume.sh COPY_RESUME
set -u
bin=$1
command -v gdb >/dev/null || { echo "skipped: gdb is not installed"; exit 77; }
gdb -nx -batch -ex 'python import gdb' >/dev/null 2>&1 || { echo "skipped: gdb has no Python"; exit 77; }
d=$(mktemp -d)
trap 'rm -rf "$d"; [ -n "${pid:-}" ] && kill -9 "$pid" 2>/dev/null' EXIT
fail() {
	echo "FAIL: $1"
	[ -f "$2" ] && cat "$2"
	exit 1
}
unset WEFT_SCHED WEFT_DEADLOCK WEFT_TRACE
gdb_batch=(timeout 60 gdb -nx -batch -iex 'set auto-load safe-path /' -iex 'set debuginfod enabled off'
	   -iex 'set pagination off' -iex 'set width 0' -iex 'set confirm off')

# 1. Stopped under gdb: every UT's backtrace, one UT's locals, continue.
"${gdb_batch[@]}" -iex 'set breakpoint pending on' -ex 'handle SIGURG nostop noprint pass' \
	-ex 'break debugger_stop' -ex 'run stop' -ex 'weft-thread apply all bt' -ex 'weft-thread 7' \
	-ex 'info locals' -ex 'continue' "$bin" </dev/null >"$d/stop.out" 2>&1 || fail "under gdb" "$d/stop.out"
grep -q 'in level ' "$d/stop.out" || fail "no frame of level() shown" "$d/stop.out"
grep -q 'bytes saved\]' "$d/stop.out" || fail "no UT said its frames were saved" "$d/stop.out"
grep -q '^all intact$' "$d/stop.out" || fail "frames damaged after continue" "$d/stop.out"
grep -q 'exited normally' "$d/stop.out" || fail "did not exit 0 after continue" "$d/stop.out"

# 2. Attached: select UTs, then an explicit detach; 3. attached, then quit.
for how in detach quit; do
	"$bin" attach >"$d/$how.prog" 2>&1 &
	pid=$!
	for _ in $(seq 50); do [ -s "$d/$how.prog" ] && break; sleep 0.05; done
	if [ "$how" = detach ]; then last=(-ex 'detach'); else last=(); fi
	"${gdb_batch[@]}" -p "$pid" -ex 'weft-thread 5' -ex 'bt' -ex 'weft-thread 11' -ex 'bt' "${last[@]}" \
		</dev/null >"$d/$how.out" 2>&1
	grep -q 'in level ' "$d/$how.out" || fail "$how: no frame of level() shown" "$d/$how.out"
	wait "$pid"
	st=$?
	pid=
	grep -q '^all intact$' "$d/$how.prog" || fail "$how: frames damaged (status $st)" "$d/$how.prog"
	[ "$st" = 0 ] || fail "$how: status $st" "$d/$how.prog"
done
echo ok
