/*
 * describe.c — what a blocked UT waits on, in words, for deadlock reports:
 * the sync layer knows its own layouts, the runtime does not.
 */
#include "pshared.h"

struct ut *__weft_wait_holder(const struct ut *t)
{
	switch (t->wait_kind) {
	case WAIT_MUTEX: {
		const struct wmutex *w = t->wait_obj;
		if (w && (w->kind & MK_PSHARED)) {
			/* process-shared: parked only behind a UT of ours */
			struct pholder *h = __weft_pholder_peek(w);
			return h && h->owner != PH_GONE ? h->owner : NULL;
		}
		return w ? w->owner : NULL;
	}
	case WAIT_RWLOCK:
		return t->wait_obj ? ((const struct wrwlock *)t->wait_obj)->writer : NULL;
	default:
		return NULL;
	}
}
