/*
 * cpu_features.h — what the running CPU (and the OS) lets edgellm use, detected once.
 *
 * x86-64: CPUID leaves 0, 1 and 7 plus XGETBV (the OS must save the YMM / ZMM registers
 * on a context switch, else the instructions fault even though CPUID lists them).
 * Intel SDM vol. 2A "CPUID" and §13 (XSAVE-supported features), bits:
 *   leaf 1 ecx: 12 FMA, 27 OSXSAVE, 28 AVX, 29 F16C
 *   leaf 7 ebx: 5 AVX2, 16 AVX512F, 17 AVX512DQ, 30 AVX512BW, 31 AVX512VL
 *   leaf 7 ecx: 1 AVX512_VBMI, 8 GFNI, 11 AVX512_VNNI
 *   leaf 7 edx: 24 AMX-TILE, 25 AMX-INT8
 *   XCR0: bits 1-2 (SSE, AVX state), 5-7 (opmask, ZMM_Hi256, Hi16_ZMM), 17-18 (XTILECFG,
 *         XTILEDATA)
 * AMX tile data is off until the process asks for it: Linux arch_prctl(ARCH_REQ_XCOMP_PERM
 * = 0x1023, XFEATURE_XTILEDATA = 18), the kernel's Documentation/arch/x86/xstate.rst; the
 * permission covers every thread of the process. The first call makes that request.
 * AArch64 (Linux): getauxval(AT_HWCAP), HWCAP_ASIMD (bit 1) and HWCAP_ASIMDDP (bit 20),
 * see the kernel's Documentation/arch/arm64/elf_hwcaps.rst. Advanced SIMD (NEON) is
 * mandatory on AArch64; dotprod (SDOT/UDOT) is optional before Armv8.4.
 *
 * Thread-safe: the first call detects, later calls return the cached result.
 */
#ifndef EDGELLM_CPU_FEATURES_H
#define EDGELLM_CPU_FEATURES_H

#include <stdbool.h>

typedef struct {
    bool avx2;       /* AVX2 + FMA + F16C, with OS support for YMM state            */
    bool avx512;     /* AVX-512 F + BW + VL + DQ + VNNI, with OS support for ZMM     */
    bool gfni;       /* GFNI (Galois-field affine byte transforms) with avx512       */
    bool amx;        /* AMX-TILE + AMX-INT8 with gfni and AVX512_VBMI, the tile state
                        enabled by the OS and granted to this process                */
    bool neon;       /* AArch64 Advanced SIMD                                        */
    bool dotprod;    /* AArch64 SDOT/UDOT (FEAT_DotProd)                             */
    bool amd;        /* x86 vendor string "AuthenticAMD" (leaf 0)                     */
    bool intel;      /* x86 vendor string "GenuineIntel" (leaf 0)                     */
    int family;      /* x86 display family and model (leaf 1 eax: base family, plus   */
    int model;       /* the extended family when it is 0xF; extended model << 4 when  */
                     /* the family is 6 or >= 0xF); 0 elsewhere. AMD family 0x19 is   */
                     /* Zen 3/4, 0x1A Zen 5 (AMD's Processor Programming References). */
} edgellm_cpu_features;

/* The features of this CPU (static storage; never NULL). */
const edgellm_cpu_features *edgellm_cpu_get_features(void);

#endif
