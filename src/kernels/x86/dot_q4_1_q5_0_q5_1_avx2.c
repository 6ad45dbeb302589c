/*
 * dot_q4_1_q5_0_q5_1_avx2.c — Q4_1 / Q5_1 weights · Q8_1 activations and Q5_0 weights · Q8_0
 * activations, AVX2+FMA+F16C. Mirror edgellm_dot_q4_1_q8_1_ref, edgellm_dot_q5_0_q8_0_ref,
 * edgellm_dot_q5_1_q8_1_ref (src/tensor/quant_q4_q5.c); layouts in blocks.h.
 *
 * Per block, exact in int32 (8 lanes): Σ q·x by maddubs (q <= 31), Σ x by maddubs with 1;
 *   Q5_0  acc += (d·d_x)·(Σ q·x - 16·Σ x)
 *   Q4_1, Q5_1  acc += (d·d_x)·Σ q·x + (m·d_x)·Σ x
 * Like the refs, the activation sum is recomputed from the codes; Q8_1's rounded `s`
 * field is not used. The 5th bits (bit j of the LE u32 qh = element j) are expanded to
 * bytes with one shuffle and a compare (avx2_util.h).
 * Tolerance: |fast - ref| <= (nb + 4)·2^-22·Σ(|w·x| + |m·x|).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/blocks.h"

float edgellm_dot_q4_1_q8_1_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_1 *a = w;
    const edgellm_block_q8_1 *b = x;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK4_1; i++) {
        const __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256i s = x86_dot_u8s8(x86_nibbles32(a[i].qs), y), sx = x86_sum_s8(y);
        const float dx = x86_h2f(b[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].d) * dx), _mm256_cvtepi32_ps(s), acc);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].m) * dx), _mm256_cvtepi32_ps(sx), acc);
    }
    return x86_hsum8(acc);
}

float edgellm_dot_q5_0_q8_0_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q5_0 *a = w;
    const edgellm_block_q8_0 *b = x;
    const __m256i b5 = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK5_0; i++) {
        const __m256i q = _mm256_or_si256(x86_nibbles32(a[i].qs), _mm256_and_si256(x86_bits32(a[i].qh), b5));
        const __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y), _mm256_maddubs_epi16(b5, y));
        const __m256i s = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].d) * x86_h2f(b[i].d)), _mm256_cvtepi32_ps(s), acc);
    }
    return x86_hsum8(acc);
}

float edgellm_dot_q5_1_q8_1_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q5_1 *a = w;
    const edgellm_block_q8_1 *b = x;
    const __m256i b5 = _mm256_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / EDGELLM_QK5_1; i++) {
        const __m256i q = _mm256_or_si256(x86_nibbles32(a[i].qs), _mm256_and_si256(x86_bits32(a[i].qh), b5));
        const __m256i y = _mm256_loadu_si256((const __m256i *)b[i].qs);
        const __m256i s = x86_dot_u8s8(q, y), sx = x86_sum_s8(y);
        const float dx = x86_h2f(b[i].d);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].d) * dx), _mm256_cvtepi32_ps(s), acc);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(x86_h2f(a[i].m) * dx), _mm256_cvtepi32_ps(sx), acc);
    }
    return x86_hsum8(acc);
}
#endif
