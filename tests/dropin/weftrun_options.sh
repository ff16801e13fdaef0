#!/bin/sh
# weftrun_options.sh WEFTRUN — weftrun's command line: --help and --version
# succeed, options become WEFT_* variables and LD_PRELOAD gains libweft
# (ahead of a user's own preload), `--` ends the options, and every usage
# error — unknown option, missing or bad value, no program — prints usage
# and exits 2; a missing program exits 127.
set -u
w=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
expect_rc() {   # expect_rc RC CMD...
	want=$1
	shift
	"$@" >/tmp/weftrun_opts.$$ 2>&1
	got=$?
	[ "$got" -eq "$want" ] || { cat /tmp/weftrun_opts.$$ >&2; fail "'$*' exited $got, want $want"; }
}
trap 'rm -f /tmp/weftrun_opts.$$' EXIT

expect_rc 0 "$w" --help
grep -q '^Usage: weftrun' /tmp/weftrun_opts.$$ || fail "--help prints no usage"
expect_rc 0 "$w" --version
grep -q '^weftrun (Weft) [0-9]' /tmp/weftrun_opts.$$ || fail "--version prints no version"

for bad in "--bogus" "--vps" "--vps 0" "--vps x" "--stack 12Q" "--stack" "--timeslice -1" \
	   "--timeslice abc" "--sched" "--vps=" "-x"; do
	# shellcheck disable=SC2086
	expect_rc 2 "$w" $bad true
	grep -q '^Usage: weftrun' /tmp/weftrun_opts.$$ || fail "'$bad' prints no usage"
done
expect_rc 2 "$w"
expect_rc 2 "$w" --vps 1
expect_rc 127 "$w" /nonexistent/program

out=$(env -u WEFT_VPS -u WEFT_SCHED -u WEFT_STACK_SIZE -u WEFT_TIMESLICE LD_PRELOAD= \
	"$w" --vps 1 --sched=posix --stack 256K --timeslice 5ms -- sh -c \
	'echo "$WEFT_VPS|$WEFT_SCHED|$WEFT_STACK_SIZE|$WEFT_TIMESLICE"') || fail "weftrun sh failed"
[ "$out" = "1|posix|256K|5ms" ] || fail "environment was '$out'"
out=$(LD_PRELOAD=/lib/x86_64-linux-gnu/libm.so.6 "$w" sh -c 'echo "$LD_PRELOAD"')
case "$out" in
*/libweft.so*:/lib/x86_64-linux-gnu/libm.so.6) ;;
*) fail "LD_PRELOAD was '$out'" ;;
esac
# `--` ends the options: the program's own options are left alone.
out=$("$w" -- sh -c 'echo "$0 $1"' --vps 2) || fail "-- did not end the options"
[ "$out" = "--vps 2" ] || fail "program arguments were '$out'"
exit 0
