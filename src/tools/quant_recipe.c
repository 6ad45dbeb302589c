/*
 * quant_recipe.c — which type each tensor gets when a model is quantized: the scheme names
 * of `edgellm quantize --type` and the per-tensor rules (edgellm.h, "Quantization").
 *
 * Plain types below 6 bits per weight (q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, i4) give
 * output.weight (or a tied token_embd) Q6_K, as llama-quantize does by default; `pure`
 * (llama-quantize --pure) keeps it in the plain type, which is how the reference fixtures
 * were made. Q6_K, Q8_0 and i8 keep their own type for the output.
 * The mixes follow llama.cpp's recipe (source:
 * ggml-org/llama.cpp src/llama-quant.cpp): for Q4_K_M / Q5_K_M, output.weight (or a tied
 * token_embd) is Q6_K; attn_v (and a fused attn_qkv) and ffn_down are Q6_K in layer i when
 *     use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2   (integer division)
 * and Q4_K / Q5_K elsewhere. Rows whose length is not a multiple of the block size fall
 * back: Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, Q2_K/Q3_K->Q4_0, then F16 if still not a
 * multiple of 32. edgellm's group types (I4/I8, g64/g128/g256) fall back to the next
 * smaller group of the same kind, then F16.
 *
 * general.file_type values are llama.cpp's enum (ggml-org/ggml docs/gguf.md): ALL_F32 0, MOSTLY_F16 1,
 * Q4_0 2, Q4_1 3, Q8_0 7, Q5_0 8, Q5_1 9, Q4_K_S 14, Q4_K_M 15, Q5_K_S 16, Q5_K_M 17,
 * Q6_K 18. A pure Q4_K / Q5_K file is labelled Q4_K_S / Q5_K_S, the nearest enum value.
 *
 * Worked example (the reference fixture llama-gqa-q4_k_m.gguf, n_layer = 2): n/8 = 0,
 * 7n/8 = 1, so use_more_bits(0) is false and use_more_bits(1) is true: blk.1.attn_v and
 * blk.1.ffn_down are Q6_K, output Q6_K, everything else Q4_K — what llama.cpp wrote.
 */
#include "quantize.h"
#include "../tensor/types.h"
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    const char *name;       /* as typed (lower case)          */
    int  type;
    bool k_mix;
    int  file_type;
} scheme_row;

static const scheme_row schemes[] = {
    {"f32", EDGELLM_TYPE_F32, false, 0},     {"f16", EDGELLM_TYPE_F16, false, 1},
    {"q4_0", EDGELLM_TYPE_Q4_0, false, 2},   {"q4_1", EDGELLM_TYPE_Q4_1, false, 3},
    {"q8_0", EDGELLM_TYPE_Q8_0, false, 7},   {"q5_0", EDGELLM_TYPE_Q5_0, false, 8},
    {"q5_1", EDGELLM_TYPE_Q5_1, false, 9},   {"q4_k", EDGELLM_TYPE_Q4_K, false, 14},
    {"q5_k", EDGELLM_TYPE_Q5_K, false, 16},  {"q6_k", EDGELLM_TYPE_Q6_K, false, 18},
    {"q4_k_m", EDGELLM_TYPE_Q4_K, true, 15}, {"q5_k_m", EDGELLM_TYPE_Q5_K, true, 17},
};

static bool ieq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
    return *a == *b;
}

static void upper_copy(char *dst, size_t size, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < size; i++) dst[i] = (char)toupper((unsigned char)src[i]);
    dst[i] = 0;
}

edgellm_status edgellm_quant_scheme_parse(const char *type, int group, int asym, edgellm_quant_scheme *out,
                                          edgellm_error *err)
{
    memset(out, 0, sizeof *out);
    if (!type) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "no target type");
    bool is_i4 = ieq(type, "i4"), is_i8 = ieq(type, "i8");
    if (is_i4 || is_i8) {
        if (group <= 0) group = 128;
        if (group != 64 && group != 128 && group != 256)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "group size %d: expected 64, 128 or 256", group);
        char name[32];
        snprintf(name, sizeof name, "%s_G%d_%s", is_i4 ? "I4" : "I8", group, asym ? "ASYM" : "SYM");
        out->base_type = edgellm_type_from_name(name);
        if (out->base_type < 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "type %s is unknown", name);
        snprintf(out->name, sizeof out->name, "%s", name);
        snprintf(out->label, sizeof out->label, "%s g%d %s", is_i4 ? "i4" : "i8", group, asym ? "asym" : "sym");
        out->edgellm_only = true;
        out->file_type = -1;
        return EDGELLM_OK;
    }
    if (group > 0 || asym)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--group and --asym apply to i4 and i8 only, not %s",
                            type);
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (ieq(type, schemes[i].name)) {
            upper_copy(out->name, sizeof out->name, schemes[i].name);
            out->base_type = schemes[i].type;
            out->k_mix = schemes[i].k_mix;
            out->file_type = schemes[i].file_type;
            return EDGELLM_OK;
        }
    return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                        "unknown type '%s' (q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m, "
                        "q5_k_m, i8, i4, f16, f32)", type);
}

bool edgellm_quant_use_more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* Layer index of a "blk.N.*" name, -1 otherwise. */
static int layer_of(const char *name)
{
    if (strncmp(name, "blk.", 4) != 0 || !isdigit((unsigned char)name[4])) return -1;
    char *end;
    long v = strtol(name + 4, &end, 10);
    return (*end == '.' && v >= 0 && v < 1000000) ? (int)v : -1;
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* The next type to try when rows of ne0 do not fit `type`; -1 when there is none
 * (quantize.h; also used by `edgellm plan`, plan_math.c). */
int edgellm_quant_fallback_type(int type)
{
    switch (type) {
    case EDGELLM_TYPE_Q4_K: return EDGELLM_TYPE_Q5_0;
    case EDGELLM_TYPE_Q5_K: return EDGELLM_TYPE_Q5_1;
    case EDGELLM_TYPE_Q6_K: return EDGELLM_TYPE_Q8_0;
    case EDGELLM_TYPE_Q2_K:
    case EDGELLM_TYPE_Q3_K: return EDGELLM_TYPE_Q4_0;
    case EDGELLM_TYPE_I4_G256_SYM: return EDGELLM_TYPE_I4_G128_SYM;
    case EDGELLM_TYPE_I4_G128_SYM: return EDGELLM_TYPE_I4_G64_SYM;
    case EDGELLM_TYPE_I4_G256_ASYM: return EDGELLM_TYPE_I4_G128_ASYM;
    case EDGELLM_TYPE_I4_G128_ASYM: return EDGELLM_TYPE_I4_G64_ASYM;
    case EDGELLM_TYPE_I8_G256_SYM: return EDGELLM_TYPE_I8_G128_SYM;
    case EDGELLM_TYPE_I8_G128_SYM: return EDGELLM_TYPE_I8_G64_SYM;
    case EDGELLM_TYPE_I8_G256_ASYM: return EDGELLM_TYPE_I8_G128_ASYM;
    case EDGELLM_TYPE_I8_G128_ASYM: return EDGELLM_TYPE_I8_G64_ASYM;
    case EDGELLM_TYPE_F32:
    case EDGELLM_TYPE_F16:
    case EDGELLM_TYPE_BF16: return -1;
    default: return EDGELLM_TYPE_F16;
    }
}

static bool is_float_type(int t) { return t == EDGELLM_TYPE_F32 || t == EDGELLM_TYPE_F16 || t == EDGELLM_TYPE_BF16; }

/* Bits per weight of a quantized type (block bytes * 8 / block size); 32 for float types. */
static double bits_of(int type)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (!t || !t->is_quantized) return 32.0;
    return (double)t->type_size * 8.0 / t->blck_size;
}

void edgellm_quant_choose(const edgellm_quant_recipe *r, const char *name, uint32_t n_dims, const int64_t *ne,
                          int src_type, edgellm_quant_choice *out)
{
    memset(out, 0, sizeof *out);
    const edgellm_type_traits *st = edgellm_type_get_traits(src_type);
    out->type = out->wanted = src_type;
    if (!st || !st->to_float) {
        snprintf(out->note, sizeof out->note, "%s: not a float tensor, copied", st ? st->name : "?");
        return;
    }
    if (n_dims <= 1) {
        out->type = out->wanted = EDGELLM_TYPE_F32;
        out->convert = src_type != EDGELLM_TYPE_F32;
        snprintf(out->note, sizeof out->note, "1-D: F32");
        return;
    }
    if (!ends_with(name, "weight")) {
        snprintf(out->note, sizeof out->note, "not a weight, copied");
        return;
    }
    for (int k = 0; k < r->n_keep; k++)
        if (r->keep[k] && fnmatch(r->keep[k], name, 0) == 0) {
            if (is_float_type(src_type)) {
                snprintf(out->note, sizeof out->note, "kept (--keep %.80s)", r->keep[k]);
            } else {
                out->type = out->wanted = EDGELLM_TYPE_F16;
                out->convert = true;
                snprintf(out->note, sizeof out->note, "kept as F16 (--keep %.80s)", r->keep[k]);
            }
            return;
        }

    const edgellm_quant_scheme *s = r->scheme;
    int want = s->base_type;
    const char *why = "";
    const bool is_output = !strcmp(name, "output.weight");
    const bool is_embd = !strcmp(name, "token_embd.weight");
    const int il = layer_of(name);
    if (is_output || (is_embd && r->tied)) {
        if (is_embd && r->embd_type >= 0) { want = r->embd_type; why = "--embd-type"; }
        else if (r->output_type >= 0) { want = r->output_type; why = "--output-type"; }
        else if (s->k_mix || (!r->pure && bits_of(s->base_type) < 6.0)) {
            want = EDGELLM_TYPE_Q6_K;
            why = is_embd ? "tied head: Q6_K" : "output: Q6_K";
        }
    } else if (is_embd && r->embd_type >= 0) {
        want = r->embd_type;
        why = "--embd-type";
    } else if (s->k_mix && il >= 0 && (strstr(name, "attn_v.weight") || strstr(name, "attn_qkv.weight") ||
                                        strstr(name, "ffn_down"))) {
        if (edgellm_quant_use_more_bits(il, r->n_layer)) { want = EDGELLM_TYPE_Q6_K; why = "use_more_bits: Q6_K"; }
    }
    out->wanted = want;
    int t = want;
    while (t >= 0 && edgellm_type_row_size(t, ne[0]) == 0) t = edgellm_quant_fallback_type(t);
    if (t < 0) t = EDGELLM_TYPE_F32;   /* float types fit any row; not reached */
    out->type = t;
    out->convert = !(t == src_type && is_float_type(t));
    if (t != want) {
        out->fallback = true;
        snprintf(out->note, sizeof out->note, "%s does not fit rows of %lld: %s", edgellm_type_name(want),
                 (long long)ne[0], edgellm_type_name(t));
    } else {
        snprintf(out->note, sizeof out->note, "%s", why);
    }
}
