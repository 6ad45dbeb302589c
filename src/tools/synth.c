/*
 * synth.c — edgellm_synth: a random-weight GGUF model with a real architecture's exact
 * shape (`edgellm synth`), so that load time, speed and memory can be measured without
 * downloading the model. The file is a normal llama/qwen2 GGUF: edgellm and llama.cpp load
 * it (for standard types), only the weights are noise.
 *
 * Tensors (GGUF ne order, ne[0] = row length; E = n_embd, KV = n_head_kv * head_dim,
 * FF = n_ff, V = n_vocab), in this order:
 *   token_embd.weight {E, V}   output_norm.weight {E}   output.weight {E, V} (untied only)
 *   blk.N.attn_norm.weight {E}  attn_q {E, E}  attn_k {E, KV}  attn_v {E, KV}
 *   blk.N.attn_{q,k,v}.bias {E}/{KV}/{KV} (qwen2)  attn_output {E, E}
 *   blk.N.ffn_norm.weight {E}  ffn_gate {E, FF}  ffn_up {E, FF}  ffn_down {FF, E}
 * Values: matrices ~ N(0, std^2) (std 0.02 by default, so activations stay small and the
 * forward pass finite), norm weights 1, biases 0. With branch_scale s != 1 the residual
 * branches' output matrices (attn_output, ffn_down) are ~ N(0, (s std)^2): each block then adds
 * little to the residual stream, so the last hidden state is nearly the last token's embedding
 * and greedy decoding nearly iterates a fixed map of the vocabulary (its text falls into a
 * cycle), while every matrix keeps its size and type (the same bytes per token). Matrix types follow the recipe of
 * `edgellm quantize` (quant_recipe.c) as if the source were F32, fallbacks included.
 *
 * Randomness: row r of tensor t is generated from its own splitmix64 stream seeded with
 * (seed, t, r), Gaussian by Box-Muller, so a file depends only on the seed, never on the
 * thread count or the order rows are produced in. Tensors are streamed to the writer in
 * chunks (edgellm_gguf_writer_add_tensor_stream): memory stays at one chunk buffer plus
 * two rows per thread, even for a 7B shape.
 *
 * Tokenizer metadata: a SentencePiece-style ("llama") vocabulary of exactly V tokens —
 * <unk> (id 0, type 2 unknown), <s> (1, control), </s> (2, control), the 256 byte tokens
 * <0x00>..<0xFF> (type 6 byte, which byte fallback needs), then filler pieces that are
 * unique lower-case letter strings, every other one with the "▁" word prefix (type 1
 * normal, score -k). Token types per the GGUF spec (ggml-org/ggml docs/gguf.md).
 */
#include "quantize.h"
#include "../common/threadpool.h"
#include "../format/gguf.h"
#include "../tensor/quant.h"
#include "../tensor/types.h"
#include <math.h>
#include <stdio.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#define CHUNK_BYTES ((size_t)4 << 20)
#define MAX_TENSOR_NAME 64

typedef enum { FILL_GAUSS, FILL_ONES, FILL_ZEROS } fill_kind;

typedef struct {
    char      name[MAX_TENSOR_NAME];
    uint32_t  n_dims;
    int64_t   ne[2];
    int       type;
    fill_kind fill;
    float     scale;    /* of std */
} synth_tensor;

typedef struct {
    synth_tensor *t;
    int n_t;
    uint64_t seed;
    float std;
    const char *path;
    edgellm_threadpool *pool;
    uint8_t *buf;
    size_t buf_bytes;
    float *scratch;
    uint64_t done, total;
    edgellm_progress_fn progress;
    void *progress_user;
} synth_job;

/* ---- random numbers ---- */
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]: 53 random bits, never 0 (log stays finite). */
static double uniform01(uint64_t *s) { return ((double)(splitmix64(s) >> 11) + 1.0) * 0x1.0p-53; }

typedef struct {
    const synth_job *job;
    int index;              /* tensor index */
    int64_t ne0;
} gauss_rows;

static void gauss_row(const void *user, int64_t row, float *out)
{
    const gauss_rows *g = user;
    uint64_t s = g->job->seed ^ ((uint64_t)g->index * 0xD1B54A32D192ED03ull);
    s = splitmix64(&s) ^ ((uint64_t)row * 0x8CB92BA72F3D8DD7ull);
    const double two_pi = 6.283185307179586;
    const float sd = g->job->std * g->job->t[g->index].scale;
    for (int64_t i = 0; i < g->ne0; i += 2) {
        double r = sqrt(-2.0 * log(uniform01(&s))), a = two_pi * uniform01(&s);
        out[i] = (float)(r * cos(a)) * sd;
        if (i + 1 < g->ne0) out[i + 1] = (float)(r * sin(a)) * sd;
    }
}

static edgellm_status report_progress(synth_job *j, const char *what, edgellm_error *err)
{
    if (!j->progress) return EDGELLM_OK;
    double f = j->total ? (double)j->done / (double)j->total : 1.0;
    if (j->progress(j->progress_user, f > 1 ? 1 : f, what))
        return edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: cancelled", j->path);
    return EDGELLM_OK;
}

static edgellm_status produce(void *user, uint64_t tag, edgellm_gguf_sink *sink, edgellm_error *err)
{
    synth_job *j = user;
    const synth_tensor *t = &j->t[tag];
    const int64_t ne0 = t->ne[0], rows = t->n_dims > 1 ? t->ne[1] : 1;
    const size_t row_bytes = edgellm_type_row_size(t->type, ne0);
    const int64_t chunk = (int64_t)EDGELLM_MAX((size_t)1, j->buf_bytes / row_bytes);
    gauss_rows g = {j, (int)tag, ne0};
    for (int64_t r = 0; r < rows; r += chunk) {
        int64_t n = EDGELLM_MIN(chunk, rows - r);
        if (t->fill == FILL_GAUSS) {
            if (!edgellm_quant_rows(j->pool, t->type, ne0, r, n, gauss_row, &g, j->buf, j->scratch, NULL))
                return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: %s: cannot write rows of %lld as %s", j->path,
                                    t->name, (long long)ne0, edgellm_type_name(t->type));
        } else {   /* 1-D F32 */
            float *f = (float *)(void *)j->buf;
            for (int64_t i = 0; i < ne0; i++) f[i] = t->fill == FILL_ONES ? 1.0f : 0.0f;
        }
        if (!edgellm_gguf_sink_put(sink, j->buf, (size_t)n * row_bytes))
            return edgellm_fail(err, EDGELLM_ERR_IO, "%s: writing %s failed", j->path, t->name);
        j->done += (uint64_t)(n * ne0);
        edgellm_status rc = report_progress(j, t->name, err);
        if (rc) return rc;
    }
    return EDGELLM_OK;
}

edgellm_synth_params edgellm_synth_default_params(void)
{
    edgellm_synth_params p;
    memset(&p, 0, sizeof p);
    p.type = "q4_0";
    p.seed = 42;
    p.std = 0.02f;
    p.branch_scale = 1.0f;
    return p;
}

static edgellm_status check_shape(const edgellm_shape *s, edgellm_error *err)
{
    if (strcmp(s->arch, "llama") && strcmp(s->arch, "qwen2"))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "arch '%s' is not llama or qwen2", s->arch);
    if (s->n_layer <= 0 || s->n_embd <= 0 || s->n_head <= 0 || s->n_head_kv <= 0 || s->n_ff <= 0 ||
        s->n_vocab <= 0 || s->n_layer > 1024 || s->n_embd > 65536 || s->n_ff > (1 << 20) || s->n_vocab > (1 << 22))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "every shape number must be positive and sane "
                            "(n_layer %d, n_embd %d, n_head %d, n_head_kv %d, n_ff %d, n_vocab %d)", s->n_layer,
                            s->n_embd, s->n_head, s->n_head_kv, s->n_ff, s->n_vocab);
    if (s->n_embd % s->n_head || s->n_head % s->n_head_kv || (s->n_embd / s->n_head) % 2)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "n_embd %d must divide into n_head %d heads of even "
                            "size, and n_head into n_head_kv %d groups", s->n_embd, s->n_head, s->n_head_kv);
    if (s->n_vocab < 259)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "n_vocab %d < 259 (3 specials + 256 byte tokens)",
                            s->n_vocab);
    if (!(s->rms_eps > 0) || !(s->rope_theta > 0) || s->n_ctx_train <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "rms_eps, rope_theta and n_ctx_train must be > 0");
    return EDGELLM_OK;
}

/* Bijective base-26 letters of k ("a".."z", "aa"...), with "▁" before odd k. */
static void filler_piece(uint64_t k, char *buf, size_t size)
{
    char letters[16];
    int n = 0;
    for (uint64_t v = k / 2 + 1; v > 0 && n < 15; v = (v - 1) / 26) letters[n++] = (char)('a' + (v - 1) % 26);
    size_t o = 0;
    if (k % 2 && size > 4) { memcpy(buf, "\xe2\x96\x81", 3); o = 3; }
    while (n > 0 && o + 1 < size) buf[o++] = letters[--n];
    buf[o] = 0;
}

static bool set_vocab(edgellm_gguf_writer *w, int n_vocab)
{
    const size_t piece = 24;
    char *text = edgellm_malloc((size_t)n_vocab * piece);
    const char **ptrs = edgellm_malloc((size_t)n_vocab * sizeof *ptrs);
    float *scores = edgellm_malloc((size_t)n_vocab * sizeof *scores);
    int32_t *types = edgellm_malloc((size_t)n_vocab * sizeof *types);
    bool ok = text && ptrs && scores && types;
    for (int i = 0; ok && i < n_vocab; i++) {
        char *s = text + (size_t)i * piece;
        ptrs[i] = s;
        scores[i] = 0.0f;
        if (i == 0) { snprintf(s, piece, "<unk>"); types[i] = 2; }
        else if (i == 1) { snprintf(s, piece, "<s>"); types[i] = 3; }
        else if (i == 2) { snprintf(s, piece, "</s>"); types[i] = 3; }
        else if (i < 3 + 256) { snprintf(s, piece, "<0x%02X>", i - 3); types[i] = 6; }
        else {
            uint64_t k = (uint64_t)(i - 259);
            filler_piece(k, s, piece);
            scores[i] = -(float)k;
            types[i] = 1;
        }
    }
    ok = ok && edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama") &&
         edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", ptrs, NULL, (uint64_t)n_vocab) &&
         edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.scores", EDGELLM_GGUF_FLOAT32, scores, (uint64_t)n_vocab) &&
         edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, types, (uint64_t)n_vocab) &&
         edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1) &&
         edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2) &&
         edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0) &&
         edgellm_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true) &&
         edgellm_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false);
    edgellm_free(text);
    edgellm_free(ptrs);
    edgellm_free(scores);
    edgellm_free(types);
    return ok;
}

static bool set_hparams(edgellm_gguf_writer *w, const edgellm_shape *s, const edgellm_synth_params *p,
                        const edgellm_quant_scheme *sc, bool edgellm_only)
{
    char key[96], name[96];
    const char *a = s->arch;
    bool ok = edgellm_gguf_writer_set_str(w, "general.architecture", a);
    snprintf(name, sizeof name, "%s (synthetic, random weights)", s->name[0] ? s->name : "custom");
    ok = ok && edgellm_gguf_writer_set_str(w, "general.name", name);
    if (edgellm_only) {
        char label[64];
        snprintf(label, sizeof label, "%s", sc->edgellm_only ? sc->label : sc->name);
        ok = ok && edgellm_gguf_writer_set_str(w, "edgellm.quant.scheme", label);
    } else {
        ok = ok && edgellm_gguf_writer_set_u32(w, "general.file_type", (uint32_t)sc->file_type);
    }
    ok = ok && edgellm_gguf_writer_set_u32(w, "general.quantization_version", 2);
    ok = ok && edgellm_gguf_writer_set_u64(w, "edgellm.synth.seed", p->seed);
    ok = ok && edgellm_gguf_writer_set_f32(w, "edgellm.synth.std", p->std);
#define U32(SUFFIX, V) (snprintf(key, sizeof key, "%s." SUFFIX, a), edgellm_gguf_writer_set_u32(w, key, (uint32_t)(V)))
#define F32(SUFFIX, V) (snprintf(key, sizeof key, "%s." SUFFIX, a), edgellm_gguf_writer_set_f32(w, key, (V)))
    ok = ok && U32("context_length", s->n_ctx_train) && U32("embedding_length", s->n_embd) &&
         U32("block_count", s->n_layer) && U32("feed_forward_length", s->n_ff) &&
         U32("attention.head_count", s->n_head) && U32("attention.head_count_kv", s->n_head_kv) &&
         F32("attention.layer_norm_rms_epsilon", s->rms_eps) && F32("rope.freq_base", s->rope_theta) &&
         U32("rope.dimension_count", s->n_embd / s->n_head);
#undef U32
#undef F32
    return ok && set_vocab(w, s->n_vocab);
}

/* Refuse before any work when out_path is a folder, or when the file would not fit on the
 * output folder's file system (statvfs f_bavail * f_frsize). The size estimate is the tensor
 * data (row sizes, plus 32-byte alignment per tensor) plus the header: ~40 bytes of vocab
 * per token and ~96 bytes of tensor info per tensor, plus 64 KiB for the other keys. */
static edgellm_status check_output(const char *out_path, const edgellm_shape *s, const synth_tensor *t, int n,
                                   edgellm_error *err)
{
    struct stat st;
    if (stat(out_path, &st) == 0 && S_ISDIR(st.st_mode))
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: is a folder, not a file name", out_path);
    uint64_t need = 65536 + (uint64_t)s->n_vocab * 40;
    for (int i = 0; i < n; i++) {
        uint64_t rows = t[i].n_dims > 1 ? (uint64_t)t[i].ne[1] : 1;
        need += (uint64_t)edgellm_type_row_size(t[i].type, t[i].ne[0]) * rows + 32 + 96;
    }
    char dir[4096];
    const char *slash = strrchr(out_path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == out_path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - out_path), out_path);
    struct statvfs vfs;
    if (statvfs(dir, &vfs) != 0)
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot check folder %s: %s", out_path, dir, strerror(errno));
    const uint64_t avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
    if (need > avail)
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: the model needs %.2f GiB but %s has only %.2f GiB free",
                            out_path, (double)need / 1073741824.0, dir, (double)avail / 1073741824.0);
    return EDGELLM_OK;
}

edgellm_status edgellm_synth(const edgellm_synth_params *pp, const char *out_path, uint64_t *n_params,
                             uint64_t *file_bytes, edgellm_error *err)
{
    edgellm_status rc;
    if (!pp || !out_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "NULL params or output path");
    const edgellm_synth_params p = *pp;
    const edgellm_shape *s = &p.shape;
    edgellm_quant_scheme sc;
    if ((rc = check_shape(s, err)) != EDGELLM_OK) return rc;
    if ((rc = edgellm_quant_scheme_parse(p.type, p.group, p.asym, &sc, err)) != EDGELLM_OK) return rc;
    if (!(p.std > 0) || !isfinite(p.std))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "std %g must be a finite number > 0", (double)p.std);
    if (!(p.branch_scale >= 0) || !isfinite(p.branch_scale))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "branch_scale %g must be a finite number >= 0",
                            (double)p.branch_scale);
    const float bscale = p.branch_scale > 0 ? p.branch_scale : 1.0f;
    if (p.n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "threads %d must be <= %d", p.n_threads, EDGELLM_MAX_THREADS);

    const bool qwen = !strcmp(s->arch, "qwen2");
    const int E = s->n_embd, KV = s->n_head_kv * (s->n_embd / s->n_head), FF = s->n_ff, V = s->n_vocab;
    const int per_layer = qwen ? 12 : 9;
    synth_job j = {0};
    j.n_t = 3 + per_layer * s->n_layer;
    j.t = edgellm_calloc((size_t)j.n_t, sizeof *j.t);
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    if (!j.t || !w) { rc = edgellm_fail_nomem(err, out_path); goto done; }

    /* the tensor list, with the recipe's types */
    edgellm_quant_recipe rcp = {.scheme = &sc, .n_layer = s->n_layer, .tied = s->tied != 0,
                                .output_type = -1, .embd_type = -1};
    int n = 0;
#define ADD(FILL, ND, NE0, NE1, ...) do { synth_tensor *t_ = &j.t[n++]; \
        snprintf(t_->name, sizeof t_->name, __VA_ARGS__); t_->n_dims = ND; t_->ne[0] = NE0; t_->ne[1] = NE1; \
        t_->fill = FILL; t_->scale = 1.0f; } while (0)
    ADD(FILL_GAUSS, 2, E, V, "token_embd.weight");
    ADD(FILL_ONES, 1, E, 1, "output_norm.weight");
    if (!s->tied) ADD(FILL_GAUSS, 2, E, V, "output.weight");
    for (int il = 0; il < s->n_layer; il++) {
        ADD(FILL_ONES, 1, E, 1, "blk.%d.attn_norm.weight", il);
        ADD(FILL_GAUSS, 2, E, E, "blk.%d.attn_q.weight", il);
        ADD(FILL_GAUSS, 2, E, KV, "blk.%d.attn_k.weight", il);
        ADD(FILL_GAUSS, 2, E, KV, "blk.%d.attn_v.weight", il);
        if (qwen) {
            ADD(FILL_ZEROS, 1, E, 1, "blk.%d.attn_q.bias", il);
            ADD(FILL_ZEROS, 1, KV, 1, "blk.%d.attn_k.bias", il);
            ADD(FILL_ZEROS, 1, KV, 1, "blk.%d.attn_v.bias", il);
        }
        ADD(FILL_GAUSS, 2, E, E, "blk.%d.attn_output.weight", il);
        j.t[n - 1].scale = bscale;
        ADD(FILL_ONES, 1, E, 1, "blk.%d.ffn_norm.weight", il);
        ADD(FILL_GAUSS, 2, E, FF, "blk.%d.ffn_gate.weight", il);
        ADD(FILL_GAUSS, 2, E, FF, "blk.%d.ffn_up.weight", il);
        ADD(FILL_GAUSS, 2, FF, E, "blk.%d.ffn_down.weight", il);
        j.t[n - 1].scale = bscale;
    }
#undef ADD
    j.n_t = n;
    bool edgellm_only = false;
    size_t max_ne0 = 0;
    uint64_t total = 0;
    j.buf_bytes = CHUNK_BYTES;
    for (int i = 0; i < n; i++) {
        synth_tensor *t = &j.t[i];
        edgellm_quant_choice c;
        edgellm_quant_choose(&rcp, t->name, t->n_dims, t->ne, EDGELLM_TYPE_F32, &c);
        t->type = c.type;
        edgellm_only |= c.type >= 1000;
        max_ne0 = EDGELLM_MAX(max_ne0, (size_t)t->ne[0]);
        size_t rb = edgellm_type_row_size(t->type, t->ne[0]);
        j.buf_bytes = EDGELLM_MAX(j.buf_bytes, rb);
        total += (uint64_t)t->ne[0] * (uint64_t)(t->n_dims > 1 ? t->ne[1] : 1);
    }
    j.total = total;
    if ((rc = check_output(out_path, s, j.t, n, err)) != EDGELLM_OK) goto done;
    j.seed = p.seed;
    j.std = p.std;
    j.path = out_path;
    j.progress = p.progress;
    j.progress_user = p.progress_user;
    const int nth = p.n_threads > 0 ? p.n_threads : edgellm_n_physical_cores();
    if (!(j.buf = edgellm_malloc(j.buf_bytes)) ||
        !(j.scratch = edgellm_malloc((size_t)nth * 2 * max_ne0 * sizeof(float)))) {
        rc = edgellm_fail_nomem(err, out_path);
        goto done;
    }
    if ((rc = edgellm_threadpool_new(nth, &j.pool, err)) != EDGELLM_OK) goto done;

    if (!set_hparams(w, s, &p, &sc, edgellm_only) ||
        (bscale != 1.0f && !edgellm_gguf_writer_set_f32(w, "edgellm.synth.branch_scale", bscale))) { rc = edgellm_fail_nomem(err, out_path); goto done; }
    for (int i = 0; i < n; i++)
        if (!edgellm_gguf_writer_add_tensor_stream(w, j.t[i].name, j.t[i].type, j.t[i].n_dims, j.t[i].ne, produce, &j,
                                                   (uint64_t)i)) {
            rc = edgellm_fail_nomem(err, out_path);
            goto done;
        }
    if ((rc = edgellm_gguf_writer_write(w, out_path, err)) != EDGELLM_OK) goto done;
    if (n_params) *n_params = total;
    if (file_bytes) {
        struct stat st;
        *file_bytes = stat(out_path, &st) == 0 ? (uint64_t)st.st_size : 0;
    }
done:
    edgellm_gguf_writer_free(w);
    edgellm_threadpool_free(j.pool);
    edgellm_free(j.buf);
    edgellm_free(j.scratch);
    edgellm_free(j.t);
    return rc;
}
