/*
 * dot_q4_0_avx2.c — Q4_0 weights · Q8_0 activations, AVX2+FMA+F16C.
 * Mirrors edgellm_dot_q4_0_q8_0_ref (src/tensor/quant_q4_q5.c); block layout in blocks.h.
 *
 * Per block: the integer sum Σ (q-8)·x is exact, computed as maddubs(q, x) - maddubs(8, x)
 * (q = nibble 0..15 unsigned, x any int8 including -128: every int16 pair stays within
 * ±3840), then widened to 8 int32 lanes. The scaled block is added in float:
 * acc += (d_w·d_x) · float(lanes), blocks alternating between two accumulators by index,
 * folded at the end in a fixed tree (avx2_util.h).
 * Tolerance against the ref (which sums in double): |fast - ref| <= (nb + 4)·2^-22·Σ|w·x|
 * (nb = blocks; float rounding of d_w·d_x, of the product and of nb/2 additions per lane).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/blocks.h"

static inline __m256 q4_0_block(const edgellm_block_q4_0 *a, const edgellm_block_q8_0 *b, __m256 acc)
{
    const __m256i q = x86_nibbles32(a->qs);
    const __m256i y = _mm256_loadu_si256((const __m256i *)b->qs);
    const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y), _mm256_maddubs_epi16(_mm256_set1_epi8(8), y));
    const __m256i s = _mm256_madd_epi16(p, _mm256_set1_epi16(1));
    const __m256 d = _mm256_set1_ps(x86_h2f(a->d) * x86_h2f(b->d));
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc);
}

float edgellm_dot_q4_0_q8_0_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_0 *a = w;
    const edgellm_block_q8_0 *b = x;
    const int64_t nb = n / EDGELLM_QK4_0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        acc0 = q4_0_block(&a[i], &b[i], acc0);
        acc1 = q4_0_block(&a[i + 1], &b[i + 1], acc1);
    }
    if (i < nb) acc0 = q4_0_block(&a[i], &b[i], acc0);
    return x86_hsum8(_mm256_add_ps(acc0, acc1));
}
#endif
