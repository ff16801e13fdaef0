#!/bin/bash
# Weft's own synchronisation tests, made smaller (WEFT_TEST_QUICK), each run
# under 100 random schedules and 20 PCT schedules (by default).  The tests that assert
# the POSIX policy's exact orderings (sync_mutex_semantics,
# xinu_event_mailbox) are left out: a debug schedule may legitimately reorder
# what they check.  usage: sync_tests_under_seeds.sh WEFTRUN TEST_DIR
# WEFT_TEST_SEEDS and WEFT_TEST_PCT_SEEDS change the counts (make test-copy
# runs a quarter: the schedules are the release run's, the stacks copied).
set -u
weftrun=$1
dir=$2
export WEFT_TEST_QUICK=${WEFT_TEST_QUICK:-50}
random_seeds=${WEFT_TEST_SEEDS:-100}
pct_seeds=${WEFT_TEST_PCT_SEEDS:-20}
status=0
for t in sync_barrier_sem sync_bounded_buffer sync_cond sync_philosophers_spin \
	 sync_robust_static sync_rwlock; do
	if ! "$weftrun" --sched random --seeds "1-$random_seeds" --timeout 60 -- "$dir/$t"; then
		echo "FAIL: $t under random seeds"
		status=1
	fi
	if ! "$weftrun" --sched pct:3 --seeds "1-$pct_seeds" --timeout 60 -- "$dir/$t"; then
		echo "FAIL: $t under pct:3 seeds"
		status=1
	fi
done
exit $status
