/*
 * dot_q4_K_q5_K_avx2.c — Q4_K and Q5_K weights · Q8_K activations, AVX2+FMA+F16C.
 * Mirror edgellm_dot_q4_K_q8_K_ref / edgellm_dot_q5_K_q8_K_ref (src/tensor/quant_k.c);
 * layouts in blocks.h: 8 sub-blocks of 32, 6-bit scale sc_j and min m_j, halves d, dmin.
 *
 * Per super-block (256 elements), all integer sums exact in int32:
 *   S = Σ_j sc_j · Σ_{e in j} q_e·x_e      (maddubs: q <= 31, x int8; then madd by sc_j,
 *                                           the 16 words of sc_j from one VPSHUFB of the
 *                                           scale bytes, unpacked by x86_q4_K_scales)
 *   M = Σ_j m_j · (bsums[2j] + bsums[2j+1]) (Q8_K's 16-element sums, madd)
 *   acc += (d·d_x)·S - (dmin·d_x)·M          (8 float lanes, FMA)
 * The ref adds the same terms in double. Tolerance: |fast - ref| <= (nb + 4)·2^-22·
 * Σ(|d·sc·q·x| + |dmin·m·x|) (the test bounds it with the weight codes zeroed added in).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/blocks.h"

/* VPSHUFB controls on a register holding the 8 scale bytes in each 64-bit lane: word
 * vector of sub-block j = 16 × sc_j (control bytes j, 0x80); then the min bytes doubled
 * into words [m0 m0 m1 m1 m2 m2 m3 m3 | m4 m4 m5 m5 m6 m6 m7 m7] to meet the 16 bsums. */
static inline __m256i k_ctl(int j) { return _mm256_set1_epi16((short)(0x8000 | j)); }

static inline __m256 k45_block(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, uint16_t dh,
                               uint16_t dminh, const edgellm_block_q8_K *b, __m256 acc)
{
    uint64_t scv, mv;
    x86_q4_K_scales(scales, &scv, &mv);
    const __m256i bsc = _mm256_set1_epi64x((long long)scv);
    const __m256i mctl = _mm256_set_epi64x((long long)0x8007800780068006ULL, (long long)0x8005800580048004ULL,
                                           (long long)0x8003800380028002ULL, (long long)0x8001800180008000ULL);
    const __m256i mins16 = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)mv), mctl);
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i hb = qh ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
    __m256i sumi = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
        __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        if (qh) {
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c), one), 4));
            hi = _mm256_or_si256(hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2 * c + 1), one), 4));
        }
        const __m256i y0 = _mm256_loadu_si256((const __m256i *)(b->qs + 64 * c));
        const __m256i y1 = _mm256_loadu_si256((const __m256i *)(b->qs + 64 * c + 32));
        const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, y0), _mm256_shuffle_epi8(bsc, k_ctl(2 * c)));
        const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, y1), _mm256_shuffle_epi8(bsc, k_ctl(2 * c + 1)));
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p0, p1));
    }
    const __m256i summ = _mm256_madd_epi16(mins16, _mm256_loadu_si256((const __m256i *)b->bsums));
    const __m256 d = _mm256_set1_ps(x86_h2f(dh) * b->d), dm = _mm256_set1_ps(x86_h2f(dminh) * b->d);
    acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sumi), acc);
    return _mm256_fnmadd_ps(dm, _mm256_cvtepi32_ps(summ), acc);
}

float edgellm_dot_q4_K_q8_K_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_K *a = w;
    const edgellm_block_q8_K *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++)
        acc = k45_block(a[i].scales, a[i].qs, NULL, a[i].d, a[i].dmin, &b[i], acc);
    return x86_hsum8(acc);
}

float edgellm_dot_q5_K_q8_K_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q5_K *a = w;
    const edgellm_block_q8_K *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++)
        acc = k45_block(a[i].scales, a[i].qs, a[i].qh, a[i].d, a[i].dmin, &b[i], acc);
    return x86_hsum8(acc);
}
#endif
