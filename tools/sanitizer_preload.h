/*
 * sanitizer_preload.h — which sanitizer runtime a program needs first
 * (sanitizer_preload.c).
 */
#ifndef WEFTRUN_SANITIZER_PRELOAD_H
#define WEFTRUN_SANITIZER_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>

/* True if PROGRAM (a path, or a name looked up in PATH as execvp does) is
 * an ELF executable that needs AddressSanitizer's or LeakSanitizer's
 * runtime as a shared object; its name (DT_NEEDED, e.g. "libasan.so.8")
 * is written to out. */
bool weftrun_sanitizer_runtime(const char *program, char *out, size_t size);

#endif
