# What tests/arch/emit-check.c emits, as GNU as assembles it (emit.test
# compares the two byte for byte). Keep the order of emit_all().
        .text
        .irp r, rax,rcx,rdx,rbx,rsp,rbp,rsi,rdi,r8,r9,r10,r11,r12,r13,r14,r15
        push %\r
        .endr
        .irp r, r15,r14,r13,r12,r11,r10,r9,r8,rdi,rsi,rbp,rsp,rbx,rdx,rcx,rax
        pop %\r
        .endr
        .irp imm, 8,-8,127,-128,128,0x1000,-0x12345678
        pushq $\imm
        .endr
        pushfq
        popfq
        lahf
        sahf
        seto %al
        add $0x7f, %al
        add $-1, %al
        movabs $0x1122334455667788, %rax
        movabs $0xfedcba9876543210, %r11
        # mov %src,%dst for dst = r, src = (r + 5) % 16; then dst = (r + 9) % 16, src = r
        .macro movs dst, src5, dst9
        mov %\src5, %\dst
        mov %\dst, %\dst9
        .endm
        movs rax, rbp, r9
        movs rcx, rsi, r10
        movs rdx, rdi, r11
        movs rbx, r8, r12
        movs rsp, r9, r13
        movs rbp, r10, r14
        movs rsi, r11, r15
        movs rdi, r12, rax
        movs r8, r13, rcx
        movs r9, r14, rdx
        movs r10, r15, rbx
        movs r11, rax, rsp
        movs r12, rcx, rbp
        movs r13, rdx, rsi
        movs r14, rbx, rdi
        movs r15, rsp, r8
        .macro mems m
        mov %rcx, \m
        mov %r9, \m
        mov \m, %rdx
        mov \m, %r10
        lea \m, %rdi
        lea \m, %r14
        movdqu %xmm0, \m
        movdqu %xmm15, \m
        movdqu \m, %xmm7
        movdqu \m, %xmm8
        .endm
        mems (%rax)
        mems (%rsp)
        mems (%rbp)
        mems (%r12)
        mems (%r13)
        mems (%r15)
        mems 8(%rsp)
        mems -8(%rbp)
        mems 0x7f(%r12)
        mems -0x80(%rdi)
        mems 0x80(%rsp)
        mems -0x81(%rbx)
        mems 0x1000(%r13)
        mems -0x12345678(%rsi)
        .macro arith reg
        .irp imm, 8, -8, 127, -128, 128, 0x1000, -0x12345678
        add $\imm, %\reg
        sub $\imm, %\reg
        and $\imm, %\reg
        .endr
        .endm
        arith rax
        arith rsp
        arith r11
        .macro twos dst, src
        add %\src, %\dst
        sub %\src, %\dst
        and %\src, %\dst
        or %\src, %\dst
        xor %\src, %\dst
        imul %\src, %\dst
        shl %cl, %\dst
        shr %cl, %\dst
        sar %cl, %\dst
        neg %\dst
        not %\dst
        .endm
        twos rax, rcx
        twos r11, rax
        twos rdx, r10
        twos r13, r14
        sub %rdi, %fs:0x10
        sub %r9, %fs:-0x28
        add %rdi, %fs:0x10
        add %r9, %fs:-0x28
        shr $17, %eax
        shr $1, %r10d
        movzbl 0x40000000(,%rax,1), %eax
        movzbl 0x1234(,%r12,1), %r9d
        movzbl 0x7fffffff(,%rbp,1), %edx
        movzbl 0x10(,%r8,1), %r15d
        jmp *0x40008000(,%rax,8)
        jmp *0x10(,%r13,8)
        jmp *0x7ffffff8(,%rbp,8)
        call .+0x1239
        jmp .-0x1000
        .irp cc, o, no, b, ae, e, ne, be, a, s, ns, p, np, l, ge, le, g
        j\cc .+0x200
        .endr
        call *0x100(%rip)
        jmp *-0x40(%rip)
        mov 0x200(%rip), %rax
        mov -0x10(%rip), %r12
        mov %rcx, 0x300(%rip)
        mov %r9, -0x20(%rip)
        movq $0, 0x400(%rip)
        movq $-5, -0x30(%rip)
        call *%rax
        call *%r11
        jmp *%rcx
        jmp *%r15
        .irp m, (%rax),(%rsp),(%rbp),(%r12),(%r13),(%r15),8(%rsp),-8(%rbp),0x7f(%r12),-0x80(%rdi),0x80(%rsp),-0x81(%rbx),0x1000(%r13),-0x12345678(%rsi)
        jmp *\m
        .endr
        ret
        int3
        nop
        .quad 0x0123456789abcdef
