/*
 * Where glibc's own cancellation of a UT ends (runtime/libc_cancel.c).
 *
 * Owns: __weft_arch_libc_landing, the PC of the jmp_buf (tp.h,
 * __weft_arch_landing_jmpbuf: %r12 names the runtime's function) a UT's thread
 * block names as glibc's cleanup_jmp_buf while Weft has armed glibc's
 * cancellation for it.  glibc's unwinder, started by a cancellation point
 * inside libc (a write in printf), runs every frame's cleanups and C++
 * destructors, then longjmps here with the stack pointer the jmp_buf names:
 * the top of the UT's stack, above every frame it unwound.  Nothing of the
 * UT's frames is live any more; this frame is the last (the return address
 * is undefined, so Weft's own unwind, if it is asked to go on from here,
 * ends at once).
 *
 * Invariant: entered only by that longjmp, on the UT whose request it is.
 */
	.text
	.globl	__weft_arch_libc_landing
	.hidden	__weft_arch_libc_landing
	.type	__weft_arch_libc_landing, @function
	.p2align 4
__weft_arch_libc_landing:
	.cfi_startproc
	.cfi_undefined %rip
	xorl	%ebp, %ebp
	andq	$-16, %rsp
	call	*%r12
	ud2
	.cfi_endproc
	.size	__weft_arch_libc_landing, .-__weft_arch_libc_landing

	.section .note.GNU-stack,"",@progbits
