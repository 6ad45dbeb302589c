/*
 * quant_k_search.c — per-sub-block scale searches used by the K-quant reference
 * quantizers (quant_k.c).
 *
 * These follow the algorithms of ggml's reference K-quantizers (ggml-org/ggml
 * src/ggml-quants.c: make_qx_quants with rmse_type 1, make_q3_quants, make_qkx2_quants),
 * with the same float operations in the same order, so that our Q4_K/Q5_K/Q6_K/Q2_K/Q3_K
 * output can match llama.cpp's byte for byte on ordinary data. Differences, all outside
 * ordinary data: rounding clamps before converting to int (no overflow for huge
 * ratios), and a min/max fit whose inverse scale overflows (range below ~1e-37) is
 * treated as a constant block instead of producing NaN.
 *
 * Rounding is round-half-to-even (rintf in the default mode), which is what ggml's
 * nearest_int computes. Byte identity also needs the float expressions evaluated as
 * written, without fused multiply-adds: GCC's default in ISO C mode (-std=c11, which the
 * build uses) is -ffp-contract=off; under -std=gnu11 with FMA hardware 1-2% of K-quant
 * blocks differ (same quality). The legacy types are unaffected either way.
 */
#include "quant_k_search.h"
#include <math.h>

static inline int rnd(float v, int lo, int hi) { return edgellm_q_round(v, lo, hi, NULL); }

float edgellm_kq_search_sym(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < EDGELLM_KQ_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = rnd(iscale * x[i], -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int k = -9; k <= 9; k++) {
        if (k == 0) continue;
        iscale = -(nmax + 0.1f * k) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = rnd(iscale * x[i], -nmax, nmax - 1);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        /* error = sum w x^2 - sumlx^2/suml2: a larger sumlx^2/suml2 is better */
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) L[i] = (int8_t)(nmax + rnd(iscale * x[i], -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float edgellm_kq_search_q3(int n, int nmax, const float *x, int8_t *L)
{
    float max = 0, amax = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) { amax = ax; max = x[i]; }
    }
    if (amax < EDGELLM_KQ_EPS) {
        memset(L, 0, (size_t)n);
        return 0.0f;
    }
    const float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = rnd(iscale * x[i], -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int sweep = 0; sweep < 5; sweep++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];   /* sums without element i */
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int l = rnd(x[i] * sl2 / slx, -nmax, nmax - 1);
                if (l != L[i]) {
                    slx += w * x[i] * l;
                    sl2 += w * l * l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)l;
                        sumlx = slx;
                        suml2 = sl2;
                        changed++;
                    }
                }
            }
        }
        if (!changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float edgellm_kq_search_min(int n, int nmax, const float *x, const float *w, uint8_t *L, float *neg_min,
                            uint8_t *Laux, float rmin, float rdelta, int nstep, bool abs_err)
{
    float min = x[0], max = x[0];
    float sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;                 /* the format stores -min as an unsigned value */
    float iscale = max != min ? nmax / (max - min) : INFINITY;
    if (isinf(iscale)) {                  /* constant (or denormal-range) block          */
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.0f;
    }
    float scale = 1 / iscale;
    float best = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)rnd(iscale * (x[i] - min), 0, nmax);
        float diff = scale * L[i] + min - x[i];
        diff = abs_err ? fabsf(diff) : diff * diff;
        best += w[i] * diff;
    }
    for (int k = 0; k <= nstep; k++) {
        iscale = (rmin + rdelta * k + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = rnd(iscale * (x[i] - min), 0, nmax);
            Laux[i] = (uint8_t)l;
            sum_l += w[i] * l;
            sum_l2 += w[i] * l * l;
            sum_xl += w[i] * l * x[i];
        }
        /* weighted least squares for x ≈ s*l + m: normal equations, determinant D */
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float s = (sum_w * sum_xl - sum_x * sum_l) / D;
            float m = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (m > 0) {                  /* min must stay <= 0: refit the scale alone */
                m = 0;
                s = sum_xl / sum_l2;
            }
            float err = 0;
            for (int i = 0; i < n; i++) {
                float diff = s * Laux[i] + m - x[i];
                diff = abs_err ? fabsf(diff) : diff * diff;
                err += w[i] * diff;
            }
            if (err < best) {
                memcpy(L, Laux, (size_t)n);
                best = err;
                scale = s;
                min = m;
            }
        }
    }
    *neg_min = -min;
    return scale;
}
