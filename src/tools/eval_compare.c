/*
 * eval_compare.c — edgellm_eval_compare: how far a (quantized) model's next-token
 * distributions are from a reference's, position by position, over the scored positions
 * of a text (windows: eval.c). The reference is a live model or a saved-logits file
 * (eval_logits.c); both reach the same per-position code through a reference record.
 *
 * Per scored position, with lq = the model's log-softmax and lp = the reference's
 * (both rounded to float32, the precision a saved file keeps, so a model compared with
 * itself gives exactly 0):
 *   nll       = -lq[target]                nll_ref = -lp[target]
 *   KLD       = sum_v exp(lp[v]) (lp[v] - lq[v]), where a term with exp(lp[v]) = 0 (lp = -inf:
 *               the reference gives v no probability, or its probability underflows) is 0,
 *               the limit p ln p -> 0; a term with p > 0 and lq[v] = -inf is +inf (the model
 *               rules out what the reference allows): such positions are counted, and the
 *               KLD mean, percentiles and maximum then say inf, never NaN
 *               live reference: every v (exact);
 *               saved top-k:    the k saved v exactly, plus one lumped term for the rest,
 *                               R (ln R - ln Rq), R = P_ref(rest), Rq = P_model(rest).
 *                               By the log-sum inequality this is <= the exact sum over the
 *                               rest: the result is a lower bound, short by
 *                               R * KL(ref|rest || model|rest), 0 when k >= n_vocab.
 *   same top  = argmax lq == argmax lp (lowest id on ties)
 *   dp        = exp(lq[target]) - exp(lp[target])
 * Summaries (llama-perplexity's KLD printout, tools/perplexity/README.md): PPL of both, ΔPPL %,
 * mean ln(PPL/PPL_ref) with its paired standard error, mean KLD ± standard error, median,
 * 99th percentile and maximum KLD, "same top p" % ± binomial error, mean and RMS Δp.
 * (llama-perplexity stores uint16-compressed log-probs and skips entries below
 * max - 16; we keep float32 and skip nothing.)
 */
#include "eval.h"
#include <math.h>
#include <stdio.h>

/* --------------------------------------------------------------- accumulator ---- */

edgellm_status edgellm_eval_acc_init(edgellm_eval_acc *a, int n_vocab, int64_t n_positions, edgellm_error *err)
{
    memset(a, 0, sizeof *a);
    a->n_vocab = n_vocab;
    a->cap = n_positions;
    size_t nb;
    if (n_positions < 0 || !edgellm_mul_size((size_t)n_positions, sizeof(float), &nb))
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "eval: %lld positions overflow", (long long)n_positions);
    a->kld = edgellm_malloc(nb ? nb : 1);
    a->mask = edgellm_calloc((size_t)n_vocab, 1);
    if (!a->kld || !a->mask) {
        edgellm_eval_acc_free(a);
        return edgellm_fail_nomem(err, "eval: per-position KLD");
    }
    return EDGELLM_OK;
}

void edgellm_eval_acc_free(edgellm_eval_acc *a)
{
    if (!a) return;
    edgellm_free(a->kld);
    edgellm_free(a->mask);
    a->kld = NULL;
    a->mask = NULL;
}

void edgellm_eval_record_full(const float *logits, int n_vocab, int32_t target, float *lp_buf,
                              edgellm_eval_ref_record *rec)
{
    double lse = edgellm_eval_logsumexp(logits, n_vocab);
    for (int v = 0; v < n_vocab; v++) lp_buf[v] = (float)((double)logits[v] - lse);
    rec->target = target;
    rec->target_lp = lp_buf[target];
    rec->top = edgellm_eval_argmax(logits, n_vocab);
    rec->rest_lp = -INFINITY;
    rec->n = n_vocab;
    rec->ids = NULL;
    rec->lp = lp_buf;
}

/* One KLD term p (lp - lq), p = exp(lp): 0 when p is 0 (0 * -inf would be NaN), +inf when
 * lq is -inf and p > 0. */
static double kl_term(double lp, double lq)
{
    const double p = exp(lp);
    return p > 0.0 ? p * (lp - lq) : 0.0;
}

void edgellm_eval_acc_add(edgellm_eval_acc *a, const edgellm_eval_ref_record *ref, const float *logits)
{
    const int nv = a->n_vocab;
    const double lse = edgellm_eval_logsumexp(logits, nv);
#define LQ(v) ((double)(float)((double)logits[(v)] - lse))   /* model ln p, rounded like lp */
    double kld = 0.0;
    if (!ref->ids) {
        for (int v = 0; v < nv; v++) kld += kl_term(ref->lp[v], LQ(v));
    } else {
        for (int i = 0; i < ref->n; i++) {
            int32_t v = ref->ids[i];
            kld += kl_term(ref->lp[i], LQ(v));
            a->mask[v] = 1;
        }
        if (ref->n < nv) {
            double rq = 0.0;
            for (int v = 0; v < nv; v++)
                if (!a->mask[v]) rq += exp(LQ(v));
            if (isfinite(ref->rest_lp)) {
                double r = exp((double)ref->rest_lp);
                kld += r * ((double)ref->rest_lp - log(rq > 1e-300 ? rq : 1e-300));
            }
        }
        for (int i = 0; i < ref->n; i++) a->mask[ref->ids[i]] = 0;
    }
    double lq_t = LQ(ref->target);
#undef LQ
    double nll = -lq_t, nll_ref = -(double)ref->target_lp;
    double dp = exp(lq_t) - exp((double)ref->target_lp);
    double diff = nll == nll_ref ? 0.0 : nll - nll_ref;   /* both +inf: no difference, not NaN */
    a->s_nll += nll;
    a->s2_nll += nll * nll;
    a->s_nll_ref += nll_ref;
    a->s2_nll_ref += nll_ref * nll_ref;
    a->s_diff += diff;
    a->s2_diff += diff * diff;
    a->s_kld += kld;
    a->s2_kld += kld * kld;
    if (isinf(kld)) a->n_kld_inf++;
    a->s_dp += dp;
    a->s2_dp += dp * dp;
    if (edgellm_eval_argmax(logits, nv) == ref->top) a->n_same_top++;
    if (a->n < a->cap) a->kld[a->n] = (float)kld;
    a->n++;
}

void edgellm_eval_acc_finish(edgellm_eval_acc *a, edgellm_eval_compare_result *out)
{
    int64_t n = a->n;
    double ppl = exp(a->s_nll / (double)n), ppl_ref = exp(a->s_nll_ref / (double)n);
    out->delta_ppl_pct = (ppl / ppl_ref - 1.0) * 100.0;
    edgellm_eval_mean_err(a->s_diff, a->s2_diff, n, &out->ln_ratio_mean, &out->ln_ratio_err);
    edgellm_eval_mean_err(a->s_kld, a->s2_kld, n, &out->kld_mean, &out->kld_err);
    int64_t nk = EDGELLM_MIN(n, a->cap);
    edgellm_eval_sort_floats(a->kld, nk);
    out->kld_median = edgellm_eval_quantile_sorted(a->kld, nk, 0.5);
    out->kld_p99 = edgellm_eval_quantile_sorted(a->kld, nk, 0.99);
    out->kld_max = nk ? a->kld[nk - 1] : NAN;
    out->n_kld_inf = a->n_kld_inf;
    double top = (double)a->n_same_top / (double)n;
    out->top1_pct = 100.0 * top;
    out->top1_err_pct = n > 1 ? 100.0 * sqrt(top * (1.0 - top) / (double)(n - 1)) : NAN;
    double dp_mean, dp_err;
    edgellm_eval_mean_err(a->s_dp, a->s2_dp, n, &dp_mean, &dp_err);
    out->dp_mean_pct = 100.0 * dp_mean;
    out->dp_rms_pct = 100.0 * sqrt(a->s2_dp / (double)n);
}

/* ------------------------------------------------------------------ compare ---- */

/* The window layout to use with a saved file: the file's, unless params ask otherwise. */
static edgellm_status layout_from_file(const edgellm_eval_logits_file *f, const char *path, const edgellm_eval_params *p,
                                       edgellm_eval_params *q, edgellm_error *err)
{
    int n_ctx, stride, n_windows, top_k;
    edgellm_eval_logits_layout(f, &n_ctx, &stride, &n_windows, &top_k);
    *q = *p;
    if (p->n_ctx > 0 && p->n_ctx != n_ctx)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: saved with n_ctx %d, but n_ctx %d was asked for", path, n_ctx,
                            p->n_ctx);
    if (p->stride > 0 && p->stride != stride)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: saved with stride %d, but stride %d was asked for", path,
                            stride, p->stride);
    if (p->max_chunks > n_windows)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: holds %d chunk%s, but %d were asked for", path, n_windows,
                            n_windows == 1 ? "" : "s", p->max_chunks);
    q->n_ctx = n_ctx;
    q->stride = stride;
    q->max_chunks = p->max_chunks > 0 ? p->max_chunks : n_windows;
    return EDGELLM_OK;
}

edgellm_status edgellm_eval_compare(const edgellm_model *m, const edgellm_model *ref, const char *ref_logits_path,
                                    const char *text, size_t len, const edgellm_eval_params *params,
                                    edgellm_eval_compare_result *out, edgellm_error *err)
{
    if (!m || !out || (!ref) == (!ref_logits_path))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE,
                            "edgellm_eval_compare: needs a model and exactly one of a reference model or logits file");
    memset(out, 0, sizeof *out);
    edgellm_eval_params dp = edgellm_eval_default_params(), p = params ? *params : dp;
    edgellm_eval_logits_file *f = NULL;
    edgellm_eval_plan pl;
    edgellm_eval_runner rm, rr;
    edgellm_eval_acc acc;
    edgellm_eval_ref_record *recs = NULL;
    float *lp_buf = NULL;
    memset(&pl, 0, sizeof pl);
    memset(&rm, 0, sizeof rm);
    memset(&rr, 0, sizeof rr);
    memset(&acc, 0, sizeof acc);
    edgellm_status rc = EDGELLM_OK;
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(m, err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    int n_vocab = edgellm_tokenizer_n_vocab(tok);

    if (ref_logits_path) {
        if ((rc = edgellm_eval_logits_open(ref_logits_path, m, &f, err)) != EDGELLM_OK) goto done;
        if (!params) dp.n_ctx = 0;   /* defaults: the file's layout */
        if ((rc = layout_from_file(f, ref_logits_path, params ? params : &dp, &p, err)) != EDGELLM_OK) goto done;
        snprintf(out->ref_name, sizeof out->ref_name, "%s", edgellm_eval_logits_model_name(f));
    } else {
        const edgellm_tokenizer *rt = edgellm_model_text_tokenizer(ref, err);
        if (!rt) {
            rc = EDGELLM_ERR_UNSUPPORTED;
            goto done;
        }
        if (edgellm_tokenizer_n_vocab(rt) != n_vocab || edgellm_eval_tokenizer_hash(rt) != edgellm_eval_tokenizer_hash(tok)) {
            rc = edgellm_fail(err, EDGELLM_ERR_MISUSE,
                              "%s: its tokenizer (%d tokens) differs from the reference %s's (%d tokens): "
                              "the distributions cannot be compared",
                              edgellm_eval_model_path(m), n_vocab, edgellm_eval_model_path(ref),
                              edgellm_tokenizer_n_vocab(rt));
            goto done;
        }
        snprintf(out->ref_name, sizeof out->ref_name, "%s", edgellm_eval_basename(edgellm_eval_model_path(ref)));
    }
    if ((rc = edgellm_eval_plan_make(tok, text, len, &p, &pl, err)) != EDGELLM_OK) goto done;
    if (f && (rc = edgellm_eval_logits_check_plan(f, &pl, err)) != EDGELLM_OK) goto done;
    if ((rc = edgellm_eval_runner_init(&rm, m, &pl, p.n_threads, p.kv_type, err)) != EDGELLM_OK) goto done;
    /* the reference: always an F32 cache */
    if (ref && (rc = edgellm_eval_runner_init(&rr, ref, &pl, p.n_threads, EDGELLM_TYPE_F32, err)) != EDGELLM_OK)
        goto done;
    if ((rc = edgellm_eval_acc_init(&acc, n_vocab, (int64_t)pl.n_windows * pl.n_pred, err)) != EDGELLM_OK) goto done;
    recs = edgellm_calloc((size_t)pl.n_pred, sizeof *recs);
    lp_buf = ref ? edgellm_malloc((size_t)n_vocab * sizeof *lp_buf) : NULL;
    if (!recs || (ref && !lp_buf)) { rc = edgellm_fail_nomem(err, "eval compare"); goto done; }

    for (int w = 0; w < pl.n_windows; w++) {
        if ((rc = edgellm_eval_runner_window(&rm, &pl, w, err)) != EDGELLM_OK) goto done;
        if (ref) {
            if ((rc = edgellm_eval_runner_window(&rr, &pl, w, err)) != EDGELLM_OK) goto done;
        } else if ((rc = edgellm_eval_logits_next(f, recs, err)) != EDGELLM_OK) {
            goto done;
        }
        for (int i = 0; i < pl.n_pred; i++) {
            int32_t target = edgellm_eval_target(&rm, &pl, i);
            edgellm_eval_ref_record *rec = &recs[i];
            if (ref) {
                edgellm_eval_record_full(rr.logits + (size_t)i * (size_t)n_vocab, n_vocab, target, lp_buf, rec);
            } else if (rec->target != target) {
                rc = edgellm_fail(err, EDGELLM_ERR_MISUSE,
                                  "%s: chunk %d position %d: saved next token %d, the text gives %d "
                                  "(the text tokenizes differently)",
                                  ref_logits_path, w, i, (int)rec->target, (int)target);
                goto done;
            }
            edgellm_eval_acc_add(&acc, rec, rm.logits + (size_t)i * (size_t)n_vocab);
        }
        char what[64];
        snprintf(what, sizeof what, "chunk %d/%d", w + 1, pl.n_windows);
        if ((rc = edgellm_eval_report_progress(&p, (double)(w + 1) / pl.n_windows, what, err)) != EDGELLM_OK) goto done;
    }
    edgellm_eval_fill_ppl(&out->model, &pl, pl.n_windows, acc.s_nll, acc.s2_nll, acc.n, &rm);
    edgellm_eval_fill_ppl(&out->ref, &pl, pl.n_windows, acc.s_nll_ref, acc.s2_nll_ref, acc.n, ref ? &rr : NULL);
    edgellm_eval_acc_finish(&acc, out);
    if (ref) {
        out->ref_top_k = n_vocab;
    } else {
        int a, b, c, k;
        edgellm_eval_logits_layout(f, &a, &b, &c, &k);
        out->ref_top_k = k;
    }
    out->kld_exact = out->ref_top_k >= n_vocab;
done:
    edgellm_eval_acc_free(&acc);
    edgellm_free(recs);
    edgellm_free(lp_buf);
    edgellm_eval_runner_free(&rm);
    edgellm_eval_runner_free(&rr);
    edgellm_eval_plan_free(&pl);
    edgellm_eval_logits_close(f);
    return rc;
}
