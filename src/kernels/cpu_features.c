/*
 * cpu_features.c — run-time CPU feature detection (contract and sources in cpu_features.h).
 *
 * x86: raw CPUID / XGETBV through gcc's <cpuid.h> and inline asm, so that this file
 * needs no ISA flags itself (it is compiled for the x86-64 baseline and runs anywhere).
 * AArch64: the Linux auxiliary vector. Elsewhere: no SIMD feature.
 */
#include "cpu_features.h"
#include <pthread.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <stdint.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

static edgellm_cpu_features features;
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__) || defined(__i386__)
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* Ask the OS for the AMX tile data state (off by default for a process); true if granted. */
static bool request_tile_data(void)
{
#if defined(__linux__) && defined(__x86_64__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
    return false;
#endif
}

static void detect(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    features.amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u;   /* "Auth" "enti" "cAMD" */
    features.intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu; /* "Genu" "ineI" "ntel" */
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const int base_family = (int)(a >> 8 & 0xf);
    features.family = base_family == 0xf ? base_family + (int)(a >> 20 & 0xff) : base_family;
    features.model = (int)(a >> 4 & 0xf);
    if (base_family == 0x6 || base_family == 0xf) features.model |= (int)(a >> 16 & 0xf) << 4;
    const bool fma = c >> 12 & 1, osxsave = c >> 27 & 1, avx = c >> 28 & 1, f16c = c >> 29 & 1;
    if (!osxsave || !avx) return;
    const uint64_t xcr0 = read_xcr0();
    const bool ymm_os = (xcr0 & 0x6) == 0x6, zmm_os = (xcr0 & 0xe6) == 0xe6;
    if (__get_cpuid_max(0, NULL) < 7) return;
    __cpuid_count(7, 0, a, b, c, d);
    const bool avx2 = b >> 5 & 1, f = b >> 16 & 1, dq = b >> 17 & 1, bw = b >> 30 & 1, vl = b >> 31 & 1;
    const bool vnni = c >> 11 & 1, gfni = c >> 8 & 1;
    features.avx2 = ymm_os && avx2 && fma && f16c;
    features.avx512 = features.avx2 && zmm_os && f && dq && bw && vl && vnni;
    features.gfni = features.avx512 && gfni;
    const bool vbmi = c >> 1 & 1, amx_tile = d >> 24 & 1, amx_int8 = d >> 25 & 1;
    if (features.gfni && vbmi && amx_tile && amx_int8 && (xcr0 & 0x60000) == 0x60000)
        features.amx = request_tile_data();
}
#elif defined(__aarch64__) && defined(__linux__)
static void detect(void)
{
    const unsigned long hw = getauxval(AT_HWCAP);
    features.neon = hw & (1ul << 1);       /* HWCAP_ASIMD   */
    features.dotprod = hw & (1ul << 20);   /* HWCAP_ASIMDDP */
}
#elif defined(__aarch64__)
static void detect(void) { features.neon = true; }
#else
static void detect(void) {}
#endif

const edgellm_cpu_features *edgellm_cpu_get_features(void)
{
    pthread_once(&features_once, detect);
    return &features;
}
