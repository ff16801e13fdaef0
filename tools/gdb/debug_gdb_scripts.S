/*
 * Weft's gdb extension (weft-gdb.py), carried inside the library: gdb runs
 * a .debug_gdb_scripts entry of kind 4 (inline Python: the first line is
 * its name, the rest is the script) when it loads the object, if the
 * object's path is in the user's `auto-load safe-path`.  So the extension
 * always matches the library it describes, whether the program links
 * libweft.so, preloads it, or links libweft.a.  The section is allocated
 * ("MS"), as gdb's manual recommends, so that stripping debug information
 * keeps it.  Built with -Wa,-I<this directory> (CMakeLists.txt).
 */
	.pushsection ".debug_gdb_scripts", "MS", @progbits, 1
	.byte	4
	.ascii	"weft-gdb.py\n"
	.incbin	"weft-gdb.py"
	.byte	0
	.popsection

	.section .note.GNU-stack,"",@progbits
