/*
 * avx2_util.h — small inline helpers shared by the AVX2 kernel files of src/kernels/x86/
 * (include only from files compiled with -mavx2 -mfma -mf16c).
 *
 * Every kernel sums in a fixed order that depends only on n (never on the address of the
 * row or on how many rows are processed together): prefill and decode stay identical.
 */
#ifndef EDGELLM_AVX2_UTIL_H
#define EDGELLM_AVX2_UTIL_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* IEEE half -> float, exact (F16C). */
static inline float x86_h2f(uint16_t h) { return _cvtsh_ss(h); }

/* The 8 6-bit scales and 8 6-bit mins of a Q4_K / Q5_K block (12 packed bytes, layout:
 * edgellm_k_scale_min in src/tensor/quant_k.c) as 8 bytes each, byte j of *sc = sc_j, of
 * *m = m_j, with 32-bit integer operations only (no round trip through memory). */
static inline void x86_q4_K_scales(const uint8_t q[12], uint64_t *sc, uint64_t *m)
{
    uint32_t a, b, c;
    memcpy(&a, q, 4);
    memcpy(&b, q + 4, 4);
    memcpy(&c, q + 8, 4);
    const uint32_t sc_lo = a & 0x3f3f3f3fu, m_lo = b & 0x3f3f3f3fu;
    const uint32_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 6) & 0x03030303u) << 4;
    const uint32_t m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 6) & 0x03030303u) << 4;
    *sc = (uint64_t)sc_hi << 32 | sc_lo;
    *m = (uint64_t)m_hi << 32 | m_lo;
}

/* Sum of 8 floats in a fixed tree: (lo128 + hi128), then pairs, then the last two. */
static inline float x86_hsum8(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Sum of 8 int32 lanes (exact as long as it fits). */
static inline int32_t x86_hsum8_i32(__m256i v)
{
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* 16 bytes of nibbles (byte j: lo = element j, hi = element j+16) -> 32 codes 0..15 in
 * element order. */
static inline __m256i x86_nibbles32(const uint8_t *p)
{
    const __m128i q = _mm_loadu_si128((const __m128i *)p);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(q, 4), q);
    return _mm256_and_si256(v, _mm256_set1_epi8(15));
}

/* The 32 bits of a little-endian u32 as 32 bytes: 0xFF where bit j is set, else 0. */
static inline __m256i x86_bits32(const uint8_t *p)
{
    uint32_t u;
    memcpy(&u, p, 4);
    const __m256i shuf = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)u), shuf);   /* byte k = byte k/8 of u */
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* Σ u·s over 32 pairs, u unsigned bytes with u·s pairs fitting int16 (u <= 127 is
 * always safe), as 8 int32 lanes (lane k: elements 4k..4k+3). */
static inline __m256i x86_dot_u8s8(__m256i u, __m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

/* Σ s over 32 signed bytes as 8 int32 lanes. */
static inline __m256i x86_sum_s8(__m256i s)
{
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), s), _mm256_set1_epi16(1));
}

/* Σ a·b over 32 signed bytes (any values, -128 included) as 8 int32 lanes, via int16. */
static inline __m256i x86_dot_s8s8(const int8_t *a, const int8_t *b)
{
    const __m256i a0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)a));
    const __m256i a1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(a + 16)));
    const __m256i b0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)b));
    const __m256i b1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b + 16)));
    return _mm256_add_epi32(_mm256_madd_epi16(a0, b0), _mm256_madd_epi16(a1, b1));
}

/* Mask of the first r (0..7) lanes. */
static inline __m256i x86_tail_mask8(int64_t r)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* F32 dot product a[n]·b[n] in the order of edgellm_dot_f32_avx2 (dot_float_avx2.c, which calls
 * this): four 8-lane FMA accumulators over elements 32k..32k+31, a remaining whole 8 to
 * acc 0, the last n % 8 to acc 1 by a masked load, (acc0+acc1)+(acc2+acc3), x86_hsum8.
 * Inlined where a dot per row would cost a call (attention scores, attend_avx2.c). */
static inline float x86_dot_f32(int64_t n, const float *a, const float *b)
{
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
        acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), acc2);
        acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), acc3);
    }
    for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    if (i < n) {
        const __m256i m = x86_tail_mask8(n - i);
        acc1 = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), acc1);
    }
    return x86_hsum8(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
}

#endif
