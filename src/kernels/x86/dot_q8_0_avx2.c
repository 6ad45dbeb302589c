/*
 * dot_q8_0_avx2.c — Q8_0 weights · Q8_0 activations, AVX2+FMA+F16C.
 * Mirrors edgellm_dot_q8_0_q8_0_ref (src/tensor/quant_q8.c).
 *
 * Per block Σ w·x is exact for every int8 pair, -128·-128 included: both operands are
 * widened to int16 and multiplied with madd (the usual abs/sign trick of maddubs would
 * wrap for -128). Blocks alternate between two float accumulators by index.
 * Tolerance: |fast - ref| <= (nb + 4)·2^-22·Σ|w·x| (as dot_q4_0_avx2.c).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/blocks.h"

static inline __m256 q8_0_block(const edgellm_block_q8_0 *a, const edgellm_block_q8_0 *b, __m256 acc)
{
    const __m256i s = x86_dot_s8s8(a->qs, b->qs);
    const __m256 d = _mm256_set1_ps(x86_h2f(a->d) * x86_h2f(b->d));
    return _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(s), acc);
}

float edgellm_dot_q8_0_q8_0_avx2(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q8_0 *a = w, *b = x;
    const int64_t nb = n / EDGELLM_QK8_0;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        acc0 = q8_0_block(&a[i], &b[i], acc0);
        acc1 = q8_0_block(&a[i + 1], &b[i + 1], acc1);
    }
    if (i < nb) acc0 = q8_0_block(&a[i], &b[i], acc0);
    return x86_hsum8(_mm256_add_ps(acc0, acc1));
}
#endif
