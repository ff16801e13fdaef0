/*
 * x86-64 context switch and thread entry (System V ABI).
 *
 * Owns: the only code that moves a virtual processor from one UT's stack to
 * another's.  Invariant: a suspended UT's saved stack pointer points at a
 * switch frame, laid out (low to high address) as
 *
 *     [mxcsr:4][x87 cw:2][pad:2 = 0][r15][r14][r13][r12][rbx][rbp][return address]
 *
 * so resuming a UT is "load sp, pop the frame, ret".  Only callee-saved state
 * is kept: the caller of __weft_switch already assumes every other register
 * is clobbered.  MXCSR and the x87 control word are callee-saved per the ABI
 * ("control bits"), so they travel with the UT as well.
 */
	.text

/* void __weft_switch(void **save_sp, void *load_sp)
 *   rdi: where to store the outgoing UT's stack pointer
 *   rsi: the incoming UT's saved stack pointer                                */
	.globl	__weft_switch
	.hidden	__weft_switch
	.type	__weft_switch, @function
	.p2align 4
__weft_switch:
	.cfi_startproc
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	pushq	%r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r12, 0
	pushq	%r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r13, 0
	pushq	%r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r14, 0
	pushq	%r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r15, 0
	pushq	$0			/* the FP control slot, padding zeroed */
	.cfi_adjust_cfa_offset 8
	stmxcsr	(%rsp)
	fnstcw	4(%rsp)
	/* Our x87 control word, read back at the width it was stored (a
	 * wider load over the stores above cannot be forwarded from them and
	 * stalls until they reach the cache). */
	movzwl	4(%rsp), %eax
	movq	%rsp, (%rdi)
	/* From here on we are on the incoming UT's stack; its frame has the
	 * same shape, so the CFI above stays true. */
	movq	%rsi, %rsp
	/* MXCSR is loaded whatever it holds, the x87 control word only when
	 * it differs.  Reading MXCSR back to compare it, as the x87 word is,
	 * waits for the stmxcsr above to reach the cache: on the AMD EPYC
	 * guest that wait was 2 ns of every switch (two UTs switching through
	 * one call site: 15.3 ns a pair compared, 11.4 loaded; the registers
	 * alone 6.8, so MXCSR's save is most of what is left), where an
	 * unconditional ldmxcsr costs nothing measurable.  (On the Xeon
	 * guests of earlier stops the read-back was forwarded and the compare
	 * won; that machine is not here to measure again.)  fldcw is
	 * microcoded and rare to need: it stays conditional. */
	ldmxcsr	(%rsp)
	cmpw	4(%rsp), %ax
	jne	2f
1:	addq	$8, %rsp
	.cfi_remember_state
	.cfi_adjust_cfa_offset -8
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	ret
	.cfi_restore_state
2:	fldcw	4(%rsp)
	jmp	1b
	.cfi_endproc
	.size	__weft_switch, .-__weft_switch

/* First code a new UT runs: reached by the "ret" of __weft_switch from the
 * frame built by __weft_arch_frame (ctx.h): r12 = entry function, r13 = its
 * argument.  The return address is marked undefined so gdb's bt and
 * _Unwind_Backtrace stop here instead of walking into garbage.             */
	.globl	__weft_entry
	.hidden	__weft_entry
	.type	__weft_entry, @function
	.p2align 4
__weft_entry:
	.cfi_startproc
	.cfi_undefined %rip
	xorl	%ebp, %ebp
	movq	%r13, %rdi
	callq	*%r12
	ud2			/* the entry function never returns */
	.cfi_endproc
	.size	__weft_entry, .-__weft_entry

	.section .note.GNU-stack,"",@progbits

/*
 * void __weft_arch_call_on(void *stack_top, void (*fn)(void *), void *arg)
 * Call fn(arg) with the stack pointer at stack_top (aligned down to 16),
 * then come back to the caller's stack: a signal handler run on a UT's
 * own sigaltstack (runtime/sigdeliver.c).  rbp keeps the caller's stack
 * pointer across the call (callee-saved); the CFI says so, so an unwinder
 * (a backtrace from the handler, a C++ exception, a cancel's unwind)
 * crosses back onto the UT's stack.
 */
	.text
	.globl	__weft_arch_call_on
	.hidden	__weft_arch_call_on
	.type	__weft_arch_call_on, @function
	.p2align 4
__weft_arch_call_on:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rdi
	movq	%rdi, %rsp
	movq	%rsi, %rax
	movq	%rdx, %rdi
	call	*%rax
	movq	%rbp, %rsp
	.cfi_def_cfa_register %rsp
	popq	%rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	__weft_arch_call_on, .-__weft_arch_call_on
