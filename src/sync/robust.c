/* placeholder until sync lands: no robust mutexes exist yet */
#include "../runtime/rt.h"
void __weft_robust_owner_died(struct ut *t) { (void)t; }
