/*
 * dot_q4_0_q8_0_avx512.c — Q4_0 · Q8_0 and Q8_0 · Q8_0 dot products, AVX-512 + VNNI.
 * Mirror edgellm_dot_q4_0_q8_0_ref (src/tensor/quant_q4_q5.c) and
 * edgellm_dot_q8_0_q8_0_ref (src/tensor/quant_q8.c).
 *
 * Two blocks per 512-bit register (lanes 0-7: block i, 8-15: block i+1); VPDPBUSD
 * (u8 × s8, four products summed into each int32 lane, no saturation) gives exact sums:
 *   Q4_0  Σ (q-8)·x = dpbusd(q, x) - dpbusd(8, x)          (q = nibble 0..15)
 *   Q8_0  Σ w·x     = dpbusd(w+128, x) - dpbusd(128, x)    (w+128 = w XOR 0x80, as u8)
 * exact for every int8 x, -128 included. An odd last block runs on 256-bit registers.
 * acc += (d_w·d_x)·float(lanes), folded at the end in a fixed tree.
 * Tolerance: |fast - ref| <= (nb + 4)·2^-22·Σ|w·x|.
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "kernels_x86.h"
#include "avx512_util.h"
#include "../../tensor/blocks.h"

/* Q4_0: nibbles of blocks i, i+1 as [lo_i hi_i lo_i+1 hi_i+1] (16 bytes each). */
static inline __m512i nibbles64(const uint8_t *qa, const uint8_t *qb)
{
    const __m256i t = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)qb), _mm_loadu_si128((const __m128i *)qa));
    const __m512i z = x86_join(t, _mm256_srli_epi16(t, 4));            /* [qa qb qa>>4 qb>>4] */
    return _mm512_and_si512(_mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0)), _mm512_set1_epi8(15));
}

static inline __m512i load_pair(const int8_t *a, const int8_t *b)
{
    return x86_join(_mm256_loadu_si256((const __m256i *)a), _mm256_loadu_si256((const __m256i *)b));
}

float edgellm_dot_q4_0_q8_0_avx512(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_0 *a = w;
    const edgellm_block_q8_0 *b = x;
    const int64_t nb = n / EDGELLM_QK4_0;
    const __m512i eight = _mm512_set1_epi8(8);
    __m512 acc = _mm512_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m512i q = nibbles64(a[i].qs, a[i + 1].qs);
        const __m512i y = load_pair(b[i].qs, b[i + 1].qs);
        const __m512i s = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q, y),
                                           _mm512_dpbusd_epi32(_mm512_setzero_si512(), eight, y));
        const __m512 d = x86_join_ps(x86_h2f(a[i].d) * x86_h2f(b[i].d), x86_h2f(a[i + 1].d) * x86_h2f(b[i + 1].d));
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
    }
    if (i < nb) {
        const __m256i q = x86_nibbles32(a[i].qs);
        const __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256i s = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), q, y),
                                           _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), y));
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].d) * x86_h2f(b[i].d)), _mm256_cvtepi32_ps(s), acc1);
    }
    const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    return x86_hsum8(_mm256_add_ps(a8, acc1));
}

float edgellm_dot_q8_0_q8_0_avx512(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q8_0 *a = w, *b = x;
    const int64_t nb = n / EDGELLM_QK8_0;
    const __m512i bias = _mm512_set1_epi8((char)0x80);
    __m512 acc = _mm512_setzero_ps();
    __m256 acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        const __m512i q = _mm512_xor_si512(load_pair(a[i].qs, a[i + 1].qs), bias);
        const __m512i y = load_pair(b[i].qs, b[i + 1].qs);
        const __m512i s = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), q, y),
                                           _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, y));
        const __m512 d = x86_join_ps(x86_h2f(a[i].d) * x86_h2f(b[i].d), x86_h2f(a[i + 1].d) * x86_h2f(b[i + 1].d));
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
    }
    if (i < nb) {
        const __m256i bias8 = _mm256_set1_epi8((char)0x80);
        const __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)a[i].qs), bias8);
        const __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256i s = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), q, y),
                                           _mm256_dpbusd_epi32(_mm256_setzero_si256(), bias8, y));
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].d) * x86_h2f(b[i].d)), _mm256_cvtepi32_ps(s), acc1);
    }
    const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    return x86_hsum8(_mm256_add_ps(a8, acc1));
}
#endif
