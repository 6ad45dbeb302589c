/*
 * quant_q8.c — Q8_0 (weights and activations), Q8_1 and Q8_K (activations): reference
 * quantizers, dequantizers and the Q8_0 x Q8_0 reference dot product.
 *
 * Spec: block layouts of ggml-org/ggml src/ggml-common.h (blocks.h);
 * arithmetic of ggml's quantize_row_q8_0_ref / _q8_1_ref / _q8_K_ref (src/ggml-quants.c),
 * reproduced so that our Q8_0 bytes equal llama.cpp's:
 *   Q8_0/Q8_1  amax = max|x| over 32;  d = amax/127 (float);  id = 1/d (0 if d == 0);
 *              q = roundf(x*id) (ties away from zero);  stored d = half(d).
 *              Q8_1 also stores s = half(d * sum(q)).
 *   Q8_K       m = the x of largest |x| (signed, first one wins);  iscale = -127/m;
 *              q = min(127, round-half-even(iscale*x));  d = 1/iscale as float;
 *              bsums[k] = sum of q over elements 16k..16k+15.
 *
 * Example, one Q8_0 block (34 bytes) of x = {1.0, -0.5, 0, ...}: amax = 1, d = 1/127 =
 * 0.007874 -> half 0x2008 (0.0078735); q = {127, -64 (roundf(-63.5)), 0, ...}:
 *   08 20 | 7f c0 00 ...
 *
 * Edge cases (beyond ggml, which produces inf/NaN there): inputs are saturated to
 * ±127*65504 so the half scale stays finite; when 1/d overflows (d denormal), id = 0 and
 * all codes are 0 (the half scale is 0 anyway). Q8_K keeps a float scale; its inputs are
 * saturated to ±FLT_MAX/2 only, so that q*d cannot overflow; a denormal maximum is
 * handled in double.
 */
#include "quant.h"
#include <float.h>
#include <math.h>

#define Q8_LIMIT (127.0f * EDGELLM_HALF_MAX)

/* One block of 32: saturate, find amax, return the float scale and fill the codes. */
static float q8_block(const float *x, int8_t *qs, uint64_t *sat)
{
    float xs[32], amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        xs[j] = edgellm_q_sat(x[j], Q8_LIMIT, sat);
        float a = fabsf(xs[j]);
        if (a > amax) amax = a;
    }
    const float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    if (isinf(id)) id = 0.0f;
    for (int j = 0; j < 32; j++) qs[j] = (int8_t)roundf(xs[j] * id);   /* |.| <= 127 */
    return d;
}

/* ---------------------------------- Q8_0 ------------------------------------------ */

uint64_t edgellm_quant_q8_0_ref(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_0 *y = dst;
    uint64_t sat = 0;
    for (int64_t i = 0; i < n / EDGELLM_QK8_0; i++) {
        float d = q8_block(src + i * EDGELLM_QK8_0, y[i].qs, &sat);
        y[i].d = edgellm_f32_to_f16(d);
    }
    return sat;
}

void edgellm_dequant_q8_0(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q8_0 *x = src;
    for (int64_t i = 0; i < n / EDGELLM_QK8_0; i++) {
        const float d = edgellm_f16_to_f32(x[i].d);
        for (int j = 0; j < EDGELLM_QK8_0; j++) dst[i * EDGELLM_QK8_0 + j] = x[i].qs[j] * d;
    }
}

float edgellm_dot_q8_0_q8_0_ref(int64_t n, const void *w, const void *x)
{
    const edgellm_block_q8_0 *a = w, *b = x;
    double acc = 0;
    for (int64_t i = 0; i < n / EDGELLM_QK8_0; i++) {
        int32_t s = 0;
        for (int j = 0; j < EDGELLM_QK8_0; j++) s += (int32_t)a[i].qs[j] * b[i].qs[j];
        acc += (double)edgellm_f16_to_f32(a[i].d) * edgellm_f16_to_f32(b[i].d) * s;
    }
    return (float)acc;
}

/* ---------------------------------- Q8_1 ------------------------------------------ */

uint64_t edgellm_quant_q8_1_ref(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_1 *y = dst;
    uint64_t sat = 0;
    for (int64_t i = 0; i < n / EDGELLM_QK8_1; i++) {
        float d = q8_block(src + i * EDGELLM_QK8_1, y[i].qs, &sat);
        int sum = 0;
        for (int j = 0; j < EDGELLM_QK8_1; j++) sum += y[i].qs[j];
        y[i].d = edgellm_f32_to_f16(d);
        y[i].s = edgellm_q_half((float)sum * d);   /* may saturate at 65504: helper only */
    }
    return sat;
}

void edgellm_dequant_q8_1(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q8_1 *x = src;
    for (int64_t i = 0; i < n / EDGELLM_QK8_1; i++) {
        const float d = edgellm_f16_to_f32(x[i].d);
        for (int j = 0; j < EDGELLM_QK8_1; j++) dst[i * EDGELLM_QK8_1 + j] = x[i].qs[j] * d;
    }
}

/* ---------------------------------- Q8_K ------------------------------------------ */

uint64_t edgellm_quant_q8_K_ref(const float *src, void *dst, int64_t n)
{
    edgellm_block_q8_K *y = dst;
    uint64_t sat = 0;
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++) {
        float x[EDGELLM_QK_K], amax = 0.0f, max = 0.0f;
        for (int j = 0; j < EDGELLM_QK_K; j++) {
            x[j] = edgellm_q_sat(src[i * EDGELLM_QK_K + j], FLT_MAX / 2, &sat);
            float a = fabsf(x[j]);
            if (a > amax) { amax = a; max = x[j]; }
        }
        memset(y[i].bsums, 0, sizeof y[i].bsums);
        if (amax == 0.0f) {
            y[i].d = 0.0f;
            memset(y[i].qs, 0, sizeof y[i].qs);
            continue;
        }
        const float iscale = -127.0f / max;
        if (isfinite(iscale)) {
            for (int j = 0; j < EDGELLM_QK_K; j++)
                y[i].qs[j] = (int8_t)edgellm_q_round(iscale * x[j], -128, 127, NULL);
            y[i].d = 1.0f / iscale;
        } else {                                   /* |max| < 127/FLT_MAX: denormal block */
            const double is = -127.0 / max;
            for (int j = 0; j < EDGELLM_QK_K; j++) {
                double v = rint(is * x[j]);
                y[i].qs[j] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
            }
            y[i].d = (float)(max / -127.0);
        }
        for (int j = 0; j < EDGELLM_QK_K; j++) y[i].bsums[j / 16] += y[i].qs[j];
    }
    return sat;
}

void edgellm_dequant_q8_K(const void *src, float *dst, int64_t n)
{
    const edgellm_block_q8_K *x = src;
    for (int64_t i = 0; i < n / EDGELLM_QK_K; i++)
        for (int j = 0; j < EDGELLM_QK_K; j++) dst[i * EDGELLM_QK_K + j] = x[i].d * x[i].qs[j];
}
