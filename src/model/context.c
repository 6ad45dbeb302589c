/*
 * context.c — edgellm_ctx: creation (KV cache, scratch, thread pool, all sized once), the
 * sequence operations, and edgellm_decode_batch, which validates a batch, gives each token
 * its sequence's next cell, runs it in chunks of at most n_batch tokens through the forward
 * pass (llama.c), checks the logits and only then commits the cells.
 *
 * Memory of a context (floats unless noted):
 *   KV cache      2 × n_layer × n_head_kv × n_seq × n_ctx × head_dim elements of kv_type (4
 *                 bytes F32, 2 bytes F16, 34/32 bytes Q8_0)
 *   sequences     n_seq × (n_vocab floats of logits + 2 × n_ctx int32 positions and tokens)
 *   activations   n_batch × (4·n_embd + 2·kv_dim + 2·n_ff + rope_dim)
 *   scores        n_threads × n_ctx
 *   logits        min(n_batch, n_seq) × n_vocab (selected rows of a chunk)
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
#define MAX_N_SEQ 64

edgellm_ctx_params edgellm_ctx_default_params(void)
{
    edgellm_ctx_params p = {.size = sizeof p, .n_ctx = 0, .n_threads = 0, .kv_type = EDGELLM_TYPE_F32, .n_seq = 1};
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
        const edgellm_tensor *ws[EDGELLM_LAYER_N_MATRICES] = EDGELLM_LAYER_MATRICES(L);
        for (int i = 0; i < EDGELLM_LAYER_N_MATRICES; i++) best = EDGELLM_MAX(best, edgellm_matmul_scratch_size(ws[i], n_batch));
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
    if (p.n_seq < 1 || p.n_seq > MAX_N_SEQ)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: n_seq %d is outside 1..%d", m->path, p.n_seq, MAX_N_SEQ);
    if (n_threads > EDGELLM_MAX_THREADS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: n_threads %d exceeds %d", m->path, n_threads,
                            EDGELLM_MAX_THREADS);
    const int usable = edgellm_usable_cpus(NULL, 0);
    if (usable > 0 && n_threads > usable) {
        /* Threads beyond the CPUs only wait for each other: 64 threads on 2 CPUs decoded a
         * 30M-parameter Q4_0 model ~50x slower than 1 thread. The results do not depend on
         * the thread count, so fewer threads change nothing but the speed. Said once per
         * process (a benchmark makes many contexts). */
        static atomic_int warned;
        if (!atomic_exchange(&warned, 1))
            edgellm_log(EDGELLM_LOG_WARN, "%s: %d threads requested, but this process may use %d CPU%s: running %d "
                        "(more threads than CPUs only wait for each other)", m->path, n_threads, usable,
                        usable == 1 ? "" : "s", usable);
        n_threads = usable;
    }
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
    c->n_seq = p.n_seq;
    c->n_threads = n_threads;
    c->n_batch = EDGELLM_MIN(MAX_N_BATCH, n_ctx * p.n_seq);
    c->n_out = EDGELLM_MIN(c->n_batch, p.n_seq);
    size_t B = (size_t)c->n_batch;
    if ((rc = edgellm_threadpool_new(n_threads, &c->pool, err))) goto done;
    c->mm.pool = c->pool;
    if ((rc = edgellm_kv_cache_init(&c->kv, hp->n_layer, p.n_seq, n_ctx, hp->n_head_kv, hp->head_dim, p.kv_type, err))) {
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
        !alloc_floats(&c->out, (size_t)c->n_out, (size_t)hp->n_vocab) ||
        !(c->chunk_cell = edgellm_malloc(B * sizeof *c->chunk_cell)) ||
        !(c->seqs = edgellm_calloc((size_t)p.n_seq, sizeof *c->seqs)) ||
        (scratch && !(c->mm.scratch = edgellm_malloc(scratch)))) {
        rc = edgellm_fail_nomem(err, m->path);
        goto done;
    }
    for (int s = 0; s < p.n_seq; s++) {
        edgellm_seq_state *q = &c->seqs[s];
        q->pending = -1;
        if (!alloc_floats(&q->logits, 1, (size_t)hp->n_vocab) ||
            !(q->pos = edgellm_malloc((size_t)n_ctx * sizeof *q->pos)) ||
            !(q->tok = edgellm_malloc((size_t)n_ctx * sizeof *q->tok))) {
            rc = edgellm_fail_nomem(err, m->path);
            goto done;
        }
    }
    edgellm_log(EDGELLM_LOG_INFO, "%s: context of %d sequence(s) x %d cells, KV cache %s %.1f MiB, %d threads", m->path,
                p.n_seq, n_ctx, edgellm_type_name(p.kv_type), (double)c->kv.size_bytes / 1048576.0, n_threads);
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
                     c->out};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) edgellm_free(bufs[i]);
    for (int s = 0; c->seqs && s < c->n_seq; s++) {
        edgellm_free(c->seqs[s].logits);
        edgellm_free(c->seqs[s].pos);
        edgellm_free(c->seqs[s].tok);
    }
    edgellm_free(c->seqs);
    edgellm_free(c->chunk_cell);
    edgellm_free(c->mm.scratch);
    edgellm_free(c);
}

int edgellm_ctx_n_ctx(const edgellm_ctx *c) { return c ? c->n_ctx : 0; }
int edgellm_ctx_n_seq(const edgellm_ctx *c) { return c ? c->n_seq : 0; }
int edgellm_ctx_n_threads(const edgellm_ctx *c) { return c ? c->n_threads : 0; }
const edgellm_model *edgellm_ctx_model(const edgellm_ctx *c) { return c ? c->model : NULL; }
void edgellm_ctx_abort(edgellm_ctx *c)
{
    if (c) atomic_store(&c->abort, 1);
}

/* ---------------------------------------------------------------- sequences ---- */

static bool seq_ok(const edgellm_ctx *c, int seq) { return c && seq >= 0 && seq < c->n_seq; }

static edgellm_status bad_seq(const edgellm_ctx *c, const char *what, int seq, edgellm_error *err)
{
    if (!c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: NULL context", what);
    return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: %s: sequence %d does not exist (the context has %d: 0..%d)",
                        c->model->path, what, seq, c->n_seq, c->n_seq - 1);
}

int edgellm_seq_n_past(const edgellm_ctx *c, int seq) { return seq_ok(c, seq) ? c->seqs[seq].n : 0; }

int edgellm_seq_pos_max(const edgellm_ctx *c, int seq)
{
    if (!seq_ok(c, seq) || c->seqs[seq].n == 0) return -1;
    return c->seqs[seq].pos[c->seqs[seq].n - 1];
}

const int32_t *edgellm_seq_tokens(const edgellm_ctx *c, int seq) { return seq_ok(c, seq) ? c->seqs[seq].tok : NULL; }

const float *edgellm_seq_logits(const edgellm_ctx *c, int seq)
{
    return seq_ok(c, seq) && c->seqs[seq].has_logits ? c->seqs[seq].logits : NULL;
}

/* Keep the first n cells of a sequence. */
static void seq_keep(edgellm_ctx *c, int seq, int n)
{
    c->seqs[seq].n = n;
    c->seqs[seq].has_logits = false;
    c->seqs[seq].pending = -1;
}

edgellm_status edgellm_seq_clear(edgellm_ctx *c, int seq, edgellm_error *err)
{
    if (c && seq == -1) {
        for (int s = 0; s < c->n_seq; s++) seq_keep(c, s, 0);
        return EDGELLM_OK;
    }
    if (!seq_ok(c, seq)) return bad_seq(c, "seq_clear", seq, err);
    seq_keep(c, seq, 0);
    return EDGELLM_OK;
}

edgellm_status edgellm_seq_remove(edgellm_ctx *c, int seq, int p0, int p1, edgellm_error *err)
{
    if (!seq_ok(c, seq)) return bad_seq(c, "seq_remove", seq, err);
    if (p0 < 0 || (p1 >= 0 && p1 < p0))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: seq_remove: positions [%d, %d) of sequence %d are not a range",
                            c->model->path, p0, p1, seq);
    edgellm_seq_state *q = &c->seqs[seq];
    int c0 = 0, c1;
    while (c0 < q->n && q->pos[c0] < p0) c0++;                       /* first cell at >= p0 */
    for (c1 = c0; c1 < q->n && (p1 < 0 || q->pos[c1] < p1); c1++) {} /* first cell at >= p1 */
    if (c1 < q->n) {                                                  /* a gap: later cells move down */
        edgellm_kv_cache_move(&c->kv, seq, c1, seq, c0, q->n - c1);
        memmove(q->pos + c0, q->pos + c1, (size_t)(q->n - c1) * sizeof *q->pos);
        memmove(q->tok + c0, q->tok + c1, (size_t)(q->n - c1) * sizeof *q->tok);
    }
    seq_keep(c, seq, q->n - (c1 - c0));
    return EDGELLM_OK;
}

edgellm_status edgellm_seq_copy(edgellm_ctx *c, int src, int dst, int n, edgellm_error *err)
{
    if (!seq_ok(c, src)) return bad_seq(c, "seq_copy", src, err);
    if (!seq_ok(c, dst)) return bad_seq(c, "seq_copy", dst, err);
    if (n < 0 || n > c->seqs[src].n)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: seq_copy: cannot copy %d cells: sequence %d holds %d",
                            c->model->path, n, src, c->seqs[src].n);
    if (src != dst) {
        edgellm_kv_cache_move(&c->kv, src, 0, dst, 0, n);
        memcpy(c->seqs[dst].pos, c->seqs[src].pos, (size_t)n * sizeof(int32_t));
        memcpy(c->seqs[dst].tok, c->seqs[src].tok, (size_t)n * sizeof(int32_t));
    }
    seq_keep(c, dst, n);
    return EDGELLM_OK;
}

/* ---------------------------------------------------------------- decoding ---- */

/* Validate a batch and give each token its cell: cell[i] = its sequence's count + the
 * tokens of that sequence before it in the batch. new_n[s] = each sequence's count after. */
static edgellm_status check_batch(edgellm_ctx *c, const edgellm_batch *b, int32_t *cell, int32_t *pos, int *new_n,
                                  edgellm_error *err)
{
    const char *path = c->model->path;
    const int n_vocab = c->model->hp.n_vocab;
    int32_t *last = (int32_t *)pos + b->n_tokens;   /* scratch: last position per sequence (pos has room) */
    for (int s = 0; s < c->n_seq; s++) {
        new_n[s] = c->seqs[s].n;
        last[s] = c->seqs[s].n ? c->seqs[s].pos[c->seqs[s].n - 1] : -1;
    }
    for (int i = 0; i < b->n_tokens; i++) {
        const int s = b->seq ? b->seq[i] : 0;
        if (s < 0 || s >= c->n_seq)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: batch token %d: sequence %d does not exist (the context has "
                                "%d: 0..%d)", path, i, s, c->n_seq, c->n_seq - 1);
        if (b->tokens[i] < 0 || b->tokens[i] >= n_vocab)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: token id %d at index %d is out of range [0, %d)", path,
                                (int)b->tokens[i], i, n_vocab);
        const int32_t p = b->pos ? b->pos[i] : last[s] + 1;
        if (p <= last[s] || p == INT32_MAX)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: batch token %d: position %d of sequence %d is not past its "
                                "last position %d", path, i, (int)p, s, (int)last[s]);
        if (new_n[s] >= c->n_ctx) {
            int in_batch = 0;
            for (int k = 0; k < b->n_tokens; k++) in_batch += (b->seq ? b->seq[k] : 0) == s;
            return edgellm_fail(err, EDGELLM_ERR_CTX_FULL, "%s: context full: sequence %d holds %d cells + %d new > n_ctx "
                                "%d", path, s, c->seqs[s].n, in_batch, c->n_ctx);
        }
        cell[i] = new_n[s]++;
        pos[i] = last[s] = p;
    }
    return EDGELLM_OK;
}

edgellm_status edgellm_decode_batch(edgellm_ctx *c, const edgellm_batch *b, edgellm_error *err)
{
    if (c && atomic_load(&c->busy))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: decode: a generation job runs on this context (wait for it "
                            "first)", c->model->path);
    if (c) atomic_store(&c->abort, 0);   /* a public call starts: an earlier abort is spent */
    return edgellm_decode_batch_internal(c, b, err);
}

/* edgellm_decode_batch without clearing the abort flag (generation loops call it, so that
 * an abort during their sampling still stops them). */
edgellm_status edgellm_decode_batch_internal(edgellm_ctx *c, const edgellm_batch *b, edgellm_error *err)
{
    if (!c || !b) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_decode_batch: NULL context or batch");
    edgellm_batch bb = {.size = sizeof bb};
    edgellm_status rc = edgellm_sized_in(&bb, sizeof bb, b, "edgellm_batch", err);
    if (rc) return rc;
    if (!bb.tokens || bb.n_tokens <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_decode_batch: NULL tokens or n_tokens %d <= 0", bb.n_tokens);
    const edgellm_model *m = c->model;
    const size_t V = (size_t)m->hp.n_vocab;
    int32_t *cell = NULL, *pos = NULL;
    int *new_n = NULL, *rows = NULL;
    float **dst = NULL;
    if (!(cell = edgellm_malloc((size_t)bb.n_tokens * sizeof *cell)) ||
        !(pos = edgellm_malloc(((size_t)bb.n_tokens + (size_t)c->n_seq) * sizeof *pos)) ||
        !(new_n = edgellm_malloc((size_t)c->n_seq * sizeof *new_n)) ||
        !(rows = edgellm_malloc((size_t)c->n_out * sizeof *rows)) || !(dst = edgellm_malloc((size_t)c->n_out * sizeof *dst))) {
        rc = edgellm_fail_nomem(err, m->path);
        goto done;
    }
    if ((rc = check_batch(c, &bb, cell, pos, new_n, err))) goto done;

    /* the logits kept: each sequence's last token in the batch */
    for (int s = 0; s < c->n_seq; s++)
        if (new_n[s] != c->seqs[s].n) c->seqs[s].has_logits = false;
    for (int done = 0; done < bb.n_tokens && rc == EDGELLM_OK;) {
        const int nb = EDGELLM_MIN(c->n_batch, bb.n_tokens - done);
        int n_rows = 0;
        for (int t = 0; t < nb; t++) {
            const int i = done + t, s = bb.seq ? bb.seq[i] : 0;
            if (cell[i] == new_n[s] - 1) {                           /* s's last token */
                rows[n_rows] = t;
                dst[n_rows++] = c->seqs[s].logits;
            }
        }
        const edgellm_chunk ch = {
            .tokens = bb.tokens + done, .seq = bb.seq ? bb.seq + done : NULL, .cell = cell + done, .pos = pos + done,
            .n = nb, .logits = bb.logits ? bb.logits + (size_t)done * V : NULL, .rows = rows, .dst = dst,
            .n_rows = n_rows,
        };
        rc = edgellm_llama_forward(c, &ch);
        if (rc == EDGELLM_ERR_CANCELLED)
            rc = edgellm_fail(err, rc, "%s: aborted (positions %d..%d of the batch not added)", m->path, done,
                              bb.n_tokens - 1);
        done += nb;
    }
    if (rc) goto done;
    /* On a numeric failure the tokens are not added: counts stay, and the cells written
     * past them are overwritten by the next call. */
    bool ok = true;
    if (bb.logits) ok = edgellm_all_finite(bb.logits, (int64_t)bb.n_tokens * (int64_t)V);
    for (int s = 0; s < c->n_seq && ok; s++)
        if (new_n[s] != c->seqs[s].n) ok = edgellm_all_finite(c->seqs[s].logits, (int64_t)V);
    if (!ok) {
        rc = edgellm_fail(err, EDGELLM_ERR_NUMERIC, "%s: NaN or inf in the logits (batch of %d tokens)", m->path,
                          bb.n_tokens);
        goto done;
    }
    for (int i = 0; i < bb.n_tokens; i++) {
        edgellm_seq_state *q = &c->seqs[bb.seq ? bb.seq[i] : 0];
        q->pos[cell[i]] = pos[i];
        q->tok[cell[i]] = bb.tokens[i];
    }
    for (int s = 0; s < c->n_seq; s++)
        if (new_n[s] != c->seqs[s].n) {
            c->seqs[s].n = new_n[s];
            c->seqs[s].has_logits = true;
            c->seqs[s].pending = -1;
        }
done:
    edgellm_free(cell);
    edgellm_free(pos);
    edgellm_free(new_n);
    edgellm_free(rows);
    edgellm_free(dst);
    return rc;
}

/* ------------------------------------------------------- sequence 0 as a stream ---- */

const float *edgellm_ctx_logits(const edgellm_ctx *c) { return edgellm_seq_logits(c, 0); }
int edgellm_ctx_n_past(const edgellm_ctx *c) { return edgellm_seq_n_past(c, 0); }
void edgellm_ctx_reset(edgellm_ctx *c) { (void)edgellm_seq_clear(c, -1, NULL); }

edgellm_status edgellm_ctx_truncate(edgellm_ctx *c, int n_past, edgellm_error *err)
{
    if (!c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_ctx_truncate: NULL context");
    if (n_past < 0 || n_past > c->seqs[0].n)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: cannot truncate to %d positions: the cache holds %d",
                            c->model->path, n_past, c->seqs[0].n);
    seq_keep(c, 0, n_past);   /* cells >= n_past are dead: attention reads the cells below a token */
    return EDGELLM_OK;
}

edgellm_status edgellm_decode(edgellm_ctx *c, const int32_t *tokens, int n_tokens, float *logits_all,
                              edgellm_error *err)
{
    if (!c || !tokens || n_tokens <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_decode: NULL context/tokens or n_tokens %d <= 0",
                            n_tokens);
    if (n_tokens > c->n_ctx - c->seqs[0].n)   /* the message tests and users know */
        return edgellm_fail(err, EDGELLM_ERR_CTX_FULL, "%s: context full: %d positions used + %d new > n_ctx %d",
                            c->model->path, c->seqs[0].n, n_tokens, c->n_ctx);
    const edgellm_batch b = {.size = sizeof b, .n_tokens = n_tokens, .tokens = tokens, .logits = logits_all};
    return edgellm_decode_batch(c, &b, err);
}
