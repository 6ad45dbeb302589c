/*
 * model_load.c — edgellm_model_load: open a GGUF file, read the hyperparameters of a
 * llama-family architecture, and bind every tensor the forward pass needs after checking
 * its presence, type and exact shape. Weights stay views into the read-only mapping
 * (nothing is dequantized or copied).
 *
 * Metadata read (ggml-org/ggml docs/gguf.md, "LLM" keys), <arch> = general.architecture:
 *   <arch>.context_length                       required
 *   <arch>.embedding_length                     required  n_embd
 *   <arch>.block_count                          required  n_layer
 *   <arch>.feed_forward_length                  required  n_ff
 *   <arch>.attention.head_count                 required  n_head
 *   <arch>.attention.head_count_kv              default n_head
 *   <arch>.attention.layer_norm_rms_epsilon     required
 *   <arch>.rope.freq_base                       default 10000
 *   <arch>.rope.dimension_count                 default head_dim
 *   <arch>.rope.scaling.*, rope_freqs.weight    RoPE frequency scaling: rope_scaling.c
 * n_vocab comes from token_embd.weight's shape.
 *
 * Tensors (GGUF ne in ggml order: ne[0] = row length = input dim, ne[1] = rows):
 *   token_embd.weight          {n_embd, n_vocab}   any type with to_float
 *   output_norm.weight         {n_embd}            F32
 *   output.weight              {n_embd, n_vocab}   optional: absent = tied to token_embd
 *   blk.N.attn_norm.weight     {n_embd}            F32
 *   blk.N.attn_q.weight        {n_embd, n_embd}
 *   blk.N.attn_k.weight        {n_embd, kv_dim}
 *   blk.N.attn_v.weight        {n_embd, kv_dim}
 *   blk.N.attn_{q,k,v}.bias    {n_embd} / {kv_dim} F32, qwen2 only
 *   blk.N.attn_output.weight   {n_embd, n_embd}
 *   blk.N.ffn_norm.weight      {n_embd}            F32
 *   blk.N.ffn_gate.weight      {n_embd, n_ff}
 *   blk.N.ffn_up.weight        {n_embd, n_ff}
 *   blk.N.ffn_down.weight      {n_ff, n_embd}
 * Other tensors in the file are ignored. Matrices may use any type the kernels can
 * multiply (edgellm_matmul_supported); others are EDGELLM_ERR_UNSUPPORTED.
 */
#include "model.h"
#include "../kernels/dispatch.h"
#include "../common/threadpool.h"
#include "../tokenizer/tokenizer.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Upper bounds: refuse absurd values before sizing anything from them. */
#define MAX_EMBD      (1 << 16)
#define MAX_LAYER     1024
#define MAX_FF        (1 << 20)
#define MAX_HEAD      1024
#define MAX_CTX_TRAIN (1 << 24)
#define MAX_VOCAB     (1 << 22)

typedef struct {
    edgellm_model *m;
    const char *path;
    char arch[32];
    edgellm_error *err;
} loader;

/* ---- metadata ---- */

/* Integer <arch>.<suffix> into *out within [lo, hi]. Absent: *out = dflt when !required. */
static edgellm_status get_int(loader *L, const char *suffix, bool required, int dflt, int lo, int hi, int *out)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", L->arch, suffix);
    const edgellm_gguf *g = L->m->gguf;
    if (edgellm_gguf_find_key(g, key) < 0) {
        if (required) return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: missing metadata key '%s'", L->path, key);
        *out = dflt;
        return EDGELLM_OK;
    }
    int64_t v;
    if (!edgellm_gguf_get_i64(g, key, &v))
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: metadata key '%s' is not an integer", L->path, key);
    if (v < lo || v > hi)
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: %s = %lld is out of range [%d, %d]", L->path, key,
                            (long long)v, lo, hi);
    *out = (int)v;
    return EDGELLM_OK;
}

/* Float <arch>.<suffix>, finite, in (lo, hi). */
static edgellm_status get_float(loader *L, const char *suffix, bool required, float dflt, double lo, double hi,
                                float *out)
{
    char key[160];
    snprintf(key, sizeof key, "%s.%s", L->arch, suffix);
    const edgellm_gguf *g = L->m->gguf;
    if (edgellm_gguf_find_key(g, key) < 0) {
        if (required) return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: missing metadata key '%s'", L->path, key);
        *out = dflt;
        return EDGELLM_OK;
    }
    float v;
    if (!edgellm_gguf_get_f32(g, key, &v))
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: metadata key '%s' is not a number", L->path, key);
    if (!isfinite(v) || !(v > lo) || !(v < hi))
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: %s = %g is out of range (%g, %g)", L->path, key, v,
                            lo, hi);
    *out = v;
    return EDGELLM_OK;
}

static edgellm_status read_arch(loader *L)
{
    edgellm_str s;
    if (!edgellm_gguf_get_str(L->m->gguf, "general.architecture", &s))
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: missing metadata key 'general.architecture'", L->path);
    L->m->arch = edgellm_arch_find(s.ptr, (size_t)s.len);
    if (!L->m->arch) {
        int shown = s.len > 64 ? 64 : (int)s.len;
        return edgellm_fail(L->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: architecture '%.*s' is not supported (supported: %s)", L->path, shown, s.ptr,
                            edgellm_arch_list());
    }
    snprintf(L->arch, sizeof L->arch, "%s", L->m->arch->name);
    return EDGELLM_OK;
}

static edgellm_status read_hparams(loader *L)
{
    edgellm_hparams *hp = &L->m->hp;
    edgellm_status rc;
    if ((rc = get_int(L, "context_length", true, 0, 1, MAX_CTX_TRAIN, &hp->n_ctx_train)) ||
        (rc = get_int(L, "embedding_length", true, 0, 1, MAX_EMBD, &hp->n_embd)) ||
        (rc = get_int(L, "block_count", true, 0, 1, MAX_LAYER, &hp->n_layer)) ||
        (rc = get_int(L, "feed_forward_length", true, 0, 1, MAX_FF, &hp->n_ff)) ||
        (rc = get_int(L, "attention.head_count", true, 0, 1, MAX_HEAD, &hp->n_head)) ||
        (rc = get_int(L, "attention.head_count_kv", false, hp->n_head, 1, hp->n_head, &hp->n_head_kv)) ||
        (rc = get_float(L, "attention.layer_norm_rms_epsilon", true, 0, 0.0, 1.0, &hp->rms_eps)) ||
        (rc = get_float(L, "rope.freq_base", false, 10000.0f, 0.0, 1e12, &hp->rope_freq_base)))
        return rc;
    if (hp->n_embd % hp->n_head != 0)
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: %s.embedding_length %d is not a multiple of head_count %d",
                            L->path, L->arch, hp->n_embd, hp->n_head);
    if (hp->n_head % hp->n_head_kv != 0)
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT,
                            "%s: %s.attention.head_count %d is not a multiple of head_count_kv %d", L->path, L->arch,
                            hp->n_head, hp->n_head_kv);
    int n_expert = 0;   /* Mixtral-style MoE files say "llama" but carry expert tensors */
    if ((rc = get_int(L, "expert_count", false, 0, 0, 1 << 16, &n_expert))) return rc;
    if (n_expert > 0)
        return edgellm_fail(L->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: mixture-of-experts models (%s.expert_count = %d) are not supported", L->path, L->arch,
                            n_expert);
    hp->head_dim = hp->n_embd / hp->n_head;
    hp->kv_dim = hp->n_head_kv * hp->head_dim;
    if ((rc = get_int(L, "rope.dimension_count", false, hp->head_dim, 2, hp->head_dim, &hp->rope_dim))) return rc;
    if (hp->rope_dim % 2 != 0)
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: %s.rope.dimension_count %d is odd", L->path, L->arch,
                            hp->rope_dim);
    return edgellm_rope_config_read(L->m->gguf, L->path, L->arch, hp->rope_dim, &hp->rope, L->err);
}

/* ---- tensors ---- */

static void fmt_shape(char *buf, size_t size, const int64_t *ne, int n_dims)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, size - o, "[");
    for (int i = 0; i < n_dims && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? ", " : "", (long long)ne[i]);
    if (o < size) snprintf(buf + o, size - o, "]");
}

/* Find `name` and check its shape is exactly {ne0} (ne1 == 0) or {ne0, ne1}. Absent and
 * optional: *out = NULL, OK. */
static edgellm_status find_shaped(loader *L, const char *name, int64_t ne0, int64_t ne1, bool optional,
                                  const edgellm_gguf_tensor **out)
{
    const edgellm_gguf_tensor *t = edgellm_gguf_find_tensor(L->m->gguf, name);
    *out = NULL;
    if (!t) {
        if (optional) return EDGELLM_OK;
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: missing tensor '%s'", L->path, name);
    }
    int64_t want[EDGELLM_GGUF_MAX_DIMS] = {ne0, ne1 ? ne1 : 1, 1, 1};
    int want_dims = ne1 ? 2 : 1;
    for (int i = 0; i < EDGELLM_GGUF_MAX_DIMS; i++) {
        int64_t have = i < (int)t->n_dims ? t->ne[i] : 1;
        if (have != want[i]) {
            char a[96], b[96];
            fmt_shape(a, sizeof a, t->ne, (int)t->n_dims);
            fmt_shape(b, sizeof b, want, want_dims);
            return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' has shape %s, expected %s (ggml ne order)",
                                L->path, name, a, b);
        }
    }
    *out = t;
    return EDGELLM_OK;
}

/* A float vector of n elements (norm weight, bias): F32 only. */
static edgellm_status bind_vector(loader *L, const char *name, int64_t n, bool optional, const float **out)
{
    const edgellm_gguf_tensor *t;
    edgellm_status rc = find_shaped(L, name, n, 0, optional, &t);
    *out = NULL;
    if (rc || !t) return rc;
    if (t->type != EDGELLM_TYPE_F32)
        return edgellm_fail(L->err, EDGELLM_ERR_UNSUPPORTED, "%s: tensor '%s' has type %s; edgellm expects F32 here",
                            L->path, name, edgellm_type_name(t->type));
    if ((uintptr_t)t->data % sizeof(float) != 0)
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: tensor '%s' data is not 4-byte aligned", L->path, name);
    *out = t->data;
    return EDGELLM_OK;
}

static void view_of(const edgellm_gguf_tensor *t, edgellm_tensor *out)
{
    out->data = t->data;
    out->type = t->type;
    out->ne0 = t->ne[0];
    out->ne1 = t->n_dims >= 2 ? t->ne[1] : 1;
    out->row_bytes = edgellm_type_row_size(t->type, t->ne[0]);
}

static edgellm_status check_computable(loader *L, const char *name, const edgellm_tensor *w)
{
    if (!edgellm_matmul_supported(w))
        return edgellm_fail(L->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: tensor '%s' has type %s, which edgellm cannot compute yet", L->path, name,
                            edgellm_type_name(w->type));
    return EDGELLM_OK;
}

/* A weight matrix {ne0, ne1} of a computable type. */
static edgellm_status bind_matrix(loader *L, const char *name, int64_t ne0, int64_t ne1, bool optional,
                                  edgellm_tensor *out, bool *found)
{
    const edgellm_gguf_tensor *t;
    edgellm_status rc = find_shaped(L, name, ne0, ne1, optional, &t);
    if (found) *found = t != NULL;
    if (rc || !t) return rc;
    view_of(t, out);
    if (t->type == EDGELLM_TYPE_Q4_K_R16) {
        /* a stored layout: checked as the Q4_K matrix it holds; the type stays Q4_K_R16
         * until repack_weights points the view at a kernel for it or unpacks it */
        edgellm_tensor plain = *out;
        plain.type = EDGELLM_TYPE_Q4_K;
        plain.row_bytes = edgellm_type_row_size(EDGELLM_TYPE_Q4_K, plain.ne0);
        return check_computable(L, name, &plain);
    }
    return check_computable(L, name, out);
}

static edgellm_status bind_layer(loader *L, int il, edgellm_layer *ly)
{
    const edgellm_hparams *hp = &L->m->hp;
    int64_t E = hp->n_embd, KV = hp->kv_dim, F = hp->n_ff;
    bool bias = L->m->arch->qkv_bias;
    char n[13][64];
    static const char *const suffix[13] = {
        "attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
        "ffn_norm.weight", "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight",
        "attn_q.bias", "attn_k.bias", "attn_v.bias", "",
    };
    for (int i = 0; i < 12; i++) snprintf(n[i], sizeof n[i], "blk.%d.%s", il, suffix[i]);
    edgellm_status rc;
    if ((rc = bind_vector(L, n[0], E, false, &ly->attn_norm)) ||
        (rc = bind_matrix(L, n[1], E, E, false, &ly->wq, NULL)) ||
        (rc = bind_matrix(L, n[2], E, KV, false, &ly->wk, NULL)) ||
        (rc = bind_matrix(L, n[3], E, KV, false, &ly->wv, NULL)) ||
        (rc = bind_matrix(L, n[4], E, E, false, &ly->wo, NULL)) ||
        (rc = bind_vector(L, n[5], E, false, &ly->ffn_norm)) ||
        (rc = bind_matrix(L, n[6], E, F, false, &ly->w_gate, NULL)) ||
        (rc = bind_matrix(L, n[7], E, F, false, &ly->w_up, NULL)) ||
        (rc = bind_matrix(L, n[8], F, E, false, &ly->w_down, NULL)))
        return rc;
    if (bias &&
        ((rc = bind_vector(L, n[9], E, false, &ly->bq)) ||
         (rc = bind_vector(L, n[10], KV, false, &ly->bk)) ||
         (rc = bind_vector(L, n[11], KV, false, &ly->bv))))
        return rc;
    return EDGELLM_OK;
}

static edgellm_status bind_tensors(loader *L)
{
    edgellm_model *m = L->m;
    edgellm_hparams *hp = &m->hp;
    edgellm_status rc;

    /* token_embd first: it defines n_vocab. */
    const edgellm_gguf_tensor *te = edgellm_gguf_find_tensor(m->gguf, "token_embd.weight");
    if (!te) return edgellm_fail(L->err, EDGELLM_ERR_FORMAT, "%s: missing tensor 'token_embd.weight'", L->path);
    if (te->n_dims < 2 || te->ne[1] < 1 || te->ne[1] > MAX_VOCAB)
        return edgellm_fail(L->err, EDGELLM_ERR_FORMAT,
                            "%s: tensor 'token_embd.weight' must be {n_embd, n_vocab} with n_vocab in [1, %d]", L->path,
                            MAX_VOCAB);
    hp->n_vocab = (int)te->ne[1];
    if ((rc = find_shaped(L, "token_embd.weight", hp->n_embd, hp->n_vocab, false, &te))) return rc;
    view_of(te, &m->token_embd);
    if (!edgellm_kernels_to_float(te->type))
        return edgellm_fail(L->err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: tensor 'token_embd.weight' has type %s, which edgellm cannot convert yet%s", L->path,
                            edgellm_type_name(te->type),
                            te->type == EDGELLM_TYPE_Q4_K_R16 ? " (a stored layout, for weight matrices only: rewrite "
                                                                "the file with 'edgellm quantize IN OUT --layout plain')"
                                                              : "");

    if ((rc = bind_vector(L, "output_norm.weight", hp->n_embd, false, &m->output_norm))) return rc;
    bool have_output;
    if ((rc = bind_matrix(L, "output.weight", hp->n_embd, hp->n_vocab, true, &m->output, &have_output))) return rc;
    if (!have_output) {
        m->tied_output = true;
        m->output = m->token_embd;
        if ((rc = check_computable(L, "token_embd.weight", &m->output))) return rc;
    }

    m->layers = edgellm_calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers) return edgellm_fail_nomem(L->err, L->path);
    for (int il = 0; il < hp->n_layer; il++)
        if ((rc = bind_layer(L, il, &m->layers[il]))) return rc;
    return EDGELLM_OK;
}

static void count_params(edgellm_model *m)
{
    int64_t n = edgellm_gguf_n_tensors(m->gguf);
    for (int64_t i = 0; i < n; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(m->gguf, i);
        m->n_params += t->n_elements;
        m->weight_bytes += t->size_bytes;
    }
}

/* ---- public API ---- */

edgellm_model_params edgellm_model_default_params(void)
{
    edgellm_model_params p = {.size = sizeof p, .n_threads = 0};
    return p;
}

/* ---- load-time repacking ---- */

/* The matrices a model multiplies whose type has a repacked layout on this CPU
 * (edgellm_kernels_repack): rewritten into one owned buffer (hinted to transparent huge
 * pages: 2 MiB faults instead of 4 KiB ones), and their views pointed there, by the
 * model's n_threads threads taking matrices in turn. From a file (path, opened again, or
 * fd, the GGUF region starting at file_off) the plain rows are read with pread,
 * SOURCE_ROWS at a time, into a bounce buffer per thread: the mapping's pages of those
 * tensors are never touched, so resident memory stays about one copy of the weights (the
 * layout has the tensor's size, up to its last 16-row group). From a caller's buffer
 * (path NULL, fd < 0) they are read in place.
 *
 * Matrices stored in a layout (EDGELLM_TYPE_Q4_K_R16) are used where they are mapped when
 * the active kernel level has that layout (edgellm_kernels_layout; EDGELLM_REPACK does not
 * apply: nothing is copied); otherwise they go the other way: read one 16-row group at a
 * time (pread, or in place), unpacked into plain Q4_K rows in the owned buffer, for the
 * in-place kernels. */
#define SOURCE_ROWS 64
typedef struct {
    edgellm_tensor **ws;         /* [n]; NULL: not repacked                        */
    const edgellm_repack **rp;   /* [n] their layouts                              */
    bool *unpack;                /* [n] stored layout -> plain rows (rp: its layout) */
    size_t *off;                 /* [n] offsets in buf                             */
    int n;
    uint8_t *buf;
    size_t bounce;               /* bytes of SOURCE_ROWS rows of the widest matrix
                                    (a stored matrix to unpack: of one 16-row group) */
    int fd;                      /* < 0: read the views in place                    */
    const uint8_t *section;      /* the data section in the mapping                 */
    uint64_t section_pos;        /* and in the file                                 */
    atomic_int next;             /* next matrix to take                             */
    atomic_int fail;             /* 0, an errno, or -1 (file shorter than expected) */
} repack_job;

/* len bytes at file position pos into dst; false (j->fail set) on an error or a short file. */
static bool pread_full(repack_job *j, uint8_t *dst, size_t len, uint64_t pos)
{
    for (size_t got = 0; got < len;) {
        const ssize_t g = pread(j->fd, dst + got, len - got, (off_t)(pos + got));
        if (g <= 0) {
            atomic_store(&j->fail, g < 0 ? (errno ? errno : EIO) : -1);
            return false;
        }
        got += (size_t)g;
    }
    return true;
}

/* Threads take matrices in turn; each packs its matrix SOURCE_ROWS rows at a time. */
static void repack_task(void *arg, int ith, int nth)
{
    (void)ith;
    (void)nth;
    repack_job *j = arg;
    uint8_t *rows = j->fd >= 0 ? malloc(j->bounce) : NULL;
    if (j->fd >= 0 && !rows) {
        atomic_store(&j->fail, ENOMEM);
        return;
    }
    for (int k; (k = atomic_fetch_add(&j->next, 1)) < j->n && !atomic_load(&j->fail);) {
        const edgellm_tensor *w = j->ws[k];
        if (!w) continue;
        if (j->unpack[k]) {
            const edgellm_repack *rp = j->rp[k];
            uint8_t *out = j->buf + j->off[k];
            if (j->fd < 0) {           /* in place: the rows straight from the stored bytes */
                for (int64_t r = 0; r < w->ne1; r++)
                    rp->unpack_row(w->data, w->ne1, w->ne0, r, out + (size_t)r * w->row_bytes);
                continue;
            }
            /* from the file, one 16-row group at a time into the bounce buffer: its part of
             * each plane (the planes hold the groups in order), read as the layout of a
             * 16-row matrix (first plane, then second), then its rows */
            const size_t p1 = rp->plane2(16, w->ne0), p2 = rp->size(16, w->ne0) - p1;
            const uint64_t pos = j->section_pos + (uint64_t)((const uint8_t *)w->data - j->section);
            const uint64_t second = pos + rp->plane2(w->ne1, w->ne0);
            for (int64_t g = 0; g < w->ne1 / 16; g++) {
                if (!pread_full(j, rows, p1, pos + (uint64_t)g * p1) ||
                    !pread_full(j, rows + p1, p2, second + (uint64_t)g * p2)) {
                    free(rows);
                    return;
                }
                for (int64_t r = 0; r < 16; r++)
                    rp->unpack_row(rows, 16, w->ne0, r, out + (size_t)(16 * g + r) * w->row_bytes);
            }
            continue;
        }
        for (int64_t r0 = 0; r0 < w->ne1; r0 += SOURCE_ROWS) {
            const int64_t r1 = EDGELLM_MIN(r0 + SOURCE_ROWS, w->ne1);
            const uint8_t *from = (const uint8_t *)w->data + (size_t)r0 * w->row_bytes;
            if (j->fd >= 0) {
                const size_t len = (size_t)(r1 - r0) * w->row_bytes;
                const uint64_t pos = j->section_pos + (uint64_t)(from - j->section);
                for (size_t got = 0; got < len;) {
                    const ssize_t g = pread(j->fd, rows + got, len - got, (off_t)(pos + got));
                    if (g <= 0) {
                        atomic_store(&j->fail, g < 0 ? (errno ? errno : EIO) : -1);
                        free(rows);
                        return;
                    }
                    got += (size_t)g;
                }
                from = rows;
            }
            j->rp[k]->pack(j->buf + j->off[k], w->ne1, w->ne0, r0, r1, from);
        }
    }
    free(rows);
}

static edgellm_status repack_weights(loader *L, const char *path, int fd, uint64_t file_off)
{
    edgellm_model *m = L->m;
    const int n_max = EDGELLM_LAYER_N_MATRICES * m->hp.n_layer + 1;
    repack_job j = {.fd = -1};
    j.ws = edgellm_calloc((size_t)n_max, sizeof *j.ws);
    j.rp = edgellm_calloc((size_t)n_max, sizeof *j.rp);
    j.off = edgellm_calloc((size_t)n_max, sizeof *j.off);
    j.unpack = edgellm_calloc((size_t)n_max, sizeof *j.unpack);
    edgellm_status rc = EDGELLM_OK;
    if (!j.ws || !j.rp || !j.off || !j.unpack) {
        rc = edgellm_fail_nomem(L->err, L->path);
        goto out;
    }
    for (int il = 0; il < m->hp.n_layer; il++) {
        edgellm_layer *y = &m->layers[il];
        edgellm_tensor *t[EDGELLM_LAYER_N_MATRICES] = EDGELLM_LAYER_MATRICES(y);
        for (int k = 0; k < EDGELLM_LAYER_N_MATRICES; k++) j.ws[j.n++] = t[k];
    }
    if (!m->tied_output) j.ws[j.n++] = &m->output;
    size_t total = 0;
    for (int k = 0; k < j.n; k++) {
        edgellm_tensor *w = j.ws[k];
        if (w->data && w->type == EDGELLM_TYPE_Q4_K_R16) {   /* stored layout (bind_matrix) */
            w->type = EDGELLM_TYPE_Q4_K;
            w->row_bytes = edgellm_type_row_size(EDGELLM_TYPE_Q4_K, w->ne0);
            const edgellm_repack *r = edgellm_kernels_layout(EDGELLM_TYPE_Q4_K_R16, w->ne0);
            if (r && (uintptr_t)w->data % 64 == 0) {
                /* used where it is mapped (its kernel loads aligned 64-byte lines: a file
                 * written with a smaller general.alignment is unpacked instead) */
                w->repack = r;
                m->n_stored++;
                j.ws[k] = NULL;
                continue;
            }
            const size_t sz = (size_t)w->ne1 * w->row_bytes;   /* the file's size of it: no overflow */
            j.rp[k] = &edgellm_repack_q4_K_r16_portable;
            j.unpack[k] = true;
            j.off[k] = total;
            total += (sz + 63) / 64 * 64;
            j.bounce = EDGELLM_MAX(j.bounce, 16 * w->row_bytes);   /* one 16-row group */
            continue;
        }
        const edgellm_repack *r = w->data ? edgellm_kernels_repack(w->type, w->ne0) : NULL;
        const size_t sz = r ? r->size(w->ne1, w->ne0) : 0;
        if (!sz || total + sz + 63 < total) {
            j.ws[k] = NULL;
            continue;
        }
        j.rp[k] = r;
        j.off[k] = total;
        total += (sz + 63) / 64 * 64;
        j.bounce = EDGELLM_MAX(j.bounce, w->row_bytes * SOURCE_ROWS);
    }
    if (!total) goto out;
    const double t0 = edgellm_time_ms();
    if (path || fd >= 0) {                     /* from the file: pread */
        j.fd = path ? open(path, O_RDONLY | O_CLOEXEC) : fd;
        if (j.fd < 0) {
            rc = edgellm_fail(L->err, EDGELLM_ERR_IO, "%s: %s", L->path, strerror(errno));
            goto out;
        }
    }
    /* the data section in the mapping: any tensor's data minus its offset */
    const edgellm_gguf_tensor *t0t = edgellm_gguf_tensor_at(m->gguf, 0);
    j.section = (const uint8_t *)t0t->data - t0t->offset;
    j.section_pos = file_off + edgellm_gguf_data_offset(m->gguf);
    /* the threads read the matrices in file order: a larger read-ahead, and the pages of
     * the data section asked for now, so a cold disk reads while the first ones pack */
    if (j.fd >= 0) {
        (void)posix_fadvise(j.fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        (void)posix_fadvise(j.fd, (off_t)j.section_pos, 0, POSIX_FADV_WILLNEED);
    }
    void *buf = NULL;
    if (posix_memalign(&buf, 64, total)) {
        rc = edgellm_fail_nomem(L->err, L->path);
        goto out;
    }
    m->repack_buf = j.buf = buf;   /* freed with the model, also on failure */
    m->repack_bytes = total;
    edgellm_hint_huge_pages(buf, total);
    atomic_init(&j.next, 0);
    atomic_init(&j.fail, 0);
    edgellm_threadpool *pool = NULL;
    if (m->n_threads > 1) (void)edgellm_threadpool_new(m->n_threads, &pool, NULL);   /* none: one thread */
    edgellm_threadpool_run(pool, repack_task, &j);
    edgellm_threadpool_free(pool);
    const int fail = atomic_load(&j.fail);
    if (fail) {
        rc = fail == ENOMEM ? edgellm_fail_nomem(L->err, L->path)
                            : edgellm_fail(L->err, EDGELLM_ERR_IO, "%s: reading weights to repack: %s", L->path,
                                           fail < 0 ? "end of file" : strerror(fail));
        goto out;
    }
    for (int k = 0; k < j.n; k++) {
        /* the mapping's pages of a copied matrix: never read again, so kept out of any
         * 2 MiB mapping a neighbour's first touch would make resident whole */
        if (j.ws[k] && j.fd >= 0) edgellm_hint_no_huge_pages(j.ws[k]->data, (size_t)j.ws[k]->ne1 * j.ws[k]->row_bytes);
        if (j.ws[k] && j.unpack[k]) {
            j.ws[k]->data = j.buf + j.off[k];
            m->n_unpacked++;
        } else if (j.ws[k]) {
            j.ws[k]->data = j.buf + j.off[k];
            j.ws[k]->repack = j.rp[k];
            m->n_repacked++;
        }
    }
    m->repack_ms = edgellm_time_ms() - t0;
out:
    if (path && j.fd >= 0) close(j.fd);
    edgellm_free(j.ws);
    edgellm_free(j.rp);
    edgellm_free(j.off);
    edgellm_free(j.unpack);
    return rc;
}

/* Which file opener a load uses: a path, a caller's buffer, or a region of a descriptor. */
typedef struct {
    const char *path;            /* edgellm_model_load                              */
    const void *data;            /* edgellm_model_load_memory: data[size]           */
    int fd;                      /* edgellm_model_load_fd: size bytes at offset     */
    uint64_t offset, size;
} model_source;

static edgellm_status open_source(const model_source *src, const char *name, edgellm_gguf **g, edgellm_error *err)
{
    if (src->path) return edgellm_gguf_open(src->path, g, err);
    if (src->data) return edgellm_gguf_open_memory(src->data, (size_t)src->size, name, g, err);
    return edgellm_gguf_open_fd(src->fd, src->offset, src->size, name, g, err);
}

/* The loads' common part: name is the path or the caller's name, used in every message. */
static edgellm_status load(const model_source *src, const char *name, const edgellm_model_params *params,
                           edgellm_model **out, edgellm_error *err)
{
    if (out) *out = NULL;
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_model_load: out is NULL");
    const double t0 = edgellm_time_ms();
    edgellm_model_params p = edgellm_model_default_params();
    edgellm_status rc = edgellm_sized_in(&p, sizeof p, params, "edgellm_model_params", err);
    if (rc) return rc;
    if (p.n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: n_threads %d exceeds %d", name, p.n_threads,
                            EDGELLM_MAX_THREADS);
    edgellm_model *m = edgellm_calloc(1, sizeof *m);
    if (!m) return edgellm_fail_nomem(err, name);
    loader L = {.m = m, .path = name, .err = err};
    if (!(m->path = edgellm_strdup(name))) { rc = edgellm_fail_nomem(err, name); goto done; }
    if ((rc = open_source(src, name, &m->gguf, err))) goto done;
    if ((rc = read_arch(&L)) || (rc = read_hparams(&L)) || (rc = bind_tensors(&L))) goto done;
    count_params(m);
    m->n_threads = p.n_threads > 0 ? p.n_threads : EDGELLM_MIN(edgellm_n_physical_cores(), EDGELLM_MAX_THREADS);
    if (m->n_threads < 1) m->n_threads = 1;
    if ((rc = repack_weights(&L, src->data ? NULL : src->path, src->data ? -1 : src->fd, src->offset))) goto done;

    edgellm_error terr = {0};
    rc = edgellm_tokenizer_from_gguf(m->gguf, &m->tok, &terr);
    if (rc == EDGELLM_ERR_UNSUPPORTED) {
        m->tok = NULL;              /* the model still runs on token ids */
        snprintf(m->tok_error, sizeof m->tok_error, "%s", terr.msg);
        edgellm_log(EDGELLM_LOG_WARN, "%s: no tokenizer: the model runs on token ids only", terr.msg);
        rc = EDGELLM_OK;
    } else if (rc != EDGELLM_OK) {
        if (err) *err = terr;
        goto done;
    }
    char rope[256];
    edgellm_rope_config_describe(&m->hp.rope, rope, sizeof rope);
    edgellm_log(EDGELLM_LOG_INFO, "%s: %s, %d layers, n_embd %d, n_vocab %d, %.1f M parameters, %.1f MiB of weights, "
                "RoPE scaling %s, %d matrices repacked and %d unpacked (%.1f MiB, %.1f ms), %d in the file's q4_K_r16 layout, "
                "loaded in %.1f ms", name, m->arch->name, m->hp.n_layer, m->hp.n_embd, m->hp.n_vocab,
                (double)m->n_params / 1e6, (double)m->weight_bytes / 1048576.0, rope, m->n_repacked, m->n_unpacked,
                (double)m->repack_bytes / 1048576.0, m->repack_ms, m->n_stored, edgellm_time_ms() - t0);
    *out = m;
    m = NULL;
done:
    edgellm_model_free(m);
    return rc;
}

edgellm_status edgellm_model_load(const char *path, const edgellm_model_params *params, edgellm_model **out,
                                  edgellm_error *err)
{
    if (!path) {
        if (out) *out = NULL;
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_model_load: NULL path or out");
    }
    const model_source src = {.path = path, .fd = -1};
    return load(&src, path, params, out, err);
}

edgellm_status edgellm_model_load_memory(const void *data, size_t size, const char *name,
                                         const edgellm_model_params *params, edgellm_model **out, edgellm_error *err)
{
    if (!name) name = "(memory)";
    if (!data || !size) {
        if (out) *out = NULL;
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: NULL or empty buffer", name);
    }
    const model_source src = {.data = data, .fd = -1, .size = size};
    return load(&src, name, params, out, err);
}

edgellm_status edgellm_model_load_fd(int fd, uint64_t offset, uint64_t size, const char *name,
                                     const edgellm_model_params *params, edgellm_model **out, edgellm_error *err)
{
    char fallback[48];
    if (!name) {
        snprintf(fallback, sizeof fallback, "(file descriptor %d)", fd);
        name = fallback;
    }
    const model_source src = {.fd = fd, .offset = offset, .size = size};
    return load(&src, name, params, out, err);
}

void edgellm_model_free(edgellm_model *m)
{
    if (!m) return;
    edgellm_tokenizer_free(m->tok);
    edgellm_free(m->layers);
    edgellm_gguf_close(m->gguf);
    free(m->repack_buf);
    edgellm_free(m->path);
    edgellm_free(m);
}

edgellm_status edgellm_model_get_info(const edgellm_model *m, edgellm_model_info *out)
{
    if (!m || !out) return EDGELLM_ERR_MISUSE;
    const edgellm_hparams *hp = &m->hp;
    edgellm_model_info info = {.size = sizeof info};
    snprintf(info.arch, sizeof info.arch, "%s", m->arch->name);
    info.n_vocab = hp->n_vocab;
    info.n_ctx_train = hp->n_ctx_train;
    info.n_embd = hp->n_embd;
    info.n_layer = hp->n_layer;
    info.n_head = hp->n_head;
    info.n_head_kv = hp->n_head_kv;
    info.head_dim = hp->head_dim;
    info.n_ff = hp->n_ff;
    info.rope_freq_base = hp->rope_freq_base;
    info.rope_scaling = (int)hp->rope.type;
    info.rope_scaling_factor = hp->rope.factor;
    info.rope_n_ctx_orig = hp->rope.n_ctx_orig;
    info.rope_attn_factor = (float)hp->rope.table.mscale;
    info.rope_n_freq_factors = hp->rope.n_freq_factors;
    info.rms_eps = hp->rms_eps;
    info.tied_output = m->tied_output;
    info.n_params = m->n_params;
    info.weight_bytes = m->weight_bytes;
    return edgellm_sized_out(out, &info, sizeof info) ? EDGELLM_OK : EDGELLM_ERR_MISUSE;
}

const edgellm_tokenizer *edgellm_model_tokenizer(const edgellm_model *m) { return m ? m->tok : NULL; }

const edgellm_tokenizer *edgellm_model_text_tokenizer(const edgellm_model *m, edgellm_error *err)
{
    if (!m) {
        edgellm_fail(err, EDGELLM_ERR_MISUSE, "text tokenizer: model is NULL");
        return NULL;
    }
    if (!m->tok)
        edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s; text needs one (the model runs on token ids only)",
                     m->tok_error[0] ? m->tok_error : "no tokenizer");
    return m->tok;
}
