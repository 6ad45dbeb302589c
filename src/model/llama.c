/*
 * llama.c — the forward pass of the llama block family (archs llama and qwen2, see
 * arch_table.c) over a chunk of tokens, reading and appending to the KV cache.
 *
 * Per token, at position pos (conventions: shared/data/reference/README.md):
 *   x = token_embd[token]
 *   per layer:
 *     xb = rmsnorm(x) * attn_norm
 *     q = wq·xb (+bq)   k = wk·xb (+bk)   v = wv·xb (+bv)
 *     rope(q), rope(k) at pos;  cache[layer][pos] = k, v
 *     att[h] = softmax(q_h · K_{h/group}ᵀ / sqrt(head_dim)) · V_{h/group} over positions 0..pos
 *     x += wo·att
 *     xb = rmsnorm(x) * ffn_norm
 *     x += w_down·(silu(w_gate·xb) * (w_up·xb))
 *   logits = output · (rmsnorm(x) * output_norm)
 *
 * A chunk runs all its tokens through a layer before the next layer (matrices are read once
 * per chunk, not per token). Every row's arithmetic is the same whether the chunk holds one
 * token or many: the kernels compute each output element from its own inputs only, and the
 * attention of token t at pos0+t sees exactly the cache rows 0..pos0+t. Hence logits from a
 * prefill equal those from token-by-token decoding bit for bit.
 * This function allocates nothing: the context owns all scratch (model.h).
 */
#include "model.h"
#include "../kernels/dispatch.h"
#include "../kernels/ops.h"
#include <math.h>

typedef struct {
    edgellm_ctx *c;
    int il;                      /* layer                         */
    int n;                       /* tokens in the chunk           */
    int pos0;                    /* position of the first token   */
    float scale;                 /* 1/sqrt(head_dim)              */
    edgellm_vec_dot_fn dot;      /* dot of a cache row (kv.type; F32 for Q8_0) with q, for q·k */
    edgellm_attend_fn attend;    /* F32 cache: edgellm_attend or its SIMD twin (same bits)  */
    edgellm_attend_f16_fn attend_f16;   /* F16 cache: edgellm_attend_f16 or its twin     */
    edgellm_attend_q8_0_fn attend_q8_0; /* Q8_0 cache: a twin of edgellm_attend_quant, or NULL */
} attention_job;

/* Work items are (token, query head) pairs, split by cost over the threads; each thread
 * has its own row of c->scores. */
/* Items [*i0, *i1) of thread ith of nth: items are (t, h) in order i = t * n_head + h, item
 * cost pos0 + t + 1; thread k takes the items whose cumulative cost before them lies in
 * [k/nth, (k+1)/nth) of the total. Every item goes to exactly one thread. */
static void attention_items(int n, int n_head, int pos0, int ith, int nth, int64_t *i0, int64_t *i1)
{
    double total = (double)n_head * ((double)n * (pos0 + 1) + (double)n * (n - 1) / 2);
    double lo = total * ith / nth, hi = total * (ith + 1) / nth;
    int64_t first = -1, last = (int64_t)n * n_head;
    double before = 0;   /* cost of all items before item i */
    for (int t = 0; t < n && last == (int64_t)n * n_head; t++) {
        double c = (double)pos0 + t + 1;
        for (int h = 0; h < n_head; h++, before += c) {
            int64_t i = (int64_t)t * n_head + h;
            if (first < 0 && before >= lo) first = i;
            if (ith < nth - 1 && before >= hi) { last = i; break; }
        }
    }
    if (first < 0) first = last;
    *i0 = first;
    *i1 = EDGELLM_MAX(first, last);
}

static void attention_task(void *arg, int ith, int nth)
{
    attention_job *j = arg;
    edgellm_ctx *c = j->c;
    const edgellm_hparams *hp = &c->model->hp;
    int group = hp->n_head / hp->n_head_kv;
    float *scores = c->scores + (size_t)ith * (size_t)c->n_ctx;             /* [n_ctx] */
    bool f16 = c->kv.type == EDGELLM_TYPE_F16, quant = c->kv.type == EDGELLM_TYPE_Q8_0;
    edgellm_to_float_fn deq = quant ? edgellm_kernels_to_float(c->kv.type) : NULL;
    float tmp[EDGELLM_KV_QUANT_MAX_HEAD_DIM];                               /* a dequantized head row */
    /* Contiguous items of equal total cost per thread: in a causal prefill token t attends to
     * pos0 + t + 1 positions, so equal item counts would give the last thread ~3x the work
     * of the first. Contiguous, so the heads of one KV group mostly stay on one thread (they
     * read the same K/V rows). An item's result does not depend on the thread. */
    int64_t i0, i1;
    attention_items(j->n, hp->n_head, j->pos0, ith, nth, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
        int t = (int)(i / hp->n_head), h = (int)(i % hp->n_head), kvh = h / group;
        size_t qo = (size_t)t * hp->n_embd + (size_t)h * hp->head_dim;
        int64_t n_pos = (int64_t)j->pos0 + t + 1;
        const void *k = edgellm_kv_k_head(&c->kv, j->il, kvh);             /* [n_ctx][head_dim] */
        const void *v = edgellm_kv_v_head(&c->kv, j->il, kvh);
        if (quant) {
            if (!j->attend_q8_0 ||
                !j->attend_q8_0(c->att + qo, c->q + qo, k, v, c->kv.row_bytes, hp->head_dim, n_pos, j->scale, scores))
                edgellm_attend_quant(c->att + qo, c->q + qo, k, v, c->kv.row_bytes, hp->head_dim, n_pos, j->scale,
                                     scores, j->dot, deq, tmp);
        } else if (f16)
            j->attend_f16(c->att + qo, c->q + qo, k, v, hp->head_dim, hp->head_dim, n_pos, j->scale, scores, j->dot);
        else
            j->attend(c->att + qo, c->q + qo, k, v, hp->head_dim, hp->head_dim, n_pos, j->scale, scores, j->dot);
    }
}

static void rope_rows(const edgellm_ctx *c, float *x, int n, int n_heads, int64_t stride)
{
    const edgellm_hparams *hp = &c->model->hp;
    int half = hp->rope_dim / 2;
    for (int t = 0; t < n; t++) {
        const float *cs = c->rope_cos + (size_t)t * half, *sn = c->rope_sin + (size_t)t * half;
        if (c->model->arch->rope == EDGELLM_ROPE_NEOX)
            edgellm_rope_neox(x + t * stride, n_heads, hp->head_dim, hp->rope_dim, cs, sn);
        else
            edgellm_rope_adjacent(x + t * stride, n_heads, hp->head_dim, hp->rope_dim, cs, sn);
    }
}

/* The context's first forward reads the weights in file order (IN_ORDER): if the file is
 * not in the page cache yet, its pages are then placed in that order, which later passes
 * stream fastest (see edgellm_matmul_sched); every later forward uses STREAM. */
static void matmul(edgellm_ctx *c, const edgellm_matmul_job *jobs, int k, const float *x, int n)
{
    edgellm_matmul_batch_sched(c->pool, jobs, k, x, n, c->mm_scratch,
                               c->weights_read ? EDGELLM_MATMUL_STREAM : EDGELLM_MATMUL_IN_ORDER);
}

static void matmul1(edgellm_ctx *c, float *y, const edgellm_tensor *W, const float *x, int n)
{
    const edgellm_matmul_job job = {y, W};
    matmul(c, &job, 1, x, n);
}

static void attention_block(edgellm_ctx *c, const edgellm_layer *L, int il, int n, int pos0)
{
    const edgellm_hparams *hp = &c->model->hp;
    int64_t E = hp->n_embd, KV = hp->kv_dim;
    for (int t = 0; t < n; t++) edgellm_rmsnorm(c->xb + t * E, c->x + t * E, L->attn_norm, E, hp->rms_eps);
    const edgellm_matmul_job qkv[3] = {
        {c->q, &L->wq},                                                /* q[n][n_embd] = xb · wqᵀ  */
        {c->k, &L->wk},                                                /* k[n][kv_dim] = xb · wkᵀ  */
        {c->v, &L->wv},                                                /* v[n][kv_dim] = xb · wvᵀ  */
    };
    matmul(c, qkv, 3, c->xb, n);
    if (L->bq)
        for (int t = 0; t < n; t++) {
            edgellm_add(c->q + t * E, L->bq, E);
            edgellm_add(c->k + t * KV, L->bk, KV);
            edgellm_add(c->v + t * KV, L->bv, KV);
        }
    rope_rows(c, c->q, n, hp->n_head, E);
    rope_rows(c, c->k, n, hp->n_head_kv, KV);
    for (int t = 0; t < n; t++) edgellm_kv_cache_store(&c->kv, il, pos0 + t, c->k + t * KV, c->v + t * KV);
    attention_job job = {
        .c = c, .il = il, .n = n, .pos0 = pos0,
        .scale = (float)(1.0 / sqrt((double)hp->head_dim)),
        /* F32 or F16 row · F32 q; a Q8_0 row is dequantized first, then the F32 dot */
        .dot = edgellm_kernels_vec_dot(c->kv.type == EDGELLM_TYPE_Q8_0 ? EDGELLM_TYPE_F32 : c->kv.type),
        .attend = edgellm_kernels_attend_f32(),
        .attend_f16 = edgellm_kernels_attend_f16(),
        .attend_q8_0 = edgellm_kernels_attend_q8_0(),
    };
    /* Tiny attention (short context, small heads) is not worth waking the workers. */
    double macs = 2.0 * n * hp->n_head * ((double)pos0 + n) * hp->head_dim;
    edgellm_threadpool_run(macs < (1 << 16) ? NULL : c->pool, attention_task, &job);   /* att[n][n_embd] */
    matmul1(c, c->xb, &L->wo, c->att, n);                              /* xb[n][n_embd] = att · woᵀ */
    for (int t = 0; t < n; t++) edgellm_add(c->x + t * E, c->xb + t * E, E);
}

typedef struct {
    float *gate;                 /* [n][n_ff] */
    const float *up;             /* [n][n_ff] */
    int64_t n_ff;
    int n;
} swiglu_job;

/* The n·n_ff elements (gate and up are contiguous [n][n_ff]) split evenly over the threads,
 * so that one decoded token is threaded too (an exp per element: ~20 µs per layer of a
 * tinyllama at n_ff 5632 on one thread with libm's expf, ~10 µs with the 4-lane
 * edgellm_expf_vec). Each element's value does not depend on the split. */
static void swiglu_task(void *arg, int ith, int nth)
{
    swiglu_job *j = arg;
    int64_t e0, e1;
    edgellm_split_range(j->n * j->n_ff, ith, nth, &e0, &e1);
    edgellm_swiglu(j->gate + e0, j->up + e0, e1 - e0);
}

static void ffn_block(edgellm_ctx *c, const edgellm_layer *L, int n)
{
    const edgellm_hparams *hp = &c->model->hp;
    int64_t E = hp->n_embd, F = hp->n_ff;
    for (int t = 0; t < n; t++) edgellm_rmsnorm(c->xb + t * E, c->x + t * E, L->ffn_norm, E, hp->rms_eps);
    const edgellm_matmul_job gate_up[2] = {
        {c->hb, &L->w_gate},                                           /* hb[n][n_ff]  */
        {c->hb2, &L->w_up},                                            /* hb2[n][n_ff] */
    };
    matmul(c, gate_up, 2, c->xb, n);
    swiglu_job sj = {c->hb, c->hb2, F, n};                             /* hb = silu(hb) * hb2 */
    edgellm_threadpool_run(n * F >= 2048 ? c->pool : NULL, swiglu_task, &sj);   /* below: not worth a hand-off */
    matmul1(c, c->xb, &L->w_down, c->hb, n);                           /* xb[n][n_embd] */
    for (int t = 0; t < n; t++) edgellm_add(c->x + t * E, c->xb + t * E, E);
}

void edgellm_llama_forward(edgellm_ctx *c, const int32_t *tokens, int n, int pos0, float *logits, float *last)
{
    const edgellm_model *m = c->model;
    const edgellm_hparams *hp = &m->hp;
    int64_t E = hp->n_embd, V = hp->n_vocab;
    int half = hp->rope_dim / 2;

    edgellm_to_float_fn embed = edgellm_kernels_to_float(m->token_embd.type);
    for (int t = 0; t < n; t++) {                                       /* x[n][n_embd] */
        const uint8_t *row = (const uint8_t *)m->token_embd.data + (size_t)tokens[t] * m->token_embd.row_bytes;
        embed(row, c->x + t * E, E);
        edgellm_rope_table(c->rope_cos + (size_t)t * half, c->rope_sin + (size_t)t * half, (int64_t)pos0 + t,
                           hp->rope_dim, hp->rope_freq_base);
    }
    for (int il = 0; il < hp->n_layer; il++) {
        attention_block(c, &m->layers[il], il, n, pos0);
        ffn_block(c, &m->layers[il], n);
    }
    if (logits) {                                                       /* every row */
        for (int t = 0; t < n; t++) edgellm_rmsnorm(c->xb + t * E, c->x + t * E, m->output_norm, E, hp->rms_eps);
        matmul1(c, logits, &m->output, c->xb, n);                      /* logits[n][n_vocab] */
        if (last) memcpy(last, logits + (n - 1) * V, (size_t)V * sizeof(float));
    } else if (last) {                                                  /* last row only */
        edgellm_rmsnorm(c->xb, c->x + (n - 1) * E, m->output_norm, E, hp->rms_eps);
        matmul1(c, last, &m->output, c->xb, 1);                        /* last[n_vocab] */
    }
    c->weights_read = true;
}
