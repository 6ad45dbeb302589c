/*
 * plan_math.c — the arithmetic behind `edgellm plan`: which tensors a model has, which type
 * each gets under a precision recipe, how many bytes that makes, and the memory and speed
 * that follow. No I/O; every function is unit-tested in tests/test_plan.c.
 *
 * Memory (bytes):
 *   weights  = sum over tensors of rows x row_bytes(type(tensor), ne0)
 *   kv       = 2 x n_layer x n_ctx x row_bytes(kv_type, n_head_kv x head_dim)   (x batch)
 *              (K and V rows apart when V's head_dim differs: attention.value_length)
 *              e.g. Llama-2-7B, 2048 positions, F16: 2 x 32 x 2048 x 4096 x 2 = 1 GiB
 *   scratch  = f32 activations, attention scores and logits (see scratch_bytes)
 *   overhead = executable, libc, stacks + tokenizer tables (n_vocab x 40 B)
 * Speed (the decode roofline, vllm-project/vllm#7379):
 *   decode step  = max(bytes read / (bandwidth x efficiency), FLOPs / (big cores x GFLOP/s))
 *                  (GFLOP/s: Q4_0 prefill's; each matrix's FLOPs weighted by its type's kernel
 *                  cost relative to that, edgellm_plan_kernel_cost: decode runs one row at a
 *                  time, and most types have no tile kernel, ~2-15x the cost)
 *                  + n_layer x 20 us (thread hand-offs; matters for tiny models only)
 *                  bytes read = every matrix once (token_embd: one row) + the KV cache
 *   prefill      = max(FLOPs / compute, weights streamed once per 512-token ubatch), FLOPs
 *                  weighted by the types' prefill kernel cost (I4/Q5_0: ~7-10x Q4_0's, F16 ~4x)
 *                  + n_layer x 20 us per ubatch
 *   FLOPs/token  = 2 x matmul weights + 4 x n_layer x n_head x head_dim x position
 *
 * Recipes follow llama-quantize (ggml-org/llama.cpp src/llama-quant.cpp):
 * 1-D tensors stay F32; output.weight (or a tied token_embd) gets Q6_K unless the recipe is
 * Q8_0 or a float type; Q4_K_M / Q5_K_M give attn_v (fused attn_qkv) and ffn_down Q6_K on
 * use_more_bits layers; a row length the block does not divide falls back by edgellm
 * quantize's own rule (edgellm_quant_fallback_type, quant_recipe.c; I4 g128 -> g64 -> F16).
 */
#include "plan.h"
#include "quantize.h"
#include "../tensor/types.h"
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---------------------------------------------------------------- tensor lists ---- */

static size_t push(edgellm_plan_tensor *out, size_t max, size_t n, int role, int layer, int64_t ne0, int64_t rows)
{
    if (n < max) {
        out[n].role = role;
        out[n].layer = layer;
        out[n].ne0 = ne0;
        out[n].n_rows = rows;
        out[n].file_type = -1;
        out[n].file_bytes = 0;
    }
    return n + 1;
}

size_t edgellm_plan_shape_tensors(const edgellm_plan_model *m, edgellm_plan_tensor *out, size_t max)
{
    const int64_t E = m->n_embd, F = m->n_ff, V = m->n_vocab;
    const int64_t qd = (int64_t)m->n_head * m->head_dim;      /* query width  */
    const int64_t kvd = (int64_t)m->n_head_kv * m->head_dim;  /* K or V width */
    size_t n = 0;
    /* token_embd ne={n_embd, n_vocab}; with tied embeddings it is also the output matrix */
    n = push(out, max, n, m->tied_embeddings ? EDGELLM_PT_OUTPUT : EDGELLM_PT_TOKEN_EMBD, -1, E, V);
    for (int il = 0; il < m->n_layer; il++) {
        n = push(out, max, n, EDGELLM_PT_NORM, il, E, 1);                       /* attn_norm [E]   */
        if (m->fused_qkv) {
            n = push(out, max, n, EDGELLM_PT_ATTN_QKV, il, E, qd + 2 * kvd);    /* ne={E, qd+2kvd} */
        } else {
            n = push(out, max, n, EDGELLM_PT_ATTN_Q, il, E, qd);                /* ne={E, qd}      */
            n = push(out, max, n, EDGELLM_PT_ATTN_K, il, E, kvd);               /* ne={E, kvd}     */
            n = push(out, max, n, EDGELLM_PT_ATTN_V, il, E, kvd);               /* ne={E, kvd}     */
        }
        if (m->qkv_bias) {
            n = push(out, max, n, EDGELLM_PT_NORM, il, qd, 1);                  /* attn_q.bias     */
            n = push(out, max, n, EDGELLM_PT_NORM, il, kvd, 1);                 /* attn_k.bias     */
            n = push(out, max, n, EDGELLM_PT_NORM, il, kvd, 1);                 /* attn_v.bias     */
        }
        n = push(out, max, n, EDGELLM_PT_ATTN_OUT, il, qd, E);                  /* ne={qd, E}      */
        n = push(out, max, n, EDGELLM_PT_NORM, il, E, 1);                       /* ffn_norm [E]    */
        for (int k = 0; k < m->extra_norms; k++)
            n = push(out, max, n, EDGELLM_PT_NORM, il, E, 1);                   /* post norms [E]  */
        n = push(out, max, n, EDGELLM_PT_FFN_GATE, il, E, F);                   /* ne={E, F}       */
        n = push(out, max, n, EDGELLM_PT_FFN_UP, il, E, F);                     /* ne={E, F}       */
        n = push(out, max, n, EDGELLM_PT_FFN_DOWN, il, F, E);                   /* ne={F, E}       */
    }
    n = push(out, max, n, EDGELLM_PT_NORM, -1, E, 1);                           /* output_norm     */
    if (!m->tied_embeddings) n = push(out, max, n, EDGELLM_PT_OUTPUT, -1, E, V); /* ne={E, V}       */
    return n;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
    size_t k = strlen(suffix);
    return len >= k && memcmp(s + len - k, suffix, k) == 0;
}

int edgellm_plan_role_from_name(const char *name, size_t len, uint32_t n_dims, int *layer)
{
    *layer = -1;
    if (len > 4 && memcmp(name, "blk.", 4) == 0) {
        int v = 0;
        size_t i = 4;
        while (i < len && isdigit((unsigned char)name[i]) && v < 1000000) v = v * 10 + (name[i++] - '0');
        if (i > 4) *layer = v;
    }
    if (n_dims < 2 || !ends_with(name, len, ".weight") || ends_with(name, len, "_norm.weight") ||
        ends_with(name, len, "ffn_gate_inp.weight"))
        return EDGELLM_PT_NORM;
    static const struct { const char *suffix; int role; } map[] = {
        {"attn_qkv.weight", EDGELLM_PT_ATTN_QKV}, {"attn_q.weight", EDGELLM_PT_ATTN_Q},
        {"attn_k.weight", EDGELLM_PT_ATTN_K},     {"attn_v.weight", EDGELLM_PT_ATTN_V},
        {"attn_output.weight", EDGELLM_PT_ATTN_OUT}, {"ffn_gate.weight", EDGELLM_PT_FFN_GATE},
        {"ffn_up.weight", EDGELLM_PT_FFN_UP},     {"ffn_down.weight", EDGELLM_PT_FFN_DOWN},
    };
    if (len == strlen("token_embd.weight") && memcmp(name, "token_embd.weight", len) == 0) return EDGELLM_PT_TOKEN_EMBD;
    if (len == strlen("output.weight") && memcmp(name, "output.weight", len) == 0) return EDGELLM_PT_OUTPUT;
    for (size_t k = 0; k < sizeof map / sizeof map[0]; k++)
        if (ends_with(name, len, map[k].suffix) && *layer >= 0) {
            size_t sl = strlen(map[k].suffix);
            if (len > sl && name[len - sl - 1] == '.') return map[k].role;
        }
    return EDGELLM_PT_OTHER;
}

/* -------------------------------------------------------------------- recipes ---- */

bool edgellm_plan_use_more_bits(int i_layer, int n_layer)
{
    return i_layer < n_layer / 8 || i_layer >= 7 * n_layer / 8 || (i_layer - n_layer / 8) % 3 == 2;
}

/* edgellm's group-wise types 1000..1011: I4 g64/g128/g256 sym, then asym, then I8 likewise
 * (include/edgellm.h). */
static bool own_type(int type, int *bits, int *group, int *asym)
{
    if (type < EDGELLM_TYPE_I4_G64_SYM || type > EDGELLM_TYPE_I8_G256_ASYM) return false;
    int k = type - EDGELLM_TYPE_I4_G64_SYM;
    static const int groups[3] = {64, 128, 256};
    *group = groups[k % 3];
    *asym = (k / 3) % 2;
    *bits = k < 6 ? 4 : 8;
    return true;
}

static int block_size(int type)
{
    int bits, group, asym;
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (t && t->type_size > 0) return t->blck_size;
    if (own_type(type, &bits, &group, &asym)) return group;
    return 0;
}

int edgellm_plan_fallback_type(int type, int64_t ne0)
{
    /* exactly edgellm quantize's loop (quant_recipe.c, edgellm_quant_choose): try the next
     * type of edgellm_quant_fallback_type until the row fits */
    int t = type;
    while (t >= 0 && edgellm_plan_type_bytes(t, ne0, 1) == 0) t = edgellm_quant_fallback_type(t);
    return t >= 0 ? t : EDGELLM_TYPE_F32;
}

int edgellm_plan_tensor_type(const edgellm_plan_recipe *r, const edgellm_plan_tensor *t, int n_layer)
{
    if (r->file && t->file_type >= 0) return t->file_type;
    if (t->role == EDGELLM_PT_NORM) return EDGELLM_TYPE_F32;
    int type = r->base;
    if (t->role == EDGELLM_PT_OUTPUT && r->output >= 0) type = r->output;
    if ((t->role == EDGELLM_PT_ATTN_V || t->role == EDGELLM_PT_ATTN_QKV || t->role == EDGELLM_PT_FFN_DOWN) &&
        r->more_bits >= 0 && t->layer >= 0 && edgellm_plan_use_more_bits(t->layer, n_layer))
        type = r->more_bits;
    return edgellm_plan_fallback_type(type, t->ne0);
}

uint64_t edgellm_plan_type_bytes(int type, int64_t ne0, int64_t n_rows)
{
    if (ne0 < 0 || n_rows < 0) return 0;
    uint64_t row = 0;
    int bits, group, asym;
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    if (t && t->type_size > 0) {
        row = edgellm_type_row_size(type, ne0);
    } else if (own_type(type, &bits, &group, &asym)) {
        if (ne0 % group != 0) return 0;
        /* bits per weight + an f16 scale per group (+ an f16 min/zero for asymmetric) */
        row = (uint64_t)(ne0 / group) * (uint64_t)(group * bits / 8 + 2 + (asym ? 2 : 0));
    }
    uint64_t total;
    if (!row || !edgellm_mul_u64(row, (uint64_t)n_rows, &total)) return 0;
    return total;
}

static int name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (toupper((unsigned char)*a) != toupper((unsigned char)*b)) return 0;
    return *a == *b;
}

edgellm_status edgellm_plan_recipe_from_name(const char *name, edgellm_plan_recipe *out, edgellm_error *err)
{
    memset(out, 0, sizeof *out);
    out->more_bits = -1;
    out->output = -1;
    if (!name || !*name) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "empty precision name");
    /* edgellm's group-wise types by name or alias: "I4_G128_SYM", "i4_g128", "i4:g128:asym";
     * parsed here because their traits may not be registered yet */
    int bits, group, own_id = -1;
    char kind[8] = "";
    const bool bare = name_eq(name, "i4") || name_eq(name, "i8");   /* quantize --type's default: g128 sym */
    if (bare) {
        bits = name[1] - '0';
        group = 128;
    }
    if ((bare || sscanf(name, "%*[iI]%d_%*[gG]%d%7s", &bits, &group, kind) >= 2 ||
         sscanf(name, "%*[iI]%d:%*[gG]%d%7s", &bits, &group, kind) >= 2) &&
        (bits == 4 || bits == 8) && (group == 64 || group == 128 || group == 256)) {
        int asym = strstr(name, "asym") || strstr(name, "ASYM");
        own_id = EDGELLM_TYPE_I4_G64_SYM + (bits == 8 ? 6 : 0) + (asym ? 3 : 0) + (group == 64 ? 0 : group == 128 ? 1 : 2);
        snprintf(out->name, sizeof out->name, "I%d_G%d_%s", bits, group, asym ? "ASYM" : "SYM");
        out->base = own_id;
        /* edgellm quantize's rule (src/tools/quant_recipe.c): output Q6_K below 6 bits */
        out->output = bits == 4 ? EDGELLM_TYPE_Q6_K : -1;
        return EDGELLM_OK;
    }
    static const struct { const char *name; int base, more_bits, output; } mixes[] = {
        {"Q4_K_M", EDGELLM_TYPE_Q4_K, EDGELLM_TYPE_Q6_K, EDGELLM_TYPE_Q6_K},
        {"Q5_K_M", EDGELLM_TYPE_Q5_K, EDGELLM_TYPE_Q6_K, EDGELLM_TYPE_Q6_K},
    };
    for (size_t k = 0; k < sizeof mixes / sizeof mixes[0]; k++)
        if (name_eq(name, mixes[k].name)) {
            snprintf(out->name, sizeof out->name, "%s", mixes[k].name);
            out->base = mixes[k].base;
            out->more_bits = mixes[k].more_bits;
            out->output = mixes[k].output;
            return EDGELLM_OK;
        }
    int type = edgellm_type_from_name(name);
    if (type < 0 || block_size(type) <= 0 || type == EDGELLM_TYPE_Q8_K || type == EDGELLM_TYPE_Q8_1 ||
        (type >= EDGELLM_TYPE_I8 && type <= EDGELLM_TYPE_F64))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                            "unknown precision '%s' (valid: F32, F16, BF16, Q8_0, Q6_K, Q5_K_M, Q5_K, Q5_1, Q5_0, "
                            "Q4_K_M, Q4_K, Q4_1, Q4_0, Q3_K, Q2_K, i4_g64|g128|g256[_asym], i8_g64|g128|g256[_asym])",
                            name);
    snprintf(out->name, sizeof out->name, "%s", edgellm_type_name(type));
    out->base = type;
    const edgellm_type_traits *t = edgellm_type_get_traits(type);
    bool quantized = own_type(type, &bits, &group, &own_id) || (t && t->is_quantized);
    /* llama.cpp and edgellm quantize: output.weight -> Q6_K for types below 6 bits per
     * weight (Q6_K and Q8_0 keep their own) */
    if (quantized && t && t->type_size * 8.0 / t->blck_size < 6.0) out->output = EDGELLM_TYPE_Q6_K;
    return EDGELLM_OK;
}

/* GFLOP/s of each type's kernels, bench_kernels on the dev machine (2048 x 2048 matrix,
 * one thread, AVX-512 level, 2026-11-30): {type, pp64 prefill, L2-resident decode}. The
 * types without a tile kernel run prefill as a dot per row and token, ~10x slower than
 * Q4_0's; group-wise sizes other than 128 are taken as g128 (edgellm_plan_kernel_cost).
 * F16's prefill is its tile kernel's (2026-12-02): 0.24 of Q4_0's pp64 in the same runs
 * (85-89 against 359-374 GFLOP/s), times this table's Q4_0. */
static const struct { int type; double pp, dec; } kernel_gflops[] = {
    {EDGELLM_TYPE_Q4_0, 302, 157},  {EDGELLM_TYPE_Q8_0, 284, 108},  {EDGELLM_TYPE_Q4_K, 164, 149},
    {EDGELLM_TYPE_Q6_K, 149, 131},  {EDGELLM_TYPE_Q5_K, 67, 72},    {EDGELLM_TYPE_Q2_K, 74, 78},
    {EDGELLM_TYPE_Q3_K, 18, 20},    {EDGELLM_TYPE_Q4_1, 25, 29},    {EDGELLM_TYPE_Q5_0, 31, 39},
    {EDGELLM_TYPE_Q5_1, 28, 30},    {EDGELLM_TYPE_F16, 72, 57},     {EDGELLM_TYPE_BF16, 43, 57},
    {EDGELLM_TYPE_F32, 31, 33},     {EDGELLM_TYPE_I4_G128_SYM, 47, 51}, {EDGELLM_TYPE_I4_G128_ASYM, 33, 35},
    {EDGELLM_TYPE_I8_G128_SYM, 48, 58},
};

void edgellm_plan_kernel_cost_isa(int type, int arm, double *pp, double *dec)
{
    if (!arm) { edgellm_plan_kernel_cost(type, pp, dec); return; }
    /* {type, prefill, decode} cost relative to Q4_0 prefill, see plan.h */
    static const struct { int type; double pp, dec; } arm_cost[] = {
        {EDGELLM_TYPE_Q4_0, 1.0, 1.9}, {EDGELLM_TYPE_Q8_0, 1.0, 2.8},  {EDGELLM_TYPE_Q4_K, 1.1, 2.0},
        {EDGELLM_TYPE_Q6_K, 1.25, 2.3}, {EDGELLM_TYPE_F16, 3.3, 3.3}, {EDGELLM_TYPE_F32, 6.6, 6.6},
    };
    for (size_t i = 0; i < sizeof arm_cost / sizeof arm_cost[0]; i++)
        if (arm_cost[i].type == type) {
            *pp = arm_cost[i].pp;
            *dec = arm_cost[i].dec;
            return;
        }
    *pp = *dec = 8.0;   /* scalar reference dot */
}

void edgellm_plan_kernel_cost(int type, double *pp, double *dec)
{
    const double q4_pp = 302;
    int bits = 0, group = 0, asym = 0;
    if (own_type(type, &bits, &group, &asym))   /* any group size as g128; I8 asymmetric as I8 sym */
        type = bits == 8 ? EDGELLM_TYPE_I8_G128_SYM : asym ? EDGELLM_TYPE_I4_G128_ASYM : EDGELLM_TYPE_I4_G128_SYM;
    double gpp = q4_pp / 4, gdec = q4_pp / 4;     /* unmeasured: a slow dot loop */
    for (size_t i = 0; i < sizeof kernel_gflops / sizeof kernel_gflops[0]; i++)
        if (kernel_gflops[i].type == type) {
            gpp = kernel_gflops[i].pp;
            gdec = kernel_gflops[i].dec;
            break;
        }
    *pp = q4_pp / gpp;
    *dec = q4_pp / gdec;
}

void edgellm_plan_recipe_weights(const edgellm_plan_recipe *r, const edgellm_plan_tensor *t, size_t n, int n_layer,
                                 int tied, edgellm_plan_weights *out)
{
    edgellm_plan_recipe_weights_isa(r, t, n, n_layer, tied, 0, out);
}

void edgellm_plan_recipe_weights_isa(const edgellm_plan_recipe *r, const edgellm_plan_tensor *t, size_t n,
                                     int n_layer, int tied, int arm, edgellm_plan_weights *out)
{
    (void)tied;   /* a tied token_embd already carries the OUTPUT role */
    memset(out, 0, sizeof *out);
    double pp = 0, dec = 0, bat = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t bytes;
        const int type = edgellm_plan_tensor_type(r, &t[i], n_layer);   /* a file row: the file's type */
        if (r->file && t[i].file_type >= 0) bytes = t[i].file_bytes;
        else bytes = edgellm_plan_type_bytes(type, t[i].ne0, t[i].n_rows);
        uint64_t params = (uint64_t)t[i].ne0 * (uint64_t)t[i].n_rows;
        out->weight_bytes += bytes;
        out->n_params += params;
        if (t[i].role == EDGELLM_PT_TOKEN_EMBD) {
            out->read_bytes += t[i].n_rows ? bytes / (uint64_t)t[i].n_rows : 0;   /* one row per token */
        } else {
            out->read_bytes += bytes;
            if (t[i].role != EDGELLM_PT_NORM) {
                double cpp, cdec;
                edgellm_plan_kernel_cost_isa(type, arm, &cpp, &cdec);
                out->matmul_params += params;
                pp += cpp * (double)params;
                dec += cdec * (double)params;
                bat += (cpp < cdec ? cpp : cdec) * (double)params;
            }
        }
    }
    out->pp_params = pp < 9e18 ? (uint64_t)llround(pp) : UINT64_MAX / 2;   /* absurd shapes: no UB */
    out->dec_params = dec < 9e18 ? (uint64_t)llround(dec) : UINT64_MAX / 2;
    out->batch_params = bat < 9e18 ? (uint64_t)llround(bat) : UINT64_MAX / 2;
}

/* ------------------------------------------------------------------- memory ---- */

uint64_t edgellm_plan_kv_bytes(int n_layer, int n_ctx, int n_head_kv, int head_dim, int kv_type)
{
    if (n_layer < 0 || n_ctx < 0 || n_head_kv < 0 || head_dim < 0) return 0;
    if (kv_type != EDGELLM_TYPE_F32 && kv_type != EDGELLM_TYPE_F16 && kv_type != EDGELLM_TYPE_Q8_0) return 0;
    uint64_t row = edgellm_plan_type_bytes(kv_type, (int64_t)n_head_kv * head_dim, 1);   /* one position */
    uint64_t r;
    if (!row || !edgellm_mul_u64(row, 2u * (uint64_t)n_layer, &r) || !edgellm_mul_u64(r, (uint64_t)n_ctx, &r)) return 0;
    return r;
}

uint64_t edgellm_plan_model_kv_bytes(const edgellm_plan_model *m, int n_ctx, int kv_type)
{
    const int dv = m->head_dim_v > 0 ? m->head_dim_v : m->head_dim;
    const uint64_t k = edgellm_plan_kv_bytes(m->n_layer, n_ctx, m->n_head_kv, m->head_dim, kv_type) / 2;
    const uint64_t v = edgellm_plan_kv_bytes(m->n_layer, n_ctx, m->n_head_kv, dv, kv_type) / 2;
    return k && v && k + v >= k ? k + v : 0;
}

uint64_t edgellm_plan_scratch_bytes(const edgellm_plan_model *m, int n_ctx, int batch, int n_threads)
{
    const uint64_t E = (uint64_t)m->n_embd, F = (uint64_t)m->n_ff, V = (uint64_t)m->n_vocab;
    const uint64_t qd = (uint64_t)m->n_head * (uint64_t)m->head_dim;
    const uint64_t kvd = (uint64_t)m->n_head_kv * (uint64_t)m->head_dim;
    const uint64_t ctx = n_ctx > 0 ? (uint64_t)n_ctx : 1;
    const uint64_t b = batch > 0 ? (uint64_t)batch : 1;
    const uint64_t thr = (uint64_t)EDGELLM_MAX(1, EDGELLM_MIN(n_threads, m->n_head));
    /* per token: x, xb, xb2 [E]; q [qd]; k, v [kvd]; hb, hb2 [F] in f32, plus the 8-bit copy
     * of the widest matmul input (34 bytes per 32 values, Q8_0) */
    uint64_t widest = EDGELLM_MAX(EDGELLM_MAX(E, F), qd);
    uint64_t per_tok = 4 * (3 * E + qd + 2 * kvd + 2 * F) + (widest + 31) / 32 * 34;
    uint64_t ub = EDGELLM_MIN(ctx, (uint64_t)EDGELLM_PLAN_UBATCH);
    uint64_t prefill = ub * per_tok + ub * ctx * 4 * thr + V * 4;       /* scores [thr][ub][ctx] */
    uint64_t decode = b * (per_tok + (uint64_t)m->n_head * ctx * 4 + V * 4);
    return EDGELLM_MAX(prefill, decode);
}

uint64_t edgellm_plan_overhead_bytes(const edgellm_plan_model *m)
{
    return EDGELLM_PLAN_OVERHEAD_FIXED + (uint64_t)(m->n_vocab > 0 ? m->n_vocab : 0) * EDGELLM_PLAN_OVERHEAD_PER_TOKEN;
}

/* -------------------------------------------------------------------- speed ---- */

double edgellm_plan_efficiency(const edgellm_plan_device *d)
{
    if (d->decode_efficiency > 0) return d->decode_efficiency;
    return d->bw_measured ? EDGELLM_PLAN_EFF_MEASURED : EDGELLM_PLAN_EFF_PEAK;
}

int edgellm_plan_device_is_arm(const edgellm_plan_device *d)
{
    return (d->isa[0] | 0x20) == 'a' && (d->isa[1] | 0x20) == 'r' && (d->isa[2] | 0x20) == 'm' && !d->isa[3];
}

edgellm_status edgellm_plan_check_device(const edgellm_plan_device *d, edgellm_error *err)
{
    const double ram = (double)d->ram_bytes / 1073741824.0, usable = (double)d->usable_bytes / 1073741824.0;
    const char *why =
        !(ram >= 0.001 && ram <= 1048576.0)                          ? "RAM must be 0.001..1048576 GiB"
        : !(usable > 0 && d->usable_bytes <= d->ram_bytes)          ? "usable memory must be > 0 and at most the RAM"
        : !(d->bw_gbps >= 0.01 && d->bw_gbps <= 100000.0)           ? "bandwidth must be 0.01..100000 GB/s"
        : d->n_big_cores < 1 || d->n_big_cores > 1024               ? "big cores must be 1..1024"
        : d->n_little_cores < 0 || d->n_little_cores > 1024         ? "little cores must be 0..1024"
        : !(d->gflops_big >= 0.001 && d->gflops_big <= 1e6)         ? "GFLOP/s per big core must be 0.001..1000000"
        : !(d->gflops_little == 0 || (d->gflops_little >= 0.001 && d->gflops_little <= 1e6))
            ? "GFLOP/s per little core must be 0 or 0.001..1000000"
        : !(d->decode_efficiency == 0 || (d->decode_efficiency >= 0.05 && d->decode_efficiency <= 1.0))
            ? "decode efficiency must be 0 (default) or 0.05..1"
        : !(d->isa[0] == 0 || edgellm_plan_device_is_arm(d) || !strcmp(d->isa, "x86") || !strcmp(d->isa, "X86"))
            ? "isa must be \"arm\" or \"x86\""
            : NULL;
    if (why) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "device %.48s: %s", d->name[0] ? d->name : "(unnamed)", why);
    return EDGELLM_OK;
}

double edgellm_plan_flops_per_token(const edgellm_plan_model *m, uint64_t matmul_params, double pos)
{
    return 2.0 * (double)matmul_params + 4.0 * m->n_layer * (double)m->n_head * m->head_dim * pos;
}

/* GFLOP/s of the cores a token-parallel job runs on: the big cores (all cores when the
 * device has no big/little split). */
static double compute_gflops(const edgellm_plan_device *d)
{
    double g = d->n_big_cores * d->gflops_big;
    if (g <= 0) g = d->n_little_cores * d->gflops_little;
    return g > 0 ? g : 1.0;
}

double edgellm_plan_rows_per_token(const edgellm_plan_model *m)
{
    double q = (double)m->n_head * m->head_dim, kv = (double)m->n_head_kv * m->head_dim;
    return (double)m->n_layer * (q + 2 * kv + m->n_embd + 2.0 * m->n_ff + m->n_embd) + m->n_vocab;
}

double edgellm_plan_batch_steps_per_s(const edgellm_plan_model *m, const edgellm_plan_device *d, uint64_t read_bytes,
                                      uint64_t dec_params, uint64_t batch_params, int n_ctx, int kv_type, int batch,
                                      double efficiency)
{
    double kv = (double)edgellm_plan_model_kv_bytes(m, n_ctx, kv_type);
    double bw = d->bw_gbps * 1e9 * (efficiency > 0 ? efficiency : 1.0);
    int cores = d->n_big_cores > 0 ? d->n_big_cores : d->n_little_cores;
    if (cores < 1) cores = 1;
    if (batch < 1) batch = 1;
    double t_mem = ((double)read_bytes + batch * kv) / (bw > 0 ? bw : 1.0);
    t_mem += edgellm_plan_rows_per_token(m) * EDGELLM_PLAN_ROW_OVERHEAD_S / cores;   /* once per step */
    if (cores > 1) t_mem += m->n_layer * EDGELLM_PLAN_SYNC_OVERHEAD_S;
    double t_cmp = (edgellm_plan_flops_per_token(m, dec_params, n_ctx) +
                    (batch - 1) * edgellm_plan_flops_per_token(m, batch_params, n_ctx)) /
                   (compute_gflops(d) * 1e9);
    double t = t_mem > t_cmp ? t_mem : t_cmp;
    return t > 0 ? 1.0 / t : 0.0;
}

double edgellm_plan_decode_steps_per_s(const edgellm_plan_model *m, const edgellm_plan_device *d, uint64_t read_bytes,
                                       uint64_t matmul_params, int n_ctx, int kv_type, int batch, double efficiency)
{
    return edgellm_plan_batch_steps_per_s(m, d, read_bytes, matmul_params, matmul_params, n_ctx, kv_type, batch,
                                          efficiency);
}

double edgellm_plan_prefill_ms(const edgellm_plan_model *m, const edgellm_plan_device *d, uint64_t read_bytes,
                               uint64_t matmul_params, int n_prompt, double efficiency)
{
    if (n_prompt <= 0) return 0.0;
    double flops = n_prompt * edgellm_plan_flops_per_token(m, matmul_params, n_prompt / 2.0);
    double t_cmp = flops / (compute_gflops(d) * 1e9);
    double bw = d->bw_gbps * 1e9 * (efficiency > 0 ? efficiency : 1.0);
    int n_ub = (n_prompt + EDGELLM_PLAN_UBATCH - 1) / EDGELLM_PLAN_UBATCH;
    double t_mem = n_ub * (double)read_bytes / (bw > 0 ? bw : 1.0);
    return 1000.0 * ((t_cmp > t_mem ? t_cmp : t_mem) + n_ub * m->n_layer * EDGELLM_PLAN_LAYER_OVERHEAD_S);
}
