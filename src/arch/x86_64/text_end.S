/*
 * One past the last byte of Weft's text: see text_begin.S.
 */
	.text
	.globl	__weft_text_end
	.hidden	__weft_text_end
	.type	__weft_text_end, @function
__weft_text_end:
	ud2
	.size	__weft_text_end, .-__weft_text_end

	.section .note.GNU-stack,"",@progbits
