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
 *
 * Invariant: every mapping of those three kinds is a root from when it is
 * made until just before it is unmapped, so LeakSanitizer's scan at exit
 * never reads an unmapped root.  Its scan reads only the readable parts
 * of a root (a stack's guard page is skipped).  Without LeakSanitizer in
 * the process the weak symbols are NULL and nothing is called; the calls
 * are on paths that map or unmap, never on a switch or a create from the
 * pool.  Callers: the mapping's owner, on the VP's mainline (under the
 * runtime lock with M:N); LeakSanitizer's own list takes its own lock.
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
