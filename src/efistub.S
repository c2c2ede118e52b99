/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The PE entry point of a rerand image: firmware asked to start the file
 * (it is a valid PE/COFF image, so it can be signed) gets one line on the
 * console and EFI_UNSUPPORTED, instead of running the kexec stage.  Data to
 * the host tools: `rerand image` copies these bytes into the image.
 * Position independent, MS x64 ABI: RCX = ImageHandle, RDX = SystemTable.
 */
#define EFI_ST_CONOUT          64      /* EFI_SYSTEM_TABLE.ConOut */
#define EFI_TEXT_OUTPUT_STRING 8       /* SIMPLE_TEXT_OUTPUT.OutputString */

	.section .rodata.rr_efi_stub, "a"
	.balign 16
	.globl rr_efi_stub
	.globl rr_efi_stub_end
	.code64
rr_efi_stub:
	subq	$40, %rsp                        /* shadow space; 16-byte aligned call */
	movq	EFI_ST_CONOUT(%rdx), %rcx        /* This = SystemTable->ConOut */
	testq	%rcx, %rcx
	jz	1f
	leaq	rr_efi_msg(%rip), %rdx
	callq	*EFI_TEXT_OUTPUT_STRING(%rcx)
1:	addq	$40, %rsp
	movabsq	$0x8000000000000003, %rax       /* EFI_UNSUPPORTED */
	retq
	.balign 2
rr_efi_msg:
	/* UTF-16: "rerand: this image is for kexec only, not for firmware\r\n" */
	.short	'r', 'e', 'r', 'a', 'n', 'd', ':', ' '	/* rerand:  */
	.short	't', 'h', 'i', 's', ' ', 'i', 'm', 'a'	/* this ima */
	.short	'g', 'e', ' ', 'i', 's', ' ', 'f', 'o'	/* ge is fo */
	.short	'r', ' ', 'k', 'e', 'x', 'e', 'c', ' '	/* r kexec  */
	.short	'o', 'n', 'l', 'y', ',', ' ', 'n', 'o'	/* only, no */
	.short	't', ' ', 'f', 'o', 'r', ' ', 'f', 'i'	/* t for fi */
	.short	'r', 'm', 'w', 'a', 'r', 'e'	/* rmware */
	.short	'\r', '\n', 0
rr_efi_stub_end:

	.section .note.GNU-stack, "", @progbits
