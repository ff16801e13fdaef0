/*
 * x86-64 stack copy for copy-stack UTs (runtime/copystack.c).
 *
 * Owns: the one routine that moves a copy-stack UT's live frames between
 * its run stack and its save area.  It is assembly so that no sanitizer
 * instruments it: the bytes it reads include stack redzones that
 * AddressSanitizer holds poisoned, and the shadow bytes it moves under
 * ASan are not program memory at all.  It uses no stack of its own beyond
 * its return address.
 *
 * void __weft_arch_stack_copy(void *dst, const void *src, size_t n)
 *   rdi: destination, rsi: source, rdx: bytes (ranges do not overlap).
 */
	.text
	.globl	__weft_arch_stack_copy
	.hidden	__weft_arch_stack_copy
	.type	__weft_arch_stack_copy, @function
	.p2align 4
__weft_arch_stack_copy:
	.cfi_startproc
	movq	%rdx, %rcx
	/* frames are whole words: move eight bytes at a time, then the rest */
	shrq	$3, %rcx
	rep movsq
	movq	%rdx, %rcx
	andq	$7, %rcx
	rep movsb
	ret
	.cfi_endproc
	.size	__weft_arch_stack_copy, .-__weft_arch_stack_copy

/* void __weft_arch_stack_zero(void *dst, size_t n): the same, for the
 * bytes of ASan's shadow that describe no frame any more. */
	.globl	__weft_arch_stack_zero
	.hidden	__weft_arch_stack_zero
	.type	__weft_arch_stack_zero, @function
	.p2align 4
__weft_arch_stack_zero:
	.cfi_startproc
	movq	%rsi, %rcx
	xorl	%eax, %eax
	rep stosb
	ret
	.cfi_endproc
	.size	__weft_arch_stack_zero, .-__weft_arch_stack_zero

	.section .note.GNU-stack,"",@progbits
