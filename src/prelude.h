/*
 * prelude.h — force-included before every library source (-include).
 *
 * glibc's headers mark pointer parameters nonnull, which lets the compiler
 * assume them non-NULL and delete our checks.  Weft must answer a NULL with
 * EINVAL, not crash, so the attribute is switched off for our own code.
 */
#define __attribute_nonnull__(params)
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif
