/*
 * sanitizer_preload.c — the sanitizer runtime a program was linked with,
 * so that weftrun can preload it ahead of Weft.
 *
 * Owns: reading a program's ELF dynamic section for a DT_NEEDED entry
 * naming AddressSanitizer's or LeakSanitizer's shared runtime.  Why: such
 * a runtime must be the first object of the process (its interceptors,
 * pthread_create's among them, must come before every other definition,
 * and it checks this at start-up: "ASan runtime does not come first").
 * weftrun preloads libweft, which would come first; with the runtime
 * named before it in LD_PRELOAD the order is the one a program linked
 * with -fsanitize=address and -lweft has.  Invariant: reads the file
 * only; any malformed or unreadable file answers "none" (the program is
 * then run as before, and the loader reports what it finds).
 */
#include "sanitizer_preload.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file execvp would run for `program`. */
static bool resolve(const char *program, char *out, size_t size)
{
	if (strchr(program, '/'))
		return snprintf(out, size, "%s", program) < (int)size;
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/bin:/usr/bin";
	for (const char *p = path; *p;) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		int w = len ? snprintf(out, size, "%.*s/%s", (int)len, p, program)
			    : snprintf(out, size, "./%s", program);
		if (w > 0 && (size_t)w < size && access(out, X_OK) == 0)
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

static bool read_at(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off) == (ssize_t)len;
}

/* The file offset of virtual address `va`, from the PT_LOAD that maps it. */
static bool file_offset(const Elf64_Phdr *ph, int n, Elf64_Addr va, off_t *off)
{
	for (int i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && va >= ph[i].p_vaddr && va < ph[i].p_vaddr + ph[i].p_filesz) {
			*off = (off_t)(ph[i].p_offset + (va - ph[i].p_vaddr));
			return true;
		}
	return false;
}

static bool is_runtime(const char *name)
{
	return strncmp(name, "libasan.so", 10) == 0 || strncmp(name, "liblsan.so", 10) == 0;
}

static bool needed_runtime(int fd, char *out, size_t size)
{
	Elf64_Ehdr eh;
	if (!read_at(fd, &eh, sizeof eh, 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > 256)
		return false;
	Elf64_Phdr ph[256];
	if (!read_at(fd, ph, (size_t)eh.e_phnum * sizeof ph[0], (off_t)eh.e_phoff))
		return false;
	const Elf64_Phdr *dyn = NULL;
	for (int i = 0; i < eh.e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			dyn = &ph[i];
	if (!dyn || dyn->p_filesz == 0 || dyn->p_filesz > (1u << 20))
		return false;
	size_t nd = dyn->p_filesz / sizeof(Elf64_Dyn);
	Elf64_Dyn *d = malloc(nd * sizeof *d);
	if (!d)
		return false;
	bool found = false;
	Elf64_Addr strtab = 0;
	if (!read_at(fd, d, nd * sizeof *d, (off_t)dyn->p_offset))
		goto out;
	for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL; i++)
		if (d[i].d_tag == DT_STRTAB)
			strtab = d[i].d_un.d_ptr;
	off_t str_off;
	if (!strtab || !file_offset(ph, eh.e_phnum, strtab, &str_off))
		goto out;
	for (size_t i = 0; i < nd && d[i].d_tag != DT_NULL && !found; i++) {
		if (d[i].d_tag != DT_NEEDED)
			continue;
		char name[64] = { 0 };
		if (pread(fd, name, sizeof name - 1, str_off + (off_t)d[i].d_un.d_val) <= 0)
			continue;
		if (is_runtime(name) && strlen(name) < size) {
			strcpy(out, name);
			found = true;
		}
	}
out:
	free(d);
	return found;
}

bool weftrun_sanitizer_runtime(const char *program, char *out, size_t size)
{
	char path[PATH_MAX];
	if (!resolve(program, path, sizeof path))
		return false;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool found = needed_runtime(fd, out, size);
	close(fd);
	return found;
}
