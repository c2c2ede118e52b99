/* The purgatory stage, as a flat binary, embedded in the programs that
 * build images (rerand, rerandd): src/stage_blob.h. */
	.section .rodata
	.balign 64
	.globl rr_stage_blob
	.globl rr_stage_blob_end
rr_stage_blob:
	.incbin STAGE_BIN
rr_stage_blob_end:
	.section .note.GNU-stack,"",@progbits
