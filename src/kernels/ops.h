/*
 * ops.h — the element-wise and row-wise operations of a transformer layer on float rows:
 * RMSNorm, softmax, RoPE (both pair layouts), SwiGLU, residual adds, and single-head
 * attention over a KV cache. Matrix products are in matmul.h.
 *
 * Every function computes each output element with a fixed sequence of operations that
 * depends only on its inputs, so a row gives the same bits whichever batch or thread
 * computes it.
 */
#ifndef EDGELLM_OPS_H
#define EDGELLM_OPS_H

#include "../tensor/types.h"

/* out[n] = x[n] / sqrt(mean(x^2) + eps) * w[n]; the mean is accumulated in double.
 * out may equal x. */
void edgellm_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);

/* In place: x[n] = exp(x - max) / sum(exp(x - max)), exp by edgellm_expf_vec, the sum in
 * double (4 partial sums over elements i % 4, then (s0 + s1) + (s2 + s3)). n >= 1. */
void edgellm_softmax(float *x, int64_t n);

/* y[n] += x[n] (residual add, bias add). */
void edgellm_add(float *y, const float *x, int64_t n);

/* gate[n] = silu(gate) * up, silu(g) = g / (1 + exp(-g)) (Shazeer 2020, arXiv:2002.05202),
 * exp by edgellm_expf_vec (the same bits on every kernel level). */
void edgellm_swiglu(float *gate, const float *up, int64_t n);

/* e^x in float within 3 ulp of the exact value for x in [-87, 88]; above 88 as at 88
 * (+inf -> ~1.65e38), below -87 exactly 0 (-inf -> 0); NaN -> NaN. Branch-free; the same
 * function computes softmax's and SwiGLU's exponentials, 4 lanes at a time. */
float edgellm_expf_vec(float x);

/* Rotation table for one position: cos_t[i], sin_t[i] of the angle
 * pos * freq_base^(-2i/rope_dim), i in 0..rope_dim/2-1 (computed in double). */
void edgellm_rope_table(float *cos_t, float *sin_t, int64_t pos, int rope_dim, float freq_base);

/* RoPE frequency scaling: the parameters of ggml's rope_ext (ggml-org/llama.cpp
 * ggml/src/ggml-cpu/ops.cpp, rope_yarn and ggml_rope_cache_init; ggml/src/ggml.c,
 * ggml_rope_yarn_corr_dims), set from a model's metadata by edgellm_rope_config_read
 * (src/model/rope_scaling.c, which derives each from the file's keys). */
typedef struct {
    const float *freq_factors;   /* [rope_dim/2]: pair i's angle is divided by freq_factors[i]
                                  * (rope_freqs.weight, Llama 3's "llama3" scaling); NULL: none */
    double freq_scale;           /* interpolated angle = freq_scale x angle (1/factor); 1: none */
    double ext_factor;           /* YaRN: > 0 mixes the original angle back in by a ramp over
                                  * the pairs; 0: the interpolated angle everywhere        */
    double corr_low, corr_high;  /* YaRN: the ramp is 1 (original angle) for pair i <= low,
                                  * 0 (interpolated) for i >= high, linear in i between    */
    double mscale;               /* cos and sin are multiplied by it (YaRN's attention
                                  * temperature, times rope.scaling.attn_factor); 1: none  */
} edgellm_rope_scaling;

/* edgellm_rope_table with scaling s (computed in double): per pair i,
 *   extrap = pos * freq_base^(-2i/rope_dim) / freq_factors[i]
 *   interp = freq_scale * extrap
 *   theta  = interp * (1 - mix) + extrap * mix,  mix = ext_factor * (1 - clamp((i - low) /
 *            max(0.001, high - low), 0, 1))   (theta = interp when ext_factor is 0)
 *   cos_t[i] = cos(theta) * mscale,  sin_t[i] = sin(theta) * mscale.
 * The ramp is YaRN's (Peng et al. 2023, arXiv:2309.00071, "NTK-by-parts": dimensions whose
 * wavelength is short against the original context keep their angle, long ones are
 * interpolated) as its reference code and ggml compute it: linear in the pair index between
 * the correction dims. Neutral s (NULL factors, freq_scale 1, mscale 1) gives the angles of
 * edgellm_rope_table. */
void edgellm_rope_table_scaled(float *cos_t, float *sin_t, int64_t pos, int rope_dim, float freq_base,
                               const edgellm_rope_scaling *s);

/* Rotate the first rope_dim dims of each of n_heads heads of x[n_heads][head_dim] in place.
 * Adjacent layout (arch llama): pairs (x[2i], x[2i+1]).
 * NeoX layout (arch qwen2):    pairs (x[i], x[i + rope_dim/2]).
 * Pair i turns by the angle of cos_t[i], sin_t[i]: (a, b) -> (a c - b s, a s + b c). */
void edgellm_rope_adjacent(float *x, int n_heads, int head_dim, int rope_dim, const float *cos_t,
                           const float *sin_t);
void edgellm_rope_neox(float *x, int n_heads, int head_dim, int rope_dim, const float *cos_t,
                       const float *sin_t);

/* One query head attending causally to n_pos cached positions:
 *   out[head_dim] = sum_j softmax_j(scale * q·k_j) v_j,  j in 0..n_pos-1,
 * where k_j = k + j*stride, v_j = v + j*stride (stride in floats, e.g. kv_dim).
 * scores: scratch of n_pos floats. dot: the F32 dot product from dispatch.h. */
void edgellm_attend(float *out, const float *q, const float *k, const float *v, int64_t stride, int head_dim,
                    int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot);
/* (The kernel for the active level and a cache type, SIMD variants included:
 * edgellm_kernels_attend, dispatch.h.) */

/* edgellm_attend over a cache stored as IEEE half (EDGELLM_TYPE_F16): k_j = k + j*stride and
 * v_j = v + j*stride are half[head_dim] (stride in elements). The scores are
 * dot(head_dim, k_j, q) * scale with dot = edgellm_kernels_vec_dot(EDGELLM_TYPE_F16) (F16 row
 * · F32 activations); the values are accumulated by edgellm_axpy_f16 in order j = 0, 1, ...
 * Each half is converted exactly, so the result equals edgellm_attend on the rows widened
 * to float, up to the dot kernel's own rounding. */
void edgellm_attend_f16(float *out, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                        int head_dim, int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot);

/* edgellm_attend over a cache of quantized rows (EDGELLM_TYPE_Q8_0): k_j = k + j*stride and
 * v_j = v + j*stride (stride in bytes) each start a head's head_dim elements, whole blocks.
 * Each k_j, v_j is dequantized by to_float (edgellm_kernels_to_float(type)) into
 * tmp[head_dim] and then used exactly as edgellm_attend uses a float row (same dot, same
 * order of operations), so the result equals edgellm_attend over the dequantized rows bit
 * for bit. dot: the F32 dot product. */
void edgellm_attend_quant(float *out, const float *q, const uint8_t *k, const uint8_t *v, size_t stride, int head_dim,
                          int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot,
                          edgellm_to_float_fn to_float, float *tmp);

/* y[n] += a * x[n] with x IEEE half, element by element: y[i] = y[i] + (a * (float)x[i]),
 * a product and a sum each rounded to float (the same operations as the F32 loop of
 * edgellm_attend). */
void edgellm_axpy_f16(float *y, float a, const uint16_t *x, int64_t n);

/* True when every x[i] is finite. */
bool edgellm_all_finite(const float *x, int64_t n);

#endif
