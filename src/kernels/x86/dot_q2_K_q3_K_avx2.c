/*
 * dot_q2_K_q3_K_avx2.c — Q2_K and Q3_K weights · Q8_K activations, AVX2+FMA+F16C.
 * Mirror edgellm_dot_q2_K_q8_K_ref / edgellm_dot_q3_K_q8_K_ref (src/tensor/quant_k.c);
 * layouts in blocks.h (16 sub-blocks of 16; 2-bit low codes of element 128h + 32s + l in
 * bits 2s..2s+1 of qs[32h + l]; Q3_K's third bit of element 32k + l in bit k of hmask[l]).
 *
 * Per super-block, exact in int32:
 *   Q2_K  S = Σ_j (sc_j & 15)·Σ q·x,  M = Σ_j (sc_j >> 4)·bsums_j;
 *         acc += (d·d_x)·S - (dmin·d_x)·M
 *   Q3_K  u = low | hbit << 2 (0..7), value u - 4:  S = Σ_j s_j·Σ u·x - 4·Σ_j s_j·bsums_j
 *         (s_j = 6-bit scale - 32);  acc += (d·d_x)·S
 * Tolerance: |fast - ref| <= (nb + 4)·2^-22·Σ(|w·x| + |offset terms|), as dot_q4_K_q5_K_avx2.c.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/blocks.h"

static inline __m256i scale_pair(int lo, int hi)
{
    return _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
}

float edgellm_dot_q2_K_q8_K_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q2_K *a = w;
    const edgellm_block_q8_K *b = x;
    const __m256i m3 = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)a[i].scales);
        const __m256i mins16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc8, 4), _mm_set1_epi8(15)));
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(a[i].qs + 32 * h));
            for (int s = 0; s < 4; s++) {
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(qv, 2 * s), m3);
                const __m256i y = _mm256_loadu_si256((const __m256i *)(b[i].qs + 128 * h + 32 * s));
                const int j = 8 * h + 2 * s;
                const __m256i sc = scale_pair(a[i].scales[j] & 15, a[i].scales[j + 1] & 15);
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(q, y), sc));
            }
        }
        const __m256i summ = _mm256_madd_epi16(mins16, _mm256_loadu_si256((const __m256i *)b[i].bsums));
        const __m256 d = _mm256_set1_ps(x86_h2f(a[i].d) * b[i].d), dm = _mm256_set1_ps(x86_h2f(a[i].dmin) * b[i].d);
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc);
        acc = _mm256_fnmadd_ps(dm, _mm256_cvtepi32_ps(summ), acc);
    }
    return x86_hsum8(acc);
}

/* The 16 Q3_K scales minus 32 (layout in blocks.h). */
static inline void q3_scales(const uint8_t *p, int8_t out[16])
{
    for (int j = 0; j < 16; j++) {
        const int lo = j < 8 ? p[j] & 15 : p[j - 8] >> 4;
        const int hi = (p[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = (int8_t)((lo | hi << 4) - 32);
    }
}

float edgellm_dot_q3_K_q8_K_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q3_K *a = w;
    const edgellm_block_q8_K *b = x;
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) {
        int8_t sc[16];
        q3_scales(a[i].scales, sc);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)a[i].hmask);
        __m256i sumi = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(a[i].qs + 32 * h));
            for (int s = 0; s < 4; s++) {
                const int k = 4 * h + s;
                const __m256i hbit = _mm256_and_si256(_mm256_srli_epi16(hm, k), one);
                const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qv, 2 * s), m3),
                                                  _mm256_slli_epi16(hbit, 2));
                const __m256i y = _mm256_loadu_si256((const __m256i *)(b[i].qs + 32 * k));
                sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(_mm256_maddubs_epi16(u, y), scale_pair(sc[2 * k], sc[2 * k + 1])));
            }
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
        const __m256i off = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)b[i].bsums));
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(off, 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].d) * b[i].d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return x86_hsum8(acc);
}
#endif
