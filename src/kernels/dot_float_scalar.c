/*
 * dot_float_scalar.c — portable fast dot products of F32 / F16 / BF16 weight rows with F32
 * activation rows, the kernels of the "scalar" level (see dot_float.h for the accumulation
 * order).
 *
 * Plain C written so that gcc's vectoriser maps the 8 float lanes onto SIMD registers
 * (2×SSE at the portable x86-64 baseline, 2×NEON on aarch64) without -ffast-math: the
 * lanes make the summation order explicit, so vectorising does not reorder anything and
 * the result is the same on every build. The references are dot_*_ref in
 * src/tensor/types.c (double accumulation); tests/test_kernels_float.c compares them.
 */
#include "dot_float.h"

#define LANES 8

/* Fold the 8 lanes in a fixed tree. */
static inline float fold8(const float acc[LANES])
{
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

float edgellm_dot_f32_fast(int64_t n, const void *w, const void *x)
{
    const float *a = w, *b = x;
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += a[i + k] * b[i + k];
    for (int k = 0; i < n; i++, k++) acc[k] += a[i] * b[i];
    return fold8(acc);
}

float edgellm_dot_f16_fast(int64_t n, const void *w, const void *x)
{
    const uint8_t *a = w;                  /* may be unaligned inside the mapping: memcpy */
    const float *b = x;
    float acc[LANES] = {0};
    int64_t i = 0;
    /* Convert 64 halves at a time into a float block (a plain counted loop, which the
     * loop vectoriser handles), then accumulate it lane by lane: same order as below. */
    for (; i + 64 <= n; i += 64) {
        uint16_t h[64];
        float wf[64];
        memcpy(h, a + 2 * i, sizeof h);
        for (int k = 0; k < 64; k++) wf[k] = edgellm_f16_to_f32_inline(h[k]);
        for (int j = 0; j < 64; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += wf[j + k] * b[i + j + k];
    }
    for (; i + LANES <= n; i += LANES) {
        uint16_t h[LANES];
        memcpy(h, a + 2 * i, sizeof h);
        for (int k = 0; k < LANES; k++) acc[k] += edgellm_f16_to_f32_inline(h[k]) * b[i + k];
    }
    for (int k = 0; i < n; i++, k++) acc[k] += edgellm_f16_to_f32_inline(edgellm_rd_u16(a + 2 * i)) * b[i];
    return fold8(acc);
}

float edgellm_dot_bf16_fast(int64_t n, const void *w, const void *x)
{
    const uint8_t *a = w;
    const float *b = x;
    float acc[LANES] = {0};
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {          /* blocks of 64, as in the F16 dot */
        uint16_t h[64];
        float wf[64];
        memcpy(h, a + 2 * i, sizeof h);
        for (int k = 0; k < 64; k++) wf[k] = edgellm_bf16_to_f32(h[k]);
        for (int j = 0; j < 64; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += wf[j + k] * b[i + j + k];
    }
    for (; i + LANES <= n; i += LANES) {
        uint16_t h[LANES];
        memcpy(h, a + 2 * i, sizeof h);
        for (int k = 0; k < LANES; k++) acc[k] += edgellm_bf16_to_f32(h[k]) * b[i + k];
    }
    for (int k = 0; i < n; i++, k++) acc[k] += edgellm_bf16_to_f32(edgellm_rd_u16(a + 2 * i)) * b[i];
    return fold8(acc);
}
