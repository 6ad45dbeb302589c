/*
 * gemm_avx512.h — helpers shared by the AVX-512 tile kernels (src/kernels/x86/gemm_*.c;
 * include only from files compiled with the AVX-512 flags).
 */
#ifndef EDGELLM_GEMM_AVX512_H
#define EDGELLM_GEMM_AVX512_H

#include "avx512_util.h"

/* Lane i = x86_hsum16(a[i]) for 16 accumulators, bit for bit: the same tree per
 * accumulator (lane j + lane j+8, then + 4, + 2, + 1; IEEE addition is commutative, so only
 * the pairing matters), computed for all 16 at once by transposing shuffles. After the
 * last step position 4L+j holds accumulator 4j+L; one permutation puts them in order. */
static inline __m512 gemm_hsum16x16_v(const __m512 a[16])
{
    __m512 p[8], q[4], r[2];
    for (int k = 0; k < 8; k++)                 /* lanes 0-7: a[2k] halves, 8-15: a[2k+1] */
        p[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    for (int m = 0; m < 4; m++)                 /* 128-bit lane L: accumulator 4m+L, 4 sums */
        q[m] = _mm512_add_ps(_mm512_shuffle_f32x4(p[2 * m], p[2 * m + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                             _mm512_shuffle_f32x4(p[2 * m], p[2 * m + 1], _MM_SHUFFLE(3, 1, 3, 1)));
    for (int k = 0; k < 2; k++)                 /* lane L: 2 sums of 4(2k)+L, 2 of 4(2k+1)+L */
        r[k] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * k], q[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(q[2 * k], q[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 s = _mm512_add_ps(_mm512_shuffle_ps(r[0], r[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_ps(r[0], r[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i perm = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
    return _mm512_permutexvar_ps(perm, s);
}

static inline void gemm_hsum16x16(const __m512 a[16], float out[16])
{
    _mm512_storeu_ps(out, gemm_hsum16x16_v(a));
}

/* y[0..n) = the first n sums (n <= 16), stored straight (a masked store, no memcpy call:
 * decode writes 16 outputs at a time, ~26k times per token of a 1.1B model) */
static inline void gemm_hsum16x16_store(const __m512 a[16], float *y, int n)
{
    _mm512_mask_storeu_ps(y, (__mmask16)((1u << n) - 1u), gemm_hsum16x16_v(a));
}

#endif
