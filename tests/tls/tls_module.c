/* tls_module — a module with thread-local storage (general-dynamic, reached
 * through __tls_get_addr and the DTV), loaded with dlopen after threads
 * exist.  Each thread sets and reads its own copy. */
#include <stdint.h>

__thread long module_value = -7;
__thread char module_buf[256] = "initial";

void module_set(long v)
{
	module_value = v;
	for (int i = 0; i < 8; i++)
		module_buf[i] = (char)('a' + (v + i) % 26);
	module_buf[8] = 0;
}

long module_get(void) { return module_value; }
const char *module_text(void) { return module_buf; }
void *module_address(void) { return &module_value; }
