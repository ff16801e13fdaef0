/*
 * vfork for the program: the child borrows its parent UT's stack and
 * memory, and every call of Weft's it makes is a plain call
 * (posix/vfork.c says why and how the child is told apart).
 *
 * Owns: the exported vfork.  The child runs on the very stack this
 * function was called on, and may overwrite it before the parent comes
 * back (its own calls push there): so the return address is held in a
 * register across the system call (%rdi: the kernel keeps every register
 * but %rax, %rcx and %r11), as glibc's vfork holds it, and pushed again
 * by each side.  The token __weft_vfork_begin returns waits in %esi the
 * same way.  Each side then pushes the address back and calls C below it:
 * the child to take the UT's signal mask as its kernel mask, the parent
 * (or a failed call) to end the window.
 *
 * pid_t vfork(void): the child's pid, 0 in the child, -1 with errno.
 */
	.text
	.globl	vfork
	.type	vfork, @function
vfork:
	.cfi_startproc
#if WEFT_TSAN
	/* ThreadSanitizer's own vfork is fork: a child that runs the
	 * program's instrumented code in the parent's memory would write the
	 * parent's shadow */
	jmp	fork@PLT
#endif
	subq	$8, %rsp                  /* call with %rsp 16-aligned */
	.cfi_adjust_cfa_offset 8
	call	__weft_vfork_begin
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	movl	%eax, %esi                /* the token, kept across the call */
	popq	%rdi                      /* the return address, likewise */
	.cfi_adjust_cfa_offset -8
	.cfi_register %rip, %rdi
	movl	$58, %eax                 /* SYS_vfork */
	syscall
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rip, 0
	testq	%rax, %rax
	jz	1f
	movl	%esi, %edi                /* __weft_vfork_end(token, result, sp) */
	movq	%rax, %rsi
	movq	%rsp, %rdx
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	call	__weft_vfork_end
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	ret
1:	/* the child: its kernel mask becomes the UT's, and 0.  Its calls
	 * may write below the pushed return address, never above it */
	movl	%esi, %edi
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	call	__weft_vfork_child_start
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	xorl	%eax, %eax
	ret
	.cfi_endproc
	.size	vfork, .-vfork

	.section .note.GNU-stack,"",@progbits
