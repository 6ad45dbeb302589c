/*
 * quant_util.c — small numeric helpers shared by the reference quantizers (quant.h):
 * saturation of inputs to a representable range, round-half-to-even with clamping that
 * cannot overflow an int, and float -> half that never produces inf.
 *
 * Why clamp before converting: a float-to-int conversion of a value outside the int's
 * range (or of NaN) is undefined behaviour in C, and ggml's magic-number rounding trick
 * is only valid below 2^22. Clamping first to [lo-1, hi+1] keeps the result identical to
 * "round, then clamp" for every finite input.
 */
#include "quant.h"
#include <math.h>

float edgellm_q_sat(float v, float lim, uint64_t *n_sat)
{
    if (v >= -lim && v <= lim) return v;
    if (v != v) return 0.0f;                       /* NaN: no meaningful value        */
    if (n_sat) (*n_sat)++;
    return v < 0 ? -lim : lim;
}

int edgellm_q_round(float v, int lo, int hi, uint64_t *n_sat)
{
    if (!(v >= (float)lo - 1.0f)) v = (float)lo - 1.0f;   /* also catches NaN            */
    if (v > (float)hi + 1.0f) v = (float)hi + 1.0f;
    int r = (int)rintf(v);                         /* default mode: nearest, ties even */
    if (r < lo) { if (n_sat) (*n_sat)++; return lo; }
    if (r > hi) { if (n_sat) (*n_sat)++; return hi; }
    return r;
}

uint16_t edgellm_q_half(float v)
{
    if (v > EDGELLM_HALF_MAX) v = EDGELLM_HALF_MAX;
    if (v < -EDGELLM_HALF_MAX) v = -EDGELLM_HALF_MAX;
    return edgellm_f32_to_f16(v);
}
