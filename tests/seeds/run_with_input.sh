#!/bin/sh
# run_with_input.sh PROGRAM INPUT REGEX...: feed INPUT to PROGRAM's stdin
# (the papers' measurement programs read their counts with scanf) and pass
# when it exits 0 and every REGEX (grep -E) matches a line of its output.
prog=$1 input=$2
shift 2
out=$(echo "$input" | "$prog" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
	echo "FAIL: $prog exited $rc: $out"
	exit 1
fi
for regex in "$@"; do
	if ! printf '%s\n' "$out" | grep -Eq "$regex"; then
		echo "FAIL: no line matches /$regex/: $out"
		exit 1
	fi
done
exit 0
