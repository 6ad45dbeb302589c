/*
 * dot_float.h — portable fast dot products for float weights (F32, F16, BF16) against F32
 * activations. Same signature as edgellm_vec_dot_fn; the reference twins (double
 * accumulation) are the vec_dot_ref entries of src/tensor/types.c.
 *
 * Accumulation order (fixed, independent of where the rows come from): 8 float lanes, lane
 * k sums elements i with i % 8 == k in increasing i; lanes are then added pairwise
 * ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). Tail elements (n % 8) go to lanes 0.. in order.
 * Expected deviation from the double reference: a few float ulps of sum(|w_i * x_i|).
 */
#ifndef EDGELLM_DOT_FLOAT_H
#define EDGELLM_DOT_FLOAT_H

#include "../common/common.h"

float edgellm_dot_f32_fast(int64_t n, const void *w, const void *x);   /* w: float[n]    */
float edgellm_dot_f16_fast(int64_t n, const void *w, const void *x);   /* w: IEEE half[n] */
float edgellm_dot_bf16_fast(int64_t n, const void *w, const void *x);  /* w: bfloat16[n]  */

/* Bit-exact IEEE half -> float (the same values as edgellm_f16_to_f32), written with
 * integer masks instead of branches so that loops over it vectorise. */
static inline float edgellm_f16_to_f32_inline(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = (uint32_t)(h & 0x7fffu);           /* exponent and mantissa bits    */
    /* Finite values: move exponent+mantissa into float position (exponent still biased
     * by 15) and multiply by 2^(127-15) to rebias; subnormal halves become normal floats
     * exactly because the product is a power-of-two scaling. */
    uint32_t moved = em << 13;
    float f;
    memcpy(&f, &moved, 4);
    f *= 0x1p112f;
    uint32_t bits;
    memcpy(&bits, &f, 4);
    /* Inf/NaN (half exponent all ones, em >= 0x7c00): float exponent all ones, mantissa
     * kept. mask = all ones exactly then: em + 0x400 reaches bit 15 iff em >= 0x7c00. */
    uint32_t mask = 0u - ((em + 0x400u) >> 15);
    uint32_t special = 0x7f800000u | (moved & 0x007fe000u);
    bits = (bits & ~mask) | (special & mask);
    bits |= sign;
    memcpy(&f, &bits, 4);
    return f;
}

#endif
