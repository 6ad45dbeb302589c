/*
 * neon_util.h — inline helpers of the AArch64 kernel files (Advanced SIMD is part of
 * the AArch64 base ISA: no flags needed). Fixed summation orders only.
 */
#ifndef EDGELLM_NEON_UTIL_H
#define EDGELLM_NEON_UTIL_H

#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

/* IEEE half -> float, exact (FCVT). */
static inline float arm_h2f(uint16_t h)
{
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* (l0 + l2) + (l1 + l3): a fixed order, unlike nothing else in particular. */
static inline float arm_hsum4(float32x4_t v)
{
    const float32x2_t s = vadd_f32(vget_low_f32(v), vget_high_f32(v));
    return vget_lane_f32(s, 0) + vget_lane_f32(s, 1);
}

/* Σ a·b over 16 signed bytes, exact for any values, as 4 int32 lanes added to acc. */
static inline int32x4_t arm_dot16_s8(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

#endif
