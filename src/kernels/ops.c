/*
 * ops.c — row operations of the llama-family layer (contract in ops.h).
 *
 * Conventions (shared/data/reference/README.md, which the reference logits follow):
 *  - RMSNorm: x / sqrt(mean(x^2) + eps) * w  (Zhang & Sennrich 2019, arXiv:1910.07467).
 *  - RoPE: pair i of a head turns by pos * base^(-2i/rope_dim) (Su et al. 2021,
 *    arXiv:2104.09864). GGUF stores llama Q/K so that pairs are adjacent; qwen2 (like
 *    GPT-NeoX) pairs dimension i with i + rope_dim/2. Frequency scaling (linear, YaRN,
 *    per-pair factors) changes the angles and magnitude of the table only, as ggml's
 *    rope_ext does (ops.h, edgellm_rope_table_scaled).
 *  - SwiGLU: silu(gate) * up (Shazeer 2020, arXiv:2002.05202).
 *  - Attention: softmax(q·k / sqrt(head_dim)) v with the max subtracted before exp; over a
 *    float or an IEEE-half cache (halves widened exactly before use).
 * Sums whose error grows with n (norm, softmax denominator) accumulate in double.
 */
#include "ops.h"
#include "dot_float.h"
#include <math.h>
#include <string.h>

void edgellm_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    /* four interleaved double sums, added pairwise at the end: one long chain of dependent
     * double additions took ~3 µs per 2048-element row */
    double s4[4] = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int k = 0; k < 4; k++) s4[k] += (double)x[i + k] * x[i + k];
    for (int k = 0; i < n; i++, k++) s4[k] += (double)x[i] * x[i];
    const double ss = (s4[0] + s4[1]) + (s4[2] + s4[3]);
    float scale = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * scale * w[i];
}

void edgellm_add(float *y, const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

/* e^x for 4 floats at once (GNU C vector extensions: SIMD where the target has it, plain
 * scalar code elsewhere), made of IEEE operations only (no FMA: -ffp-contract=off), so
 * every kernel level, vector width and lane gives the same bits. Cody & Waite range
 * reduction x = n·ln2 + r, |r| <= ln2/2 (ln2 split into a 16-bit head, exact in n·head for
 * |n| <= 127, and a tail), e^r by its Taylor polynomial to r^6 (truncation <= 0.347^7/7!
 * ~ 1.2e-7 relative), times 2^n built in the exponent bits. Above 88, x is clamped to 88
 * (2^n stays normal: e^88 ~ 1.65e38 stands for overflow); below -87 the result is 0
 * (e^-87 ~ 1.6e-38: underflow, and e^-inf = 0 exactly, as softmax's masked scores need);
 * a NaN stays NaN. tests/test_kernels_float.c measures it against double exp. */
typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));
typedef uint32_t vu4 __attribute__((vector_size(16)));

static inline vf4 vsel(vi4 m, vf4 a, vf4 b) { return (vf4)(((vi4)a & m) | ((vi4)b & ~m)); }   /* m ? a : b */

static inline vf4 exp_v4(vf4 x)
{
    const vf4 zero = {0};
    const vi4 tiny = x < -87.0f;                               /* e^x < 1.7e-38: 0 below     */
    x = vsel(tiny, zero - 87.0f, x);
    x = vsel(x > 88.0f, zero + 88.0f, x);
    const vf4 t = x * 1.44269504088896341f + 12582912.0f;      /* + 1.5·2^23 rounds to int */
    const vf4 nf = t - 12582912.0f;
    vf4 r = x - nf * 0.693145751953125f;                        /* ln2 head: 0x3f317200    */
    r = r - nf * 1.42860682030941723e-6f;                       /* ln2 - head              */
    vf4 p = zero + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const vu4 sb = ((vu4)t - 0x4B400000u + 127u) << 23;         /* (n + 127) << 23: 2^n     */
    return vsel(tiny, zero, p * (vf4)sb);
}

float edgellm_expf_vec(float x)
{
    vf4 v = {0};
    v[0] = x;
    return exp_v4(v)[0];
}

/* silu(g)·u for 4 lanes */
static inline vf4 swiglu_v4(vf4 g, vf4 u) { return g / (1.0f + exp_v4(-g)) * u; }

void edgellm_swiglu(float *gate, const float *up, int64_t n)
{
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        vf4 g, u;
        memcpy(&g, gate + i, sizeof g);
        memcpy(&u, up + i, sizeof u);
        g = swiglu_v4(g, u);
        memcpy(gate + i, &g, sizeof g);
    }
    if (i < n) {                                                /* the tail: the same lanes */
        vf4 g = {0}, u = {0};
        memcpy(&g, gate + i, sizeof(float) * (size_t)(n - i));
        memcpy(&u, up + i, sizeof(float) * (size_t)(n - i));
        g = swiglu_v4(g, u);
        memcpy(gate + i, &g, sizeof(float) * (size_t)(n - i));
    }
}

/* The maximum and the sum run in 4 independent lanes (lane l: elements l, l+4, ...), so
 * that neither is one long chain of dependent steps (a double add per element was ~4
 * cycles, a third of the time of a decode's attention per position); the lanes are
 * combined in a fixed order, so the result does not depend on how it is compiled. */
void edgellm_softmax(float *x, int64_t n)
{
    float m[4] = {x[0], x[0], x[0], x[0]};
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; l++) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
    for (; i < n; i++) m[0] = x[i] > m[0] ? x[i] : m[0];
    float max = m[0];
    for (int l = 1; l < 4; l++) max = m[l] > max ? m[l] : max;
    i = 0;
    for (; i + 4 <= n; i += 4) {                               /* x = exp(x - max) */
        vf4 v;
        memcpy(&v, x + i, sizeof v);
        v = exp_v4(v - max);
        memcpy(x + i, &v, sizeof v);
    }
    if (i < n) {
        vf4 v = {0};
        memcpy(&v, x + i, sizeof(float) * (size_t)(n - i));
        v = exp_v4(v - max);
        memcpy(x + i, &v, sizeof(float) * (size_t)(n - i));
    }
    double sl[4] = {0, 0, 0, 0};
    for (i = 0; i + 4 <= n; i += 4)
        for (int l = 0; l < 4; l++) sl[l] += x[i + l];
    for (; i < n; i++) sl[0] += x[i];
    const double sum = (sl[0] + sl[1]) + (sl[2] + sl[3]);
    float inv = (float)(1.0 / sum);
    for (i = 0; i < n; i++) x[i] *= inv;
}

void edgellm_rope_table(float *cos_t, float *sin_t, int64_t pos, int rope_dim, float freq_base)
{
    for (int i = 0; i < rope_dim / 2; i++) {
        double theta = (double)pos * pow((double)freq_base, -2.0 * i / rope_dim);
        cos_t[i] = (float)cos(theta);
        sin_t[i] = (float)sin(theta);
    }
}

void edgellm_rope_table_scaled(float *cos_t, float *sin_t, int64_t pos, int rope_dim, float freq_base,
                               const edgellm_rope_scaling *s)
{
    const double span = fmax(0.001, s->corr_high - s->corr_low);
    for (int i = 0; i < rope_dim / 2; i++) {
        double extrap = (double)pos * pow((double)freq_base, -2.0 * i / rope_dim);
        if (s->freq_factors) extrap /= (double)s->freq_factors[i];
        const double interp = s->freq_scale * extrap;
        double theta = interp;
        if (s->ext_factor != 0.0) {
            const double ramp = 1.0 - fmin(1.0, fmax(0.0, ((double)i - s->corr_low) / span));
            const double mix = ramp * s->ext_factor;
            theta = interp * (1.0 - mix) + extrap * mix;
        }
        cos_t[i] = (float)(cos(theta) * s->mscale);
        sin_t[i] = (float)(sin(theta) * s->mscale);
    }
}

void edgellm_rope_adjacent(float *x, int n_heads, int head_dim, int rope_dim, const float *cos_t,
                           const float *sin_t)
{
    for (int h = 0; h < n_heads; h++) {
        float *xh = x + (int64_t)h * head_dim;     /* [head_dim] */
        for (int i = 0; i < rope_dim / 2; i++) {
            float a = xh[2 * i], b = xh[2 * i + 1], c = cos_t[i], s = sin_t[i];
            xh[2 * i] = a * c - b * s;
            xh[2 * i + 1] = a * s + b * c;
        }
    }
}

void edgellm_rope_neox(float *x, int n_heads, int head_dim, int rope_dim, const float *cos_t,
                       const float *sin_t)
{
    int half = rope_dim / 2;
    for (int h = 0; h < n_heads; h++) {
        float *xh = x + (int64_t)h * head_dim;     /* [head_dim] */
        for (int i = 0; i < half; i++) {
            float a = xh[i], b = xh[i + half], c = cos_t[i], s = sin_t[i];
            xh[i] = a * c - b * s;
            xh[i + half] = a * s + b * c;
        }
    }
}

void edgellm_attend(float *out, const float *q, const float *k, const float *v, int64_t stride, int head_dim,
                    int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot)
{
    for (int64_t j = 0; j < n_pos; j++) scores[j] = dot(head_dim, q, k + j * stride) * scale;
    edgellm_softmax(scores, n_pos);
    for (int d = 0; d < head_dim; d++) out[d] = 0;
    for (int64_t j = 0; j < n_pos; j++) {
        const float *vj = v + j * stride;     /* [head_dim] */
        float p = scores[j];
        for (int d = 0; d < head_dim; d++) out[d] += p * vj[d];
    }
}

void edgellm_attend_quant(float *out, const float *q, const uint8_t *k, const uint8_t *v, size_t stride, int head_dim,
                          int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot,
                          edgellm_to_float_fn to_float, float *tmp)
{
    for (int64_t j = 0; j < n_pos; j++) {
        to_float(k + (size_t)j * stride, tmp, head_dim);
        scores[j] = dot(head_dim, q, tmp) * scale;
    }
    edgellm_softmax(scores, n_pos);
    for (int d = 0; d < head_dim; d++) out[d] = 0;
    for (int64_t j = 0; j < n_pos; j++) {
        to_float(v + (size_t)j * stride, tmp, head_dim);
        float p = scores[j];
        for (int d = 0; d < head_dim; d++) out[d] += p * tmp[d];
    }
}

void edgellm_axpy_f16(float *y, float a, const uint16_t *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) y[i] += a * edgellm_f16_to_f32_inline(x[i]);
}

void edgellm_attend_f16(float *out, const float *q, const uint16_t *k, const uint16_t *v, int64_t stride,
                        int head_dim, int64_t n_pos, float scale, float *scores, edgellm_vec_dot_fn dot)
{
    for (int64_t j = 0; j < n_pos; j++) scores[j] = dot(head_dim, k + j * stride, q) * scale;
    edgellm_softmax(scores, n_pos);
    for (int d = 0; d < head_dim; d++) out[d] = 0;
    for (int64_t j = 0; j < n_pos; j++) edgellm_axpy_f16(out, scores[j], v + j * stride, head_dim);   /* [head_dim] */
}

bool edgellm_all_finite(const float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return false;
    return true;
}
