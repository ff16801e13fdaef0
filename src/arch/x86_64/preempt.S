/*
 * x86-64 preemption trampoline: the target of a fake call (Mueller).
 *
 * The tick handler (runtime/preempt.c) interrupts a UT in its own code,
 * stores the interrupted PC 136 bytes below the interrupted %rsp (past the
 * 128-byte red zone a leaf function may be using), points %rsp at that word
 * and the PC here, and returns from the signal.  This code then runs on the
 * UT's own stack as if the interrupted instruction had called it, saves
 * *everything* the interrupted code could have live (all general registers,
 * flags, and the whole extended state by xsave: x87, SSE, AVX, AVX-512),
 * lets the scheduler switch (__weft_preempt_trampoline_body: the tick's
 * decision, then the epilogue), and on resumption restores it all and returns
 * to the interrupted instruction with %rsp exactly as it was.
 *
 * Frame (high to low): [interrupted rip] [rflags] [rax ... r15] <- %rbx
 * then, 64-byte aligned below, the xsave area of __weft_xsave_size bytes.
 * %rbx is callee-saved, so it still points at the frame after the call.
 */
/* The saved general registers and flags back, in the reverse of the
 * pushes above; both ways out (ret, and Valgrind's jump) use it. */
	.macro restore_saved
	popq	%r15
	.cfi_adjust_cfa_offset -8
	popq	%r14
	.cfi_adjust_cfa_offset -8
	popq	%r13
	.cfi_adjust_cfa_offset -8
	popq	%r12
	.cfi_adjust_cfa_offset -8
	popq	%r11
	.cfi_adjust_cfa_offset -8
	popq	%r10
	.cfi_adjust_cfa_offset -8
	popq	%r9
	.cfi_adjust_cfa_offset -8
	popq	%r8
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rbp
	.cfi_adjust_cfa_offset -8
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	popq	%rdx
	.cfi_adjust_cfa_offset -8
	popq	%rcx
	.cfi_adjust_cfa_offset -8
	popq	%rax
	.cfi_adjust_cfa_offset -8
	popfq
	.cfi_adjust_cfa_offset -8
	.endm

	.text
	.globl	__weft_preempt_trampoline
	.hidden	__weft_preempt_trampoline
	.type	__weft_preempt_trampoline, @function
	.p2align 4
__weft_preempt_trampoline:
	.cfi_startproc
	.cfi_signal_frame
	/* CFA = the interrupted code's %rsp: 128 bytes of red zone above the
	 * word holding its PC, which is where the unwinder finds "return". */
	.cfi_def_cfa %rsp, 136
	.cfi_offset %rip, -136
	pushfq
	.cfi_adjust_cfa_offset 8
	pushq	%rax
	.cfi_adjust_cfa_offset 8
	pushq	%rcx
	.cfi_adjust_cfa_offset 8
	pushq	%rdx
	.cfi_adjust_cfa_offset 8
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	pushq	%rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%r8
	.cfi_adjust_cfa_offset 8
	pushq	%r9
	.cfi_adjust_cfa_offset 8
	pushq	%r10
	.cfi_adjust_cfa_offset 8
	pushq	%r11
	.cfi_adjust_cfa_offset 8
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
	movq	%rsp, %rbx
	.cfi_def_cfa_register %rbx
	cld				/* the ABI wants DF clear at a call */
	subq	__weft_xsave_size(%rip), %rsp
	andq	$-64, %rsp
	/* xrstor faults unless the header's reserved bytes are zero, and
	 * xsave writes only XSTATE_BV: clear the 64-byte header first. */
	xorl	%eax, %eax
	movq	%rax, 512(%rsp)
	movq	%rax, 520(%rsp)
	movq	%rax, 528(%rsp)
	movq	%rax, 536(%rsp)
	movq	%rax, 544(%rsp)
	movq	%rax, 552(%rsp)
	movq	%rax, 560(%rsp)
	movq	%rax, 568(%rsp)
	movl	$-1, %eax
	movl	$-1, %edx
	xsave64	(%rsp)
	call	__weft_preempt_trampoline_body
	movl	$-1, %eax
	movl	$-1, %edx
	xrstor64 (%rsp)
	movq	%rbx, %rsp
	.cfi_def_cfa_register %rsp
	/* flags are clobbered here; popfq below restores them */
	cmpb	$0, __weft_arch_valgrind(%rip)
	jne	3f
	.cfi_remember_state
	restore_saved
	ret	$128			/* back over the red zone we skipped */
	/*
	 * Under Valgrind (arch.c): the same, but back by an indirect jump.
	 * Valgrind's CPU follows every "ret" with a hint that the 128 bytes
	 * below the new %rsp are dead, and memcheck marks them undefined:
	 * here they are the interrupted code's red zone, still live, and a
	 * leaf function reading its locals there after a preemption would be
	 * reported.  The PC goes through a word of Weft's data: Valgrind
	 * runs one kernel thread at a time and switches threads, and
	 * delivers signals, only between blocks of code, and the store, the
	 * pops and the jump are one block.  Natively none of that holds (a
	 * signal after the lea could write its frame over the slot, another
	 * kernel thread could be here too), hence "ret" there.
	 */
3:	.cfi_restore_state
	movq	16*8(%rsp), %rax	/* the interrupted PC, above the 16 saved words */
	movq	%rax, __weft_arch_vg_pc(%rip)
	restore_saved
	leaq	136(%rsp), %rsp		/* the slot and the red zone */
	.cfi_adjust_cfa_offset -136
	.cfi_undefined %rip
	jmp	*__weft_arch_vg_pc(%rip)
	.cfi_endproc
	.size	__weft_preempt_trampoline, .-__weft_preempt_trampoline

	.bss
	.p2align 3
	.type	__weft_arch_vg_pc, @object
	.size	__weft_arch_vg_pc, 8
__weft_arch_vg_pc:
	.zero	8
	.text

/* void __weft_arch_sigreturn(void): sa_restorer of the handlers Weft
 * installs by system call; the kernel requires one on x86-64. */
	.globl	__weft_arch_sigreturn
	.hidden	__weft_arch_sigreturn
	.type	__weft_arch_sigreturn, @function
	.p2align 4
__weft_arch_sigreturn:
	movq	$15, %rax		/* SYS_rt_sigreturn */
	syscall
	.size	__weft_arch_sigreturn, .-__weft_arch_sigreturn

	.section .note.GNU-stack,"",@progbits
