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

#endif
