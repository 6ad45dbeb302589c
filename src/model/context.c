/*
 * context.c — edgellm_ctx: creation (KV cache, scratch, thread pool, all sized once), and
 * edgellm_decode, which validates a call, splits it into chunks of at most n_batch tokens
 * for the forward pass (llama.c) and checks the logits.
 *
 * Memory of a context (floats unless noted):
 *   KV cache      2 × n_layer × n_head_kv × n_ctx × head_dim elements of kv_type (4 bytes F32, 2 bytes F16,
 *                 34/32 bytes Q8_0)
 *   activations   n_batch × (4·n_embd + 2·kv_dim + 2·n_ff + rope_dim)
 *   scores        n_threads × n_ctx
 *   logits        n_vocab
 *   matmul        n_batch rows of the widest matrix input in its activation type (bytes;
 *                 0 for float weights)
 */
#include "model.h"
#include "../kernels/ops.h"
#include "../tensor/blocks.h"
#include <stdio.h>

#define DEFAULT_N_CTX_CAP 4096
#define MAX_N_CTX (1 << 24)
#define MAX_N_BATCH 64           /* tokens per forward chunk: bounds the scratch */

edgellm_ctx_params edgellm_ctx_default_params(void)
{
    edgellm_ctx_params p = {.size = sizeof p, .n_ctx = 0, .n_threads = 0, .kv_type = EDGELLM_TYPE_F32};
    return p;
}

/* *p = a fresh array of a × b floats; false on overflow or OOM. */
static bool alloc_floats(float **p, size_t a, size_t b)
{
    size_t n;
    if (!edgellm_mul_size(a, b, &n) || !edgellm_mul_size(n, sizeof(float), &n)) return false;
    return (*p = edgellm_malloc(n)) != NULL;
}

/* Largest activation-conversion scratch any matrix product of the model needs. */
static size_t matmul_scratch_bytes(const edgellm_model *m, int n_batch)
{
    size_t best = edgellm_matmul_scratch_size(&m->output, n_batch);
    for (int il = 0; il < m->hp.n_layer; il++) {
        const edgellm_layer *L = &m->layers[il];
        const edgellm_tensor *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        for (int i = 0; i < 7; i++) best = EDGELLM_MAX(best, edgellm_matmul_scratch_size(ws[i], n_batch));
    }
    return best;
}

edgellm_status edgellm_ctx_new(const edgellm_model *m, const edgellm_ctx_params *params, edgellm_ctx **out,
                               edgellm_error *err)
{
    if (out) *out = NULL;
    if (!m || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_ctx_new: NULL model or out");
    edgellm_ctx_params p = edgellm_ctx_default_params();
    edgellm_status src = edgellm_sized_in(&p, sizeof p, params, "edgellm_ctx_params", err);
    if (src) return src;
    const edgellm_hparams *hp = &m->hp;
    int n_ctx = p.n_ctx > 0 ? p.n_ctx : EDGELLM_MIN(hp->n_ctx_train, DEFAULT_N_CTX_CAP);
    int n_threads = p.n_threads > 0 ? p.n_threads : m->n_threads;
    if (n_ctx > MAX_N_CTX)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: n_ctx %d exceeds %d", m->path, n_ctx, MAX_N_CTX);
    if (n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: n_threads %d exceeds %d", m->path, n_threads,
                            EDGELLM_MAX_THREADS);
    if (!edgellm_type_get_traits(p.kv_type))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: kv_type %d is not a tensor type", m->path, p.kv_type);
    if (p.kv_type != EDGELLM_TYPE_F32 && p.kv_type != EDGELLM_TYPE_F16 && p.kv_type != EDGELLM_TYPE_Q8_0)
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: KV cache type %s is not supported (f32, f16 or q8_0)",
                            m->path, edgellm_type_name(p.kv_type));
    if (p.kv_type == EDGELLM_TYPE_Q8_0 &&
        (hp->head_dim % EDGELLM_QK8_0 != 0 || hp->head_dim > EDGELLM_KV_QUANT_MAX_HEAD_DIM))
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: a q8_0 KV cache needs head_dim to be a multiple of %d (at most %d); this model's "
                            "head_dim is %d: use f16", m->path, EDGELLM_QK8_0, EDGELLM_KV_QUANT_MAX_HEAD_DIM,
                            hp->head_dim);

    edgellm_status rc = EDGELLM_OK;
    edgellm_ctx *c = edgellm_calloc(1, sizeof *c);
    if (!c) return edgellm_fail_nomem(err, m->path);
    c->model = m;
    c->n_ctx = n_ctx;
    c->n_threads = n_threads;
    c->n_batch = EDGELLM_MIN(MAX_N_BATCH, n_ctx);
    size_t B = (size_t)c->n_batch;
    if ((rc = edgellm_threadpool_new(n_threads, &c->pool, err))) goto done;
    c->mm.pool = c->pool;
    if ((rc = edgellm_kv_cache_init(&c->kv, hp->n_layer, n_ctx, hp->n_head_kv, hp->head_dim, p.kv_type, err))) {
        /* name the model in the message */
        edgellm_error e2 = err ? *err : (edgellm_error){0};
        rc = edgellm_fail(err, rc, "%s: %s", m->path, e2.msg);
        goto done;
    }
    size_t scratch = matmul_scratch_bytes(m, c->n_batch);
    if (!alloc_floats(&c->x, B, (size_t)hp->n_embd) || !alloc_floats(&c->xb, B, (size_t)hp->n_embd) ||
        !alloc_floats(&c->q, B, (size_t)hp->n_embd) || !alloc_floats(&c->k, B, (size_t)hp->kv_dim) ||
        !alloc_floats(&c->v, B, (size_t)hp->kv_dim) || !alloc_floats(&c->att, B, (size_t)hp->n_embd) ||
        !alloc_floats(&c->hb, B, (size_t)hp->n_ff) || !alloc_floats(&c->hb2, B, (size_t)hp->n_ff) ||
        !alloc_floats(&c->rope_cos, B, (size_t)hp->rope_dim / 2) ||
        !alloc_floats(&c->rope_sin, B, (size_t)hp->rope_dim / 2) ||
        !alloc_floats(&c->scores, (size_t)n_threads, (size_t)n_ctx) ||
        !alloc_floats(&c->logits, 1, (size_t)hp->n_vocab) ||
        (scratch && !(c->mm.scratch = edgellm_malloc(scratch)))) {
        rc = edgellm_fail_nomem(err, m->path);
        goto done;
    }
    edgellm_log(EDGELLM_LOG_INFO, "%s: context of %d positions, KV cache %s %.1f MiB, %d threads", m->path, n_ctx,
                edgellm_type_name(p.kv_type), (double)c->kv.size_bytes / 1048576.0, n_threads);
    *out = c;
    c = NULL;
done:
    edgellm_ctx_free(c);
    return rc;
}

void edgellm_ctx_free(edgellm_ctx *c)
{
    if (!c) return;
    edgellm_threadpool_free(c->pool);
    edgellm_kv_cache_free(&c->kv);
    float *bufs[] = {c->x, c->xb, c->q, c->k, c->v, c->att, c->hb, c->hb2, c->rope_cos, c->rope_sin, c->scores,
                     c->logits};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) edgellm_free(bufs[i]);
    edgellm_free(c->mm.scratch);
    edgellm_free(c);
}

int edgellm_ctx_n_ctx(const edgellm_ctx *c) { return c ? c->n_ctx : 0; }
int edgellm_ctx_n_past(const edgellm_ctx *c) { return c ? c->n_past : 0; }
const edgellm_model *edgellm_ctx_model(const edgellm_ctx *c) { return c ? c->model : NULL; }

void edgellm_ctx_reset(edgellm_ctx *c)
{
    if (!c) return;
    c->n_past = 0;
    c->has_logits = false;
}

edgellm_status edgellm_ctx_truncate(edgellm_ctx *c, int n_past, edgellm_error *err)
{
    if (!c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_ctx_truncate: NULL context");
    if (n_past < 0 || n_past > c->n_past)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: cannot truncate to %d positions: the cache holds %d",
                            c->model->path, n_past, c->n_past);
    c->n_past = n_past;   /* rows >= n_past are dead: attention reads positions < n_past + new */
    c->has_logits = false;
    return EDGELLM_OK;
}

const float *edgellm_ctx_logits(const edgellm_ctx *c) { return c && c->has_logits ? c->logits : NULL; }

edgellm_status edgellm_decode(edgellm_ctx *c, const int32_t *tokens, int n_tokens, float *logits_all,
                              edgellm_error *err)
{
    if (!c || !tokens || n_tokens <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_decode: NULL context/tokens or n_tokens %d <= 0",
                            n_tokens);
    const edgellm_model *m = c->model;
    int n_vocab = m->hp.n_vocab;
    if (n_tokens > c->n_ctx - c->n_past)
        return edgellm_fail(err, EDGELLM_ERR_CTX_FULL, "%s: context full: %d positions used + %d new > n_ctx %d",
                            m->path, c->n_past, n_tokens, c->n_ctx);
    for (int i = 0; i < n_tokens; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: token id %d at index %d is out of range [0, %d)",
                                m->path, (int)tokens[i], i, n_vocab);

    c->has_logits = false;
    for (int done = 0; done < n_tokens;) {
        int nb = EDGELLM_MIN(c->n_batch, n_tokens - done);
        bool final = done + nb == n_tokens;
        float *rows = logits_all ? logits_all + (size_t)done * (size_t)n_vocab : NULL;
        edgellm_llama_forward(c, tokens + done, nb, c->n_past + done, rows, final ? c->logits : NULL);
        done += nb;
    }
    /* On a numeric failure the tokens are not accepted: n_past stays, and the cache rows
     * written beyond it are overwritten by the next call. */
    bool ok = logits_all ? edgellm_all_finite(logits_all, (int64_t)n_tokens * n_vocab)
                         : edgellm_all_finite(c->logits, n_vocab);
    if (!ok)
        return edgellm_fail(err, EDGELLM_ERR_NUMERIC, "%s: NaN or inf in the logits (positions %d..%d)", m->path,
                            c->n_past, c->n_past + n_tokens - 1);
    c->n_past += n_tokens;
    c->has_logits = true;
    return EDGELLM_OK;
}
