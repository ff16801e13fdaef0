/*
 * lsan_roots.c — Weft's own mappings named to LeakSanitizer as roots.
 *
 * Owns: __weft_lsan_root and __weft_lsan_unroot.  LeakSanitizer (in a
 * program built with -fsanitize=address or =leak) looks for pointers to
 * heap blocks in the kernel threads' stacks and TLS, the data segments
 * and the heap itself, and not in anonymous mappings it did not make.
 * Weft keeps pointers to heap blocks in mappings of its own: a UT's
 * stack (a blocked UT's locals), the descriptor table (a UT's key values,
 * kept with its slot for the next UT), a copy-stack UT's saved frames.
 * Unnamed, every block reachable only from there was a leak at exit.
 * With fake stacks (ASan's detect_stack_use_after_return) a UT's locals
 * live on its fake stack, and LeakSanitizer scans only the fake stack of
 * each kernel thread's current fiber: a switched-out UT's fake frames are
 * named too (__weft_lsan_root_fake_stack).
 *
 * Invariant: every mapping of those four kinds is a root from when it is
 * made (a fake stack: from its UT's first switch out) until just before
 * it is unmapped, so LeakSanitizer's scan at exit
 * never reads an unmapped root.  Its scan reads only the readable parts
 * of a root (a stack's guard page is skipped).  Without LeakSanitizer in
 * the process the weak symbols are NULL and nothing is called; the calls
 * are on paths that map or unmap, never on a switch or a create from the
 * pool.  Callers: the mapping's owner, on the VP's mainline (under the
 * runtime lock with M:N); LeakSanitizer's own list takes its own lock.
 *
 * Lock order: the runtime lock, then LeakSanitizer's.  A leak check holds
 * LeakSanitizer's lock (and, while the world is stopped, its allocator's)
 * throughout, and the calls it makes meanwhile (sched_yield, its
 * symboliser's open, read, close) go to glibc, not to Weft (san_text.c):
 * it never waits for the runtime lock or a UT.
 */
#include "rt.h"

extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));
extern void __lsan_unregister_root_region(const void *p, size_t size) __attribute__((weak));

void __weft_lsan_root(const void *p, size_t size)
{
	if (__lsan_register_root_region && size)
		__lsan_register_root_region(p, size);
}

void __weft_lsan_unroot(const void *p, size_t size)
{
	if (__lsan_unregister_root_region && size)
		__lsan_unregister_root_region(p, size);
}

#if defined(__SANITIZE_ADDRESS__)
/*
 * A UT's fake stack: ASan makes it at the UT's first fake frame and
 * destroys it at the UT's last switch (sched.c, san_leave); Weft asks for
 * it at the UT's first switch out, before it tells ASan the UT leaves
 * (__asan_get_current_fake_stack: it makes one then if the UT made no
 * fake frame yet, and returns NULL with fake stacks off).  LeakSanitizer scans a
 * kernel thread's current fake stack only, so the locals of a blocked UT
 * that lived on its fake stack went unscanned: with one VP one of the
 * eight holders of asan_leaks_kept_by_uts (uar1) lost its block, every
 * run (the others' pointers survived, by chance, as copies a callee had
 * spilled on the real stack).  The frames region is named, from the
 * first switch out until just before ASan destroys it.
 *
 * Its bounds come from ASan's own record at the handle (asan_fake_stack.h,
 * unchanged from gcc 7 to LLVM 20): hint_position_[11], then
 * stack_size_log_; the frames begin after a 4096-byte header and the
 * flags (2^(log+1-6) bytes) and hold 11 size classes of 2^log bytes.  A
 * log outside [10, 30] (another layout) names nothing: a missed root, a
 * false report, never a crash (LeakSanitizer reads only the readable
 * parts of a root).  Freed frames are scanned too: what a returned
 * function left there can hide a leak (a missed report, never a false
 * one).  Callers: the switch, on the UT's VP's mainline.
 */
enum { FAKE_CLASSES = 11, FAKE_HEADER = 4096, FAKE_MIN_FRAME_LOG = 6 };

void __weft_lsan_root_fake_stack(struct ut *t, void *fake)
{
	if (!__lsan_register_root_region || !fake)
		return;
	/* called until named (san_leave: asan_fake_root unset); ASan keeps
	 * one fake stack for a fiber until its end */
	uintptr_t log = ((const uintptr_t *)fake)[FAKE_CLASSES];
	if (log < 10 || log > 30)
		return;
	uintptr_t flags = (uintptr_t)1 << (log + 1 - FAKE_MIN_FRAME_LOG);
	uintptr_t frames = (uintptr_t)fake + FAKE_HEADER + flags;
	size_t size = (size_t)FAKE_CLASSES << log;
	__lsan_register_root_region((const void *)frames, size);
	t->asan_fake_root = (void *)frames;
	t->asan_fake_root_size = size;
}

void __weft_lsan_unroot_fake_stack(struct ut *t)
{
	if (!t->asan_fake_root)
		return;
	__lsan_unregister_root_region(t->asan_fake_root, t->asan_fake_root_size);
	t->asan_fake_root = NULL;
	t->asan_fake_root_size = 0;
}
#endif
