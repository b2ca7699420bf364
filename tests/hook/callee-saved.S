/* void call_sum6_keeping(long out[5]): calls target_sum6(1..6) through the
 * PLT with known values in rbx, r12-r15, and stores what they hold after the
 * call (intercept-check: the stub may touch only caller-saved registers). */
        .text
        .globl call_sum6_keeping
        .type call_sum6_keeping, @function
call_sum6_keeping:
        push %rbx
        push %r12
        push %r13
        push %r14
        push %r15
        push %rdi               /* out; the stack is now 8 mod 16 */
        sub $8, %rsp            /* aligned for the call */
        mov $0x1111, %rbx
        mov $0x1212, %r12
        mov $0x1313, %r13
        mov $0x1414, %r14
        mov $0x1515, %r15
        mov $1, %edi
        mov $2, %esi
        mov $3, %edx
        mov $4, %ecx
        mov $5, %r8d
        mov $6, %r9d
        call target_sum6@PLT
        add $8, %rsp
        pop %rdi
        mov %rbx, 0(%rdi)
        mov %r12, 8(%rdi)
        mov %r13, 16(%rdi)
        mov %r14, 24(%rdi)
        mov %r15, 32(%rdi)
        pop %r15
        pop %r14
        pop %r13
        pop %r12
        pop %rbx
        ret
        .size call_sum6_keeping, . - call_sum6_keeping
        .section .note.GNU-stack, "", @progbits
