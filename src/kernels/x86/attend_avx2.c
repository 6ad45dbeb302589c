/*
 * attend_avx2.c — one query head attending to n_pos cached F32 positions (the contract of
 * edgellm_attend, ops.h), AVX2+FMA: the very arithmetic of edgellm_attend called with
 * dot = edgellm_dot_f32_avx2, without a function call per position.
 *   scores[j] = x86_dot_f32(head_dim, q, k_j) * scale      (edgellm_dot_f32_avx2's order)
 *   softmax(scores)                                       (edgellm_softmax, unchanged)
 *   out[d] = ((0 + p_0·v_0[d]) + p_1·v_1[d]) + ...        (a product and a sum each rounded,
 *                                                          j ascending: the scalar loop's
 *                                                          steps, 8 elements at a time)
 * so its results equal edgellm_attend's at the avx2 and avx512 levels bit for bit
 * (tests/test_kernels_float.c). The values are accumulated 64 columns at a time in
 * registers over all positions. On a 2-core Zen 5, `bench -p 1024` of smollm2-135m spent
 * ~40 % of its time in attention before this kernel (a dot call per position, 4-wide sums).
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../ops.h"

/* 8 values of row p as floats: F32 loaded, or IEEE halves widened exactly by F16C. */
static inline __attribute__((always_inline)) __m256 load8(const void *p, int64_t i, bool f16)
{
    return f16 ? _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + i)))
               : _mm256_loadu_ps((const float *)p + i);
}

static inline __attribute__((always_inline)) float load1(const void *p, int64_t i, bool f16)
{
    return f16 ? x86_h2f(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}

/* out[d] = sum_j scores[j]·v_j[d], a product and a sum each rounded, j ascending (the
 * scalar loop's steps), 64 columns at a time in registers; v rows F32 or F16 (a constant
 * at each call, so each variant compiles without the other's branch). */
static inline __attribute__((always_inline)) void weighted_values(float *out, const float *scores, const void *v,
                                                                  int64_t stride, int head_dim, int64_t n_pos,
                                                                  bool f16)
{
    int d0 = 0;
    for (; d0 + 64 <= head_dim; d0 += 64) {             /* 8 registers of 8 columns */
        __m256 o[8];
        for (int i = 0; i < 8; i++) o[i] = _mm256_setzero_ps();
        for (int64_t j = 0; j < n_pos; j++) {
            const __m256 p = _mm256_set1_ps(scores[j]);
            for (int i = 0; i < 8; i++) o[i] = _mm256_add_ps(o[i], _mm256_mul_ps(p, load8(v, j * stride + d0 + 8 * i, f16)));
        }
        for (int i = 0; i < 8; i++) _mm256_storeu_ps(out + d0 + 8 * i, o[i]);
    }
    for (; d0 + 8 <= head_dim; d0 += 8) {               /* 8 columns */
        __m256 o = _mm256_setzero_ps();
        for (int64_t j = 0; j < n_pos; j++)
            o = _mm256_add_ps(o, _mm256_mul_ps(_mm256_set1_ps(scores[j]), load8(v, j * stride + d0, f16)));
        _mm256_storeu_ps(out + d0, o);
    }
    for (; d0 < head_dim; d0++) {                       /* the last head_dim % 8 columns */
        float o = 0;
        for (int64_t j = 0; j < n_pos; j++) o += scores[j] * load1(v, j * stride + d0, f16);
        out[d0] = o;
    }
}

void edgellm_attend_avx2(float *out, const float *q, const float *k, const float *v, int64_t stride, int head_dim,
                         int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot)
{
    (void)dot;   /* always edgellm_dot_f32_avx2's arithmetic, inlined */
    for (int64_t j = 0; j < n_pos; j++) scores[j] = x86_dot_f32(head_dim, q, k + j * stride) * scale;
    edgellm_softmax(scores, n_pos);
    weighted_values(out, scores, v, stride, head_dim, n_pos, false);
}

/* edgellm_attend_f16 (ops.h) for a cache of IEEE halves: the scores by the given dot (the
 * level's F16 dot, called per position as there), the values widened exactly by F16C and
 * summed as edgellm_axpy_f16 does (a product and a sum each rounded, j ascending):
 * bit-identical to edgellm_attend_f16. */
void edgellm_attend_f16_avx2(float *out, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                             int head_dim, int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot)
{
    for (int64_t j = 0; j < n_pos; j++) scores[j] = dot(head_dim, k + j * stride, q) * scale;
    edgellm_softmax(scores, n_pos);
    weighted_values(out, scores, v, stride, head_dim, n_pos, true);
}
#endif
