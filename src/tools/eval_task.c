/*
 * eval_task.c — edgellm_eval_task: accuracy on a task set (contract and metric definitions:
 * include/edgellm.h, "Evaluation").
 *
 * Multiple choice (lm-evaluation-harness's loglikelihood scoring; llama-perplexity's
 * --multiple-choice does the same, ggml-org/llama.cpp tools/perplexity/perplexity.cpp):
 *   ctx   = tokenize(context)            with BOS per the vocab
 *   whole = tokenize(context + choice)   with BOS per the vocab
 *   p     = length of the common prefix of ctx and whole (SentencePiece may merge across
 *           the boundary; the tokens from the first difference on belong to the choice)
 *   score = sum_{j = p}^{len-1} ln softmax(logits at j-1)[whole[j]]
 *   decode: whole[0 .. p-1) without logits, whole[p-1 .. len-1) with logits
 *           -> rows [len - p][n_vocab], row i predicts whole[p + i]
 *   acc: argmax score == label; acc_norm: argmax score / bytes(choice) == label.
 * The choices of an item share the context, so it is decoded once: whole[0 .. p-1) equals
 * ctx[0 .. p-1), and the cache keeps the context positions the previous choice left
 * (edgellm_ctx_truncate rolls it back to them); a choice decodes only the context tokens
 * not yet cached (all of them for the first choice) and then its own rows. A position's
 * result does not depend on how tokens are split over decode calls (llama.c), so the
 * scores equal decoding each choice from an empty cache bit for bit
 * (tests/test_eval_task_cache.c); an item of 4 choices decodes its context once, not 4 times.
 *   A choice needs at least one token of context before it (BOS, or the context's own
 *   tokens when the vocab has no BOS).
 *
 * Generation: edgellm_generate with greedy sampling from the prompt, up to max_gen_tokens,
 * stopped at the first newline that follows some generated text; then exact (prefix at a
 * word boundary, after leading whitespace) and contains (substring), case-sensitive.
 *
 * The model and the reference run the same items in the same order; results are
 * deterministic (greedy, ties to the lowest id/index).
 */
#include "eval.h"
#include <ctype.h>
#include <math.h>
#include <stdio.h>

edgellm_eval_task_params edgellm_eval_task_default_params(void)
{
    edgellm_eval_task_params p;
    memset(&p, 0, sizeof p);
    p.max_gen_tokens = 24;
    return p;
}

enum { M_ACC, M_ACC_NORM, M_EXACT, M_CONTAINS, M_COUNT };
static const char *const metric_names[M_COUNT] = {"acc", "acc_norm", "exact", "contains"};

typedef struct {
    int n[M_COUNT], hits[M_COUNT];
} task_tally;

/* Tokenize s with BOS per the vocab into a fresh array. */
static edgellm_status tokenize_alloc(const edgellm_tokenizer *t, const char *s, int32_t **out, int *n,
                                     edgellm_error *err)
{
    size_t len = strlen(s);
    if (len > (size_t)(1 << 28)) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: a text of %zu bytes", len);
    int cap = (int)len + 8;
    int32_t *ids = edgellm_malloc((size_t)cap * sizeof *ids);
    if (!ids) return edgellm_fail_nomem(err, "eval task: tokens");
    edgellm_status rc = edgellm_tokenize(t, s, len, 1, ids, cap, n, err);
    if (rc == EDGELLM_ERR_MISUSE && *n > cap) {
        edgellm_free(ids);
        cap = *n;
        if (!(ids = edgellm_malloc((size_t)cap * sizeof *ids))) return edgellm_fail_nomem(err, "eval task: tokens");
        rc = edgellm_tokenize(t, s, len, 1, ids, cap, n, err);
    }
    if (rc != EDGELLM_OK) { edgellm_free(ids); return rc; }
    *out = ids;
    return EDGELLM_OK;
}

static edgellm_status check_item(const edgellm_eval_item *it, int i, edgellm_error *err)
{
    if (!it->context) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: item %d has no context/prompt", i);
    if (it->choices) {
        if (it->n_choices < 2)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: item %d has %d choices (needs 2 or more)", i,
                                it->n_choices);
        if (it->label < 0 || it->label >= it->n_choices)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: item %d: label %d is outside [0, %d]", i, it->label,
                                it->n_choices - 1);
        for (int c = 0; c < it->n_choices; c++)
            if (!it->choices[c] || !it->choices[c][0])
                return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: item %d: choice %d is empty", i, c);
    } else if (!it->answer || !it->answer[0]) {
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: item %d has neither choices nor an answer", i);
    }
    return EDGELLM_OK;
}

/* Log-likelihood of one choice: whole = tokens of context + choice; the cache holds
 * *cached leading context tokens (positions 0 .. *cached-1) and maybe later rows. */
static edgellm_status score_choice(edgellm_ctx *ctx, const edgellm_tokenizer *tok, const int32_t *ctx_ids, int n_ctx_ids,
                                   const char *context, const char *choice, int item, int *cached, float **logits,
                                   size_t *logits_cap, double *score, int *positions, edgellm_error *err)
{
    size_t lc = strlen(context), lh = strlen(choice);
    char *joined = edgellm_malloc(lc + lh + 1);
    int32_t *whole = NULL;
    int n_whole = 0;
    edgellm_status rc = EDGELLM_OK;
    if (!joined) return edgellm_fail_nomem(err, "eval task");
    memcpy(joined, context, lc);
    memcpy(joined + lc, choice, lh + 1);
    rc = tokenize_alloc(tok, joined, &whole, &n_whole, err);
    edgellm_free(joined);
    if (rc != EDGELLM_OK) return rc;
    int p = 0;
    while (p < n_ctx_ids && p < n_whole && ctx_ids[p] == whole[p]) p++;
    if (p == n_whole) {
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: item %d: the choice \"%.40s\" adds no token", item, choice);
        goto done;
    }
    if (p == 0) {
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE,
                          "eval task: item %d: nothing precedes the choice (empty context and no BOS)", item);
        goto done;
    }
    int n_vocab = edgellm_tokenizer_n_vocab(tok), n_rows = n_whole - p;
    if (n_whole > edgellm_ctx_n_ctx(ctx)) {
        rc = edgellm_fail(err, EDGELLM_ERR_CTX_FULL, "eval task: item %d: %d tokens exceed n_ctx %d", item, n_whole,
                          edgellm_ctx_n_ctx(ctx));
        goto done;
    }
    size_t need = (size_t)n_rows * (size_t)n_vocab;
    if (need > *logits_cap) {
        edgellm_free(*logits);
        if (!(*logits = edgellm_malloc(need * sizeof **logits))) { *logits_cap = 0; rc = edgellm_fail_nomem(err, "eval task"); goto done; }
        *logits_cap = need;
    }
    /* the cache: context positions 0 .. keep-1 reused, keep .. p-2 decoded now, then the rows */
    const int keep = EDGELLM_MIN(*cached, p - 1);
    if ((rc = edgellm_ctx_truncate(ctx, keep, err)) != EDGELLM_OK) goto done;
    *cached = keep;
    if (keep < p - 1 && (rc = edgellm_decode(ctx, whole + keep, p - 1 - keep, NULL, err)) != EDGELLM_OK) goto done;
    *cached = p - 1;
    if ((rc = edgellm_decode(ctx, whole + p - 1, n_rows, *logits, err)) != EDGELLM_OK) goto done;   /* [n_rows][n_vocab] */
    *cached = p;   /* position p-1 holds whole[p-1] == ctx_ids[p-1] */
    double s = 0.0;
    for (int i = 0; i < n_rows; i++) {
        const float *row = *logits + (size_t)i * (size_t)n_vocab;
        s += (double)row[whole[p + i]] - edgellm_eval_logsumexp(row, n_vocab);
    }
    *score = s;
    *positions = EDGELLM_MAX(*positions, n_whole - 1);   /* the last token is predicted, never decoded */
done:
    edgellm_free(whole);
    return rc;
}

/* edgellm_eval_choice_scores, and the most positions one choice used into *positions */
static edgellm_status choice_scores(edgellm_ctx *ctx, const edgellm_eval_item *it, int item, float **logits,
                                    size_t *logits_cap, double *scores, int *positions, edgellm_error *err)
{
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(edgellm_ctx_model(ctx), err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    int32_t *ctx_ids = NULL;
    int n_ctx_ids = 0, cached = 0;
    edgellm_ctx_reset(ctx);
    edgellm_status rc = tokenize_alloc(tok, it->context, &ctx_ids, &n_ctx_ids, err);
    for (int c = 0; c < it->n_choices && rc == EDGELLM_OK; c++)
        rc = score_choice(ctx, tok, ctx_ids, n_ctx_ids, it->context, it->choices[c], item, &cached, logits, logits_cap,
                          &scores[c], positions, err);
    edgellm_free(ctx_ids);
    return rc;
}

edgellm_status edgellm_eval_choice_scores(edgellm_ctx *ctx, const edgellm_eval_item *it, int item, float **logits,
                                          size_t *logits_cap, double *scores, edgellm_error *err)
{
    int positions = 0;
    return choice_scores(ctx, it, item, logits, logits_cap, scores, &positions, err);
}

typedef struct {
    char  *buf;
    size_t len, cap;
    bool   oom;
} gen_text;

bool edgellm_eval_gen_done(const char *text, size_t len)
{
    const char *q = text, *end = text + len;
    while (q < end && isspace((unsigned char)*q)) q++;
    return q < end && memchr(q, '\n', (size_t)(end - q)) != NULL;
}

static int on_token(int32_t token, const char *piece, size_t n, void *user)
{
    (void)token;
    gen_text *g = user;
    if (g->len + n + 1 > g->cap) {
        size_t cap = (g->len + n + 1) * 2;
        char *b = edgellm_realloc(g->buf, cap);
        if (!b) { g->oom = true; return 1; }
        g->buf = b;
        g->cap = cap;
    }
    memcpy(g->buf + g->len, piece, n);
    g->len += n;
    g->buf[g->len] = 0;
    return edgellm_eval_gen_done(g->buf, g->len);
}

static bool exact_match(const char *gen, const char *answer)
{
    while (*gen && isspace((unsigned char)*gen)) gen++;
    size_t n = strlen(answer);
    if (strncmp(gen, answer, n) != 0) return false;
    return !isalnum((unsigned char)gen[n]);
}

/* Score every item with one model (k: 0 the model, 1 the reference) into t, and its
 * positions into out's per-model fields: the most one item used (and which), and how many
 * items used more than the model's trained context. */
static edgellm_status run_items(const edgellm_model *m, int k, int kv_type, const edgellm_eval_item *items,
                                int n_items, const edgellm_eval_task_params *p, int n_ctx, double *done_frac,
                                double frac_step, task_tally *t, edgellm_eval_task_result *out, edgellm_error *err)
{
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    edgellm_ctx *ctx = NULL;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = p->n_threads;
    cp.kv_type = kv_type;
    edgellm_status rc = edgellm_ctx_new(m, &cp, &ctx, err);
    if (rc != EDGELLM_OK) return rc;
    float *logits = NULL;
    size_t logits_cap = 0;
    double *scores = NULL;
    int scores_cap = 0;
    gen_text g = {0};
    edgellm_generate_params gp = edgellm_generate_default_params();
    gp.n_predict = p->max_gen_tokens;
    gp.sampling.temperature = 0.0f;
    gp.sampling.repeat_penalty = 1.0f;

    for (int i = 0; i < n_items; i++) {
        const edgellm_eval_item *it = &items[i];
        int positions = 0;
        if (it->choices) {
            if (it->n_choices > scores_cap) {
                edgellm_free(scores);
                scores_cap = it->n_choices;
                if (!(scores = edgellm_malloc((size_t)scores_cap * sizeof *scores))) {
                    rc = edgellm_fail_nomem(err, "eval task");
                    goto done;
                }
            }
            if ((rc = choice_scores(ctx, it, i, &logits, &logits_cap, scores, &positions, err)) != EDGELLM_OK) goto done;
            int best = 0, best_norm = 0;
            double bn = scores[0] / (double)strlen(it->choices[0]);
            for (int c = 1; c < it->n_choices; c++) {
                if (scores[c] > scores[best]) best = c;
                double sn = scores[c] / (double)strlen(it->choices[c]);
                if (sn > bn) { bn = sn; best_norm = c; }
            }
            t->n[M_ACC]++;
            t->n[M_ACC_NORM]++;
            t->hits[M_ACC] += best == it->label;
            t->hits[M_ACC_NORM] += best_norm == it->label;
        } else {
            g.len = 0;
            if (g.buf) g.buf[0] = 0;
            edgellm_generate_stats st = {.size = sizeof st};
            rc = edgellm_generate(ctx, it->context, &gp, on_token, &g, &st, err);
            if (rc != EDGELLM_OK) {
                char msg[sizeof err->msg];
                snprintf(msg, sizeof msg, "%s", err ? err->msg : "");
                rc = edgellm_fail(err, rc, "eval task: item %d: %s", i, msg);
                goto done;
            }
            if (g.oom) { rc = edgellm_fail_nomem(err, "eval task: generated text"); goto done; }
            positions = edgellm_ctx_n_past(ctx);
            const char *text = g.buf ? g.buf : "";
            t->n[M_EXACT]++;
            t->n[M_CONTAINS]++;
            t->hits[M_EXACT] += exact_match(text, it->answer);
            t->hits[M_CONTAINS] += strstr(text, it->answer) != NULL;
        }
        if (positions > out->max_positions[k]) {
            out->max_positions[k] = positions;
            out->max_positions_item[k] = i;
        }
        out->n_past_ctx_train[k] += info.n_ctx_train > 0 && positions > info.n_ctx_train;
        *done_frac += frac_step;
        if (p->progress && p->progress(p->progress_user, *done_frac, "items") != 0) {
            rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "eval task: cancelled");
            goto done;
        }
    }
done:
    edgellm_free(g.buf);
    edgellm_free(scores);
    edgellm_free(logits);
    edgellm_ctx_free(ctx);
    return rc;
}

static void binom(int hits, int n, double *pct, double *err_pct)
{
    if (n <= 0) { *pct = NAN; *err_pct = NAN; return; }
    double q = (double)hits / n;
    *pct = 100.0 * q;
    *err_pct = 100.0 * sqrt(q * (1.0 - q) / n);
}

/* The longest sequence any item needs: MC context + choice tokens, generation prompt +
 * max_gen_tokens (a token count is at most bytes + 2 for BOS/EOS). */
static int needed_ctx(const edgellm_eval_item *items, int n_items, int max_gen)
{
    size_t most = 16;
    for (int i = 0; i < n_items; i++) {
        size_t lc = strlen(items[i].context), need = lc + 2;
        if (items[i].choices) {
            for (int c = 0; c < items[i].n_choices; c++) need = EDGELLM_MAX(need, lc + strlen(items[i].choices[c]) + 2);
        } else {
            need += (size_t)max_gen;
        }
        most = EDGELLM_MAX(most, need);
    }
    return most > (size_t)(1 << 20) ? (1 << 20) : (int)most;
}

edgellm_status edgellm_eval_task(const edgellm_model *m, const edgellm_model *ref, const edgellm_eval_item *items,
                                 int n_items, const edgellm_eval_task_params *params, edgellm_eval_task_result *out,
                                 edgellm_error *err)
{
    if (!m || !out || (!items && n_items) || n_items < 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "edgellm_eval_task: NULL model, items or result");
    memset(out, 0, sizeof *out);
    edgellm_eval_task_params p = params ? *params : edgellm_eval_task_default_params();
    if (p.max_gen_tokens < 1 || p.max_gen_tokens > 4096)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: max_gen_tokens %d is outside [1, 4096]", p.max_gen_tokens);
    if (n_items == 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "eval task: no items");
    edgellm_status rc;
    for (int i = 0; i < n_items; i++) {
        if ((rc = check_item(&items[i], i, err)) != EDGELLM_OK) return rc;
        if (items[i].choices) out->n_mc++;
        else out->n_gen++;
    }
    out->n_items = n_items;
    out->has_ref = ref != NULL;
    out->max_positions_item[0] = out->max_positions_item[1] = -1;
    int n_ctx = needed_ctx(items, n_items, p.max_gen_tokens);
    double t0 = edgellm_time_ms(), frac = 0.0, step = 1.0 / ((double)n_items * (ref ? 2 : 1));
    task_tally tm = {{0}, {0}}, tr = {{0}, {0}};
    if ((rc = run_items(m, 0, p.kv_type, items, n_items, &p, n_ctx, &frac, step, &tm, out, err)) != EDGELLM_OK)
        return rc;
    if (ref && (rc = run_items(ref, 1, EDGELLM_TYPE_F32, items, n_items, &p, n_ctx, &frac, step, &tr, out, err)) !=
                   EDGELLM_OK)
        return rc;
    for (int k = 0; k < M_COUNT; k++) {
        edgellm_eval_metric *me = &out->metrics[k];
        snprintf(me->name, sizeof me->name, "%s", metric_names[k]);
        me->n = tm.n[k];
        binom(tm.hits[k], tm.n[k], &me->pct, &me->err_pct);
        me->ref_pct = me->ref_err_pct = me->gap_pts = me->gap_pct = NAN;
        if (ref) {
            binom(tr.hits[k], tr.n[k], &me->ref_pct, &me->ref_err_pct);
            me->gap_pts = me->ref_pct - me->pct;
            me->gap_pct = me->ref_pct > 0 ? 100.0 * me->gap_pts / me->ref_pct : NAN;
        }
    }
    out->elapsed_ms = edgellm_time_ms() - t0;
    return EDGELLM_OK;
}
