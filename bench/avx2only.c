/* Hide AVX-512 and VNNI from one process, so its libraries take their AVX2 code paths.
 *
 * ONNX Runtime (MLAS), numpy, oneDNN and MKL pick kernels from the CPUID instruction, with no
 * runtime switch for ONNX Runtime. Linux can make CPUID fault in a process (arch_prctl
 * ARCH_SET_CPUID, on CPUs whose /proc/cpuinfo lists "cpuid_fault"); this library, loaded with
 * LD_PRELOAD, turns that on in its constructor and answers each faulting CPUID from SIGSEGV with
 * the real result minus the AVX-512, AVX-VNNI and AMX feature bits (leaf 7) and the AVX-512 state
 * components (leaf 0xD). Code that ran before the constructor (the dynamic loader's own
 * CPU detection) keeps the real features; everything loaded afterwards sees an AVX2 machine.
 *
 *   make bench/libavx2only.so
 *   LD_PRELOAD=$PWD/bench/libavx2only.so .venv/bin/paperchat bench index --papers 500
 *
 * Bit positions: Intel SDM vol. 2A, CPUID leaf 07H (EBX/ECX/EDX subleaf 0, EAX subleaf 1).
 * Not for production use: a program that installs its own SIGSEGV handler (Python's
 * faulthandler, as pytest does) breaks it.
 */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static void real_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    (void)sig; (void)info;
    ucontext_t *uc = context;
    greg_t *reg = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)reg[REG_RIP];
    if (!(ip[0] == 0x0f && ip[1] == 0xa2)) {  /* not CPUID: a real fault */
        signal(SIGSEGV, SIG_DFL);
        return;
    }
    uint32_t leaf = (uint32_t)reg[REG_RAX], sub = (uint32_t)reg[REG_RCX], r[4];
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 1);
    real_cpuid(leaf, sub, r);
    syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0);
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512F 16, DQ 17, IFMA 21, PF 26, ER 27, CD 28, BW 30, VL 31 */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27) | (1u << 28) |
                  (1u << 30) | (1u << 31));
        /* ECX: VBMI 1, VBMI2 6, VNNI 11, BITALG 12, VPOPCNTDQ 14 */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 11) | (1u << 12) | (1u << 14));
        /* EDX: 4VNNIW 2, 4FMAPS 3, VP2INTERSECT 8, AMX-BF16 22, FP16 23, AMX-TILE 24, AMX-INT8 25 */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23) | (1u << 24) |
                  (1u << 25));
    } else if (leaf == 7 && sub == 1) {
        /* EAX: AVX-VNNI 4, AVX512-BF16 5, AVX-IFMA 23; EDX: AVX-VNNI-INT8 4, AVX-NE-CONVERT 5,
           AVX-VNNI-INT16 10 */
        r[0] &= ~((1u << 4) | (1u << 5) | (1u << 23));
        r[3] &= ~((1u << 4) | (1u << 5) | (1u << 10));
    } else if (leaf == 0xd && sub == 0) {
        r[0] &= ~0xe0u;  /* XCR0 components 5-7: opmask, ZMM_Hi256, Hi16_ZMM */
    }
    reg[REG_RAX] = r[0];
    reg[REG_RBX] = r[1];
    reg[REG_RCX] = r[2];
    reg[REG_RDX] = r[3];
    reg[REG_RIP] += 2;  /* CPUID is 0F A2 */
}

__attribute__((constructor)) static void hide_avx512(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
        perror("avx2only: arch_prctl(ARCH_SET_CPUID) failed (no cpuid_fault on this CPU?); "
               "features are NOT hidden");
        signal(SIGSEGV, SIG_DFL);
    }
}
