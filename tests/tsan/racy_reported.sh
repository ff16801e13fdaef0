#!/bin/sh
# The racy counter of tsan_reports_races must be reported: TSan's exit
# code (66, TSAN_OPTIONS) and a data-race report that names racy_add.
out=$("$1" racy 2>&1)
rc=$?
echo "$out" | tail -30
[ "$rc" -eq 66 ] || { echo "exit $rc, want 66"; exit 1; }
echo "$out" | grep -q 'WARNING: ThreadSanitizer: data race' || { echo "no race report"; exit 1; }
echo "$out" | grep -q 'racy_add' || { echo "the report does not name racy_add"; exit 1; }
