#!/bin/sh
# layering_no_upward_calls — the layers call only downwards
# (docs/architecture.md): arch calls nothing of Weft's above it but the
# preemption trampoline's target (the runtime hands it the interrupted UT,
# as a switch hands a new UT its entry function) and the three ends of the
# vfork window (runtime/vfork.c: the exported vfork must be the assembly
# function itself, which holds its return address in a register across
# the system call, and it calls the runtime before and after it); the
# runtime calls nothing in sync or posix except through the hook table
# __weft_hooks; sync calls nothing in posix; io (the wrapped blocking
# calls and the poller) calls only the runtime and arch, and nothing below
# it calls io — which also keeps the runtime off the exported read, write
# and close that io defines.  Checked on the compiled
# objects: every undefined symbol of a layer's objects that another layer
# defines must belong to a layer below it.  Names defined under a symbol
# version (timer_create@@GLIBC_2.34) count as the name itself: the linker
# binds a plain reference to the default version.
#
# Two exceptions, named below with their reasons:
#  - posix/timer_thread.c's service UT runs as a program's thread would,
#    outside any Weft call, and calls the exported read and close on its
#    timerfd, which the io layer's __weft_io_hide_fd moved out of the low
#    numbers;
#  - posix/system.c waits for its shell with the io layer's waitpid,
#    __weft_io_waitpid (the wait that parks only its caller, without the
#    exported call's epilogue: system() runs its own).
# No other posix object may call io.
#   layering_no_upward_calls.sh OBJECT_DIR   (CMakeFiles/weft_objects.dir/src)
set -eu
dir=$1
command -v nm >/dev/null || { echo "skipped: nm is missing"; exit 77; }
SEPARATE='timer_thread.c.o system.c.o'     # checked on their own, below
# One nm per layer (a hundred nm runs, one per object and check, took 40 s
# under load on a machine where starting a process is slow).
objects() { for f in "$dir"/$1/*.o "$dir"/$1/*/*.o; do [ -f "$f" ] && echo "$f"; done; }
defs() { objects "$1" | xargs -r nm --defined-only | awk 'NF == 3 {print $3}' | sed 's/@.*//' | sort -u; }
undefs() {   # LAYER [OBJECT]: every object of the layer but those in $SEPARATE, or that one object
	objects "$1" | while read -r f; do
		if [ $# -gt 1 ]; then
			[ "${f##*/}" = "$2" ] || continue
		else
			case " $SEPARATE " in *" ${f##*/} "*) continue ;; esac
		fi
		echo "$f"
	done | xargs -r nm -u | awk 'NF == 2 {print $2}' | sort -u
}
defs arch >/tmp/layer.$$.arch
defs runtime >/tmp/layer.$$.runtime
defs sync >/tmp/layer.$$.sync
defs posix >/tmp/layer.$$.posix
defs io >/tmp/layer.$$.io
fail=0
check() {   # LAYER[/OBJECT] ALLOWED_EXCEPTION UPPER_LAYERS...
	layer=${1%%/*} obj=${1#*/} allowed=$2
	[ "$obj" = "$1" ] && obj=
	shift 2
	undefs "$layer" $obj >/tmp/layer.$$.undef
	for up in "$@"; do
		bad=$(comm -12 /tmp/layer.$$.undef /tmp/layer.$$.$up | grep -vx "$allowed" || true)
		if [ -n "$bad" ]; then
			echo "$layer${obj:+/$obj} calls up into $up:" $bad
			fail=1
		fi
	done
}
check arch '__weft_preempt_trampoline_body\|__weft_vfork_begin\|__weft_vfork_child_start\|__weft_vfork_end' runtime sync posix io
check runtime '__weft_hooks' sync posix io
check sync '__weft_hooks' posix io
check posix '' io
check posix/timer_thread.c.o 'read\|close\|__weft_io_hide_fd' io
check posix/system.c.o '__weft_io_waitpid' io
check io '__weft_hooks' sync posix
rm -f /tmp/layer.$$.*
exit $fail
