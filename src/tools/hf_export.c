/*
 * hf_export.c — edgellm_export_hf: a llama or qwen2 GGUF file back into a Hugging Face
 * folder, the inverse of hf_convert.c, so that GGUF -> HF -> GGUF can be checked:
 *
 *   config.json              the hyperparameters under transformers' names (hf_config.c)
 *   generation_config.json   bos_token_id, eos_token_id ([EOS, EOT, EOM] when the GGUF
 *                            names more ids that end generation)
 *   model.safetensors        (or model-0000K-of-0000N.safetensors and
 *                            model.safetensors.index.json) in Hugging Face names and
 *                            layout: Q/K rows of a llama permuted back, F32/F16/BF16
 *                            tensors kept, quantized ones dequantized to F32 (or all in
 *                            --outtype)
 *   tokenizer.model          SentencePiece vocabularies ("llama"): pieces, scores, types
 *                            (hf_spm.c), so that nothing of them is lost
 *   tokenizer.json           byte-level BPE ("gpt2"): vocab, merges, added tokens (control
 *                            tokens "special"), the pre_tokenizer section of the GGUF's
 *                            tokenizer.ggml.pre (hf_pretok.c), a TemplateProcessing
 *                            post-processor adding BOS/EOS when the GGUF says so
 *   tokenizer_config.json    bos/eos/unk/pad tokens, add_bos_token/add_eos_token, the chat
 *                            template(s) (a string, or the named list)
 *
 * llama3 rope scaling: GGUF keeps only the factors (rope_freqs.weight), config.json needs
 * the parameters. The factors are recomputed from factor = their largest value and Llama
 * 3.1's low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192
 * (meta-llama/Llama-3.1-8B config.json); if that does not give the same floats, the export
 * is refused rather than guessed.
 *
 * Everything is written into "OUT_DIR.tmp.PID" (each file through edgellm_output_*), which
 * is renamed to OUT_DIR once all files are complete; on failure it is removed. The
 * tokenizer files are hf_export_vocab.c's.
 */
#include "hf.h"

#ifdef EDGELLM_HAVE_CJSON
#include "../format/gguf.h"
#include "../tensor/types.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    const edgellm_gguf_tensor *t;
    char hf[128];
    int out_type;            /* F32, F16, BF16                                     */
    int perm_hd;             /* > 0: rows back to Hugging Face's halves layout     */
    int file;                /* shard index                                       */
    uint64_t bytes;          /* in the output                                     */
} ex_tensor;

typedef struct {
    const char *in, *out_dir;
    edgellm_hf_outdir out;     /* the temporary folder being written                */
    edgellm_gguf *g;
    char arch[16];
    ex_tensor *t;
    int n;
    int n_files;
    const edgellm_gguf_tensor *rope_freqs;
    edgellm_error *err;
    edgellm_hf_export_params p;
    edgellm_hf_export_report *rep;
    uint64_t done, total;
} ejob;

edgellm_hf_export_params edgellm_hf_export_default_params(void)
{
    edgellm_hf_export_params p;
    memset(&p, 0, sizeof p);
    p.outtype = "auto";
    return p;
}

/* ---------------------------------------------------------------- helpers ---- */

static int64_t get_int(const ejob *j, const char *suffix, int64_t def)
{
    char k[96];
    int64_t v = def;
    snprintf(k, sizeof k, "%s.%s", j->arch, suffix);
    edgellm_gguf_get_i64(j->g, k, &v);
    return v;
}

static bool get_f32(const ejob *j, const char *suffix, float *v)
{
    char k[96];
    snprintf(k, sizeof k, "%s.%s", j->arch, suffix);
    return edgellm_gguf_get_f32(j->g, k, v);
}

int edgellm_hf_gguf_id(const edgellm_gguf *g, const char *key)
{
    int64_t v = -1;
    if (!edgellm_gguf_get_i64(g, key, &v) || v < 0 || v >= INT32_MAX) return -1;
    return (int)v;
}

edgellm_status edgellm_hf_outdir_open(edgellm_hf_outdir *d, const char *name, edgellm_output **o)
{
    char p[4096];
    if (!edgellm_hf_path(p, sizeof p, d->path, name))
        return edgellm_fail(d->err, EDGELLM_ERR_IO, "%s: path too long", d->path);
    return edgellm_output_open(p, "wb", o, d->err);
}

edgellm_status edgellm_hf_outdir_commit(edgellm_hf_outdir *d, const char *name, edgellm_output *o)
{
    edgellm_status rc = edgellm_output_commit(o, d->err);
    char p[4096];
    if (rc == EDGELLM_OK && d->n_slots < (int)(sizeof d->slots / sizeof d->slots[0]) &&
        edgellm_hf_path(p, sizeof p, d->path, name))
        d->slots[d->n_slots++] = edgellm_tmp_register(p, false);   /* removed by a signal until the final rename */
    return rc;
}

static edgellm_status open_out(ejob *j, const char *name, edgellm_output **o)
{
    return edgellm_hf_outdir_open(&j->out, name, o);
}

static edgellm_status done(ejob *j, const char *name, edgellm_output *o)
{
    return edgellm_hf_outdir_commit(&j->out, name, o);
}

/* -------------------------------------------------------------- tensor names ---- */

static bool map_name(ejob *j, const edgellm_gguf_tensor *t, ex_tensor *e)
{
    char name[96];
    if (t->name.len >= sizeof name) return false;
    memcpy(name, t->name.ptr, (size_t)t->name.len);
    name[t->name.len] = 0;
    const bool llama = !strcmp(j->arch, "llama");
    static const char *const TOP[][2] = {
        {"token_embd.weight", "model.embed_tokens.weight"}, {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"}};
    for (size_t i = 0; i < 3; i++)
        if (!strcmp(name, TOP[i][0])) { snprintf(e->hf, sizeof e->hf, "%s", TOP[i][1]); return true; }
    static const char *const BLK[][2] = {
        {"attn_norm.weight", "input_layernorm.weight"}, {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"}, {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_q.bias", "self_attn.q_proj.bias"}, {"attn_k.bias", "self_attn.k_proj.bias"},
        {"attn_v.bias", "self_attn.v_proj.bias"}, {"attn_output.weight", "self_attn.o_proj.weight"},
        {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_up.weight", "mlp.up_proj.weight"}, {"ffn_down.weight", "mlp.down_proj.weight"}};
    int layer, off = 0;
    if (sscanf(name, "blk.%d.%n", &layer, &off) != 1 || off == 0 || layer < 0) return false;
    for (size_t i = 0; i < sizeof BLK / sizeof BLK[0]; i++)
        if (!strcmp(name + off, BLK[i][0])) {
            if (llama && strstr(BLK[i][0], ".bias")) return false;
            snprintf(e->hf, sizeof e->hf, "model.layers.%d.%s", layer, BLK[i][1]);
            if (llama && (i == 1 || i == 2)) e->perm_hd = (int)get_int(j, "rope.dimension_count", 0);
            return true;
        }
    return false;
}

static int out_type_of(const ejob *j, int src)
{
    const char *t = j->p.outtype && *j->p.outtype ? j->p.outtype : "auto";
    if (!strcasecmp(t, "f32")) return EDGELLM_TYPE_F32;
    if (!strcasecmp(t, "f16")) return EDGELLM_TYPE_F16;
    if (!strcasecmp(t, "bf16")) return EDGELLM_TYPE_BF16;
    return src == EDGELLM_TYPE_F16 || src == EDGELLM_TYPE_BF16 ? src : EDGELLM_TYPE_F32;
}

static edgellm_status plan(ejob *j)
{
    const int64_t n = edgellm_gguf_n_tensors(j->g);
    const int64_t hd = get_int(j, "rope.dimension_count", 0);
    if (!(j->t = edgellm_calloc((size_t)n + 1, sizeof *j->t))) return edgellm_fail_nomem(j->err, j->in);
    uint64_t in_file = 0;
    for (int64_t i = 0; i < n; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(j->g, i);
        if (edgellm_str_eq(t->name, "rope_freqs.weight")) { j->rope_freqs = t; continue; }
        ex_tensor *e = &j->t[j->n];
        memset(e, 0, sizeof *e);
        e->t = t;
        if (!map_name(j, t, e))
            return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED, "%s: tensor '%.*s' has no Hugging Face %s name", j->in,
                                (int)EDGELLM_MIN(t->name.len, 96), t->name.ptr, j->arch);
        const edgellm_type_traits *tr = edgellm_type_get_traits(t->type);
        if (!tr || !tr->to_float)
            return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s, which edgellm cannot "
                                "dequantize%s", j->in, e->hf, edgellm_type_name(t->type),
                                t->type == EDGELLM_TYPE_Q4_K_R16 ? " (a stored layout: rewrite the file with "
                                                                   "'edgellm quantize IN OUT --layout plain' first)"
                                                                 : "");
        if (t->n_dims > 2)
            return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED, "%s: tensor '%s' has %u dimensions", j->in, e->hf,
                                t->n_dims);
        if (e->perm_hd && (e->perm_hd != hd || hd <= 0 || hd % 2 || t->ne[1] % hd))
            return edgellm_fail(j->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' has %lld rows, not whole heads of %lld",
                                j->in, e->hf, (long long)t->ne[1], (long long)hd);
        e->out_type = out_type_of(j, t->type);
        if (tr->is_quantized) j->rep->n_dequantized++;
        e->bytes = t->n_elements * (e->out_type == EDGELLM_TYPE_F32 ? 4 : 2);
        if (j->p.max_shard_bytes && in_file && in_file + e->bytes > j->p.max_shard_bytes) { j->n_files++; in_file = 0; }
        e->file = j->n_files;
        in_file += e->bytes;
        j->total += t->n_elements;
        j->n++;
    }
    j->n_files++;
    if (!edgellm_gguf_find_tensor(j->g, "token_embd.weight"))
        return edgellm_fail(j->err, EDGELLM_ERR_FORMAT, "%s: no token_embd.weight", j->in);
    return EDGELLM_OK;
}

/* ------------------------------------------------------------- safetensors ---- */

static void shard_name(const ejob *j, int f, char *buf, size_t size)
{
    if (j->n_files == 1) snprintf(buf, size, "model.safetensors");
    else snprintf(buf, size, "model-%05d-of-%05d.safetensors", f + 1, j->n_files);
}

/* GGUF row of Hugging Face row r (the inverse of hf_convert.c's permutation). */
static int64_t gguf_row(const ex_tensor *e, int64_t r)
{
    if (e->perm_hd <= 0) return r;
    const int64_t hd = e->perm_hd, h = r / hd, k = r % hd;
    return h * hd + 2 * (k % (hd / 2)) + k / (hd / 2);
}

static edgellm_status write_shard(ejob *j, int f)
{
    char name[64];
    shard_name(j, f, name, sizeof name);
    char *hdr = NULL;
    size_t hlen = 0;
    FILE *m = open_memstream(&hdr, &hlen);
    if (!m) return edgellm_fail_nomem(j->err, name);
    fputs("{\"__metadata__\": {\"format\": \"pt\"}", m);
    uint64_t off = 0;
    for (int i = 0; i < j->n; i++) {
        const ex_tensor *e = &j->t[i];
        if (e->file != f) continue;
        fputs(", ", m);
        edgellm_hf_json_put_str(m, e->hf, strlen(e->hf));
        fprintf(m, ": {\"dtype\": \"%s\", \"shape\": [", edgellm_st_dtype_name(e->out_type));
        if (e->t->n_dims == 2) fprintf(m, "%lld, %lld", (long long)e->t->ne[1], (long long)e->t->ne[0]);
        else fprintf(m, "%lld", (long long)e->t->ne[0]);
        fprintf(m, "], \"data_offsets\": [%llu, %llu]}", (unsigned long long)off, (unsigned long long)(off + e->bytes));
        off += e->bytes;
    }
    fputc('}', m);
    while ((8 + ftell(m)) % 8) fputc(' ', m);   /* the data starts 8-byte aligned, as safetensors writes it */
    if (fclose(m) != 0 || !hdr) { free(hdr); return edgellm_fail_nomem(j->err, name); }

    edgellm_output *o = NULL;
    edgellm_status rc = open_out(j, name, &o);
    if (rc != EDGELLM_OK) { free(hdr); return rc; }
    FILE *out = edgellm_output_stream(o);
    uint8_t len8[8];
    for (int k = 0; k < 8; k++) len8[k] = (uint8_t)((uint64_t)hlen >> (8 * k));
    fwrite(len8, 1, 8, out);
    fwrite(hdr, 1, hlen, out);
    free(hdr);
    float *row = NULL;
    uint8_t *bytes = NULL;
    for (int i = 0; i < j->n && rc == EDGELLM_OK; i++) {
        const ex_tensor *e = &j->t[i];
        if (e->file != f) continue;
        const int64_t ne0 = e->t->ne[0], rows = (int64_t)(e->t->n_elements / (uint64_t)ne0);
        const size_t in_row = edgellm_type_row_size(e->t->type, ne0), es = e->out_type == EDGELLM_TYPE_F32 ? 4 : 2;
        float *nr = edgellm_realloc(row, (size_t)ne0 * sizeof *row);
        uint8_t *nb = nr ? edgellm_realloc(bytes, (size_t)ne0 * es) : NULL;
        if (nr) row = nr;
        if (nb) bytes = nb;
        if (!nr || !nb) { rc = edgellm_fail_nomem(j->err, name); break; }
        const edgellm_to_float_fn deq = edgellm_type_get_traits(e->t->type)->to_float;
        for (int64_t r = 0; r < rows; r++) {
            deq((const uint8_t *)e->t->data + (size_t)gguf_row(e, r) * in_row, row, ne0);
            for (int64_t k = 0; k < ne0; k++) {
                uint32_t u;
                if (e->out_type == EDGELLM_TYPE_F32) memcpy(&u, &row[k], 4);
                else u = e->out_type == EDGELLM_TYPE_F16 ? edgellm_f32_to_f16(row[k]) : edgellm_f32_to_bf16(row[k]);
                for (size_t b = 0; b < es; b++) bytes[(size_t)k * es + b] = (uint8_t)(u >> (8 * b));
            }
            fwrite(bytes, es, (size_t)ne0, out);
        }
        j->done += e->t->n_elements;
        j->rep->bytes += e->bytes;
        if (j->p.progress &&
            j->p.progress(j->p.progress_user, j->total ? (double)j->done / (double)j->total : 1.0, e->hf))
            rc = edgellm_fail(j->err, EDGELLM_ERR_CANCELLED, "%s: export cancelled", j->in);
    }
    edgellm_free(row);
    edgellm_free(bytes);
    if (rc != EDGELLM_OK) { edgellm_output_discard(o); return rc; }
    return done(j, name, o);
}

static edgellm_status write_index(ejob *j)
{
    edgellm_output *o = NULL;
    edgellm_status rc = open_out(j, "model.safetensors.index.json", &o);
    if (rc != EDGELLM_OK) return rc;
    FILE *f = edgellm_output_stream(o);
    uint64_t total = 0;
    for (int i = 0; i < j->n; i++) total += j->t[i].bytes;
    fprintf(f, "{\n  \"metadata\": {\"total_size\": %llu},\n  \"weight_map\": {", (unsigned long long)total);
    for (int i = 0; i < j->n; i++) {
        char name[64];
        shard_name(j, j->t[i].file, name, sizeof name);
        fputs(i ? ",\n    " : "\n    ", f);
        edgellm_hf_json_put_str(f, j->t[i].hf, strlen(j->t[i].hf));
        fprintf(f, ": \"%s\"", name);
    }
    fputs("\n  }\n}\n", f);
    return done(j, "model.safetensors.index.json", o);
}

/* ------------------------------------------------------------- config.json ---- */

/* llama3 factors back to config.json parameters (the header comment); false: not them. */
static bool llama3_params(const ejob *j, edgellm_hf_config *c)
{
    const edgellm_gguf_tensor *t = j->rope_freqs;
    if (t->type != EDGELLM_TYPE_F32 || t->n_elements != (uint64_t)c->head_dim / 2) return false;
    float have[1024], want[1024];
    if (t->n_elements > 1024) return false;
    memcpy(have, t->data, (size_t)t->n_elements * 4);
    float mx = 0;
    for (uint64_t i = 0; i < t->n_elements; i++) mx = fmaxf(mx, have[i]);
    snprintf(c->rope_type, sizeof c->rope_type, "llama3");
    c->rope_factor = mx;
    c->low_freq_factor = 1.0;
    c->high_freq_factor = 4.0;
    c->rope_orig_ctx = 8192;
    edgellm_hf_llama3_rope_factors(c, want);
    return !memcmp(have, want, (size_t)t->n_elements * 4);
}

static void put_num(FILE *f, const char *key, double v, bool is_float)
{
    fprintf(f, ",\n  \"%s\": ", key);
    if (is_float) edgellm_hf_json_put_float(f, (float)v);
    else fprintf(f, "%lld", (long long)v);
}

static edgellm_status write_config(ejob *j, const edgellm_gguf_tensor *embd)
{
    edgellm_hf_config c;
    memset(&c, 0, sizeof c);
    const bool llama = !strcmp(j->arch, "llama");
    c.n_layer = (int)get_int(j, "block_count", 0);
    c.n_embd = (int)get_int(j, "embedding_length", 0);
    c.n_ff = (int)get_int(j, "feed_forward_length", 0);
    c.n_head = (int)get_int(j, "attention.head_count", 0);
    c.n_head_kv = (int)get_int(j, "attention.head_count_kv", c.n_head);
    c.n_vocab = (int)embd->ne[1];
    c.n_ctx = get_int(j, "context_length", 0);
    const int64_t kl = get_int(j, "attention.key_length", 0);
    c.head_dim = kl > 0 ? (int)kl : c.n_head ? c.n_embd / c.n_head : 0;
    float eps = 1e-6f, theta = 0, factor = 0;
    get_f32(j, "attention.layer_norm_rms_epsilon", &eps);
    const bool has_theta = get_f32(j, "rope.freq_base", &theta);
    c.rope_theta = has_theta ? theta : 10000.0;
    if (c.n_layer <= 0 || c.n_embd <= 0 || c.n_ff <= 0 || c.n_head <= 0 || c.n_head_kv <= 0)
        return edgellm_fail(j->err, EDGELLM_ERR_FORMAT, "%s: missing %s hyperparameters", j->in, j->arch);
    if (j->rope_freqs && !llama3_params(j, &c))
        return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: rope_freqs.weight is not Llama 3.1's scaling with low/high "
                            "frequency factors 1/4 and 8192 original positions: config.json cannot say it",
                            j->in);
    edgellm_str st;
    char key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.type", j->arch);
    const bool scaled =
        edgellm_gguf_get_str(j->g, key, &st) && (edgellm_str_eq(st, "linear") || edgellm_str_eq(st, "yarn"));
    if (edgellm_gguf_get_str(j->g, key, &st) && !scaled && !edgellm_str_eq(st, "none"))
        return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED, "%s: rope scaling type %.*s cannot be exported", j->in,
                            (int)EDGELLM_MIN(st.len, 32), st.ptr);
    get_f32(j, "rope.scaling.factor", &factor);

    edgellm_output *o = NULL;
    edgellm_status rc = open_out(j, "config.json", &o);
    if (rc != EDGELLM_OK) return rc;
    FILE *f = edgellm_output_stream(o);
    fprintf(f, "{\n  \"architectures\": [\"%s\"],\n  \"model_type\": \"%s\"",
            llama ? "LlamaForCausalLM" : "Qwen2ForCausalLM", j->arch);
    put_num(f, "hidden_size", c.n_embd, false);
    put_num(f, "intermediate_size", c.n_ff, false);
    put_num(f, "num_hidden_layers", c.n_layer, false);
    put_num(f, "num_attention_heads", c.n_head, false);
    put_num(f, "num_key_value_heads", c.n_head_kv, false);
    if (kl > 0) put_num(f, "head_dim", (double)kl, false);
    if (c.n_ctx > 0) put_num(f, "max_position_embeddings", (double)c.n_ctx, false);
    put_num(f, "rms_norm_eps", eps, true);
    if (has_theta) put_num(f, "rope_theta", theta, true);
    put_num(f, "vocab_size", c.n_vocab, false);
    fprintf(f, ",\n  \"tie_word_embeddings\": %s", edgellm_gguf_find_tensor(j->g, "output.weight") ? "false" : "true");
    fprintf(f, ",\n  \"hidden_act\": \"silu\"");
    if (llama) fprintf(f, ",\n  \"attention_bias\": false,\n  \"mlp_bias\": false");
    else fprintf(f, ",\n  \"use_sliding_window\": false");
    const int t0 = j->n ? j->t[0].out_type : EDGELLM_TYPE_F32;
    fprintf(f, ",\n  \"torch_dtype\": \"%s\"",
            t0 == EDGELLM_TYPE_BF16 ? "bfloat16" : t0 == EDGELLM_TYPE_F16 ? "float16" : "float32");
    const int bos = edgellm_hf_gguf_id(j->g, "tokenizer.ggml.bos_token_id"),
              eos = edgellm_hf_gguf_id(j->g, "tokenizer.ggml.eos_token_id");
    if (bos >= 0) put_num(f, "bos_token_id", bos, false);
    if (eos >= 0) put_num(f, "eos_token_id", eos, false);
    if (!strcmp(c.rope_type, "llama3")) {
        fprintf(f, ",\n  \"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": ");
        edgellm_hf_json_put_float(f, (float)c.rope_factor);
        fprintf(f,
                ", \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 8192}");
    } else if (scaled) {
        const bool yarn = edgellm_str_eq(st, "yarn");
        fprintf(f, ",\n  \"rope_scaling\": {\"rope_type\": \"%s\", \"factor\": ", yarn ? "yarn" : "linear");
        edgellm_hf_json_put_float(f, factor);
        if (yarn) {
            fprintf(f, ", \"original_max_position_embeddings\": %lld",
                    (long long)get_int(j, "rope.scaling.original_context_length", 0));
            static const char *const Y[][2] = {{"rope.scaling.yarn_ext_factor", "extrapolation_factor"},
                                               {"rope.scaling.yarn_attn_factor", "attention_factor"},
                                               {"rope.scaling.yarn_beta_fast", "beta_fast"},
                                               {"rope.scaling.yarn_beta_slow", "beta_slow"}};
            for (size_t i = 0; i < 4; i++) {
                float v;
                if (!get_f32(j, Y[i][0], &v)) continue;
                fprintf(f, ", \"%s\": ", Y[i][1]);
                edgellm_hf_json_put_float(f, v);
            }
        }
        fputc('}', f);
    } else {
        fprintf(f, ",\n  \"rope_scaling\": null");
    }
    fputs("\n}\n", f);
    return done(j, "config.json", o);
}

static edgellm_status write_generation_config(ejob *j)
{
    const int bos = edgellm_hf_gguf_id(j->g, "tokenizer.ggml.bos_token_id"),
              eos = edgellm_hf_gguf_id(j->g, "tokenizer.ggml.eos_token_id");
    const int eot = edgellm_hf_gguf_id(j->g, "tokenizer.ggml.eot_token_id"),
              eom = edgellm_hf_gguf_id(j->g, "tokenizer.ggml.eom_token_id");
    if (bos < 0 && eos < 0) return EDGELLM_OK;
    edgellm_output *o = NULL;
    edgellm_status rc = open_out(j, "generation_config.json", &o);
    if (rc != EDGELLM_OK) return rc;
    FILE *f = edgellm_output_stream(o);
    fputs("{", f);
    if (bos >= 0) fprintf(f, "\n  \"bos_token_id\": %d%s", bos, eos >= 0 ? "," : "");
    if (eos >= 0 && eot < 0 && eom < 0) fprintf(f, "\n  \"eos_token_id\": %d", eos);
    else if (eos >= 0) {
        fprintf(f, "\n  \"eos_token_id\": [%d", eos);
        if (eot >= 0) fprintf(f, ", %d", eot);
        if (eom >= 0) fprintf(f, ", %d", eom);
        fputs("]", f);
    }
    fputs("\n}\n", f);
    return done(j, "generation_config.json", o);
}

/* ------------------------------------------------------------------- entry ---- */

/* 0 when path does not exist or is an empty folder; else an errno-like code. */
static int dir_state(const char *path, bool *exists)
{
    struct stat st;
    *exists = false;
    if (stat(path, &st) != 0) return errno == ENOENT ? 0 : errno;
    *exists = true;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    DIR *d = opendir(path);
    if (!d) return errno;
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) { rc = ENOTEMPTY; break; }
    closedir(d);
    return rc;
}

static void remove_tmp(const char *tmp)
{
    DIR *d = opendir(tmp);
    if (d) {
        char p[4096];
        for (struct dirent *e; (e = readdir(d));)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && edgellm_hf_path(p, sizeof p, tmp, e->d_name))
                unlink(p);
        closedir(d);
    }
    rmdir(tmp);
}

static edgellm_status run(ejob *j)
{
    edgellm_status rc;
    edgellm_str arch;
    if (!edgellm_gguf_get_str(j->g, "general.architecture", &arch)) arch = (edgellm_str){"", 0};
    snprintf(j->arch, sizeof j->arch, "%.*s", (int)EDGELLM_MIN(arch.len, 15), arch.ptr);
    snprintf(j->rep->arch, sizeof j->rep->arch, "%s", j->arch);
    const char *tf = NULL;
    if (j->p.vocab_only) {
        j->n_files = 0;
        rc = edgellm_hf_export_tokenizer(j->g, j->in, 0, &j->out, &tf);
        if (tf) snprintf(j->rep->tokenizer_file, sizeof j->rep->tokenizer_file, "%s", tf);
        return rc;
    }
    if (!edgellm_str_eq(arch, "llama") && !edgellm_str_eq(arch, "qwen2"))
        return edgellm_fail(j->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: only llama and qwen2 models are exported (this one is "
                            "'%s'; --vocab-only writes its tokenizer)",
                            j->in, j->arch);
    if ((rc = plan(j))) return rc;
    if ((rc = write_config(j, edgellm_gguf_find_tensor(j->g, "token_embd.weight"))) ||
        (rc = write_generation_config(j)) ||
        (rc = edgellm_hf_export_tokenizer(j->g, j->in, get_int(j, "context_length", 0), &j->out, &tf)))
        return rc;
    snprintf(j->rep->tokenizer_file, sizeof j->rep->tokenizer_file, "%s", tf);
    for (int f = 0; f < j->n_files && rc == EDGELLM_OK; f++) rc = write_shard(j, f);
    if (rc == EDGELLM_OK && j->n_files > 1) rc = write_index(j);
    j->rep->n_tensors = j->n;
    j->rep->n_files = j->n_files;
    return rc;
}

edgellm_status edgellm_export_hf(const char *gguf_path, const char *out_dir, const edgellm_hf_export_params *pp,
                                 edgellm_hf_export_report *report, edgellm_error *err)
{
    edgellm_hf_export_report local;
    edgellm_hf_export_report *rep = report ? report : &local;
    memset(rep, 0, sizeof *rep);
    ejob j = {.in = gguf_path, .out_dir = out_dir, .err = err, .rep = rep,
              .p = pp ? *pp : edgellm_hf_export_default_params()};
    j.out.err = err;
    if (!gguf_path || !out_dir || !*out_dir)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "NULL model or output folder");
    const char *t = j.p.outtype && *j.p.outtype ? j.p.outtype : "auto";
    if (strcasecmp(t, "auto") && strcasecmp(t, "f32") && strcasecmp(t, "f16") && strcasecmp(t, "bf16"))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "--outtype %s: export writes auto, f32, f16 or bf16", t);
    bool exists;
    const int ds = dir_state(out_dir, &exists);
    if (ds) return edgellm_fail(err, ds == ENOTEMPTY || ds == ENOTDIR ? EDGELLM_ERR_MISUSE : EDGELLM_ERR_IO,
                                "%s: %s (export writes a new folder, or into an empty one)", out_dir,
                                ds == ENOTEMPTY ? "is not empty" : strerror(ds));
    size_t n = strlen(out_dir);
    while (n > 1 && out_dir[n - 1] == '/') n--;
    if (snprintf(j.out.path, sizeof j.out.path, "%.*s.tmp.%ld", (int)n, out_dir, (long)getpid()) >=
        (int)sizeof j.out.path - 64)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: path too long", out_dir);
    const double t0 = edgellm_time_ms();
    edgellm_status rc = edgellm_gguf_open(gguf_path, &j.g, err);   /* the input first: nothing made for a bad one */
    if (rc != EDGELLM_OK) return rc;
    if (mkdir(j.out.path, 0777) != 0) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot create it: %s", j.out.path, strerror(errno));
        edgellm_gguf_close(j.g);
        return rc;
    }
    const int dir_slot = edgellm_tmp_register(j.out.path, true);
    rc = run(&j);
    if (rc == EDGELLM_OK && rename(j.out.path, out_dir) != 0)
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot rename %s into place: %s", out_dir, j.out.path,
                          strerror(errno));
    if (rc != EDGELLM_OK) remove_tmp(j.out.path);
    for (int i = 0; i < j.out.n_slots; i++) edgellm_tmp_unregister(j.out.slots[i]);
    edgellm_tmp_unregister(dir_slot);
    edgellm_free(j.t);
    edgellm_gguf_close(j.g);
    rep->elapsed_ms = edgellm_time_ms() - t0;
    return rc;
}

#else /* no cJSON */

edgellm_hf_export_params edgellm_hf_export_default_params(void)
{
    edgellm_hf_export_params p;
    memset(&p, 0, sizeof p);
    p.outtype = "auto";
    return p;
}

edgellm_status edgellm_export_hf(const char *gguf_path, const char *out_dir, const edgellm_hf_export_params *p,
                                 edgellm_hf_export_report *report, edgellm_error *err)
{
    (void)gguf_path; (void)out_dir; (void)p;
    if (report) memset(report, 0, sizeof *report);
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "this edgellm was built without cJSON (libcjson-dev): it cannot "
                        "write Hugging Face folders");
}

#endif /* EDGELLM_HAVE_CJSON */
