/*
 * A system call that pthread_cancel may end (runtime/handoff.c, the
 * cancellable blocking bracket; posix/cancel.c sends the kick).
 *
 * Owns: the one stretch of Weft's text, [__weft_arch_csys_begin,
 * __weft_arch_csys_end), where a cancel kick that finds a kernel thread
 * may skip its system call.  In it, %rbx holds the address of the calling
 * UT's cancellation bits (ut->cancel) and nothing has happened yet that
 * the program can see: the bits are looked at, then the call is made.
 * The kick's handler (preempt.h, __weft_arch_csys_stop) sees one of three
 * things:
 *   - the PC before the syscall instruction, or on it (the kernel puts it
 *     back there, %rax the call's number, to restart a call its signal
 *     interrupted): if the bits say a request is due, the call is not
 *     made (again): the PC goes to the end with -EINTR in %rax;
 *   - the PC at the end: the call returned; if the kick interrupted it,
 *     it returned -EINTR and the caller acts on the request (the request
 *     was published before the kick was sent);
 *   - anywhere else: not in the call; the caller looks at the bits before
 *     it makes the call.
 * So a request is acted on only when the call has not taken effect (it
 * was never made, or the kernel ended it with EINTR), as POSIX wants of a
 * cancellation point, and never lost: published before %rbx's look, it
 * is seen there; after, the kick finds the PC in the stretch or the call
 * ended by it.
 *
 * long __weft_arch_cancellable_syscall(const volatile uint8_t *cancel,
 *                                      long nr, const long args[6]):
 * due when (*cancel & WEFT_ARCH_CANCEL_MASK) == WEFT_ARCH_CANCEL_DUE
 * (pending, enabled, not exiting: rt.h's __weft_cancel_due, checked
 * against these values at compile time in handoff.c).
 */
#define WEFT_ARCH_CANCEL_MASK 0x0b
#define WEFT_ARCH_CANCEL_DUE 0x01
#define EINTR 4

	.text
	.globl	__weft_arch_cancellable_syscall
	.hidden	__weft_arch_cancellable_syscall
	.type	__weft_arch_cancellable_syscall, @function
	.globl	__weft_arch_csys_begin
	.hidden	__weft_arch_csys_begin
	.globl	__weft_arch_csys_end
	.hidden	__weft_arch_csys_end
	.p2align 4
__weft_arch_cancellable_syscall:
	.cfi_startproc
	pushq	%rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	movq	%rdi, %rbx
	movq	%rsi, %rax
	movq	%rdx, %r11
	movq	0(%r11), %rdi
	movq	8(%r11), %rsi
	movq	16(%r11), %rdx
	movq	24(%r11), %r10
	movq	32(%r11), %r8
	movq	40(%r11), %r9
__weft_arch_csys_begin:
	movzbl	(%rbx), %ecx
	andl	$WEFT_ARCH_CANCEL_MASK, %ecx
	cmpl	$WEFT_ARCH_CANCEL_DUE, %ecx
	je	1f
	syscall
__weft_arch_csys_end:
	popq	%rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
1:	movq	$-EINTR, %rax
	jmp	__weft_arch_csys_end
	.cfi_endproc
	.size	__weft_arch_cancellable_syscall, .-__weft_arch_cancellable_syscall

	.section .note.GNU-stack,"",@progbits
