/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Entry of the purgatory stage.  Byte 0 of this blob is the start of the
 * image's protected-mode part; loaders enter at +0x200 in 64-bit mode with
 * RSI = boot_params, interrupts off, on an identity map.
 */
#define STAGE_STACK_SIZE 16384

	.section .head.text, "ax"
	.code32
	.globl stage_entry32
stage_entry32:
	/* The 32-bit boot protocol entry: rerand images are kexec-only. */
1:	cli
	hlt
	jmp	1b

	.balign 16
	.globl stage_locator
	.hidden stage_locator
stage_locator:
	/* struct rerand_locator; header_offset and stage_size are written by
	 * `rerand image`. */
	.ascii	"RRLOCATE"
	.long	0
	.long	0

	.section .entry64, "ax"
	.code64
	.globl stage_entry64
stage_entry64:
	cli
	cld
	movq	%rsi, %rdi              /* arg 0: boot_params */
	leaq	stage_stack_top(%rip), %rsp
	xorl	%ebp, %ebp
	call	stage_main
2:	cli
	hlt
	jmp	2b

/*
 * void stage_enter_kernel(uint64_t entry, uint64_t boot_params)
 * Wipe the stage stack (it held the chosen bases), clear the registers the
 * kernel does not take, and jump.  Never returns.
 */
	.text
	.globl stage_enter_kernel
	.hidden stage_enter_kernel
stage_enter_kernel:
	movq	%rdi, %r8
	movq	%rsi, %r9
	leaq	stage_stack(%rip), %rdi
	movl	$(STAGE_STACK_SIZE / 8), %ecx
	xorl	%eax, %eax
	rep stosq
	movq	%r9, %rsi
	xorl	%eax, %eax
	xorl	%ebx, %ebx
	xorl	%ecx, %ecx
	xorl	%edx, %edx
	xorl	%edi, %edi
	xorl	%ebp, %ebp
	xorl	%r9d, %r9d
	xorl	%r10d, %r10d
	xorl	%r11d, %r11d
	xorl	%r12d, %r12d
	xorl	%r13d, %r13d
	xorl	%r14d, %r14d
	xorl	%r15d, %r15d
	leaq	stage_stack_top(%rip), %rsp /* wiped; the kernel sets up its own */
	jmp	*%r8

	.section .bss
	.balign 16
	.globl stage_stack
	.hidden stage_stack
stage_stack:
	.skip	STAGE_STACK_SIZE
stage_stack_top:

	.section .note.GNU-stack, "", @progbits
