#!/bin/sh
# asan_leaks_kept_by_uts — with LeakSanitizer on (ASan's default), blocks
# that only Weft's stacks, UT table and copy-stack areas point to are not
# reported, and a block the program drops is (asan_leaks_kept_by_uts.c).
#   asan_leaks_kept_by_uts.sh PROGRAM    (WEFT_VPS, ASAN_OPTIONS's
#   detect_stack_use_after_return as the caller sets them)
set -u
prog=$1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
uar=${UAR:-0}
export ASAN_OPTIONS=detect_leaks=1:detect_stack_use_after_return=$uar

"$prog" kept >"$out/kept.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || grep -q "LeakSanitizer" "$out/kept.log" || ! grep -q "^done" "$out/kept.log"; then
	echo "FAIL: kept: exit $rc, or a leak reported"; head -60 "$out/kept.log"; fail=1
else
	echo "ok: kept: no leak reported"
fi

"$prog" leak >"$out/leak.log" 2>&1
rc=$?
if [ $rc -eq 0 ] || ! grep -q "ERROR: LeakSanitizer: detected memory leaks" "$out/leak.log"; then
	echo "FAIL: leak: not reported (exit $rc)"; head -60 "$out/leak.log"; fail=1
elif ! grep -q " in lose_block " "$out/leak.log"; then
	echo "FAIL: leak: the report does not name lose_block"; head -60 "$out/leak.log"; fail=1
elif [ "$(grep -c '^Direct leak\|^Indirect leak' "$out/leak.log")" -ne 1 ]; then
	echo "FAIL: leak: more than the one leak reported"; grep -A6 "leak of" "$out/leak.log"; fail=1
else
	echo "ok: leak: lose_block's block reported, nothing else"
fi
exit $fail
