/*
 * gemm_k_avx512_gfni.c — the Q4_K, Q5_K and Q6_K tile kernels of gemm_k_avx512_body.h for
 * CPUs with GFNI besides AVX-512 VNNI (Ice Lake and later Intel cores, AMD Zen 4 and Zen 5):
 * edgellm_gemm_q4_K_avx512_gfni, _q5_K_, _q6_K_.
 *
 * The 4-bit codes (Q4_K, Q5_K), the 5th bits (Q5_K) and the 2 high bits of the 6-bit codes
 * (Q6_K) are moved into
 * place by one GF2P8AFFINEQB each instead of a shift and a mask (k_avx512.h: X86_K_GFNI).
 * The integers are the same, so every result equals the plain AVX-512 kernel's bit for
 * bit (tests/test_gemm.c: test_k_gfni_equals_plain). dispatch.c hands these out where
 * edgellm_cpu_get_features()->gfni; cmake/KernelFlags.cmake compiles this file with -mgfni
 * (EDGELLM_X86_AVX512_GFNI_SOURCES).
 *
 * Measured on the 2-core Zen 5 dev machine, one thread, 256 rows × 2048 in L2 (compute
 * only), plain -> GFNI, best of 3000-4000 alternating calls, several runs: Q4_K decode tile
 * 3.1-3.6 % less time, Q6_K 1.5-2.5 %; the 4-token prefill tiles within +-0.6 %.
 */
#if defined(__GFNI__)
#define X86_K_GFNI 1
#include "gemm_k_avx512_body.h"
#endif
