#!/bin/sh
# run_three_ways.sh PLAIN LINKED WEFTRUN
#
# Runs one corpus program three ways — PLAIN (built against glibc alone) on
# NPTL, LINKED (built with -Wl,--as-needed -lweft) and PLAIN under weftrun
# (LD_PRELOAD) — and demands the same exit status 0 and the same output.
# Lines are compared sorted: which thread prints first is the scheduler's
# business, a lost or torn line is not.  In both Weft forms, every
# reference to a name libweft defines (pthread_*, sem_*, sleeps, syscall,
# ...) must bind to libweft, whichever object makes it (the program,
# libstdc++, ...): checked with the dynamic linker's LD_DEBUG=bindings.
set -u
plain=$1 linked=$2 weftrun=$3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

run() {   # run NAME CMD...: output sorted into $tmp/NAME.out
	name=$1
	shift
	"$@" >"$tmp/$name.raw" 2>"$tmp/$name.err"
	rc=$?
	[ $rc -eq 0 ] || { cat "$tmp/$name.err" >&2; fail "$name exited $rc"; }
	LC_ALL=C sort "$tmp/$name.raw" >"$tmp/$name.out"
}

run nptl "$plain"
run linked "$linked"
run weftrun "$weftrun" "$plain"
[ -s "$tmp/nptl.out" ] || fail "no output on NPTL"
for form in linked weftrun; do
	cmp -s "$tmp/nptl.out" "$tmp/$form.out" || {
		diff "$tmp/nptl.out" "$tmp/$form.out" | head -20 >&2
		fail "$form output differs from NPTL's"
	}
done

# --as-needed must have kept libweft.
readelf -d "$linked" | grep -q 'NEEDED.*libweft' || fail "$linked does not need libweft"

# Which library each Weft name bound to.
lib=$(ldd "$linked" | awk '/libweft/ { print $3 }')
[ -n "$lib" ] || fail "ldd finds no libweft for $linked"
nm -D --defined-only "$lib" | awk '{ print $3 }' | sed 's/@.*//' | sort -u >"$tmp/names"
check_bindings() {   # check_bindings FORM CMD...
	form=$1
	shift
	LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/$form.bind" "$@" >/dev/null 2>&1 ||
		fail "$form failed under LD_DEBUG"
	# (Weft's own look-ups of the names it wraps, through RTLD_NEXT, bind
	# to libc by design: only the program's and other libraries' count.
	# So do weftrun's own, before it execs the program: its execvp, a
	# name Weft defines since the exec family keeps the caller's mask.)
	cat "$tmp/$form.bind".* | grep -v "binding file [^ ]*libweft" |
		grep -F -v "binding file $weftrun [" |
		sed -n "s/.* to \([^ ]*\) \[[0-9]*\]: normal symbol \`\([^']*\)'.*/\2 \1/p" |
		sort -u >"$tmp/$form.pairs"
	awk 'NR == FNR { weft[$1] = 1; next } ($1 in weft) && $2 !~ /libweft/' \
		"$tmp/names" "$tmp/$form.pairs" >"$tmp/$form.wrong"
	[ -s "$tmp/$form.wrong" ] && { head "$tmp/$form.wrong" >&2; fail "$form: Weft names bound outside libweft"; }
	grep -q '^pthread_create .*libweft' "$tmp/$form.pairs" ||
		fail "$form: pthread_create did not bind to libweft"
}
check_bindings linked "$linked"
check_bindings weftrun "$weftrun" "$plain"
exit 0
