/*
 * eval.c — the shared machinery of `edgellm eval`: default parameters, the window plan
 * (the text tokenized once and cut into windows), the window runner (one model over one
 * window, keeping the logits of the scored positions), and small helpers (logsumexp,
 * argmax, FNV-1a hashing, mean/standard error, quantiles).
 *
 * Spec: llama-perplexity (ggml-org/llama.cpp tools/perplexity/perplexity.cpp), as
 * implemented there:
 *
 *   text --tokenize (BOS first if the vocab adds it)--> t[0 .. n_tokens)
 *
 *   stride 0:  window w = t[w*n_ctx .. (w+1)*n_ctx),  w < floor(n_tokens / n_ctx)
 *              |<---------- context only ---------->|<------- scored -------->|
 *              0                                 first = n_ctx/2          n_ctx-1
 *              logits at positions first .. n_ctx-2 predict tokens first+1 .. n_ctx-1
 *              -> n_pred = n_ctx - 1 - n_ctx/2 (127 at n_ctx 256, 255 at 512)
 *   stride S:  window w = t[w*S .. w*S + n_ctx), while it fits; first = n_ctx - 1 - S,
 *              so the last S tokens of each window are scored, each token once, each
 *              with at least n_ctx - S >= n_ctx/2 tokens of context.
 *
 *   In every window the first token is replaced by BOS (when the vocab has one), and the
 *   window is evaluated from an empty KV cache. The window's last token is only a target,
 *   so it is never decoded. At least 2 * n_ctx text tokens are required (llama-perplexity
 *   refuses less: "you need at least 2*n_ctx tokens").
 *
 * Determinism: every sum here runs sequentially in double precision in position order; the
 * forward pass computes each output element on one thread with the same code whatever the
 * thread count (threadpool.h), so results are identical across runs and thread counts.
 */
#include "eval.h"
#include "../model/model.h"
#include <math.h>
#include <stdlib.h>

#define EVAL_MIN_N_CTX 8

edgellm_eval_params edgellm_eval_default_params(void)
{
    edgellm_eval_params p;
    memset(&p, 0, sizeof p);
    p.n_ctx = 512;
    p.stride = 0;
    p.max_chunks = 0;
    p.n_threads = 0;
    p.top_k = 64;
    return p;
}

edgellm_status edgellm_eval_report_progress(const edgellm_eval_params *p, double fraction, const char *what,
                                            edgellm_error *err)
{
    if (p && p->progress && p->progress(p->progress_user, fraction, what) != 0)
        return edgellm_fail(err, EDGELLM_ERR_CANCELLED, "eval: cancelled");
    return EDGELLM_OK;
}

/* ---------------------------------------------------------------- helpers ---- */

uint64_t edgellm_fnv64(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

uint64_t edgellm_eval_tokenizer_hash(const edgellm_tokenizer *t)
{
    uint64_t h = EDGELLM_FNV64_INIT;
    int32_t head[3] = {edgellm_tokenizer_n_vocab(t), edgellm_token_bos(t), edgellm_token_eos(t)};
    h = edgellm_fnv64(h, head, sizeof head);
    for (int32_t i = 0; i < head[0]; i++) {
        const char *s = edgellm_token_text(t, i);
        if (!s) s = "";
        h = edgellm_fnv64(h, s, strlen(s) + 1);
    }
    return h;
}

double edgellm_eval_logsumexp(const float *x, int n)
{
    float mx = x[0];
    for (int i = 1; i < n; i++)
        if (x[i] > mx) mx = x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += exp((double)x[i] - (double)mx);
    return (double)mx + log(s);
}

int edgellm_eval_argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

void edgellm_eval_mean_err(double sum, double sum2, int64_t n, double *mean, double *err)
{
    if (n <= 0) { *mean = NAN; *err = NAN; return; }
    double m = sum / (double)n;
    *mean = m;
    if (n < 2) { *err = NAN; return; }
    if (isinf(m)) { *err = INFINITY; return; }   /* an infinite sample: unbounded, not NaN */
    double var = sum2 / (double)n - m * m;
    if (var < 0) var = 0;   /* rounding when every sample is equal */
    *err = sqrt(var / (double)(n - 1));
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

void edgellm_eval_sort_floats(float *v, int64_t n)
{
    if (n > 1) qsort(v, (size_t)n, sizeof *v, cmp_float);
}

double edgellm_eval_quantile_sorted(const float *v, int64_t n, double q)
{
    if (n <= 0) return NAN;
    double pos = q * (double)(n - 1);
    int64_t i = (int64_t)floor(pos);
    if (i >= n - 1) return v[n - 1];
    double f = pos - (double)i;
    if (f == 0.0 || v[i + 1] == v[i]) return v[i];   /* no inf - inf or 0 * inf: never NaN */
    return (double)v[i] + f * ((double)v[i + 1] - (double)v[i]);
}

const char *edgellm_eval_basename(const char *path)
{
    if (!path) return "";
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *edgellm_eval_model_path(const edgellm_model *m)
{
    return m && m->path ? m->path : "(model)";
}

/* ------------------------------------------------------------------- plan ---- */

static const char *text_label(const edgellm_eval_params *p)
{
    return p && p->text_name ? p->text_name : "text";
}

edgellm_status edgellm_eval_plan_make(const edgellm_tokenizer *tok, const char *text, size_t len,
                                      const edgellm_eval_params *p, edgellm_eval_plan *out, edgellm_error *err)
{
    memset(out, 0, sizeof *out);
    const char *name = text_label(p);
    if (!tok || !p || (!text && len)) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval: NULL argument");
    if (p->n_ctx < EVAL_MIN_N_CTX || p->n_ctx > (1 << 20))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval: n_ctx %d is outside [%d, %d]", p->n_ctx, EVAL_MIN_N_CTX,
                            1 << 20);
    if (p->stride < 0 || p->stride > p->n_ctx / 2)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                            "eval: stride %d is outside [1, n_ctx/2 = %d] (or leave --stride out: score the second half of each chunk)",
                            p->stride, p->n_ctx / 2);
    if (len > (size_t)INT32_MAX - 16)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: %zu bytes is too long a text", name, len);

    /* SentencePiece and byte-level BPE give at most one token per byte, plus BOS/EOS */
    int cap = (int)len + 8, n = 0;
    int32_t *ids = edgellm_malloc((size_t)cap * sizeof *ids);
    if (!ids) return edgellm_fail_nomem(err, name);
    edgellm_status rc = edgellm_tokenize(tok, text, len, 1, ids, cap, &n, err);
    if (rc == EDGELLM_ERR_MISUSE && n > cap) {
        edgellm_free(ids);
        cap = n;
        if (!(ids = edgellm_malloc((size_t)cap * sizeof *ids))) return edgellm_fail_nomem(err, name);
        rc = edgellm_tokenize(tok, text, len, 1, ids, cap, &n, err);
    }
    if (rc != EDGELLM_OK) { edgellm_free(ids); return rc; }

    int64_t need = 2 * (int64_t)p->n_ctx;
    if (n < need) {
        edgellm_free(ids);
        return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                            "%s: the text is too short: %d token%s, and n_ctx %d needs at least %lld "
                            "(2 x n_ctx, the llama-perplexity rule); use a longer text or a smaller -c",
                            name, n, n == 1 ? "" : "s", p->n_ctx, (long long)need);
    }
    out->tokens = ids;
    out->n_tokens = n;
    out->n_ctx = p->n_ctx;
    out->stride = p->stride;
    int32_t bos = edgellm_token_bos(tok);
    out->bos = (bos >= 0 && ids[0] == bos) ? bos : -1;   /* the vocab adds BOS: substitute it */
    if (p->stride == 0) {
        out->first = p->n_ctx / 2;
        out->n_windows = (int)(n / p->n_ctx);
    } else {
        out->first = p->n_ctx - 1 - p->stride;
        out->n_windows = (int)((n - p->n_ctx) / p->stride + 1);
    }
    out->n_pred = p->n_ctx - 1 - out->first;
    if (p->max_chunks > 0 && p->max_chunks < out->n_windows) out->n_windows = p->max_chunks;
    out->text_bytes = len;
    out->text_hash = edgellm_fnv64(EDGELLM_FNV64_INIT, text, len);
    return EDGELLM_OK;
}

void edgellm_eval_plan_free(edgellm_eval_plan *pl)
{
    if (!pl) return;
    edgellm_free(pl->tokens);
    pl->tokens = NULL;
}

int64_t edgellm_eval_plan_start(const edgellm_eval_plan *pl, int w)
{
    return (int64_t)w * (pl->stride ? pl->stride : pl->n_ctx);
}

/* ----------------------------------------------------------------- runner ---- */

edgellm_status edgellm_eval_runner_init(edgellm_eval_runner *r, const edgellm_model *m, const edgellm_eval_plan *pl,
                                        int n_threads, int kv_type, edgellm_error *err)
{
    memset(r, 0, sizeof *r);
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = pl->n_ctx;
    cp.n_threads = n_threads;
    cp.kv_type = kv_type;
    edgellm_status rc = edgellm_ctx_new(m, &cp, &r->ctx, err);
    if (rc != EDGELLM_OK) return rc;
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    r->n_vocab = info.n_vocab;
    size_t nl;
    if (!edgellm_mul_size((size_t)pl->n_pred, (size_t)r->n_vocab, &nl) || !edgellm_mul_size(nl, sizeof(float), &nl)) {
        edgellm_eval_runner_free(r);
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "%s: logits of %d positions overflow", edgellm_eval_model_path(m),
                            pl->n_pred);
    }
    r->win = edgellm_malloc((size_t)pl->n_ctx * sizeof *r->win);
    r->logits = edgellm_malloc(nl);
    if (!r->win || !r->logits) {
        edgellm_eval_runner_free(r);
        return edgellm_fail_nomem(err, "eval: window logits");
    }
    return EDGELLM_OK;
}

void edgellm_eval_runner_free(edgellm_eval_runner *r)
{
    if (!r) return;
    edgellm_ctx_free(r->ctx);
    edgellm_free(r->win);
    edgellm_free(r->logits);
    memset(r, 0, sizeof *r);
}

edgellm_status edgellm_eval_runner_window(edgellm_eval_runner *r, const edgellm_eval_plan *pl, int w,
                                          edgellm_error *err)
{
    int64_t start = edgellm_eval_plan_start(pl, w);
    memcpy(r->win, pl->tokens + start, (size_t)pl->n_ctx * sizeof *r->win);
    if (pl->bos >= 0) r->win[0] = pl->bos;
    edgellm_ctx_reset(r->ctx);
    double t0 = edgellm_time_ms();
    edgellm_status rc = EDGELLM_OK;
    if (pl->first > 0) rc = edgellm_decode(r->ctx, r->win, pl->first, NULL, err);     /* context only */
    if (rc == EDGELLM_OK)                                                              /* [n_pred][n_vocab] */
        rc = edgellm_decode(r->ctx, r->win + pl->first, pl->n_pred, r->logits, err);
    r->eval_ms += edgellm_time_ms() - t0;
    r->n_evaluated += pl->n_ctx - 1;
    return rc;
}
