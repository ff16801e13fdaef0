/*
 * san_text.c — a sanitizer's runtime in the process: where its code is,
 * so that Weft can tell the calls it makes from the program's, and the
 * calls it makes while it holds its own locks, which go to glibc, not to
 * Weft.
 *
 * Owns: __weft_san_lo and __weft_san_hi, the executable range [lo, hi) of
 * the sanitizer runtime's shared object (libasan, liblsan, libtsan: found
 * by one of its exported functions, __sanitizer_print_stack_trace, a weak
 * reference that is NULL without one); 0, 0 when no sanitizer runtime is
 * in the process, or when it is linked into the program (clang's default:
 * its range would be the program's own), so __weft_called_by_san (rt.h)
 * is then false for every caller.  Read by the sanitizer build's epilogue
 * (epilogue.c): a call the runtime makes while it reports acts on nothing
 * deferred.
 *
 * And the runtime's imports of the plain calls (plain_calls below).
 * LeakSanitizer's check holds its own locks (its allocator's, its thread
 * registry's, its list of roots) while its tracer thread stops the world,
 * and calls sched_yield in a loop meanwhile; then, holding its list's
 * lock, it symbolises the leaks' stacks, which opens and reads the
 * program's file.  Those calls were Weft's.  Its sched_yield switched
 * UTs, and the first UT to call malloc (or to name its fake stack a root
 * at its first switch out, lsan_roots.c) waited for good for a lock the
 * checker held; under M:N the checker's sched_yield, or its open, waited
 * for the runtime lock, held by a VP that waited for LeakSanitizer's lock
 * to name a fake stack (a check at exit hung asan_leaks_kept_by_uts about
 * one run in 100 under load).  None of these calls needs Weft.  So each
 * of the runtime's own slots for them (its GOT entries) that binds to
 * Weft's is pointed at the definition beneath Weft's (glibc's), once, at
 * start-up: the program's calls stay Weft's and pay nothing for it (a test
 * of the caller's address in sched_yield cost the yield row 0.8 ns, 4%).
 * A runtime linked into the program has no slots of its own: not covered
 * (docs/debugging.md).
 *
 * Invariant: all of it is done once by __weft_san_runtime_find in
 * __weft_init, before a second kernel thread exists; the range is read
 * after by every VP without a lock and never written again.
 */
#include "rt.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>

extern void __sanitizer_print_stack_trace(void) __attribute__((weak));

uintptr_t __weft_san_lo, __weft_san_hi;

/*
 * The calls a sanitizer's runtime makes while it holds its own locks, none
 * of which it needs Weft for: the yield of its stop-the-world, its
 * symboliser's file I/O (libbacktrace opens the program's file and
 * reads it while the leak check reports), its clock.  Weft's versions
 * may switch UTs or take the runtime lock.  The thread calls (pthread_*,
 * sigaltstack) stay Weft's: they answer for the runtime's records of its
 * threads, and Weft must see them.
 */
static const char *const plain_calls[] = {
	"sched_yield", "open", "open64", "openat", "openat64", "close", "read", "pread", "pread64",
	"write", "fcntl", "fcntl64", "lseek", "lseek64", "pipe", "pipe2", "clock_gettime",
};

static bool plain_call(const char *name)
{
	for (size_t i = 0; i < sizeof plain_calls / sizeof plain_calls[0]; i++)
		if (strcmp(name, plain_calls[i]) == 0)
			return true;
	return false;
}

/* A dynamic entry's address: ld.so rewrites these to addresses in a
 * writable dynamic section (x86-64's), and leaves them offsets in a
 * read-only one. */
static uintptr_t dyn_addr(uintptr_t bias, ElfW(Addr) v)
{
	return v >= bias ? (uintptr_t)v : bias + (uintptr_t)v;
}

/* The definition after Weft's of a call that binds to Weft's (glibc's):
 * NULL if it binds elsewhere or there is none.  dlsym's RTLD_NEXT is
 * asked from Weft's own object. */
static void *beneath_weft(const char *name, const void *weft_base)
{
	Dl_info in;
	void *mine = dlsym(RTLD_DEFAULT, name);
	if (!mine || !dladdr(mine, &in) || in.dli_fbase != weft_base)
		return NULL;
	return dlsym(RTLD_NEXT, name);
}

/* Point the object's GOT slots for the plain calls (PLT slots, data
 * imports), each bound or to be bound to Weft's, at the definition
 * beneath Weft's.  A lazy slot is rewritten too, before its first call
 * would bind it.  A slot under RELRO (bound at load, then made read-only)
 * has its page made writable around the store. */
static void plain_imports(const struct dl_phdr_info *info, const void *weft_base)
{
	uintptr_t bias = (uintptr_t)info->dlpi_addr;
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t relro_lo = 0, relro_hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(bias + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = bias + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *tables[2] = { NULL, NULL };
	size_t sizes[2] = { 0, 0 };
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_addr(bias, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_addr(bias, d->d_un.d_ptr); break;
		case DT_JMPREL: tables[0] = (const ElfW(Rela) *)dyn_addr(bias, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
		case DT_RELA: tables[1] = (const ElfW(Rela) *)dyn_addr(bias, d->d_un.d_ptr); break;
		case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
		}
	}
	if (!symtab || !strtab)
		return;
	for (int t = 0; t < 2; t++) {
		for (size_t i = 0; tables[t] && i < sizes[t] / sizeof(ElfW(Rela)); i++) {
			const ElfW(Rela) *r = &tables[t][i];
			unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
			if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
				continue;
			const char *name = strtab + symtab[ELF64_R_SYM(r->r_info)].st_name;
			if (!plain_call(name))
				continue;
			void *to = beneath_weft(name, weft_base);
			if (!to)
				continue;
			uintptr_t slot = bias + r->r_offset;
			bool ro = slot >= relro_lo && slot < relro_hi;
			uintptr_t page = slot & ~(uintptr_t)4095;
			if (ro && mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0)
				continue;
			__atomic_store_n((uintptr_t *)slot, (uintptr_t)to, __ATOMIC_RELAXED);
			if (ro)
				mprotect((void *)page, 4096, PROT_READ);
		}
	}
}

struct bases {
	uintptr_t runtime;       /* the sanitizer runtime's object */
	const void *weft;        /* Weft's own (libweft.so, or the program) */
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	const struct bases *b = arg;
	if ((uintptr_t)info->dlpi_addr != b->runtime)
		return 0;
	/* the program itself (named ""): its runtime linked in, no range
	 * that is the runtime's alone */
	if (!info->dlpi_name || !info->dlpi_name[0])
		return 1;
	uintptr_t lo = 0, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t from = info->dlpi_addr + ph->p_vaddr, to = from + ph->p_memsz;
		if (!lo || from < lo)
			lo = from;
		if (to > hi)
			hi = to;
	}
	__weft_san_lo = lo;
	__weft_san_hi = hi;
	plain_imports(info, b->weft);
	return 1;
}

void __weft_san_runtime_find(void)
{
	if (!__sanitizer_print_stack_trace)
		return;
	Dl_info in, prog;
	if (!dladdr((void *)__sanitizer_print_stack_trace, &in) || !in.dli_fbase ||
	    !dladdr((void *)__weft_san_runtime_find, &prog))
		return;
	/* the runtime linked into Weft's own object: no range that is its
	 * alone */
	if (prog.dli_fbase == in.dli_fbase)
		return;
	/* dlpi_addr is the load bias; a shared object's bias is its base */
	struct bases b = { (uintptr_t)in.dli_fbase, prog.dli_fbase };
	dl_iterate_phdr(find_text, &b);
}
