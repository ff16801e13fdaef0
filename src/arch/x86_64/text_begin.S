/*
 * The first byte of Weft's text.  Linked before every other object of the
 * library (CMakeLists.txt), and text_end.S after all of them, so that
 * [__weft_text_begin, __weft_text_end) is all of Weft's code even when
 * libweft.a is linked into a program, where the loader cannot tell Weft's
 * code from the program's.  The preemption tick and the signal dispatcher
 * use the range (runtime/preempt.c).
 */
	.text
	.globl	__weft_text_begin
	.hidden	__weft_text_begin
	.type	__weft_text_begin, @function
__weft_text_begin:
	ud2
	.size	__weft_text_begin, .-__weft_text_begin

	.section .note.GNU-stack,"",@progbits
