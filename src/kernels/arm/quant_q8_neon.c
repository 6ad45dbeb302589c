/*
 * quant_q8_neon.c — activation quantizers float -> Q8_0 / Q8_1 / Q8_K, AArch64 NEON.
 * Mirror edgellm_quant_q8_0_ref / _q8_1_ref / _q8_K_ref (src/tensor/quant_q8.c) and
 * produce BYTE-IDENTICAL blocks: the same float operations in the same order.
 *   Q8_0/Q8_1  amax by FMAXV of |x|; d = amax/127; id = 1/d (0 when d == 0 or 1/d
 *              overflows); q = roundf(x·id) is FCVTAS (nearest, ties away from zero),
 *              narrowed with saturation (|q| <= 127 anyway). Q8_1: s = half(d·Σq).
 *   Q8_K       the first x of largest |x|; iscale = -127/max; q = FCVTNS (nearest, ties
 *              even) of iscale·x, saturated to int8 = clamp(-128, 127); d = 1/iscale.
 * Blocks with a NaN, |x| past the ref's saturation limit, or (Q8_K) a non-finite iscale
 * go to the reference quantizer block by block.
 */
#if defined(__aarch64__)
#include "kernels_arm.h"
#include "neon_util.h"
#include "../../tensor/quant.h"
#include <float.h>
#include <math.h>

/* True when every |x| of the 4k floats is <= lim (false for NaN); *amax = max |x|. */
static inline bool all_within(const float *x, int k, float lim, float *amax)
{
    float32x4_t mx = vdupq_n_f32(0);
    uint32x4_t ok = vdupq_n_u32(~0u);
    const float32x4_t L = vdupq_n_f32(lim);
    for (int i = 0; i < k; i++) {
        const float32x4_t v = vld1q_f32(x + 4 * i);
        ok = vandq_u32(ok, vcaleq_f32(v, L));
        mx = vmaxq_f32(mx, vabsq_f32(v));
    }
    *amax = vmaxvq_f32(mx);
    return vminvq_u32(ok) == ~0u;
}

/* 8 int32 -> 8 int8, saturating. */
static inline int8x8_t narrow8(int32x4_t a, int32x4_t b)
{
    return vqmovn_s16(vcombine_s16(vqmovn_s32(a), vqmovn_s32(b)));
}

static inline float q8_block(const float *x, float amax, int8_t *qs)
{
    const float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (isinf(id)) id = 0.0f;
    for (int k = 0; k < 4; k++) {
        const int32x4_t a = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + 8 * k), id));
        const int32x4_t b = vcvtaq_s32_f32(vmulq_n_f32(vld1q_f32(x + 8 * k + 4), id));
        vst1_s8(qs + 8 * k, narrow8(a, b));
    }
    return d;
}

#define Q8_LIMIT (127.0f * EDGELLM_HALF_MAX)

void edgellm_quant_q8_0_neon(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_0 *y = dst;
    for (int64_t b = 0; b < n / EDGELLM_QK8_0; b++) {
        const float *x = src + b * EDGELLM_QK8_0;
        float amax;
        if (!all_within(x, 8, Q8_LIMIT, &amax)) { (void)edgellm_quant_q8_0_ref(x, &y[b], EDGELLM_QK8_0); continue; }
        y[b].d = edgellm_f32_to_f16(q8_block(x, amax, y[b].qs));
    }
}

void edgellm_quant_q8_1_neon(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_1 *y = dst;
    for (int64_t b = 0; b < n / EDGELLM_QK8_1; b++) {
        const float *x = src + b * EDGELLM_QK8_1;
        float amax;
        if (!all_within(x, 8, Q8_LIMIT, &amax)) { (void)edgellm_quant_q8_1_ref(x, &y[b], EDGELLM_QK8_1); continue; }
        const float d = q8_block(x, amax, y[b].qs);
        const int sum = vaddlvq_s8(vld1q_s8(y[b].qs)) + vaddlvq_s8(vld1q_s8(y[b].qs + 16));
        y[b].d = edgellm_f32_to_f16(d);
        y[b].s = edgellm_q_half((float)sum * d);
    }
}

void edgellm_quant_q8_K_neon(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_K *y = dst;
    for (int64_t b = 0; b < n / EDGELLM_QK_K; b++) {
        const float *x = src + b * EDGELLM_QK_K;
        float amax;
        if (!all_within(x, 64, FLT_MAX / 2, &amax)) { (void)edgellm_quant_q8_K_ref(x, &y[b], EDGELLM_QK_K); continue; }
        if (amax == 0.0f) {
            memset(&y[b], 0, sizeof y[b]);
            continue;
        }
        int j = 0;
        while (fabsf(x[j]) != amax) j++;                 /* first one wins, as the ref */
        const float iscale = -127.0f / x[j];
        if (!isfinite(iscale)) { (void)edgellm_quant_q8_K_ref(x, &y[b], EDGELLM_QK_K); continue; }
        for (int k = 0; k < 16; k++) {
            const float *xk = x + 16 * k;
            const int8x8_t lo = narrow8(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xk), iscale)),
                                        vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xk + 4), iscale)));
            const int8x8_t hi = narrow8(vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xk + 8), iscale)),
                                        vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(xk + 12), iscale)));
            const int8x16_t q = vcombine_s8(lo, hi);
            vst1q_s8(y[b].qs + 16 * k, q);
            y[b].bsums[k] = (int16_t)vaddlvq_s8(q);
        }
        y[b].d = 1.0f / iscale;
    }
}
#endif
