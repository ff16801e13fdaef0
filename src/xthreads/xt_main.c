/*
 * xt_main.c — the `main` libweft-xthreads supplies: the paper's Figure 14.
 * It makes the initial thread an xthread (slot, XTHREAD_DEFAULT_PRIO,
 * asynchronous cancellation), runs the program's xmain(argc, argv, envp),
 * then ends that thread as xthread_exit() does: the other threads run on,
 * and the program ends when the last of them ends (or when every one
 * waits for ever, xt.h).  xmain's return value is ignored, as every
 * thread's is in Xinu; a program sets its exit status with exit().
 *
 * `main` is weak, so a program that defines its own main keeps it (and
 * links, whichever order the libraries come in); in libweft-xthreads.a it
 * is a member of its own, taken only by a program that has no main.
 * Invariant: xmain is found by its C name, or by the names a C++ compiler
 * gives xmain(), xmain(int, char **) and xmain(int, char **, char **); all
 * are weak references, so a program without xmain links and is told at
 * run time.
 */
#include "xt.h"

#include <stdio.h>

extern int xmain(int argc, char **argv, char **envp) __attribute__((weak));
extern int xt_xmain_cxx_v(void) __asm__("_Z5xmainv") __attribute__((weak));
extern int xt_xmain_cxx_ac(int, char **) __asm__("_Z5xmainiPPc") __attribute__((weak));
extern int xt_xmain_cxx_ace(int, char **, char **) __asm__("_Z5xmainiPPcS0_")
	__attribute__((weak));

XT_API __attribute__((weak)) int main(int argc, char **argv, char **envp)
{
	if (!xmain && !xt_xmain_cxx_v && !xt_xmain_cxx_ac && !xt_xmain_cxx_ace) {
		fprintf(stderr, "%s: the program defines neither main nor xmain (libweft-xthreads)\n",
			argc > 0 ? argv[0] : "weft-xthreads");
		return 127;
	}
	/* the slot is freed when this frame is left, however (-fexceptions) */
	struct xt_slot *s __attribute__((cleanup(xt_frame_ends))) = xt_adopt(false);
	if (!s) {
		fprintf(stderr, "%s: cannot start Xthreads: out of memory\n",
			argc > 0 ? argv[0] : "weft-xthreads");
		return 1;
	}
	if (xmain)
		xmain(argc, argv, envp);
	else if (xt_xmain_cxx_ace)
		xt_xmain_cxx_ace(argc, argv, envp);
	else if (xt_xmain_cxx_ac)
		xt_xmain_cxx_ac(argc, argv);
	else
		xt_xmain_cxx_v();
	xthread_exit();
}
