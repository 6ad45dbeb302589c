/*
 * avx512_util.h — inline helpers of the AVX-512 kernel files (include only from files
 * named *_avx512.c, compiled with -mavx512f/bw/vl/dq/vnni). Fixed summation orders, as
 * avx2_util.h.
 */
#ifndef EDGELLM_AVX512_UTIL_H
#define EDGELLM_AVX512_UTIL_H

#include "avx2_util.h"

/* 16 float lanes -> 8 (lo + hi), then avx2_util's fixed 8-lane tree. */
static inline float x86_hsum16(__m512 v)
{
    return x86_hsum8(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

/* Two 256-bit halves into one 512-bit register: lo in lanes 0-7, hi in 8-15. */
static inline __m512i x86_join(__m256i lo, __m256i hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}
static inline __m512 x86_join_ps(float lo, float hi)
{
    return _mm512_insertf32x8(_mm512_set1_ps(lo), _mm256_set1_ps(hi), 1);
}

/* Software prefetch into L2 (PREFETCHT1) of the `bytes` at p + ahead, one per 64-byte
 * line; nothing when ahead is 0. A prefetch never faults (Intel SDM vol. 2B "PREFETCHh"),
 * so the lines may lie past the end of the matrix; the address is formed as an integer
 * for that reason. */
static inline void x86_prefetch_l2(const void *p, size_t ahead, size_t bytes)
{
    if (!ahead) return;
    const uintptr_t a = (uintptr_t)p + ahead;
    for (size_t o = 0; o < bytes; o += 64) _mm_prefetch((const char *)(a + o), _MM_HINT_T1);
}

#endif
