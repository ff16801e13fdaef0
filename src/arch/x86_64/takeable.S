/*
 * A system call the monitor may take the VP over (runtime/monitor.c).
 *
 * Owns: the one syscall instruction inside Weft's text at which the
 * monitor may find a kernel thread asleep and still take the VP from it.
 * Anywhere else in Weft's text a kernel thread asleep in the kernel is
 * inside the runtime's own work and is left alone.  Callers (rt.h,
 * __weft_takeable_syscall6) clear vp->in_weft before the call and ask
 * "am I still the carrier?" after it, so nothing of the runtime runs on
 * the way back without the VP.
 *
 * long __weft_arch_takeable_syscall6(long nr, long a1, ..., long a6):
 * the System V arguments are in rdi, rsi, rdx, rcx, r8, r9 and the sixth
 * system-call argument on the stack; Linux wants the number in rax and
 * the arguments in rdi, rsi, rdx, r10, r8, r9.
 */
	.text
	.globl	__weft_arch_takeable_syscall6
	.hidden	__weft_arch_takeable_syscall6
	.type	__weft_arch_takeable_syscall6, @function
	.globl	__weft_arch_takeable_ret
	.hidden	__weft_arch_takeable_ret
__weft_arch_takeable_syscall6:
	.cfi_startproc
	movq	%rdi, %rax
	movq	%rsi, %rdi
	movq	%rdx, %rsi
	movq	%rcx, %rdx
	movq	%r8, %r10
	movq	%r9, %r8
	movq	8(%rsp), %r9
	syscall
__weft_arch_takeable_ret:
	ret
	.cfi_endproc
	.size	__weft_arch_takeable_syscall6, .-__weft_arch_takeable_syscall6

	.section .note.GNU-stack,"",@progbits
