/*
 * cascade.c — a small and a large model by confidence (edgellm_tools.h, "Cascade").
 *
 * Generation: greedy decoding with the public calls (edgellm_decode, edgellm_ctx_logits),
 * recording for each token the probability it had (softmax of the row, max-subtracted, in
 * double) and the row's entropy; the signal is computed from those (edgellm_cascade_signal_value).
 * Tasks: each multiple-choice item scored by both models with edgellm_eval_choice_scores
 * (eval_task.c's rule: the sum of the choice tokens' log-probabilities after the context);
 * the small model's confidence is softmax(scores)[its choice]. The curve evaluates every
 * threshold on the same per-item records, so it costs one pass over the items per model.
 */
#include "eval.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *edgellm_cascade_signal_name(int signal)
{
    switch (signal) {
    case EDGELLM_CASCADE_MIN_PROB: return "min-prob";
    case EDGELLM_CASCADE_P10: return "p10";
    case EDGELLM_CASCADE_MEAN_LOGPROB: return "mean-logprob";
    case EDGELLM_CASCADE_ENTROPY: return "entropy";
    }
    return NULL;
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double edgellm_cascade_signal_value(int signal, const float *probs, const float *entropies, int n)
{
    if (n <= 0 || !probs) return INFINITY;
    double v = 0.0;
    switch (signal) {
    case EDGELLM_CASCADE_MIN_PROB:
        v = probs[0];
        for (int i = 1; i < n; i++) v = probs[i] < v ? probs[i] : v;
        return v;
    case EDGELLM_CASCADE_P10: {
        float *s = malloc((size_t)n * sizeof *s);
        if (!s) return NAN;
        memcpy(s, probs, (size_t)n * sizeof *s);
        qsort(s, (size_t)n, sizeof *s, cmp_float);
        v = s[(int)floor(0.1 * (n - 1))];
        free(s);
        return v;
    }
    case EDGELLM_CASCADE_MEAN_LOGPROB:
        for (int i = 0; i < n; i++) v += log(probs[i] > 0 ? probs[i] : 1e-30);
        return v / n;
    case EDGELLM_CASCADE_ENTROPY:
        if (!entropies) return NAN;
        for (int i = 0; i < n; i++) v += entropies[i];
        return -v / n;
    }
    return NAN;
}

edgellm_cascade_params edgellm_cascade_default_params(void)
{
    edgellm_cascade_params p = {.signal = EDGELLM_CASCADE_P10, .threshold = 0.2, .n_predict = 64};
    return p;
}

void edgellm_cascade_result_free(edgellm_cascade_result *r)
{
    if (!r) return;
    free(r->text);
    r->text = NULL;
}

/* Greedy answer of ctx's model: text (malloc), and per token its probability and the
 * row's entropy (probs/ents have room for n_predict). */
static edgellm_status greedy_answer(edgellm_ctx *ctx, const char *prompt, int n_predict, char **text, float *probs,
                                    float *ents, int *n_out, double *ms, edgellm_error *err)
{
    const edgellm_model *m = edgellm_ctx_model(ctx);
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(m, err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    const double t0 = edgellm_time_ms();
    const size_t len = strlen(prompt);
    int cap = (int)len + 8, n = 0;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    size_t tcap = 256, tlen = 0;
    char *out = malloc(tcap);
    edgellm_status rc = EDGELLM_OK;
    *n_out = 0;
    if (!ids || !out) { rc = edgellm_fail_nomem(err, "cascade"); goto done; }
    if ((rc = edgellm_tokenize(tok, prompt, len, EDGELLM_TOKENIZE_ADD_BOS, ids, cap, &n, err))) goto done;
    if (n == 0) {
        if (edgellm_token_bos(tok) < 0) { rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "cascade: empty prompt"); goto done; }
        ids[n++] = edgellm_token_bos(tok);
    }
    edgellm_ctx_reset(ctx);
    if ((rc = edgellm_decode(ctx, ids, n, NULL, err))) goto done;
    const int nv = edgellm_tokenizer_n_vocab(tok);
    for (int step = 0; step < n_predict; step++) {
        const float *l = edgellm_ctx_logits(ctx);
        int best = 0;
        for (int v = 1; v < nv; v++) if (l[v] > l[best]) best = v;
        double z = 0.0, h = 0.0;
        for (int v = 0; v < nv; v++) z += exp((double)l[v] - l[best]);
        for (int v = 0; v < nv; v++) {
            const double q = exp((double)l[v] - l[best]) / z;
            if (q > 0) h -= q * log(q);
        }
        if (edgellm_token_is_eog(tok, best)) break;
        probs[*n_out] = (float)(1.0 / z);
        ents[*n_out] = (float)h;
        (*n_out)++;
        char piece[256];
        int pl = edgellm_token_to_piece(tok, best, piece, sizeof piece);
        if (pl > (int)sizeof piece) pl = (int)sizeof piece;
        if (pl > 0) {
            if (tlen + (size_t)pl + 1 > tcap) {
                char *b = realloc(out, tcap = 2 * tcap + (size_t)pl);
                if (!b) { rc = edgellm_fail_nomem(err, "cascade"); goto done; }
                out = b;
            }
            memcpy(out + tlen, piece, (size_t)pl);
            tlen += (size_t)pl;
        }
        if (step + 1 == n_predict || edgellm_ctx_n_past(ctx) >= edgellm_ctx_n_ctx(ctx)) break;
        const int32_t t = best;
        if ((rc = edgellm_decode(ctx, &t, 1, NULL, err))) goto done;
    }
    out[tlen] = 0;
done:
    free(ids);
    if (rc) free(out);
    else *text = out;
    *ms = edgellm_time_ms() - t0;
    return rc;
}

edgellm_status edgellm_cascade_generate(edgellm_ctx *small, edgellm_ctx *large, const char *prompt,
                                        const edgellm_cascade_params *p, edgellm_cascade_result *out,
                                        edgellm_error *err)
{
    if (!small || !large || !prompt || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "cascade: NULL argument");
    memset(out, 0, sizeof *out);
    edgellm_cascade_params d = p ? *p : edgellm_cascade_default_params();
    if (!edgellm_cascade_signal_name(d.signal) || d.n_predict < 1 || isnan(d.threshold))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "cascade: signal %d, n_predict %d or threshold out of range",
                            d.signal, d.n_predict);
    float *probs = malloc((size_t)d.n_predict * 2 * sizeof *probs);
    if (!probs) return edgellm_fail_nomem(err, "cascade");
    float *ents = probs + d.n_predict;
    char *text = NULL;
    edgellm_status rc = greedy_answer(small, prompt, d.n_predict, &text, probs, ents, &out->n_small, &out->small_ms, err);
    if (rc == EDGELLM_OK) {
        out->signal = edgellm_cascade_signal_value(d.signal, probs, ents, out->n_small);
        out->text = text;
        if (out->signal < d.threshold) {
            out->escalated = 1;
            text = NULL;
            rc = greedy_answer(large, prompt, d.n_predict, &text, probs, ents, &out->n_large, &out->large_ms, err);
            if (rc == EDGELLM_OK) {
                free(out->text);
                out->text = text;
            }
        }
    }
    free(probs);
    return rc;
}

/* Per item of one model: correct (acc) and the probability of its choice among the choices. */
static edgellm_status score_items(const edgellm_model *m, int n_threads, const edgellm_eval_item *items, int n,
                                  bool *correct, double *conf, double *ms, edgellm_error *err)
{
    int need = 64;
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(m, err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    for (int i = 0; i < n; i++) {   /* room for the longest context + choice: bytes bound tokens */
        size_t lc = strlen(items[i].context), lmax = 0;
        for (int c = 0; c < items[i].n_choices; c++) lmax = EDGELLM_MAX(lmax, strlen(items[i].choices[c]));
        need = EDGELLM_MAX(need, (int)EDGELLM_MIN(lc + lmax + 8, (size_t)1 << 20));
    }
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = need;
    cp.n_threads = n_threads;
    edgellm_ctx *ctx = NULL;
    edgellm_status rc = edgellm_ctx_new(m, &cp, &ctx, err);
    if (rc) return rc;
    float *logits = NULL;
    size_t cap = 0;
    double scores[64];
    for (int i = 0; i < n && rc == EDGELLM_OK; i++) {
        const double t0 = edgellm_time_ms();
        if ((rc = edgellm_eval_choice_scores(ctx, &items[i], i, &logits, &cap, scores, err))) break;
        ms[i] = edgellm_time_ms() - t0;
        int best = 0;
        for (int c = 1; c < items[i].n_choices; c++) if (scores[c] > scores[best]) best = c;
        double z = 0.0;
        for (int c = 0; c < items[i].n_choices; c++) z += exp(scores[c] - scores[best]);
        correct[i] = best == items[i].label;
        conf[i] = 1.0 / z;
    }
    edgellm_free(logits);
    edgellm_ctx_free(ctx);
    return rc;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

edgellm_status edgellm_cascade_tasks(const edgellm_model *small, const edgellm_model *large,
                                     const edgellm_eval_item *items, int n_items, int n_threads, double max_gap_pct,
                                     edgellm_cascade_report *out, edgellm_error *err)
{
    if (!small || !large || !items || n_items <= 0 || !out)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "cascade: NULL argument or no items");
    memset(out, 0, sizeof *out);
    for (int i = 0; i < n_items; i++)
        if (!items[i].choices || items[i].n_choices < 2 || items[i].n_choices > 64 || !items[i].context ||
            items[i].label < 0 || items[i].label >= items[i].n_choices)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "cascade: item %d is not a multiple-choice item with 2..64 "
                                "choices and a label among them", i);
    const size_t n = (size_t)n_items;
    bool *ok_s = calloc(n, sizeof *ok_s), *ok_l = calloc(n, sizeof *ok_l);
    double *conf = calloc(n, sizeof *conf), *conf_l = calloc(n, sizeof *conf_l), *ms_s = calloc(n, sizeof *ms_s),
           *ms_l = calloc(n, sizeof *ms_l), *sorted = calloc(n, sizeof *sorted);
    edgellm_status rc = EDGELLM_OK;
    if (!ok_s || !ok_l || !conf || !conf_l || !ms_s || !ms_l || !sorted) { rc = edgellm_fail_nomem(err, "cascade"); goto done; }
    if ((rc = score_items(small, n_threads, items, n_items, ok_s, conf, ms_s, err))) goto done;
    if ((rc = score_items(large, n_threads, items, n_items, ok_l, conf_l, ms_l, err))) goto done;
    out->n_items = n_items;
    out->max_gap_pct = max_gap_pct > 0 ? max_gap_pct : 3.0;
    int hs = 0, hl = 0;
    for (int i = 0; i < n_items; i++) {
        hs += ok_s[i], hl += ok_l[i];
        out->small_ms += ms_s[i] / n_items, out->large_ms += ms_l[i] / n_items;
    }
    out->small_pct = 100.0 * hs / n_items, out->large_pct = 100.0 * hl / n_items;
    memcpy(sorted, conf, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_double);
    out->chosen = -1;
    for (int k = 0; k < EDGELLM_CASCADE_MAX_POINTS; k++) {
        edgellm_cascade_point *pt = &out->points[k];
        pt->threshold = k == 0 ? 0.0 : k == EDGELLM_CASCADE_MAX_POINTS - 1 ? INFINITY
                                                                           : sorted[(size_t)((double)k / 20.0 * (n - 1) + 0.5)];
        int hits = 0, esc = 0;
        double t = 0.0;
        for (int i = 0; i < n_items; i++) {
            const bool up = conf[i] < pt->threshold;
            esc += up;
            hits += up ? ok_l[i] : ok_s[i];
            t += ms_s[i] + (up ? ms_l[i] : 0.0);
        }
        pt->accuracy_pct = 100.0 * hits / n_items;
        pt->escalation_pct = 100.0 * esc / n_items;
        pt->mean_ms = t / n_items;
        if (pt->accuracy_pct >= out->large_pct * (1.0 - out->max_gap_pct / 100.0) - 1e-9 &&
            (out->chosen < 0 || pt->escalation_pct < out->points[out->chosen].escalation_pct))
            out->chosen = k;
    }
    out->n_points = EDGELLM_CASCADE_MAX_POINTS;
done:
    free(ok_s), free(ok_l), free(conf), free(conf_l), free(ms_s), free(ms_l), free(sorted);
    return rc;
}
