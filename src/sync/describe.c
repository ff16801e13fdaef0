/*
 * describe.c — what a blocked UT waits on, in words, for deadlock reports:
 * the sync layer knows its own layouts, the runtime does not.
 */
#include "sync.h"

struct ut *__weft_wait_holder(const struct ut *t)
{
	switch (t->wait_kind) {
	case WAIT_MUTEX:
		return t->wait_obj ? ((const struct wmutex *)t->wait_obj)->owner : NULL;
	case WAIT_RWLOCK:
		return t->wait_obj ? ((const struct wrwlock *)t->wait_obj)->writer : NULL;
	default:
		return NULL;
	}
}
