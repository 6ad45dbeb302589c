/*
 * dot_q_body.h — the bodies of the AArch64 quantized dot products, written once and
 * compiled twice: by dot_q_neon.c with ARM_DOT16 = SMULL/SADALP (_neon) and by
 * dot_q_dotprod.c with ARM_DOT16 = SDOT (_dotprod). Include with ARM_DOT16(acc, a, b)
 * (acc += Σ a·b over 16 signed bytes, exact, as 4 int32 lanes) and ARM_SUFFIX defined.
 *
 * Mirrors, in src/tensor/: edgellm_dot_q4_0_q8_0_ref, edgellm_dot_q8_0_q8_0_ref
 * (quant_q4_q5.c, quant_q8.c), edgellm_dot_q4_K_q8_K_ref, edgellm_dot_q6_K_q8_K_ref
 * (quant_k.c). Every integer sum is exact: weights become signed bytes (Q4_0: q - 8,
 * Q4_K: q, Q6_K: q - 32), so no offset term is needed except Q4_K's mins, taken from
 * Q8_K's bsums. Per block (Q4_0/Q8_0) or super-block (K) the exact int32 lanes are
 * scaled in float: acc += (d·d_x)·float(S); Q4_K also subtracts (dmin·d_x)·M, summed in
 * a scalar float in block order. 32-element blocks alternate between two accumulators.
 * Tolerance: |fast - ref| <= (2·nb + 8)·2^-23·Σ(|w·x| + |offset terms|).
 */
#include "kernels_arm.h"
#include "neon_util.h"
#include "../../tensor/blocks.h"

#define ARM_CAT2(a, b) a##b
#define ARM_CAT(a, b) ARM_CAT2(a, b)
#define ARM_FN(base) ARM_CAT(base, ARM_SUFFIX)

static inline float32x4_t q4_0_block(const edgellm_block_q4_0 *a, const edgellm_block_q8_0 *b, float32x4_t acc)
{
    const uint8x16_t q = vld1q_u8(a->qs);
    const int8x16_t lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, vdupq_n_u8(15))), vdupq_n_s8(8));
    const int8x16_t hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), vdupq_n_s8(8));
    int32x4_t s = ARM_DOT16(vdupq_n_s32(0), lo, vld1q_s8(b->qs));
    s = ARM_DOT16(s, hi, vld1q_s8(b->qs + 16));
    return vfmaq_n_f32(acc, vcvtq_f32_s32(s), arm_h2f(a->d) * arm_h2f(b->d));
}

float ARM_FN(edgellm_dot_q4_0_q8_0_)(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_0 *a = w;
    const edgellm_block_q8_0 *b = x;
    const int64_t nb = n / EDGELLM_QK4_0;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = acc0;
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        acc0 = q4_0_block(&a[i], &b[i], acc0);
        acc1 = q4_0_block(&a[i + 1], &b[i + 1], acc1);
    }
    if (i < nb) acc0 = q4_0_block(&a[i], &b[i], acc0);
    return arm_hsum4(vaddq_f32(acc0, acc1));
}

static inline float32x4_t q8_0_block(const edgellm_block_q8_0 *a, const edgellm_block_q8_0 *b, float32x4_t acc)
{
    int32x4_t s = ARM_DOT16(vdupq_n_s32(0), vld1q_s8(a->qs), vld1q_s8(b->qs));
    s = ARM_DOT16(s, vld1q_s8(a->qs + 16), vld1q_s8(b->qs + 16));
    return vfmaq_n_f32(acc, vcvtq_f32_s32(s), arm_h2f(a->d) * arm_h2f(b->d));
}

float ARM_FN(edgellm_dot_q8_0_q8_0_)(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q8_0 *a = w, *b = x;
    const int64_t nb = n / EDGELLM_QK8_0;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = acc0;
    int64_t i = 0;
    for (; i + 1 < nb; i += 2) {
        acc0 = q8_0_block(&a[i], &b[i], acc0);
        acc1 = q8_0_block(&a[i + 1], &b[i + 1], acc1);
    }
    if (i < nb) acc0 = q8_0_block(&a[i], &b[i], acc0);
    return arm_hsum4(vaddq_f32(acc0, acc1));
}

float ARM_FN(edgellm_dot_q4_K_q8_K_)(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q4_K *a = w;
    const edgellm_block_q8_K *b = x;
    float32x4_t acc = vdupq_n_f32(0);
    float accm = 0;
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) {
        const uint8_t *p = a[i].scales;
        int sc[8], m[8];
        for (int j = 0; j < 4; j++) {
            sc[j] = p[j] & 63;
            m[j] = p[j + 4] & 63;
        }
        for (int j = 4; j < 8; j++) {
            sc[j] = (p[j + 4] & 15) | (p[j - 4] >> 6) << 4;
            m[j] = (p[j + 4] >> 4) | (p[j] >> 6) << 4;
        }
        int32_t summ = 0;
        for (int j = 0; j < 8; j++) summ += m[j] * (b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
        int32x4_t sumi = vdupq_n_s32(0);
        for (int c = 0; c < 4; c++) {
            const uint8x16_t q0 = vld1q_u8(a[i].qs + 32 * c), q1 = vld1q_u8(a[i].qs + 32 * c + 16);
            const int8_t *y = b[i].qs + 64 * c;
            int32x4_t t = ARM_DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q0, vdupq_n_u8(15))), vld1q_s8(y));
            t = ARM_DOT16(t, vreinterpretq_s8_u8(vandq_u8(q1, vdupq_n_u8(15))), vld1q_s8(y + 16));
            sumi = vmlaq_n_s32(sumi, t, sc[2 * c]);
            t = ARM_DOT16(vdupq_n_s32(0), vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vld1q_s8(y + 32));
            t = ARM_DOT16(t, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), vld1q_s8(y + 48));
            sumi = vmlaq_n_s32(sumi, t, sc[2 * c + 1]);
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(sumi), arm_h2f(a[i].d) * b[i].d);
        accm += arm_h2f(a[i].dmin) * b[i].d * (float)summ;
    }
    return arm_hsum4(acc) - accm;
}

float ARM_FN(edgellm_dot_q6_K_q8_K_)(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q6_K *a = w;
    const edgellm_block_q8_K *b = x;
    const uint8x16_t m4 = vdupq_n_u8(15), m2 = vdupq_n_u8(3);
    float32x4_t acc = vdupq_n_f32(0);
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) {
        int32x4_t sumi = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++)
            for (int e = 0; e < 2; e++) {                      /* elements l = 16e..16e+15 of each 32 */
                const uint8x16_t l0 = vld1q_u8(a[i].ql + 64 * h + 16 * e);
                const uint8x16_t l1 = vld1q_u8(a[i].ql + 64 * h + 32 + 16 * e);
                const uint8x16_t qh = vld1q_u8(a[i].qh + 32 * h + 16 * e);
                uint8x16_t u[4];
                u[0] = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(qh, m2), 4));
                u[1] = vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), m2), 4));
                u[2] = vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), m2), 4));
                u[3] = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4));
                for (int k = 0; k < 4; k++) {
                    const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(u[k]), vdupq_n_s8(32));
                    const int32x4_t t = ARM_DOT16(vdupq_n_s32(0), q, vld1q_s8(b[i].qs + 128 * h + 32 * k + 16 * e));
                    sumi = vmlaq_n_s32(sumi, t, a[i].scales[8 * h + 2 * k + e]);
                }
            }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(sumi), arm_h2f(a[i].d) * b[i].d);
    }
    return arm_hsum4(acc);
}
