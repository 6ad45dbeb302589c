/*
 * attend_avx512.c — one query head attending to n_pos cached F32 positions (the contract
 * of edgellm_attend, ops.h), AVX-512: the very arithmetic of edgellm_attend called with
 * dot = edgellm_dot_f32_avx2 (the avx512 level's F32 dot), so its results equal
 * edgellm_attend's and edgellm_attend_avx2's bit for bit (tests/test_kernels_float.c):
 *   scores[j]  x86_dot_f32's order (avx2_util.h): 8-lane accumulators acc0..acc3 over
 *              elements 32i + 8a .. +7; here acc0|acc1 live in one 16-lane register and
 *              acc2|acc3 in another, so the same FMAs run two at a time; then
 *              (acc0+acc1)+(acc2+acc3) and x86_hsum8's tree, for 8 positions at once
 *              (hsum8x8), times scale;
 *   softmax    edgellm_softmax's steps: the maximum (exact: order-free), e^(x - max) by
 *              ops.c's exp_v4 polynomial 16 lanes at a time (IEEE operations only, the
 *              same in every lane), the sum in 4 double lanes over elements i % 4 then
 *              (s0+s1)+(s2+s3), times (float)(1/sum);
 *   out[d]     ((0 + p_0·v_0[d]) + p_1·v_1[d]) + ..., a product and a sum each rounded,
 *              16 columns per register, all columns of the head in registers.
 * Head sizes that are not a multiple of 32 up to 256 go to edgellm_attend_avx2.
 * The same steps serve the other cache types (attend_rows, one body for all three):
 *   F16   edgellm_attend_f16 with dot = edgellm_dot_f16_avx512: the scores in that dot's
 *         order (16-lane accumulators over 64-element steps), the halves widened exactly;
 *         head sizes that are not a multiple of 16 go to edgellm_attend_f16_avx2;
 *   Q8_0  edgellm_attend_quant with the level's Q8_0 dequantization and F32 dot: each
 *         code times its block's d (exact) as it is loaded, then the F32 steps above.
 * tests/test_kernels_float.c and tests/test_kv_q8_0.c hold each to its generic twin.
 * Measured on the 2-core Zen 5 dev machine (one thread, head_dim 64, 1024 positions of a
 * GQA group in L2/L3): scores 2.4, softmax 1.6, values 2.0 ns per (head, position) against
 * ~10 for the AVX2 kernel with the generic softmax (README: `bench -d`).
 */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512DQ__)
#include "kernels_x86.h"
#include "avx512_util.h"
#include "../ops.h"
#include "../../tensor/blocks.h"

#define MAX_HEAD_DIM 256
/* K and V rows are prefetched this many positions ahead (4 KiB at head_dim 64): the cache of
 * a layer is cold at every token (the weight stream evicts it), and with the per-head
 * layout (kv_cache.h) the rows ahead are the next bytes of one stream. Attention over 1040
 * cold positions of a tinyllama shape: 7.3-8.1 ms per token without, 5.3-5.4 with. */
#define PREFETCH_ROWS 16

/* x86_hsum8 of 8 vectors at once: lane p = x86_hsum8(v[p]) bit for bit (the same additions
 * of the same operands, ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)), by 128-bit-lane permutes and
 * in-lane shuffles). */
static inline __m256 hsum8x8(const __m256 v[8])
{
    __m256 a[4];   /* a[i]: lanes 0-3 = lo + hi of v[2i], lanes 4-7 = that of v[2i+1] */
    for (int i = 0; i < 4; i++)
        a[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                             _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
    /* b0: (x0+x4)+(x2+x6), (x1+x5)+(x3+x7) of v0, v2 | v1, v3; b1 the same of v4, v6 | v5, v7 */
    const __m256 b0 = _mm256_add_ps(_mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm256_shuffle_ps(a[0], a[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m256 b1 = _mm256_add_ps(_mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm256_shuffle_ps(a[2], a[3], _MM_SHUFFLE(3, 2, 3, 2)));
    /* the sums of v0, v2, v4, v6 | v1, v3, v5, v7, then back in v order */
    const __m256 c = _mm256_add_ps(_mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm256_shuffle_ps(b0, b1, _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm256_permutevar8x32_ps(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* ops.c's exp_v4, 16 lanes: the same IEEE operations in the same order per lane. */
static inline __m512 exp16(__m512 x)
{
    const __mmask16 tiny = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.0f), _CMP_LT_OQ);
    x = _mm512_mask_blend_ps(tiny, x, _mm512_set1_ps(-87.0f));
    x = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(88.0f), _CMP_GT_OQ), x, _mm512_set1_ps(88.0f));
    const __m512 t = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)), _mm512_set1_ps(12582912.0f));
    const __m512 nf = _mm512_sub_ps(t, _mm512_set1_ps(12582912.0f));
    __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(nf, _mm512_set1_ps(0.693145751953125f)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(nf, _mm512_set1_ps(1.42860682030941723e-6f)));
    __m512 p = _mm512_set1_ps(1.0f / 720.0f);
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f / 120.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f / 24.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f / 6.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(0.5f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f));
    p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(1.0f));
    const __m512i sb = _mm512_slli_epi32(
        _mm512_add_epi32(_mm512_sub_epi32(_mm512_castps_si512(t), _mm512_set1_epi32(0x4B400000)), _mm512_set1_epi32(127)),
        23);
    return _mm512_maskz_mov_ps((__mmask16)~tiny, _mm512_mul_ps(p, _mm512_castsi512_ps(sb)));
}

static inline __mmask16 first_lanes(int64_t r) { return (__mmask16)((1u << r) - 1u); }   /* r in 0..15 */

/* edgellm_softmax (ops.c), bit for bit. */
static void softmax16(float *x, int64_t n)
{
    /* the maximum: NaN when x[0] is (as edgellm_softmax's compare-and-keep gives), else the
     * largest of the others (MAXPS keeps its second operand when the first is NaN; the sign
     * of a zero maximum does not change any e^(x - max)) */
    float max = x[0];
    if (max == max) {
        __m512 m = _mm512_set1_ps(max);
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) m = _mm512_max_ps(_mm512_loadu_ps(x + i), m);
        if (i < n) m = _mm512_mask_max_ps(m, first_lanes(n - i), _mm512_maskz_loadu_ps(first_lanes(n - i), x + i), m);
        max = _mm512_reduce_max_ps(m);
    }
    const __m512 mv = _mm512_set1_ps(max);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mv)));
    if (i < n) {
        const __mmask16 k = first_lanes(n - i);
        _mm512_mask_storeu_ps(x + i, k, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), mv)));
    }
    /* 4 double lanes: lane l adds x[i + l] for every whole quad, in order; the rest to lane 0 */
    __m256d s = _mm256_setzero_pd();
    for (i = 0; i + 4 <= n; i += 4) s = _mm256_add_pd(s, _mm256_cvtps_pd(_mm_loadu_ps(x + i)));
    double sl[4];
    _mm256_storeu_pd(sl, s);
    for (; i < n; i++) sl[0] += x[i];
    const float inv = (float)(1.0 / ((sl[0] + sl[1]) + (sl[2] + sl[3])));
    const __m512 iv = _mm512_set1_ps(inv);
    for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), iv));
    if (i < n) {
        const __mmask16 k = first_lanes(n - i);
        _mm512_mask_storeu_ps(x + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), iv));
    }
}

/* ------------------------------------------------------------- cached rows */

/* How a cached row holds its head_dim values. */
typedef enum { ROW_F32, ROW_F16, ROW_Q8_0 } row_kind;

/* Values 16i .. 16i+15 of a row as floats, exactly as the generic code sees them: F32
 * loaded; IEEE halves widened (exact); Q8_0 codes times their block's d (the product
 * edgellm_dequant_q8_0 forms: float(q) · d, one rounding, exact for 8-bit codes and an F16
 * scale). */
static inline __attribute__((always_inline)) __m512 load16(const uint8_t *row, int i, row_kind kind)
{
    if (kind == ROW_F32) return _mm512_loadu_ps((const float *)row + 16 * i);
    if (kind == ROW_F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)row + 16 * i)));
    const edgellm_block_q8_0 *b = (const edgellm_block_q8_0 *)row + i / 2;
    const __m512 codes = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + 16 * (i % 2)))));
    return _mm512_mul_ps(codes, _mm512_set1_ps(x86_h2f(b->d)));
}

/* The level's dot of q and row k, 8 lanes before its final x86_hsum8, q in registers:
 * - F32 and Q8_0 (dequantized, then the F32 dot): x86_dot_f32's order (avx2_util.h), 8-lane
 *   accumulators acc0..acc3 over elements 32i + 8a .. +7, here acc0|acc1 in one 16-lane
 *   register and acc2|acc3 in another, then (acc0+acc1)+(acc2+acc3); head_dim % 32 == 0;
 * - F16: edgellm_dot_f16_avx512's order, 16-lane accumulators over elements 64i + 16a ..
 *   +15, the whole 16s left over into acc0, (acc0+acc1)+(acc2+acc3), then lo + hi;
 *   head_dim % 16 == 0. */
static inline __attribute__((always_inline)) __m256 dot_lanes(const __m512 *qv, int n16, const uint8_t *k,
                                                              row_kind kind)
{
    if (kind != ROW_F16) {
        __m512 a = _mm512_setzero_ps(), b = _mm512_setzero_ps();   /* acc0|acc1, acc2|acc3 */
        for (int i = 0; i < n16; i += 2) {
            a = _mm512_fmadd_ps(qv[i], load16(k, i, kind), a);
            b = _mm512_fmadd_ps(qv[i + 1], load16(k, i + 1, kind), b);
        }
        return _mm256_add_ps(_mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)),
                             _mm256_add_ps(_mm512_castps512_ps256(b), _mm512_extractf32x8_ps(b, 1)));
    }
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (; i + 4 <= n16; i += 4) {
        a0 = _mm512_fmadd_ps(load16(k, i, kind), qv[i], a0);
        a1 = _mm512_fmadd_ps(load16(k, i + 1, kind), qv[i + 1], a1);
        a2 = _mm512_fmadd_ps(load16(k, i + 2, kind), qv[i + 2], a2);
        a3 = _mm512_fmadd_ps(load16(k, i + 3, kind), qv[i + 3], a3);
    }
    for (; i < n16; i++) a0 = _mm512_fmadd_ps(load16(k, i, kind), qv[i], a0);
    const __m512 v = _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3));
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
}

static inline void prefetch_row(const uint8_t *row, size_t bytes)
{
    for (size_t c = 0; c < bytes; c += 64) _mm_prefetch((const char *)(row + c), _MM_HINT_T0);
}

/* The generic attention's steps over rows j = 0 .. n_pos-1 at k + j·stride, v + j·stride
 * (stride and row in bytes): scores by dot_lanes, 8 positions reduced together by hsum8x8
 * (x86_hsum8's tree, bit for bit), times scale; softmax16; out[d] = ((0 + p_0·v_0[d]) +
 * p_1·v_1[d]) + ..., a product and a sum each rounded, j ascending, all columns of the
 * head in registers; K and V rows prefetched PREFETCH_ROWS positions ahead. */
static inline __attribute__((always_inline)) void attend_rows(float *out, const float *q, const uint8_t *k,
                                                              const uint8_t *v, size_t stride, int head_dim,
                                                              int64_t n_pos, float scale, float *scores, row_kind kind)
{
    const int n16 = head_dim / 16;
    const size_t row = kind == ROW_F32 ? (size_t)head_dim * 4 : kind == ROW_F16 ? (size_t)head_dim * 2
                                                               : (size_t)head_dim / 32 * sizeof(edgellm_block_q8_0);
    __m512 qv[MAX_HEAD_DIM / 16];
    for (int i = 0; i < n16; i++) qv[i] = _mm512_loadu_ps(q + 16 * i);
    int64_t j = 0;
    for (; j + 8 <= n_pos; j += 8) {   /* 8 positions' lanes reduced together */
        __m256 lanes[8];
        for (int p = 0; p < 8; p++)
            if (j + p + PREFETCH_ROWS < n_pos) prefetch_row(k + (size_t)(j + p + PREFETCH_ROWS) * stride, row);
        for (int p = 0; p < 8; p++) lanes[p] = dot_lanes(qv, n16, k + (size_t)(j + p) * stride, kind);
        _mm256_storeu_ps(scores + j, _mm256_mul_ps(hsum8x8(lanes), _mm256_set1_ps(scale)));
    }
    for (; j < n_pos; j++) scores[j] = x86_hsum8(dot_lanes(qv, n16, k + (size_t)j * stride, kind)) * scale;
    softmax16(scores, n_pos);
    __m512 o[MAX_HEAD_DIM / 16];
    for (int i = 0; i < n16; i++) o[i] = _mm512_setzero_ps();
    for (j = 0; j < n_pos; j++) {
        if (j + PREFETCH_ROWS < n_pos) prefetch_row(v + (size_t)(j + PREFETCH_ROWS) * stride, row);
        const __m512 p = _mm512_set1_ps(scores[j]);
        const uint8_t *vj = v + (size_t)j * stride;
        for (int i = 0; i < n16; i++) o[i] = _mm512_add_ps(o[i], _mm512_mul_ps(p, load16(vj, i, kind)));
    }
    for (int i = 0; i < n16; i++) _mm512_storeu_ps(out + 16 * i, o[i]);
}

void edgellm_attend_avx512(float *out, const float *q, const float *k, const float *v, int64_t stride, int head_dim,
                           int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot)
{
    if (head_dim % 32 != 0 || head_dim > MAX_HEAD_DIM || head_dim <= 0) {
        edgellm_attend_avx2(out, q, k, v, stride, head_dim, n_pos, scale, scores, dot);
        return;
    }
    attend_rows(out, q, (const uint8_t *)k, (const uint8_t *)v, (size_t)stride * sizeof(float), head_dim, n_pos, scale,
                scores, ROW_F32);
}

void edgellm_attend_f16_avx512(float *out, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                               int head_dim, int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot)
{
    if (head_dim % 16 != 0 || head_dim > MAX_HEAD_DIM || head_dim <= 0) {
        edgellm_attend_f16_avx2(out, q, k, v, stride, head_dim, n_pos, scale, scores, dot);
        return;
    }
    /* dot is the avx512 level's F16 dot (the only caller's, dispatch.c), whose order
     * dot_lanes follows inline: another dot would not give the same bits */
    attend_rows(out, q, (const uint8_t *)k, (const uint8_t *)v, (size_t)stride * sizeof(uint16_t), head_dim, n_pos,
                scale, scores, ROW_F16);
}

bool edgellm_attend_q8_0_avx512(float *out, const float *q, const uint8_t *k, const uint8_t *v, size_t stride,
                                int head_dim, int64_t n_pos, float scale, float *scores)
{
    if (head_dim % 32 != 0 || head_dim > MAX_HEAD_DIM || head_dim <= 0) return false;
    attend_rows(out, q, k, v, stride, head_dim, n_pos, scale, scores, ROW_Q8_0);
    return true;
}
#endif
