# The instructions relocate.test moves (arch/x86_64/relocate.c), assembled by
# GNU as: rip-relative operands of every shape (a displacement followed by
# an immediate, SSE and AVX forms, indirect branches through a slot),
# relative branches of both widths, and two the relocator must refuse.
	.text
start:
	mov	data(%rip), %rax
second:
	lea	data(%rip), %rdi
	cmpq	$1, data(%rip)
	movl	$5, data(%rip)
	movsd	data(%rip), %xmm0
	vmovdqu	data(%rip), %ymm1
	jne	near
	je	far
	jg	second
	jmp	near
	call	far
	call	*slot(%rip)
	jmp	*slot(%rip)
	add	$8, %rsp
	loop	near
	jrcxz	near
	nop
moved_end:
near:
	ret
	.space	300, 0xcc
far:
	ret
	.balign	8, 0xcc
slot:	.quad	0
data:	.quad	0
	.quad	0
	.quad	0
	.quad	0
