/*
 * Weft's gdb extension (weft-gdb.py), carried inside the library: gdb runs
 * a .debug_gdb_scripts entry of kind 4 (inline Python: the first line is
 * its name, the rest is the script) when it loads the object, if the
 * object's path is in the user's `auto-load safe-path`.  So the extension
 * always matches the library it describes, whether the program links
 * libweft.so, preloads it, or links libweft.a.  The section is not
 * allocated ("MS", as in gdb's manual): it costs no memory at run time,
 * and `strip -g` or a split into a separate debug file moves it with the
 * debug information the script needs anyway (the copy installed in gdb's
 * auto-load directory serves a library stripped in place).  Built with
 * -Wa,-I<this directory> (CMakeLists.txt).
 */
	.pushsection ".debug_gdb_scripts", "MS", @progbits, 1
	.byte	4
	.ascii	"weft-gdb.py\n"
	.incbin	"weft-gdb.py"
	.byte	0
	.popsection

	.section .note.GNU-stack,"",@progbits
