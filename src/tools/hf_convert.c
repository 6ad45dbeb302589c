/*
 * hf_convert.c — edgellm_convert_hf: a Hugging Face checkpoint folder (config.json,
 * safetensors, tokenizer files) into one GGUF v3 file, optionally quantized in the same
 * streamed pass.
 *
 * Flow:
 *   1. config.json (hf_config.c), the safetensors files mapped and validated
 *      (hf_safetensors.c), the vocabulary (hf_vocab.c) — all before anything is written;
 *   2. the tensor plan: every tensor the architecture needs, found by its Hugging Face
 *      name with the shape config.json implies (or the conversion stops, naming the file
 *      and the tensor), a type per tensor from the quantization recipe (quant_recipe.c:
 *      1-D tensors F32, matrices the --outtype, llama.cpp's Q6_K output and fallbacks);
 *      checkpoint tensors the architecture does not use are refused, except the rotary
 *      inv_freq buffers and a tied lm_head, which llama.cpp drops too;
 *   3. the GGUF metadata: the keys llama.cpp's convert_hf_to_gguf.py writes for the
 *      architecture (docs/import.md has the table), then the tokenizer.* keys;
 *   4. the tensors streamed (edgellm_gguf_writer_add_tensor_stream): rows read from the
 *      mapping (Q and K rows of a llama permuted, below), converted to float and to the
 *      target type by the quantizer's threaded row converter (edgellm_quant_rows), in
 *      chunks of CHUNK_BYTES; a NaN or infinity stops the conversion with the tensor's
 *      name. Memory: the mappings (page cache), one chunk, two rows per thread.
 *
 * Tensor names (gguf-py's tensor map, ggml-org/llama.cpp gguf-py/gguf/tensor_mapping.py,
 * gives the same pairs for these architectures):
 *   model.embed_tokens.weight                      token_embd.weight
 *   model.layers.N.input_layernorm.weight          blk.N.attn_norm.weight
 *   model.layers.N.self_attn.{q,k,v}_proj.weight   blk.N.attn_{q,k,v}.weight  (.bias: qwen2)
 *   model.layers.N.self_attn.o_proj.weight         blk.N.attn_output.weight
 *   model.layers.N.post_attention_layernorm.weight blk.N.ffn_norm.weight
 *   model.layers.N.mlp.{gate,up,down}_proj.weight  blk.N.ffn_{gate,up,down}.weight
 *   model.norm.weight                              output_norm.weight
 *   lm_head.weight                                 output.weight (absent when tied)
 * Shapes: a PyTorch [rows][cols] tensor is GGUF ne = {cols, rows}, the same bytes.
 *
 * Q/K permutation (llama only). Hugging Face's Llama applies RoPE to the halves of each
 * head (rotate_half: dimension i pairs with i + head_dim/2), GGUF "llama" to adjacent
 * pairs (2i, 2i+1). llama.cpp's converter reorders the rows of q_proj and k_proj per head
 * so that the same attention results (LlamaModel.permute in convert_hf_to_gguf.py,
 * conversion/llama.py in later trees: reshape(n_head, 2, head_dim/2, ...), swap axes 1 and
 * 2): GGUF row h*hd + 2i + p is Hugging Face row h*hd + p*hd/2 + i, p in {0, 1}, with the
 * KV head count for k_proj. Qwen2 uses the halves layout in GGUF too ("qwen2" runs NeoX
 * RoPE): no permutation.
 */
#include "hf.h"
#include "quantize.h"

#ifdef EDGELLM_HAVE_CJSON
#include "../common/threadpool.h"
#include "../format/gguf.h"
#include "../tensor/types.h"
#include <math.h>
#include <strings.h>
#include <sys/stat.h>

#define CHUNK_BYTES ((size_t)4 << 20)

typedef struct {
    char name[64];                   /* GGUF name                                         */
    const edgellm_st_tensor *src;    /* NULL: generated (rope_freqs)                      */
    const float *gen;                /* generated values [ne0]                            */
    int n_dims;
    int64_t ne[2];                   /* GGUF order                                        */
    int perm_hd;                     /* > 0: permute rows in heads of this size (Q/K)     */
    edgellm_quant_choice choice;
} plan_entry;

typedef struct {
    const char *dir;
    edgellm_hf_config cfg;
    edgellm_st_set *st;
    edgellm_hf_vocab vocab;
    plan_entry *plan;
    int n_plan, cap_plan;
    bool *used;                      /* [n tensors of st]                                 */
    float *rope_factors;
    edgellm_threadpool *pool;
    uint8_t *buf;
    size_t buf_bytes;
    float *scratch;
    uint64_t done_elems, total_elems;
    edgellm_progress_fn progress;
    void *progress_user;
    edgellm_error *err;
} cjob;

edgellm_hf_convert_params edgellm_hf_convert_default_params(void)
{
    edgellm_hf_convert_params p;
    memset(&p, 0, sizeof p);
    p.outtype = "auto";
    return p;
}

/* --------------------------------------------------------------- the plan ---- */

/* Find name with shape [rows][cols] (rows 0: a 1-D tensor of cols). */
static edgellm_status need(cjob *j, const char *hf, const char *gguf, int64_t rows, int64_t cols, int perm_hd,
                           bool optional, plan_entry **out)
{
    if (out) *out = NULL;
    const edgellm_st_tensor *t = edgellm_st_find(j->st, hf);
    if (!t) {
        if (optional) return EDGELLM_OK;
        return edgellm_fail(j->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' is missing (a %s checkpoint has it)",
                            edgellm_st_n_files(j->st) > 1 ? j->dir : edgellm_st_file_path(j->st, 0), hf,
                            j->cfg.hf_arch);
    }
    const bool ok = rows ? t->n_dims == 2 && t->shape[0] == rows && t->shape[1] == cols
                         : t->n_dims == 1 && t->shape[0] == cols;
    if (!ok) {
        char got[96] = "[";
        for (int d = 0; d < t->n_dims && d < 4; d++)
            snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t->shape[d]);
        snprintf(got + strlen(got), sizeof got - strlen(got), "%s]", t->n_dims > 4 ? ", ..." : "");
        if (rows)
            return edgellm_fail(j->err, EDGELLM_ERR_FORMAT,
                                "%s: tensor '%s' has shape %s; config.json implies [%lld, %lld]",
                                edgellm_st_file_path(j->st, t->file), hf, got, (long long)rows, (long long)cols);
        return edgellm_fail(j->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' has shape %s; config.json implies [%lld]",
                            edgellm_st_file_path(j->st, t->file), hf, got, (long long)cols);
    }
    if (j->n_plan >= j->cap_plan) return edgellm_fail(j->err, EDGELLM_ERR_FORMAT, "%s: too many tensors", j->dir);
    plan_entry *e = &j->plan[j->n_plan++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", gguf);
    e->src = t;
    e->n_dims = rows ? 2 : 1;
    e->ne[0] = cols;
    e->ne[1] = rows ? rows : 1;
    e->perm_hd = perm_hd;
    j->used[t - edgellm_st_tensor_at(j->st, 0)] = true;
    if (out) *out = e;
    return EDGELLM_OK;
}

static edgellm_status build_plan(cjob *j)
{
    const edgellm_hf_config *c = &j->cfg;
    const bool llama = !strcmp(c->arch, "llama");
    const int64_t E = c->n_embd, V = c->n_vocab, F = c->n_ff, Q = (int64_t)c->n_head * c->head_dim,
                  K = (int64_t)c->n_head_kv * c->head_dim;
    edgellm_status rc;
    j->cap_plan = c->n_layer * 12 + 8;
    j->plan = edgellm_calloc((size_t)j->cap_plan, sizeof *j->plan);
    j->used = edgellm_calloc((size_t)edgellm_st_n_tensors(j->st) + 1, 1);
    if (!j->plan || !j->used) return edgellm_fail_nomem(j->err, j->dir);
    if ((rc = need(j, "model.embed_tokens.weight", "token_embd.weight", V, E, 0, false, NULL))) return rc;
    if (!strcmp(c->rope_type, "llama3")) {
        if (!(j->rope_factors = edgellm_malloc((size_t)c->head_dim / 2 * sizeof(float))))
            return edgellm_fail_nomem(j->err, j->dir);
        edgellm_hf_llama3_rope_factors(c, j->rope_factors);
        plan_entry *e = &j->plan[j->n_plan++];
        snprintf(e->name, sizeof e->name, "rope_freqs.weight");
        e->gen = j->rope_factors;
        e->n_dims = 1;
        e->ne[0] = c->head_dim / 2;
        e->ne[1] = 1;
    }
    for (int l = 0; l < c->n_layer; l++) {
        char hf[128], g[64];
#define NEED(HF, G, R, C, P)                                                                                           \
    do {                                                                                                               \
        snprintf(hf, sizeof hf, "model.layers.%d." HF, l);                                                             \
        snprintf(g, sizeof g, "blk.%d." G, l);                                                                         \
        if ((rc = need(j, hf, g, (R), (C), (P), false, NULL))) return rc;                                              \
    } while (0)
        NEED("input_layernorm.weight", "attn_norm.weight", 0, E, 0);
        NEED("self_attn.q_proj.weight", "attn_q.weight", Q, E, llama ? c->head_dim : 0);
        NEED("self_attn.k_proj.weight", "attn_k.weight", K, E, llama ? c->head_dim : 0);
        NEED("self_attn.v_proj.weight", "attn_v.weight", K, E, 0);
        if (!llama) {
            NEED("self_attn.q_proj.bias", "attn_q.bias", 0, Q, 0);
            NEED("self_attn.k_proj.bias", "attn_k.bias", 0, K, 0);
            NEED("self_attn.v_proj.bias", "attn_v.bias", 0, K, 0);
        }
        NEED("self_attn.o_proj.weight", "attn_output.weight", E, Q, 0);
        NEED("post_attention_layernorm.weight", "ffn_norm.weight", 0, E, 0);
        NEED("mlp.gate_proj.weight", "ffn_gate.weight", F, E, 0);
        NEED("mlp.up_proj.weight", "ffn_up.weight", F, E, 0);
        NEED("mlp.down_proj.weight", "ffn_down.weight", E, F, 0);
#undef NEED
    }
    if ((rc = need(j, "model.norm.weight", "output_norm.weight", 0, E, 0, false, NULL))) return rc;
    /* the head: tied unless config.json says otherwise and lm_head.weight is there */
    const edgellm_st_tensor *head = edgellm_st_find(j->st, "lm_head.weight");
    if (c->tied == 0 && !head)
        return edgellm_fail(j->err, EDGELLM_ERR_FORMAT,
                            "%s: tensor 'lm_head.weight' is missing and tie_word_embeddings is false",
                            j->dir);
    if (c->tied != 1 && head) {
        if ((rc = need(j, "lm_head.weight", "output.weight", V, E, 0, false, NULL))) return rc;
    } else if (head) {
        j->used[head - edgellm_st_tensor_at(j->st, 0)] = true;   /* tied: the copy is not needed */
    }
    j->cfg.tied = !(c->tied != 1 && head);
    for (int64_t i = 0; i < edgellm_st_n_tensors(j->st); i++) {
        const edgellm_st_tensor *t = edgellm_st_tensor_at(j->st, i);
        const size_t n = strlen(t->name);
        if (j->used[i] || (n > 20 && !strcmp(t->name + n - 20, ".rotary_emb.inv_freq"))) continue;
        return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: tensor '%s' is not part of a %s that edgellm converts",
                            edgellm_st_file_path(j->st, t->file), t->name, c->hf_arch);
    }
    return EDGELLM_OK;
}

/* The scheme --outtype names: "auto" keeps the checkpoint's float type (of its first
 * matrix), "f32" "f16" "bf16", or a quantization type (edgellm_quant_scheme_parse). */
static edgellm_status pick_scheme(cjob *j, const edgellm_hf_convert_params *p, edgellm_quant_scheme *s)
{
    const char *t = p->outtype && *p->outtype ? p->outtype : "auto";
    if (!strcasecmp(t, "auto")) {
        t = "f32";
        for (int i = 0; i < j->n_plan; i++)
            if (j->plan[i].src && j->plan[i].n_dims == 2) {
                t = j->plan[i].src->dtype == EDGELLM_TYPE_BF16  ? "bf16"
                    : j->plan[i].src->dtype == EDGELLM_TYPE_F16 ? "f16"
                                                                : "f32";
                break;
            }
    }
    if (!strcasecmp(t, "bf16")) {   /* not a quantize type: a plain float scheme of its own */
        if (p->group > 0 || p->asym)
            return edgellm_fail(j->err, EDGELLM_ERR_MISUSE, "--group and --asym apply to i4 and i8 only, not bf16");
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "BF16");
        s->base_type = EDGELLM_TYPE_BF16;
        s->file_type = 32;   /* LLAMA_FTYPE_MOSTLY_BF16 (llama.cpp include/llama.h) */
        return EDGELLM_OK;
    }
    return edgellm_quant_scheme_parse(t, p->group, p->asym, s, j->err);
}

/* ---------------------------------------------------------------- metadata ---- */

static bool set_hparams(edgellm_gguf_writer *w, const edgellm_hf_config *c)
{
    char k[96];
    bool ok = true;
#define KEY(S) (snprintf(k, sizeof k, "%s." S, c->arch), k)
    ok = ok && edgellm_gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)c->n_layer);
    if (c->n_ctx > 0 && c->n_ctx <= UINT32_MAX)
        ok = ok && edgellm_gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)c->n_ctx);
    ok = ok && edgellm_gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)c->n_embd);
    ok = ok && edgellm_gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)c->n_ff);
    ok = ok && edgellm_gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)c->n_head);
    ok = ok && edgellm_gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)c->n_head_kv);
    if (!strcmp(c->rope_type, "linear")) {
        ok = ok && edgellm_gguf_writer_set_str(w, KEY("rope.scaling.type"), "linear");
        ok = ok && edgellm_gguf_writer_set_f32(w, KEY("rope.scaling.factor"), (float)c->rope_factor);
    } else if (!strcmp(c->rope_type, "yarn")) {
        ok = ok && edgellm_gguf_writer_set_str(w, KEY("rope.scaling.type"), "yarn");
        ok = ok && edgellm_gguf_writer_set_f32(w, KEY("rope.scaling.factor"), (float)c->rope_factor);
        ok = ok &&
             edgellm_gguf_writer_set_u32(w, KEY("rope.scaling.original_context_length"), (uint32_t)c->rope_orig_ctx);
        const struct { const char *s; double v;
        } y[] = {{"rope.scaling.yarn_ext_factor", c->yarn_ext_factor},
                 {"rope.scaling.yarn_attn_factor", c->yarn_attn_factor},
                 {"rope.scaling.yarn_beta_fast", c->yarn_beta_fast},
                 {"rope.scaling.yarn_beta_slow", c->yarn_beta_slow}};
        for (size_t i = 0; ok && i < sizeof y / sizeof y[0]; i++)
            if (!isnan(y[i].v)) {
                snprintf(k, sizeof k, "%s.%s", c->arch, y[i].s);
                ok = edgellm_gguf_writer_set_f32(w, k, (float)y[i].v);
            }
    }
    if (c->rope_theta > 0) ok = ok && edgellm_gguf_writer_set_f32(w, KEY("rope.freq_base"), (float)c->rope_theta);
    ok = ok && edgellm_gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), (float)c->rms_eps);
    if (c->has_head_dim) {
        ok = ok && edgellm_gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)c->head_dim);
        ok = ok && edgellm_gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)c->head_dim);
    }
    if (!strcmp(c->arch, "llama")) {
        ok = ok && edgellm_gguf_writer_set_u32(w, KEY("vocab_size"), (uint32_t)c->n_vocab);
        ok = ok && edgellm_gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)c->head_dim);
    }
#undef KEY
    return ok;
}

/* ----------------------------------------------------------------- tensors ---- */

typedef struct {
    const plan_entry *e;
} row_src;

/* HF row of GGUF row r (the permutation of the header comment). */
static int64_t hf_row(const plan_entry *e, int64_t r)
{
    if (e->perm_hd <= 0) return r;
    const int64_t hd = e->perm_hd, h = r / hd, j = r % hd;
    return h * hd + (j % 2) * (hd / 2) + j / 2;
}

static void read_row(const void *user, int64_t row, float *out)
{
    const plan_entry *e = ((const row_src *)user)->e;
    const int64_t n = e->ne[0];
    if (!e->src) { memcpy(out, e->gen, (size_t)n * sizeof *out); return; }
    const edgellm_st_tensor *t = e->src;
    const size_t es = t->dtype == EDGELLM_TYPE_F32 ? 4 : 2;
    const uint8_t *p = t->data + (size_t)hf_row(e, row) * (size_t)n * es;
    if (t->dtype == EDGELLM_TYPE_F32) memcpy(out, p, (size_t)n * 4);
    else if (t->dtype == EDGELLM_TYPE_F16)
        for (int64_t i = 0; i < n; i++) out[i] = edgellm_f16_to_f32(edgellm_rd_u16(p + 2 * i));
    else for (int64_t i = 0; i < n; i++) out[i] = edgellm_bf16_to_f32(edgellm_rd_u16(p + 2 * i));
}

static edgellm_status progress(cjob *j, const char *name, edgellm_error *err)
{
    if (!j->progress) return EDGELLM_OK;
    const double f = j->total_elems ? (double)j->done_elems / (double)j->total_elems : 1.0;
    if (j->progress(j->progress_user, f > 1 ? 1 : f, name))
        return edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: conversion cancelled", j->dir);
    return EDGELLM_OK;
}

static edgellm_status produce(void *user, uint64_t tag, edgellm_gguf_sink *sink, edgellm_error *err)
{
    cjob *j = user;
    const plan_entry *e = &j->plan[tag];
    const int64_t ne0 = e->ne[0], rows = e->ne[1];
    const int type = e->choice.type;
    const size_t dst_row = edgellm_type_row_size(type, ne0);
    const int64_t chunk = (int64_t)EDGELLM_MAX((size_t)1, j->buf_bytes / dst_row);
    const char *src_name = e->src ? e->src->name : e->name;
    row_src rs = {e};
    edgellm_status rc;
    for (int64_t r = 0; r < rows; r += chunk) {
        const int64_t n = EDGELLM_MIN(chunk, rows - r);
        edgellm_quant_err qe = {0};
        if (!edgellm_quant_rows(j->pool, type, ne0, r, n, read_row, &rs, j->buf, j->scratch, &qe))
            return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: tensor %s: cannot write rows of %lld as %s", j->dir,
                                src_name, (long long)ne0, edgellm_type_name(type));
        if (qe.n_nonfinite)
            return edgellm_fail(err, EDGELLM_ERR_NUMERIC, "%s: tensor '%s' has %llu NaN/inf values",
                                e->src ? edgellm_st_file_path(j->st, e->src->file) : j->dir, src_name,
                                (unsigned long long)qe.n_nonfinite);
        if (!edgellm_gguf_sink_put(sink, j->buf, (size_t)n * dst_row))
            return edgellm_fail(err, EDGELLM_ERR_IO, "%s: writing tensor %s failed", j->dir, e->name);
        j->done_elems += (uint64_t)(n * ne0);
        if ((rc = progress(j, e->name, err))) return rc;
    }
    return EDGELLM_OK;
}

/* ------------------------------------------------------------------- entry ---- */

static void fill_report(const cjob *j, const edgellm_quant_scheme *s, edgellm_hf_convert_report *r)
{
    const edgellm_hf_vocab *v = &j->vocab;
    snprintf(r->arch, sizeof r->arch, "%s", j->cfg.arch);
    snprintf(r->hf_arch, sizeof r->hf_arch, "%s", j->cfg.hf_arch);
    snprintf(r->tokenizer, sizeof r->tokenizer, "%s", v->spm ? "llama" : "gpt2");
    snprintf(r->pre, sizeof r->pre, "%s", v->pre ? v->pre : "");
    snprintf(r->tokenizer_source, sizeof r->tokenizer_source, "%s", v->source);
    snprintf(r->outtype, sizeof r->outtype, "%s", s ? s->name : "");
    snprintf(r->rope_scaling, sizeof r->rope_scaling, "%s", j->cfg.rope_type);
    r->n_vocab = v->n;
    r->n_merges = v->n_merges;
    r->n_padded = v->n_padded;
    r->has_chat_template = v->chat_template != NULL;
    r->n_tensors = j->n_plan;
    r->n_files = edgellm_st_n_files(j->st);
    r->tied = j->st ? j->cfg.tied : -1;
    r->permuted = j->st && !strcmp(j->cfg.arch, "llama");
    for (int i = 0; i < j->n_plan; i++) {
        const plan_entry *e = &j->plan[i];
        const uint64_t n = (uint64_t)(e->ne[0] * e->ne[1]);
        r->n_params += n;
        r->dst_bytes += edgellm_type_row_size(e->choice.type, e->ne[0]) * (uint64_t)e->ne[1];
        r->src_bytes += e->src ? e->src->size_bytes : n * 4;
        r->n_fallbacks += e->choice.fallback;
    }
}

static edgellm_status convert(cjob *j, const char *out_path, const edgellm_hf_convert_params *p,
                              edgellm_hf_convert_report *rep)
{
    edgellm_error *err = j->err;
    edgellm_status rc;
    edgellm_gguf_writer *w = NULL;
    edgellm_quant_scheme scheme;
    const bool vocab_only = p->vocab_only != 0;
    if (vocab_only) {
        edgellm_hf_config full;
        edgellm_hf_config_vocab_only(j->dir, &j->cfg);
        if (edgellm_hf_config_load(j->dir, &full, NULL) == EDGELLM_OK) j->cfg = full;
    } else if ((rc = edgellm_hf_config_load(j->dir, &j->cfg, err))) {
        return rc;
    }
    if (!vocab_only) {
        if ((rc = edgellm_st_open_dir(j->dir, &j->st, err))) return rc;
        for (int f = 0; f < edgellm_st_n_files(j->st); f++)
            if (edgellm_same_file(edgellm_st_file_path(j->st, f), out_path))
                return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: output is an input file", out_path);
        if ((rc = build_plan(j))) return rc;
        if ((rc = pick_scheme(j, p, &scheme))) return rc;
    }
    if ((rc = edgellm_hf_vocab_load(j->dir, j->cfg.n_vocab, &j->cfg, &j->vocab, err))) return rc;

    /* types: the recipe of edgellm_quantize_file */
    if (!vocab_only) {
        edgellm_quant_recipe rcp = {.scheme = &scheme, .n_layer = j->cfg.n_layer, .tied = j->cfg.tied != 0,
                                    .output_type = -1, .embd_type = -1};
        size_t max_ne0 = 1;
        j->buf_bytes = CHUNK_BYTES;
        for (int i = 0; i < j->n_plan; i++) {
            plan_entry *e = &j->plan[i];
            edgellm_quant_choose(&rcp, e->name, (uint32_t)e->n_dims, e->ne, e->src ? e->src->dtype : EDGELLM_TYPE_F32,
                                 &e->choice);
            max_ne0 = EDGELLM_MAX(max_ne0, (size_t)e->ne[0]);
            j->buf_bytes = EDGELLM_MAX(j->buf_bytes, edgellm_type_row_size(e->choice.type, e->ne[0]));
            j->total_elems += (uint64_t)(e->ne[0] * e->ne[1]);
        }
        const int nt = p->n_threads > 0 ? p->n_threads : edgellm_n_physical_cores();
        size_t n_scratch;
        if (!edgellm_mul_size((size_t)nt * 2, max_ne0, &n_scratch) || !(j->buf = edgellm_malloc(j->buf_bytes)) ||
            !(j->scratch = edgellm_malloc(n_scratch * sizeof(float))))
            return edgellm_fail_nomem(err, j->dir);
        if ((rc = edgellm_threadpool_new(nt, &j->pool, err))) return rc;
    }

    bool ok = (w = edgellm_gguf_writer_new()) != NULL;
    const char *arch = j->cfg.arch[0] ? j->cfg.arch : "llama";
    ok = ok && edgellm_gguf_writer_set_str(w, "general.architecture", arch);
    ok = ok && edgellm_gguf_writer_set_str(w, "general.name", j->cfg.name);
    bool edgellm_only = false;
    for (int i = 0; i < j->n_plan; i++) edgellm_only |= j->plan[i].choice.type >= 1000;
    if (ok && !vocab_only) {
        if (edgellm_only)
            ok = edgellm_gguf_writer_set_str(w, "edgellm.quant.scheme", scheme.label[0] ? scheme.label : scheme.name);
        else
            ok = edgellm_gguf_writer_set_u32(w, "general.file_type",
                                             (uint32_t)(scheme.file_type >= 0 ? scheme.file_type : 1));
        ok = ok && edgellm_gguf_writer_set_u32(w, "general.quantization_version", 2);
    }
    if (ok && j->cfg.arch[0]) ok = set_hparams(w, &j->cfg);
    ok = ok && edgellm_hf_vocab_to_gguf(&j->vocab, w);
    for (int i = 0; ok && i < j->n_plan; i++) {
        const plan_entry *e = &j->plan[i];
        ok = edgellm_gguf_writer_add_tensor_stream(w, e->name, e->choice.type, (uint32_t)e->n_dims, e->ne, produce, j,
                                                   (uint64_t)i);
    }
    if (!ok) rc = edgellm_fail_nomem(err, out_path);
    if (rep) fill_report(j, vocab_only ? NULL : &scheme, rep);
    if (rc == EDGELLM_OK) rc = progress(j, "", err);
    if (rc == EDGELLM_OK) rc = edgellm_gguf_writer_write(w, out_path, err);
    edgellm_gguf_writer_free(w);
    return rc;
}

edgellm_status edgellm_convert_hf(const char *dir, const char *out_path, const edgellm_hf_convert_params *pp,
                                  edgellm_hf_convert_report *report, edgellm_error *err)
{
    const edgellm_hf_convert_params p = pp ? *pp : edgellm_hf_convert_default_params();
    edgellm_hf_convert_report local;
    edgellm_hf_convert_report *rep = report ? report : &local;
    memset(rep, 0, sizeof *rep);
    if (!dir || !out_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "NULL folder or output path");
    if (p.n_threads < 0 || p.n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "threads %d outside 0..%d", p.n_threads, EDGELLM_MAX_THREADS);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a folder (convert --hf reads a model folder)", dir);
    static const char *const INPUTS[] = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer.model",
                                         "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                                         "vocab.json", "merges.txt", "chat_template.jinja", "model.safetensors.index.json"};
    for (size_t i = 0; i < sizeof INPUTS / sizeof *INPUTS; i++) {
        char in[4096];
        if (edgellm_hf_path(in, sizeof in, dir, INPUTS[i]) && edgellm_same_file(in, out_path))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: output is an input file", out_path);
    }
    const int oe = edgellm_out_check(out_path);
    if (oe) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write it: %s", out_path, strerror(oe));
    const double t0 = edgellm_time_ms();
    cjob j = {.dir = dir, .err = err, .progress = p.progress, .progress_user = p.progress_user};
    edgellm_status rc = convert(&j, out_path, &p, rep);
    rep->elapsed_ms = edgellm_time_ms() - t0;
    edgellm_threadpool_free(j.pool);
    edgellm_free(j.buf);
    edgellm_free(j.scratch);
    edgellm_free(j.plan);
    edgellm_free(j.used);
    edgellm_free(j.rope_factors);
    edgellm_hf_vocab_free(&j.vocab);
    edgellm_st_close(j.st);
    return rc;
}

#else /* no cJSON */

edgellm_hf_convert_params edgellm_hf_convert_default_params(void)
{
    edgellm_hf_convert_params p;
    memset(&p, 0, sizeof p);
    p.outtype = "auto";
    return p;
}

edgellm_status edgellm_convert_hf(const char *dir, const char *out_path, const edgellm_hf_convert_params *p,
                                  edgellm_hf_convert_report *report, edgellm_error *err)
{
    (void)dir; (void)out_path; (void)p;
    if (report) memset(report, 0, sizeof *report);
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "this edgellm was built without cJSON (libcjson-dev): it cannot "
                        "read Hugging Face checkpoints");
}

#endif /* EDGELLM_HAVE_CJSON */
