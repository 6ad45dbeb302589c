/*
 * quant_q8_avx2.c — activation quantizers float -> Q8_0 / Q8_1 / Q8_K, AVX2+FMA+F16C.
 * Mirror edgellm_quant_q8_0_ref / _q8_1_ref / _q8_K_ref (src/tensor/quant_q8.c) and
 * produce BYTE-IDENTICAL blocks (tested on random, tiny, huge and tied inputs): the same
 * float operations in the same order, only several lanes at a time.
 *
 *   Q8_0/Q8_1  amax = max|x| (max is exact and order-free); d = amax/127, id = 1/d (0
 *              when d == 0 or 1/d overflows), q = roundf(x·id): ties away from zero,
 *              done as t = trunc(v); t += sign(v) when |v - t| >= 0.5 (v - t is exact
 *              for |v| < 2^23). Q8_1 adds s = half(d·Σq) (Σq exact, psadbw).
 *   Q8_K       the signed x of largest |x|, FIRST one on ties (found by a compare and a
 *              bit scan); iscale = -127/max; q = clamp(rint(iscale·x), -128, 127)
 *              (nearest-even rounding, saturating packs); d = 1/iscale; bsums exact.
 * Blocks the fast path does not cover (a NaN, |x| beyond the ref's saturation limit, a
 * denormal maximum for Q8_K) are handed to the reference quantizer, block by block.
 */
#if defined(__x86_64__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "kernels_x86.h"
#include "avx2_util.h"
#include "../../tensor/quant.h"
#include <float.h>
#include <math.h>

static inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

/* True when every |x| of the 8k floats is <= lim (false for NaN). */
static inline bool all_within(const float *x, int k, float lim, float *amax)
{
    __m256 mx = _mm256_setzero_ps();
    __m256 ok = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    const __m256 L = _mm256_set1_ps(lim);
    for (int i = 0; i < k; i++) {
        const __m256 a = abs_ps(_mm256_loadu_ps(x + 8 * i));
        ok = _mm256_and_ps(ok, _mm256_cmp_ps(a, L, _CMP_LE_OQ));
        mx = _mm256_max_ps(mx, a);
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    *amax = _mm_cvtss_f32(m);
    return _mm256_movemask_ps(ok) == 0xff;
}

/* roundf (half away from zero) of each lane, as int32. */
static inline __m256i round_away(__m256 v)
{
    const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const __m256 up = _mm256_cmp_ps(abs_ps(_mm256_sub_ps(v, t)), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
    const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
    return _mm256_cvtps_epi32(_mm256_add_ps(t, _mm256_and_ps(up, one)));
}

/* 32 int32 (4 vectors, element order) -> 32 int8 with saturation. */
static inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3)
{
    const __m256i a = _mm256_packs_epi32(i0, i1), b = _mm256_packs_epi32(i2, i3);
    const __m256i p = _mm256_packs_epi16(a, b);
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* Σ of 16 int8 at p, exact: psadbw of the bytes biased to unsigned. */
static inline int sum16_s8(__m128i v)
{
    const __m128i s = _mm_sad_epu8(_mm_xor_si128(v, _mm_set1_epi8((char)0x80)), _mm_setzero_si128());
    return _mm_cvtsi128_si32(s) + _mm_extract_epi16(s, 4) - 16 * 128;
}

/* One block of 32 (fast path only): codes to qs, returns the float scale d. */
static inline float q8_block(const float *x, float amax, int8_t *qs)
{
    const float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (isinf(id)) id = 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i i[4];
    for (int k = 0; k < 4; k++) i[k] = round_away(_mm256_mul_ps(_mm256_loadu_ps(x + 8 * k), vid));
    _mm256_storeu_si256((__m256i *)qs, pack32(i[0], i[1], i[2], i[3]));
    return d;
}

#define Q8_LIMIT (127.0f * EDGELLM_HALF_MAX)

void edgellm_quant_q8_0_avx2(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_0 *y = dst;
    for (int64_t b = 0; b < n / EDGELLM_QK8_0; b++) {
        const float *x = src + b * EDGELLM_QK8_0;
        float amax;
        if (!all_within(x, 4, Q8_LIMIT, &amax)) { (void)edgellm_quant_q8_0_ref(x, &y[b], EDGELLM_QK8_0); continue; }
        y[b].d = edgellm_f32_to_f16(q8_block(x, amax, y[b].qs));
    }
}

void edgellm_quant_q8_1_avx2(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_1 *y = dst;
    for (int64_t b = 0; b < n / EDGELLM_QK8_1; b++) {
        const float *x = src + b * EDGELLM_QK8_1;
        float amax;
        if (!all_within(x, 4, Q8_LIMIT, &amax)) { (void)edgellm_quant_q8_1_ref(x, &y[b], EDGELLM_QK8_1); continue; }
        const float d = q8_block(x, amax, y[b].qs);
        const int sum = sum16_s8(_mm_loadu_si128((const __m128i *)y[b].qs)) +
                        sum16_s8(_mm_loadu_si128((const __m128i *)(y[b].qs + 16)));
        y[b].d = edgellm_f32_to_f16(d);
        y[b].s = edgellm_q_half((float)sum * d);
    }
}

void edgellm_quant_q8_K_avx2(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_K *y = dst;
    for (int64_t b = 0; b < n / EDGELLM_QK_K; b++) {
        const float *x = src + b * EDGELLM_QK_K;
        float amax;
        if (!all_within(x, 32, FLT_MAX / 2, &amax)) { (void)edgellm_quant_q8_K_ref(x, &y[b], EDGELLM_QK_K); continue; }
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        /* the first element whose |x| equals amax */
        const __m256 va = _mm256_set1_ps(amax);
        int j = 0;
        for (int k = 0; k < 32; k++) {
            const int m = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + 8 * k)), va, _CMP_EQ_OQ));
            if (m) { j = 8 * k + __builtin_ctz((unsigned)m); break; }
        }
        const float iscale = -127.0f / x[j];
        if (!isfinite(iscale)) { (void)edgellm_quant_q8_K_ref(x, &y[b], EDGELLM_QK_K); continue; }
        const __m256 vs = _mm256_set1_ps(iscale);
        for (int k = 0; k < 8; k++) {
            __m256i i[4];
            for (int l = 0; l < 4; l++)
                i[l] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(vs, _mm256_loadu_ps(x + 32 * k + 8 * l)),
                                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            const __m256i q = pack32(i[0], i[1], i[2], i[3]);
            _mm256_storeu_si256((__m256i *)(y[b].qs + 32 * k), q);
            y[b].bsums[2 * k] = (int16_t)sum16_s8(_mm256_castsi256_si128(q));
            y[b].bsums[2 * k + 1] = (int16_t)sum16_s8(_mm256_extracti128_si256(q, 1));
        }
        y[b].d = 1.0f / iscale;
    }
}
#endif
