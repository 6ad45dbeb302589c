/*
 * eval_ppl.c — edgellm_eval_ppl: perplexity of one model over a text, llama-perplexity
 * style (windows and scoring: eval.c; contract: include/edgellm.h, "Evaluation").
 *
 *   per scored position:  nll = logsumexp(logits) - logits[target]       (nats)
 *   PPL = exp(mean nll),  PPL error = PPL * sqrt(var(nll) / (n - 1))
 *
 * (perplexity.cpp: "Final estimate: PPL = x +/- y", the uncertainty from the variance of
 * nll.) Sums run in double, in position order.
 */
#include "eval.h"
#include <math.h>
#include <stdio.h>

void edgellm_eval_fill_ppl(edgellm_eval_ppl_result *out, const edgellm_eval_plan *pl, int n_windows, double s_nll,
                           double s2_nll, int64_t n, const edgellm_eval_runner *r)
{
    out->n_text_tokens = pl->n_tokens;
    out->n_chunks = n_windows;
    out->n_scored = n;
    out->n_ctx = pl->n_ctx;
    out->stride = pl->stride;
    edgellm_eval_mean_err(s_nll, s2_nll, n, &out->nll_mean, &out->nll_err);
    out->ppl = exp(out->nll_mean);
    out->ppl_err = out->ppl * out->nll_err;
    if (r) {
        out->elapsed_ms = r->eval_ms;
        out->tok_per_s = r->eval_ms > 0 ? (double)r->n_evaluated / (r->eval_ms / 1000.0) : 0.0;
    }
}

edgellm_status edgellm_eval_ppl(const edgellm_model *m, const char *text, size_t len, const edgellm_eval_params *p,
                                edgellm_eval_ppl_result *out, edgellm_error *err)
{
    if (!m || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_eval_ppl: NULL model or result");
    memset(out, 0, sizeof *out);
    edgellm_eval_params dp = edgellm_eval_default_params();
    if (!p) p = &dp;
    edgellm_eval_plan pl;
    edgellm_eval_runner r;
    memset(&r, 0, sizeof r);
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(m, err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    edgellm_status rc = edgellm_eval_plan_make(tok, text, len, p, &pl, err);
    if (rc != EDGELLM_OK) return rc;
    if ((rc = edgellm_eval_runner_init(&r, m, &pl, p->n_threads, p->kv_type, err)) != EDGELLM_OK) goto done;

    double s = 0, s2 = 0;
    int64_t n = 0;
    for (int w = 0; w < pl.n_windows; w++) {
        if ((rc = edgellm_eval_runner_window(&r, &pl, w, err)) != EDGELLM_OK) goto done;
        for (int i = 0; i < pl.n_pred; i++) {
            const float *row = r.logits + (size_t)i * (size_t)r.n_vocab;   /* [n_vocab] */
            double nll = edgellm_eval_logsumexp(row, r.n_vocab) - (double)row[edgellm_eval_target(&r, &pl, i)];
            s += nll;
            s2 += nll * nll;
            n++;
        }
        char what[64];
        snprintf(what, sizeof what, "chunk %d/%d", w + 1, pl.n_windows);
        if ((rc = edgellm_eval_report_progress(p, (double)(w + 1) / pl.n_windows, what, err)) != EDGELLM_OK) goto done;
    }
    edgellm_eval_fill_ppl(out, &pl, pl.n_windows, s, s2, n, &r);
done:
    edgellm_eval_runner_free(&r);
    edgellm_eval_plan_free(&pl);
    return rc;
}
