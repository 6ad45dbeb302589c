/*
 * dot_q6_K_avx2.c — Q6_K weights · Q8_K activations, AVX2+FMA+F16C.
 * Mirrors edgellm_dot_q6_K_q8_K_ref (src/tensor/quant_k.c); layout in blocks.h:
 * 16 sub-blocks of 16, int8 scales, 6-bit codes u = q + 32 (0..63) split in ql / qh.
 *
 * Per super-block, exact in int32: S = Σ_j sc_j · Σ_{e in j} u_e·x_e - 32·Σ_j sc_j·bsums_j
 * (maddubs on u <= 63; madd by the two sub-block scales of each 32-element vector, made
 * by one VPSHUFB of the sign-extended scales; the offset through Q8_K's bsums), then
 * acc += (d·d_x)·S in 8 float lanes.
 * Tolerance: |fast - ref| <= (nb + 4)·2^-22·Σ|w·x| (plus the offset term, see the test).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/blocks.h"

/* VPSHUFB control taking word j of each 128-bit lane in lane 0 and word j+1 in lane 1:
 * on [sc_8h..sc_8h+7 | the same] (words) it gives [16 × sc_8h+j | 16 × sc_8h+j+1]. */
static inline __m256i pair_ctl(int j)
{
    return _mm256_set_m128i(_mm_set1_epi16((short)((2 * j + 3) << 8 | (2 * j + 2))),
                            _mm_set1_epi16((short)((2 * j + 1) << 8 | (2 * j))));
}

static inline __m256 q6_K_block(const edgellm_block_q6_K *a, const edgellm_block_q8_K *b, __m256 acc)
{
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)a->scales));
    __m256i sumi = _mm256_setzero_si256();
    for (int h = 0; h < 2; h++) {
        const __m256i sch = h ? _mm256_permute4x64_epi64(sc16, 0xEE) : _mm256_permute4x64_epi64(sc16, 0x44);
        const __m256i l0 = _mm256_loadu_si256((const __m256i *)(a->ql + 64 * h));
        const __m256i l1 = _mm256_loadu_si256((const __m256i *)(a->ql + 64 * h + 32));
        const __m256i qh = _mm256_loadu_si256((const __m256i *)(a->qh + 32 * h));
        __m256i u[4];
        u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m2), 4));
        u[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m2), 4));
        u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m2), 4));
        u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                               _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m2), 4));
        for (int k = 0; k < 4; k++) {
            const __m256i y = _mm256_loadu_si256((const __m256i *)(b->qs + 128 * h + 32 * k));
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(u[k], y), _mm256_shuffle_epi8(sch, pair_ctl(2 * k)));
            sumi = _mm256_add_epi32(sumi, p);
        }
    }
    const __m256i off = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)b->bsums));
    sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(off, 5));
    return _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a->d) * b->d), _mm256_cvtepi32_ps(sumi), acc);
}

float edgellm_dot_q6_K_q8_K_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q6_K *a = w;
    const edgellm_block_q8_K *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) acc = q6_K_block(&a[i], &b[i], acc);
    return x86_hsum8(acc);
}
#endif
