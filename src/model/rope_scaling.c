/*
 * rope_scaling.c — RoPE frequency scaling of a GGUF model, read from its metadata the way
 * llama.cpp reads and applies it, into the rotation table's parameters (ops.h,
 * edgellm_rope_scaling). The model loader, `edgellm info` (edgellm_gguf_meta_rope_scaling)
 * and `edgellm plan` use this one reader, so they agree on what a file asks for.
 *
 * Keys and tensor read (<arch> = general.architecture; ggml-org/llama.cpp src/llama-arch.cpp
 * names them, src/llama-model.cpp load_hparams reads them):
 *   <arch>.rope.scaling.type                     "none", "linear" or "yarn"; absent: linear
 *                                                (so a factor alone scales linearly, as in
 *                                                llama.cpp); "longrope" or anything else is
 *                                                refused (EDGELLM_ERR_UNSUPPORTED)
 *   <arch>.rope.scaling.factor                   s; absent or 0: 1 (no scaling); older files:
 *   <arch>.rope.scale_linear                     the same, read when .factor is absent
 *   <arch>.rope.scaling.original_context_length  YaRN's L; default <arch>.context_length
 *   <arch>.rope.scaling.attn_factor              multiplies cos and sin; default 1
 *   rope_freqs.weight                            F32 [rope_dim/2], every value finite > 0:
 *                                                pair i's angle / rope_freqs[i] (the Llama
 *                                                3.x "llama3" rope_scaling, which llama.cpp's
 *                                                converter stores as this tensor:
 *                                                conversion/llama.py generate_extra_tensors)
 * The YaRN keys rope.scaling.yarn_ext_factor / yarn_attn_factor / yarn_beta_fast /
 * yarn_beta_slow are not read, as llama.cpp's loader reads none of them for these
 * architectures: its defaults hold (1, the factor's own, 32, 1).
 *
 * What they become (llama.cpp src/llama-context.cpp, the llama_context constructor; the
 * arithmetic is ggml's rope_yarn, ggml/src/ggml-cpu/ops.cpp):
 *   none     freq_scale 1 (a factor is ignored), mscale = attn_factor
 *   linear   freq_scale 1/s: every angle divided by s (position interpolation, Chen et
 *            al. 2023, arXiv:2306.15595); mscale = attn_factor
 *   yarn     freq_scale 1/s, ext_factor 1, ramp between the correction dims
 *              low  = max(0, floor(d(32))),  high = min(rope_dim - 1, ceil(d(1))),
 *              d(b) = rope_dim * ln(L / (2 pi b)) / (2 ln freq_base)
 *            (ggml.c ggml_rope_yarn_corr_dims: the pair whose wavelength fits b times in
 *            the original context L); mscale = attn_factor * (1 + 0.1 ln s) for s > 1
 *            (YaRN's sqrt(1/t), Peng et al. 2023, arXiv:2309.00071, eq. 22; llama.cpp
 *            computes it as ggml's internal 1 + 0.1 ln(1/freq_scale) times a
 *            yarn_attn_factor that cancels it and carries attn_factor).
 * rope_freqs applies with any type (theta / factor first, then the scaling).
 */
#include "model.h"
#include <math.h>
#include <stdio.h>

#define YARN_BETA_FAST 32.0   /* llama.cpp hparams.yarn_beta_fast; YaRN's beta for Llama */
#define YARN_BETA_SLOW 1.0    /* hparams.yarn_beta_slow; YaRN's alpha                    */

static bool arch_key(char *key, size_t size, const char *arch, const char *suffix)
{
    return snprintf(key, size, "%s.%s", arch, suffix) < (int)size;
}

/* A float key: absent -> *out unchanged, false; present -> *out, true (FORMAT if not a number). */
static edgellm_status get_f(const edgellm_gguf *g, const char *name, const char *arch, const char *suffix, float *out,
                            bool *found, edgellm_error *err)
{
    char key[160];
    *found = false;
    if (!arch_key(key, sizeof key, arch, suffix) || edgellm_gguf_find_key(g, key) < 0) return EDGELLM_OK;
    if (!edgellm_gguf_get_f32(g, key, out) || !isfinite(*out))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: metadata key '%s' is not a finite number", name, key);
    *found = true;
    return EDGELLM_OK;
}

/* Pair index whose wavelength fits `turns` times in n_ctx_orig (ggml_rope_yarn_corr_dim). */
static double corr_dim(int rope_dim, int n_ctx_orig, double turns, double base)
{
    return rope_dim * log((double)n_ctx_orig / (turns * 2.0 * M_PI)) / (2.0 * log(base));
}

static edgellm_status read_freq_factors(const edgellm_gguf *g, const char *name, int rope_dim, edgellm_rope_config *c,
                                        edgellm_error *err)
{
    const edgellm_gguf_tensor *t = edgellm_gguf_find_tensor(g, "rope_freqs.weight");
    if (!t) return EDGELLM_OK;
    if (t->type != EDGELLM_TYPE_F32 || t->n_dims != 1 || (rope_dim > 0 && t->ne[0] != rope_dim / 2))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor 'rope_freqs.weight' must be F32 {%d} (rope_dim / 2), "
                            "found %s with %lld elements", name, rope_dim / 2, edgellm_type_name(t->type),
                            (long long)t->n_elements);
    if ((uintptr_t)t->data % sizeof(float) != 0)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor 'rope_freqs.weight' data is not 4-byte aligned", name);
    const float *f = t->data;
    for (int64_t i = 0; i < t->ne[0]; i++)
        if (!(isfinite(f[i]) && f[i] > 0.0f))
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: rope_freqs.weight[%lld] = %g: frequency factors must be "
                                "finite and > 0", name, (long long)i, (double)f[i]);
    c->table.freq_factors = f;
    c->n_freq_factors = (int)t->ne[0];
    return EDGELLM_OK;
}

edgellm_status edgellm_rope_config_read(const edgellm_gguf *g, const char *name, const char *arch, int rope_dim,
                                        edgellm_rope_config *c, edgellm_error *err)
{
    memset(c, 0, sizeof *c);
    c->type = EDGELLM_ROPE_SCALING_NONE;
    c->factor = 1.0f;
    c->attn_factor = 1.0f;
    c->table.freq_scale = 1.0;
    c->table.mscale = 1.0;
    char key[160];
    edgellm_status rc;
    bool found, have_type = false;

    /* the type */
    edgellm_str s;
    if (arch_key(key, sizeof key, arch, "rope.scaling.type") && edgellm_gguf_find_key(g, key) >= 0) {
        if (!edgellm_gguf_get_str(g, key, &s))
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: metadata key '%s' is not a string", name, key);
        have_type = true;
        if (edgellm_str_eq(s, "none")) c->type = EDGELLM_ROPE_SCALING_NONE;
        else if (edgellm_str_eq(s, "linear")) c->type = EDGELLM_ROPE_SCALING_LINEAR;
        else if (edgellm_str_eq(s, "yarn")) c->type = EDGELLM_ROPE_SCALING_YARN;
        else
            return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED,
                                "%s: RoPE scaling type '%.*s' (%s) is not supported: edgellm implements none, linear, "
                                "yarn and per-dimension frequency factors (rope_freqs.weight)", name,
                                (int)(s.len > 32 ? 32 : s.len), s.ptr, key);
    }

    /* the factor, the original context, the attention factor */
    float factor = 0.0f;
    if ((rc = get_f(g, name, arch, "rope.scaling.factor", &factor, &found, err))) return rc;
    if (!found && (rc = get_f(g, name, arch, "rope.scale_linear", &factor, &found, err))) return rc;
    if (found && !(factor >= 0.0f && factor <= 1e6f))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: RoPE scaling factor %g (%s.rope.scaling.factor) is out of "
                            "range [0, 1e6]", name, (double)factor, arch);
    if (factor == 0.0f) factor = 1.0f;                         /* llama.cpp: 0 means none */
    if (!have_type && factor != 1.0f) c->type = EDGELLM_ROPE_SCALING_LINEAR;   /* its default type */
    if ((rc = get_f(g, name, arch, "rope.scaling.attn_factor", &c->attn_factor, &found, err))) return rc;
    if (!(c->attn_factor > 0.0f && c->attn_factor <= 1e3f))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s.rope.scaling.attn_factor %g is out of range (0, 1000]",
                            name, arch, (double)c->attn_factor);
    int64_t v = 0;
    if (arch_key(key, sizeof key, arch, "context_length")) edgellm_gguf_get_i64(g, key, &v);
    if (arch_key(key, sizeof key, arch, "rope.scaling.original_context_length") && edgellm_gguf_find_key(g, key) >= 0 &&
        (!edgellm_gguf_get_i64(g, key, &v) || v < 1 || v > (1 << 30)))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: metadata key '%s' must be an integer in [1, 2^30]", name, key);
    c->n_ctx_orig = (int)EDGELLM_MIN(EDGELLM_MAX(v, 0), 1 << 30);
    float base = 10000.0f;
    if (arch_key(key, sizeof key, arch, "rope.freq_base")) edgellm_gguf_get_f32(g, key, &base);
    if (rope_dim <= 0) {   /* for a description: the file's own, or n_embd / n_head */
        int64_t e = 0, h = 0, d = 0;
        if (arch_key(key, sizeof key, arch, "rope.dimension_count")) edgellm_gguf_get_i64(g, key, &d);
        if (arch_key(key, sizeof key, arch, "embedding_length")) edgellm_gguf_get_i64(g, key, &e);
        if (arch_key(key, sizeof key, arch, "attention.head_count")) edgellm_gguf_get_i64(g, key, &h);
        rope_dim = d > 0 && d <= 65536 ? (int)d : h > 0 && e > 0 && e / h <= 65536 ? (int)(e / h) : 0;
    }

    /* what they become */
    if (c->type != EDGELLM_ROPE_SCALING_NONE) {
        c->factor = factor;
        c->table.freq_scale = 1.0 / (double)factor;
    }
    c->table.mscale = c->attn_factor;
    if (c->type == EDGELLM_ROPE_SCALING_YARN) {
        if (c->n_ctx_orig < 1)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: YaRN needs %s.rope.scaling.original_context_length or "
                                "%s.context_length", name, arch, arch);
        if (!(base > 1.0f) || rope_dim < 2)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: YaRN needs rope.freq_base > 1 and a rope dimension (%g, "
                                "%d)", name, (double)base, rope_dim);
        c->table.ext_factor = 1.0;
        c->table.corr_low = fmax(0.0, floor(corr_dim(rope_dim, c->n_ctx_orig, YARN_BETA_FAST, base)));
        c->table.corr_high = fmin((double)rope_dim - 1.0, ceil(corr_dim(rope_dim, c->n_ctx_orig, YARN_BETA_SLOW, base)));
        if (factor > 1.0f) c->table.mscale *= 1.0 + 0.1 * log((double)factor);
    }
    if ((rc = read_freq_factors(g, name, rope_dim, c, err))) return rc;
    c->scaled = c->table.freq_factors != NULL || c->table.freq_scale != 1.0 || c->table.mscale != 1.0;
    return EDGELLM_OK;
}

void edgellm_rope_config_describe(const edgellm_rope_config *c, char *buf, size_t size)
{
    size_t o = 0;
#define PUT(...) (o += (size_t)snprintf(buf + o, o < size ? size - o : 0, __VA_ARGS__))
    if (!size) return;
    buf[0] = 0;
    switch (c->type) {
    case EDGELLM_ROPE_SCALING_LINEAR:
        PUT("linear, factor %g (positions / %g)", (double)c->factor, (double)c->factor);
        break;
    case EDGELLM_ROPE_SCALING_YARN:
        PUT("yarn, factor %g, original context %d, correction dims %g..%g, magnitude %.4f", (double)c->factor,
            c->n_ctx_orig, c->table.corr_low, c->table.corr_high, c->table.mscale);
        break;
    default:
        if (!c->table.freq_factors && c->table.mscale == 1.0) PUT("none");
        break;
    }
    if (c->type != EDGELLM_ROPE_SCALING_YARN && c->attn_factor != 1.0f)
        PUT("%sattention factor %g", o ? ", " : "", (double)c->attn_factor);
    if (c->table.freq_factors) {
        float lo = c->table.freq_factors[0], hi = lo;
        for (int i = 1; i < c->n_freq_factors; i++) {
            lo = fminf(lo, c->table.freq_factors[i]);
            hi = fmaxf(hi, c->table.freq_factors[i]);
        }
        PUT("%sfrequency factors from rope_freqs.weight (%d values, %g .. %g)", o ? "; " : "", c->n_freq_factors,
            (double)lo, (double)hi);
    }
#undef PUT
}
