/*
 * dot_k_avx512.c — Q4_K and Q6_K weights · Q8_K activations, AVX-512 + VNNI.
 * Mirror edgellm_dot_q4_K_q8_K_ref / edgellm_dot_q6_K_q8_K_ref (src/tensor/quant_k.c);
 * layouts in blocks.h. Same integer decomposition as the AVX2 files (dot_q4_K.c,
 * dot_q6_K.c), 64 elements per 512-bit register:
 *   Q4_K  32 bytes of qs = 64 codes [lo nibbles | hi nibbles] = sub-blocks 2c, 2c+1, which
 *         meet 64 contiguous activations; VPMADDUBSW (pairs <= 3840, no saturation) then
 *         VPMADDWD by the sub-block scales (VPERMW of the 8 scales) give exact int32
 *         lanes. (VPDPBUSD + VPMULLD was measured 2x slower here.)
 *         Mins through bsums: M = Σ m_j·(bsums[2j] + bsums[2j+1]).
 *         acc += (d·d_x)·S - (dmin·d_x)·M.
 *   Q6_K  codes u = q + 32 (0..63): S = Σ sc_j·Σ u·x - 32·Σ sc_j·bsums_j; acc += (d·d_x)·S.
 * All integer sums are exact (|S| < 2^31). Tolerance as the AVX2 twins:
 * |fast - ref| <= (nb + 4)·2^-22·Σ(|w·x| + |offset terms|).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "kernels_x86.h"
#include "avx512_util.h"
#include "../../tensor/blocks.h"

/* The 8 6-bit scales and mins of a Q4_K block as bytes, with 32-bit integer ops only (no
 * round trip through memory): layout in blocks.h / quant_k.c. */
static inline void k_scales_u64(const uint8_t *q, uint64_t *sc, uint64_t *m)
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

float edgellm_dot_q4_K_q8_K_avx512(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_K *a = w;
    const edgellm_block_q8_K *b = x;
    const __m512i m4 = _mm512_set1_epi8(15);
    /* word permutations: chunk c uses scale 2c in words 0-15, scale 2c+1 in words 16-31 */
    __m512i idx[4];
    for (int c = 0; c < 4; c++)
        idx[c] = x86_join(_mm256_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)));
    __m512 acc = _mm512_setzero_ps();
    __m256 accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) {
        uint64_t scv, mv;
        k_scales_u64(a[i].scales, &scv, &mv);
        const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)scv)));
        __m512i sumi = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(a[i].qs + 32 * c));
            const __m512i u = _mm512_and_si512(x86_join(qv, _mm256_srli_epi16(qv, 4)), m4);
            const __m512i y = _mm512_loadu_si512((const void *)(b[i].qs + 64 * c));
            const __m512i p = _mm512_maddubs_epi16(u, y);                 /* |pair| <= 3840 */
            sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(p, _mm512_permutexvar_epi16(idx[c], sc16)));
        }
        const __m128i m8 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)mv));
        const __m256i mins16 = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
        const __m256i summ = _mm256_madd_epi16(mins16, _mm256_loadu_si256((const __m256i *)b[i].bsums));
        acc = _mm512_fmadd_ps(_mm512_set1_ps(x86_h2f(a[i].d) * b[i].d), _mm512_cvtepi32_ps(sumi), acc);
        accm = _mm256_fnmadd_ps(_mm256_set1_ps(x86_h2f(a[i].dmin) * b[i].d), _mm256_cvtepi32_ps(summ), accm);
    }
    const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    return x86_hsum8(_mm256_add_ps(a8, accm));
}

float edgellm_dot_q6_K_q8_K_avx512(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q6_K *a = w;
    const edgellm_block_q8_K *b = x;
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)a[i].scales);
        const __m512i sc32 = _mm512_cvtepi8_epi32(sc8);                 /* lane j = sc_j */
        __m512i sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; h++) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(a[i].ql + 64 * h));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(a[i].ql + 64 * h + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(a[i].qh + 32 * h));
            const __m256i u0 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            const __m256i u1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
            const __m256i u2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
            const __m256i u3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
            for (int g = 0; g < 2; g++) {
                const __m512i u = g ? x86_join(u2, u3) : x86_join(u0, u1);
                const __m512i y = _mm512_loadu_si512((const void *)(b[i].qs + 128 * h + 64 * g));
                const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y);
                const int j = 8 * h + 4 * g;                             /* lanes 4k..4k+3: sub-block j+k */
                const __m512i idx = _mm512_set_epi32(j + 3, j + 3, j + 3, j + 3, j + 2, j + 2, j + 2, j + 2,
                                                     j + 1, j + 1, j + 1, j + 1, j, j, j, j);
                sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(p, _mm512_permutexvar_epi32(idx, sc32)));
            }
        }
        const __m256i off = _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), _mm256_loadu_si256((const __m256i *)b[i].bsums));
        const __m512i off16 = _mm512_castsi256_si512(_mm256_slli_epi32(off, 5));   /* lanes 8-15 undefined: */
        sumi = _mm512_mask_sub_epi32(sumi, 0x00ff, sumi, off16);                      /* only 0-7 subtracted    */
        acc = _mm512_fmadd_ps(_mm512_set1_ps(x86_h2f(a[i].d) * b[i].d), _mm512_cvtepi32_ps(sumi), acc);
    }
    return x86_hsum16(acc);
}
#endif
