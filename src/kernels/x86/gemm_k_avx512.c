/*
 * gemm_k_avx512.c — tile kernels for Q4_K and Q6_K weights × Q8_K activations, AVX-512 +
 * VNNI (contract in ../gemm.h; block layouts in blocks.h).
 *
 * Arithmetic: exactly that of the vec_dot kernels of dot_k_avx512.c, step for step, for
 * every (row, token): the same integer sums, the same float multiplies, fmas and final
 * reduction in the same order. What changes is the loop: for each weight super-block the
 * weight-only work (nibble/bit unpacking, scale decoding and permutation, the d·… factors'
 * halves) is done once and used for up to 4 tokens, whose accumulators stay in registers.
 * Activations are the plain Q8_K rows (no packing). Since a single token runs the very same
 * steps, results equal edgellm_dot_q4_K_q8_K_avx512 / edgellm_dot_q6_K_q8_K_avx512 bit for
 * bit whatever n (tests/test_gemm.c compares with those).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__)
#include "../gemm.h"
#include "kernels_x86.h"
#include "avx512_util.h"
#include "../../tensor/blocks.h"

#define TC 4                     /* tokens per register tile */

/* As dot_k_avx512.c: the 8 6-bit scales and mins of a Q4_K block as bytes. */
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

static inline __attribute__((always_inline)) void q4_K_rows(const edgellm_gemm_args *a, int64_t r, int64_t t0, const int C)
{
    const int64_t nb = a->cols / EDGELLM_QK_K;
    const edgellm_block_q4_K *w = (const edgellm_block_q4_K *)(a->w + (size_t)r * a->row_bytes);
    const edgellm_block_q8_K *x[TC];
    for (int c = 0; c < C; c++) x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t0 + c) * a->xq_row_bytes);
    const __m512i m4 = _mm512_set1_epi8(15);
    __m512i idx[4];
    for (int c = 0; c < 4; c++)
        idx[c] = x86_join(_mm256_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)));
    __m512 acc[TC];
    __m256 accm[TC];
    for (int c = 0; c < C; c++) {
        acc[c] = _mm512_setzero_ps();
        accm[c] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < nb; i++) {
        uint64_t scv, mv;
        k_scales_u64(w[i].scales, &scv, &mv);
        const __m512i sc16 = _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)scv)));
        __m512i u[4], scp[4];
        for (int c = 0; c < 4; c++) {
            const __m256i qv = _mm256_loadu_si256((const __m256i *)(w[i].qs + 32 * c));
            u[c] = _mm512_and_si512(x86_join(qv, _mm256_srli_epi16(qv, 4)), m4);
            scp[c] = _mm512_permutexvar_epi16(idx[c], sc16);
        }
        const __m128i m8 = _mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)mv));
        const __m256i mins16 = _mm256_set_m128i(_mm_unpackhi_epi16(m8, m8), _mm_unpacklo_epi16(m8, m8));
        const float dw = x86_h2f(w[i].d), dmin = x86_h2f(w[i].dmin);
        for (int t = 0; t < C; t++) {
            const edgellm_block_q8_K *b = &x[t][i];
            __m512i sumi = _mm512_setzero_si512();
            for (int c = 0; c < 4; c++) {
                const __m512i y = _mm512_loadu_si512((const void *)(b->qs + 64 * c));
                sumi = _mm512_add_epi32(sumi, _mm512_madd_epi16(_mm512_maddubs_epi16(u[c], y), scp[c]));
            }
            const __m256i summ = _mm256_madd_epi16(mins16, _mm256_loadu_si256((const __m256i *)b->bsums));
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(dw * b->d), _mm512_cvtepi32_ps(sumi), acc[t]);
            accm[t] = _mm256_fnmadd_ps(_mm256_set1_ps(dmin * b->d), _mm256_cvtepi32_ps(summ), accm[t]);
        }
    }
    for (int t = 0; t < C; t++) {
        const __m256 a8 = _mm256_add_ps(_mm512_castps512_ps256(acc[t]), _mm512_extractf32x8_ps(acc[t], 1));
        a->y[(t0 + t) * a->ldy + r] = x86_hsum8(_mm256_add_ps(a8, accm[t]));
    }
}

static inline __attribute__((always_inline)) void q6_K_rows(const edgellm_gemm_args *a, int64_t r, int64_t t0, const int C)
{
    const int64_t nb = a->cols / EDGELLM_QK_K;
    const edgellm_block_q6_K *w = (const edgellm_block_q6_K *)(a->w + (size_t)r * a->row_bytes);
    const edgellm_block_q8_K *x[TC];
    for (int c = 0; c < C; c++) x[c] = (const edgellm_block_q8_K *)(a->xq + (size_t)(t0 + c) * a->xq_row_bytes);
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    __m512 acc[TC];
    for (int c = 0; c < C; c++) acc[c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const __m128i sc8 = _mm_loadu_si128((const __m128i *)w[i].scales);
        const __m512i sc32 = _mm512_cvtepi8_epi32(sc8);                 /* lane j = sc_j */
        __m512i u[4], scp[4];
        for (int h = 0; h < 2; h++) {
            const __m256i l0 = _mm256_loadu_si256((const __m256i *)(w[i].ql + 64 * h));
            const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w[i].ql + 64 * h + 32));
            const __m256i qh = _mm256_loadu_si256((const __m256i *)(w[i].qh + 32 * h));
            const __m256i u0 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
            const __m256i u1 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
            const __m256i u2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
            const __m256i u3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
            u[2 * h] = x86_join(u0, u1);
            u[2 * h + 1] = x86_join(u2, u3);
            for (int g = 0; g < 2; g++) {
                const int j = 8 * h + 4 * g;                             /* lanes 4k..4k+3: sub-block j+k */
                const __m512i ix = _mm512_set_epi32(j + 3, j + 3, j + 3, j + 3, j + 2, j + 2, j + 2, j + 2,
                                                    j + 1, j + 1, j + 1, j + 1, j, j, j, j);
                scp[2 * h + g] = _mm512_permutexvar_epi32(ix, sc32);
            }
        }
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const float dw = x86_h2f(w[i].d);
        for (int t = 0; t < C; t++) {
            const edgellm_block_q8_K *b = &x[t][i];
            __m512i sumi = _mm512_setzero_si512();
            for (int q = 0; q < 4; q++) {                                /* q = 2h + g */
                const __m512i y = _mm512_loadu_si512((const void *)(b->qs + 64 * q));
                const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[q], y);
                sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(p, scp[q]));
            }
            const __m256i off = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)b->bsums));
            const __m512i off16 = _mm512_castsi256_si512(_mm256_slli_epi32(off, 5));
            sumi = _mm512_mask_sub_epi32(sumi, 0x00ff, sumi, off16);
            acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(dw * b->d), _mm512_cvtepi32_ps(sumi), acc[t]);
        }
    }
    for (int t = 0; t < C; t++) a->y[(t0 + t) * a->ldy + r] = x86_hsum16(acc[t]);
}

/* One token: the vec_dot itself (the same steps; measured ~5 % faster than the C = 1 tile,
 * whose weight-side registers outlive the token loop). */
static void one_token(const edgellm_gemm_args *a, float (*dot)(int64_t, const void *, const void *))
{
    for (int64_t r = a->r0; r < a->r1; r++) a->y[r] = dot(a->cols, a->w + (size_t)r * a->row_bytes, a->xq);
}

void edgellm_gemm_q4_K_avx512(const edgellm_gemm_args *a)
{
    if (a->n == 1) {
        one_token(a, edgellm_dot_q4_K_q8_K_avx512);
        return;
    }
    for (int64_t r = a->r0; r < a->r1; r++) {
        int64_t t = 0;
        for (; t + TC <= a->n; t += TC) q4_K_rows(a, r, t, TC);
        for (; t < a->n; t++) q4_K_rows(a, r, t, 1);
    }
}

void edgellm_gemm_q6_K_avx512(const edgellm_gemm_args *a)
{
    if (a->n == 1) {
        one_token(a, edgellm_dot_q6_K_q8_K_avx512);
        return;
    }
    for (int64_t r = a->r0; r < a->r1; r++) {
        int64_t t = 0;
        for (; t + TC <= a->n; t += TC) q6_K_rows(a, r, t, TC);
        for (; t < a->n; t++) q6_K_rows(a, r, t, 1);
    }
}
#endif
