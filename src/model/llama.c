/*
 * llama.c — the forward pass of the llama block family (archs llama and qwen2, see
 * arch_table.c) over a chunk of tokens, reading and appending to the KV cache.
 *
 * Per token, at position pos (conventions: shared/data/reference/README.md):
 *   x = token_embd[token]
 *   per layer:
 *     xb = rmsnorm(x) * attn_norm
 *     q = wq·xb (+bq)   k = wk·xb (+bk)   v = wv·xb (+bv)
 *     rope(q), rope(k) at pos (frequency scaling included);  cache[layer][pos] = k, v
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
    const edgellm_attend_kernel *attend;   /* over c->kv's type (dispatch.h)       */
    const edgellm_chunk *ch;
    int il;                      /* layer                         */
    float scale;                 /* 1/sqrt(head_dim)              */
} attention_job;

/* Work items are (token, query head) pairs, t * n_head + h, shared by cost: token t attends
 * to the cell[t] + 1 cells of its sequence up to its own. Contiguous, so the heads of one KV
 * group mostly stay on one thread (they read the same K/V rows). Each thread has its own
 * row of c->scores; an item's result does not depend on the thread or on the other tokens
 * of the chunk. */
static void attention_task(void *arg, int ith, int nth)
{
    attention_job *j = arg;
    edgellm_ctx *c = j->c;
    const edgellm_chunk *ch = j->ch;
    const edgellm_hparams *hp = &c->model->hp;
    int group = hp->n_head / hp->n_head_kv;
    float *scores = c->scores + (size_t)ith * (size_t)c->n_ctx;             /* [n_ctx] */
    int64_t i0, i1;
    edgellm_split_range_cost(ch->n, hp->n_head, 1.0, ch->cell, ith, nth, &i0, &i1);
    for (int64_t i = i0; i < i1; i++) {
        int t = (int)(i / hp->n_head), h = (int)(i % hp->n_head), kvh = h / group, s = ch->seq ? ch->seq[t] : 0;
        size_t qo = (size_t)t * hp->n_embd + (size_t)h * hp->head_dim;
        const void *k = edgellm_kv_k_head(&c->kv, j->il, kvh, s);          /* [n_ctx][head_dim] */
        const void *v = edgellm_kv_v_head(&c->kv, j->il, kvh, s);
        j->attend->run(j->attend, c->att + qo, c->q + qo, k, v, c->kv.row_bytes, hp->head_dim,
                       (int64_t)ch->cell[t] + 1, j->scale, scores);           /* att[t][h] */
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

static void matmul(edgellm_ctx *c, const edgellm_matmul_job *jobs, int k, const float *x, int n)
{
    if (c->observe)
        for (int j = 0; j < k; j++) c->observe(c->observe_user, jobs[j].W, x, n);
    edgellm_matmul_run(&c->mm, jobs, k, x, n);
}

static void matmul1(edgellm_ctx *c, float *y, const edgellm_tensor *W, const float *x, int n)
{
    const edgellm_matmul_job job = {y, W};
    matmul(c, &job, 1, x, n);
}

static void attention_block(edgellm_ctx *c, const edgellm_attend_kernel *attend, const edgellm_layer *L, int il,
                            const edgellm_chunk *ch)
{
    const int n = ch->n;
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
    for (int t = 0; t < n; t++)
        edgellm_kv_cache_store(&c->kv, il, ch->seq ? ch->seq[t] : 0, ch->cell[t], c->k + t * KV, c->v + t * KV);
    attention_job job = {
        .c = c, .attend = attend, .ch = ch, .il = il, .scale = (float)(1.0 / sqrt((double)hp->head_dim)),
    };
    /* Tiny attention (short context, small heads) is not worth waking the workers. */
    double cells = 0;
    for (int t = 0; t < n; t++) cells += (double)ch->cell[t] + 1;
    double macs = 2.0 * hp->n_head * cells * hp->head_dim;
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

edgellm_status edgellm_llama_forward(edgellm_ctx *c, const edgellm_chunk *ch)
{
    const edgellm_model *m = c->model;
    const edgellm_hparams *hp = &m->hp;
    const int n = ch->n;
    int64_t E = hp->n_embd, V = hp->n_vocab;
    int half = hp->rope_dim / 2;

    edgellm_to_float_fn embed = edgellm_kernels_to_float(m->token_embd.type);
    const edgellm_attend_kernel attend = edgellm_kernels_attend(c->kv.type);   /* the cache's rows */
    for (int t = 0; t < n; t++) {                                       /* x[n][n_embd] */
        const uint8_t *row = (const uint8_t *)m->token_embd.data + (size_t)ch->tokens[t] * m->token_embd.row_bytes;
        embed(row, c->x + t * E, E);
        if (hp->rope.scaled)                                           /* rope_scaling.c */
            edgellm_rope_table_scaled(c->rope_cos + (size_t)t * half, c->rope_sin + (size_t)t * half, ch->pos[t],
                                      hp->rope_dim, hp->rope_freq_base, &hp->rope.table);
        else
            edgellm_rope_table(c->rope_cos + (size_t)t * half, c->rope_sin + (size_t)t * half, ch->pos[t],
                               hp->rope_dim, hp->rope_freq_base);
    }
    for (int il = 0; il < hp->n_layer; il++) {
        if (atomic_load_explicit(&c->abort, memory_order_relaxed)) return EDGELLM_ERR_CANCELLED;
        if (c->layer_hook) c->layer_hook(c->layer_hook_user, il);
        attention_block(c, &attend, &m->layers[il], il, ch);
        ffn_block(c, &m->layers[il], n);
    }
    if (c->layer_hook) c->layer_hook(c->layer_hook_user, hp->n_layer);
    if (ch->logits) {                                                   /* every row */
        for (int t = 0; t < n; t++) edgellm_rmsnorm(c->xb + t * E, c->x + t * E, m->output_norm, E, hp->rms_eps);
        matmul1(c, ch->logits, &m->output, c->xb, n);                  /* logits[n][n_vocab] */
        for (int r = 0; r < ch->n_rows; r++)
            memcpy(ch->dst[r], ch->logits + (size_t)ch->rows[r] * V, (size_t)V * sizeof(float));
    } else if (ch->n_rows) {                                            /* the selected rows only */
        for (int r = 0; r < ch->n_rows; r++)
            edgellm_rmsnorm(c->xb + r * E, c->x + (size_t)ch->rows[r] * E, m->output_norm, E, hp->rms_eps);
        matmul1(c, c->out, &m->output, c->xb, ch->n_rows);             /* out[n_rows][n_vocab] */
        for (int r = 0; r < ch->n_rows; r++) memcpy(ch->dst[r], c->out + (size_t)r * V, (size_t)V * sizeof(float));
    }
    edgellm_matmul_pass_done(&c->mm);
    return EDGELLM_OK;
}
