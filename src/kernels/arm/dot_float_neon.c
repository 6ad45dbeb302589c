/*
 * dot_float_neon.c — F32 / F16 weights · F32 activations, AArch64 NEON.
 * Mirror dot_f32_ref / dot_f16_ref of src/tensor/types.c (double accumulation).
 *
 * Order: four 4-lane FMA accumulators over elements 16k..16k+15 (acc j: 16k+4j..+3);
 * a remaining whole 4 goes to acc 0; then (acc0+acc1)+(acc2+acc3) folded by
 * arm_hsum4; the last n % 4 elements are added one by one after that.
 * F16 -> float by FCVTL (exact). Tolerance: |fast - ref| <= (n/16 + 8)·2^-23·Σ|w·x|.
 */
#if defined(__aarch64__)
#include "kernels_arm.h"
#include "neon_util.h"

float edgellm_dot_f32_neon(int64_t n, const void *w, const void *x)
{
    const float *a = w, *b = x;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
        acc1 = vfmaq_f32(acc1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        acc2 = vfmaq_f32(acc2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        acc3 = vfmaq_f32(acc3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4) acc0 = vfmaq_f32(acc0, vld1q_f32(a + i), vld1q_f32(b + i));
    float s = arm_hsum4(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}

static inline float32x4_t ld_f16(const uint8_t *p)
{
    uint16_t h[4];
    memcpy(h, p, sizeof h);   /* rows inside a mapping may be only 2-byte aligned */
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h)));
}

float edgellm_dot_f16_neon(int64_t n, const void *w, const void *x)
{
    const uint8_t *a = w;
    const float *b = x;
    float32x4_t acc0 = vdupq_n_f32(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        acc0 = vfmaq_f32(acc0, ld_f16(a + 2 * i), vld1q_f32(b + i));
        acc1 = vfmaq_f32(acc1, ld_f16(a + 2 * i + 8), vld1q_f32(b + i + 4));
        acc2 = vfmaq_f32(acc2, ld_f16(a + 2 * i + 16), vld1q_f32(b + i + 8));
        acc3 = vfmaq_f32(acc3, ld_f16(a + 2 * i + 24), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4) acc0 = vfmaq_f32(acc0, ld_f16(a + 2 * i), vld1q_f32(b + i));
    float s = arm_hsum4(vaddq_f32(vaddq_f32(acc0, acc1), vaddq_f32(acc2, acc3)));
    for (; i < n; i++) {
        uint16_t h;
        memcpy(&h, a + 2 * i, 2);
        s += arm_h2f(h) * b[i];
    }
    return s;
}
#endif
