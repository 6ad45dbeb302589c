/*
 * speculative.c — edgellm_generate_speculative (include/edgellm.h, "speculative decoding"):
 * a stream of gen.c whose tokens are decided several per target pass.
 *
 * The text so far is hist[0..n_hist): the target's sequence holds hist[0..n_hist-1), the
 * last token (the pending one) is not decoded yet. A round:
 *   draft     k tokens d_1..d_k: prompt lookup (the latest earlier occurrence of the longest
 *             suffix of hist, N..1 tokens, and what followed it), else the draft model (its
 *             sequence 0 catches up with hist in one pass, then one pass per draft token;
 *             sampled from q = the target's sampling settings without penalties; greedy:
 *             argmax); k is chosen before drafting (below).
 *   verify    one target pass of [last, d_1..d_k] at positions n_hist-1 .. n_hist-1+k with
 *             every row's logits: row i is the target's distribution for the token after
 *             d_i (row 0: after last).
 *   decide    for i = 0..k: greedy: t = the sampler's choice for row i (penalties from the
 *             history so far); i < k and t == d_{i+1}: kept, next i; else t ends the round.
 *             Sampling (Leviathan et al. 2023, algorithm 1; Chen et al. 2023, algorithm 2):
 *             p = the sampler's distribution for row i; i < k: keep d_{i+1} when
 *             u < p(x)/q(x) (u uniform from the target sampler's RNG); else draw from
 *             norm(max(0, p - q)) (q one-hot for lookup drafts) and end; i == k: a bonus
 *             token drawn from p. Every decided token goes into the sampler's history.
 *             An end-of-generation token or n_predict ends the decisions early.
 *   emit      the m decided tokens through edgellm_gen_emit (pieces, stops), then both
 *             caches drop the cells past the kept text (edgellm_seq_remove to the end).
 * Greedy rounds give plain greedy decoding's tokens because a row's logits do not depend on
 * how a sequence's tokens were split over passes (edgellm.h, "context").
 *
 * The target's cache never holds more than n_ctx - 1 cells after a round's pass (k is cut
 * to fit), so the full-sequence stop of edgellm_gen_emit sees the same count as plain
 * decoding at every emitted token.
 *
 * Draft length (adaptive): the expected tokens of a round with k drafts are
 * (1 - a^(k+1)) / (1 - a) for a per-token acceptance a (kept / (kept + rejections), counts
 * decayed by 0.9 per round; a geometric model as in Leviathan et al. §3.1); its cost is
 * tv0 + tb k + td k (tv0: a one-token target pass, tb: each further token of it, td: a
 * draft step; running estimates of measured times that follow a lower sample at once and a
 * higher one slowly, td first guessed from the weight sizes).
 * Each kind of round (plain, lookup, draft model) keeps its realized cost per emitted token
 * against the one predicted (decayed sums over its rounds of drafting, verification and
 * deciding; a probe's window catch-up, a one-off bounded by PROBE_SHARE, and emitting, the
 * same per token in every kind, are left out); once plain rounds and the kind's both have
 * CAL_MIN_TOKENS tokens behind them, that ratio multiplies the kind's predictions, so a
 * cost model that is off (a verification pass that is not linear in k, a timing estimate
 * biased low) is corrected by what the rounds really cost.
 * k maximises tokens per ms over {0} and [draft_min, draft_max], a k > 0 only when its rate
 * beats plain decoding's by DRAFT_MARGIN (the first round drafts nothing: it measures tv0).
 * When that is 0 for both sources, a probe of max(1, draft_min) tokens follows at once,
 * then after 16 idle rounds, 32, 64 ... 1024 (back to 16 once drafting pays), to follow a
 * changing acceptance; a source is probed only when tb + td < tv0, that is when drafting
 * could pay at full acceptance (a compute-bound target, tb ~ tv0, never gains). Lookup and
 * the draft model keep their own acceptance; a lookup draft costs nothing (td = 0).
 *
 * The draft model's context: its sequence 0 holds hist[d_off..) at positions 0.. and catches
 * up, in one pass, only when it drafts (it reads no prompt before). When it lags by more than
 * a window w it starts again from the last w tokens (d_off = n_hist - w): its proposals need
 * not see the whole text, since only acceptance, never the output, depends on them. Drafting
 * that pays uses w = DRAFT_WINDOW; a probe the window whose catch-up costs at most
 * PROBE_SHARE of the target passes since the last probe, the first draft of a run at most
 * PROBE_SHARE of the passes the run may still make (n_predict or the context left; tc per
 * token caught up, measured on catch-ups of more than 2 tokens; td until then), at least 2:
 * so a backed-off draft costs a bounded share of the plain passes however long the text. A
 * model probe after the first also waits until its whole cost (catch-up and draft steps, and
 * the verification's extra tokens) is at most PROBE_SHARE of the idle rounds' passes. A
 * draft that then pays goes on from that window, one round's tokens at a time.
 */
#include "gen.h"
#include "sampler.h"
#include "../common/common.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define EDGELLM_SPEC_MAX 64   /* draft_max at most: one pass of up to 65 tokens */
#define DRAFT_WINDOW 256      /* tokens a lagging draft model catches up at most               */
#define PROBE_SHARE 0.02      /* a probe: at most this share of the target passes it spreads over */
#define CAL_DECAY 0.9        /* cost calibration: weight of the rounds before, per round         */
#define CAL_MIN_TOKENS 3      /* ... used once this many (decayed) tokens are behind it           */
#define DRAFT_MARGIN 0.05     /* a draft length is chosen only when it predicts >= 5 % more tokens per ms than
                               * plain decoding: the costs are running estimates of noisy timings, and a
                               * smaller predicted gain was measured to turn into a loss (0.88-0.98x) */

edgellm_spec_params edgellm_spec_default_params(void)
{
    edgellm_spec_params p = {.size = sizeof p};
    p.draft_max = 16;
    p.draft_min = 0;
    p.lookup = 0;
    p.adaptive = 1;
    return p;
}

typedef struct { double kept, rej; } accept_est;

/* Realized against predicted cost per token of one kind of round (decayed sums): the cost
 * model's error, which multiplies its predictions (cal_factor). */
typedef struct { double real_ms, real_tok, pred_ms, pred_tok; } cost_cal;
enum { SRC_PLAIN, SRC_LOOKUP, SRC_MODEL };

typedef struct {
    edgellm_ctx *c, *d;
    edgellm_gen g;
    edgellm_spec_params sp;
    edgellm_spec_stats ss;
    int seq;
    int n_vocab;
    int32_t *hist;             /* [cap] the text: prompt (cached and new) and generated   */
    int n_hist, cap;
    int32_t *draft;            /* [draft_max + 1]: last, d_1..d_k (the verification batch) */
    float *q;                  /* [draft_max][n_vocab] draft distributions (sampling)      */
    float *p;                  /* [n_vocab] the target's distribution of a row             */
    float *rows;               /* [draft_max + 1][n_vocab] the verification pass's logits */
    edgellm_sampler *ds;       /* the draft model's sampler (no penalties)                */
    bool greedy;
    /* draft length */
    accept_est acc_model, acc_lookup;
    double tv0, tb, td;        /* ms; < 0: not measured yet                               */
    double tc;                 /* ms per token of a draft catching up (> 2 tokens); < 0: - */
    double catchup_ms;         /* this round's catch-up of more than 2 tokens (a probe's)  */
    double d_ratio;            /* draft weight bytes / target weight bytes (td's guess)   */
    int n_idle;                /* rounds that chose k = 0 since the last probe            */
    int d_off;                 /* the draft's sequence 0 holds hist[d_off..)               */
    int probe_every;           /* idle rounds before a probe: 1, 16, doubling to 1024     */
    double plain_ms;           /* one-token target passes: their time and count            */
    int n_plain;
    cost_cal cal[3];           /* realized against predicted round costs: plain, lookup, model */
} spec_run;

typedef struct {
    edgellm_token_callback cb;
    void *user;
} spec_cb;

static int spec_piece(void *user, int index, int32_t token, const char *piece, size_t len)
{
    (void)index;
    const spec_cb *s = user;
    return s->cb ? s->cb(token, piece, len, s->user) : 0;
}

static edgellm_status hist_push(spec_run *r, int32_t t, edgellm_error *err)
{
    if (r->n_hist == r->cap) {
        int cap = r->cap ? 2 * r->cap : 256;
        int32_t *h = edgellm_realloc(r->hist, (size_t)cap * sizeof *h);
        if (!h) return edgellm_fail_nomem(err, "speculative: token history");
        r->hist = h, r->cap = cap;
    }
    r->hist[r->n_hist++] = t;
    return EDGELLM_OK;
}

/* Keep the first `keep` cells of seq (drop the rest, a tail: no gap). */
static edgellm_status keep_cells(edgellm_ctx *c, int seq, int keep, edgellm_error *err)
{
    const edgellm_seq_state *q = &c->seqs[seq];
    if (keep >= q->n) return EDGELLM_OK;
    return edgellm_seq_remove(c, seq, q->pos[keep], -1, err);
}

/* The draft's sequence 0 keeps its longest prefix equal to hist[d_off..limit). */
static edgellm_status draft_sync(spec_run *r, int limit, edgellm_error *err)
{
    const edgellm_seq_state *q = &r->d->seqs[0];
    int k = 0;
    while (k < q->n && r->d_off + k < limit && q->tok[k] == r->hist[r->d_off + k] && q->pos[k] == k) k++;
    return keep_cells(r->d, 0, k, err);
}

/* Prompt lookup: up to max tokens that followed the latest earlier occurrence of the
 * longest suffix of hist (lookup..1 tokens) into out. Returns the count. */
static int lookup_draft(const spec_run *r, int32_t *out, int max)
{
    const int32_t *h = r->hist;
    const int n = r->n_hist;
    for (int len = EDGELLM_MIN(r->sp.lookup, n - 1); len >= 1; len--) {
        const int32_t *suf = h + n - len;
        for (int s = n - len - 1; s >= 0; s--) {   /* latest first; s + len <= n - 1 */
            if (h[s] != suf[0] || memcmp(h + s, suf, (size_t)len * sizeof *h) != 0) continue;
            int k = EDGELLM_MIN(max, n - (s + len));
            memcpy(out, h + s + len, (size_t)k * sizeof *out);
            return k;
        }
    }
    return 0;
}

static double est_alpha(const accept_est *a)
{
    return (a->kept + 0.6) / (a->kept + a->rej + 1.0);   /* prior: 0.6 from one observation */
}

/* Expected tokens of a round with k drafts at acceptance alpha. */
static double round_tokens(double alpha, int k)
{
    if (alpha >= 1.0) return k + 1.0;
    double ak = alpha;
    for (int i = 0; i < k; i++) ak *= alpha;   /* alpha^(k+1) */
    return (1.0 - ak) / (1.0 - alpha);
}

/* The cost estimates with their first guesses: tv0 (1 ms until measured), tb (a tenth of
 * tv0), td (tv0 times the draft's share of the weight bytes). */
static double est_tv0(const spec_run *r) { return r->tv0 > 0 ? r->tv0 : 1.0; }
static double est_tb(const spec_run *r) { return r->tb >= 0 ? r->tb : 0.1 * est_tv0(r); }
static double est_td(const spec_run *r) { return r->td >= 0 ? r->td : r->tv0 * r->d_ratio; }

/* Predicted ms of a round with k drafts (draft step td). */
static double round_ms(const spec_run *r, double td, int k) { return est_tv0(r) + (est_tb(r) + td) * k; }

/* Realized / predicted ms per token of a kind of round; 0 until CAL_MIN_TOKENS tokens. */
static double cal_factor(const cost_cal *c)
{
    if (c->real_tok < CAL_MIN_TOKENS || !(c->pred_ms > 0) || !(c->real_tok > 0)) return 0.0;
    const double f = (c->real_ms / c->real_tok) / (c->pred_ms / c->pred_tok);
    return f < 0.25 ? 0.25 : f > 4.0 ? 4.0 : f;
}

static void cal_add(cost_cal *c, double real_ms, double real_tok, double pred_ms, double pred_tok)
{
    c->real_ms = CAL_DECAY * c->real_ms + real_ms, c->real_tok = CAL_DECAY * c->real_tok + real_tok;
    c->pred_ms = CAL_DECAY * c->pred_ms + pred_ms, c->pred_tok = CAL_DECAY * c->pred_tok + pred_tok;
}

/* The k in {0} u [kmin, kmax] with the most expected tokens per ms (see the top), each
 * kind of round's predicted cost times its calibration. */
static int best_k(const spec_run *r, double alpha, double td, int kmin, int kmax, int src)
{
    /* calibrated only once both kinds have rounds behind them: one kind's overheads alone
     * would tilt the choice */
    const double cp = cal_factor(&r->cal[SRC_PLAIN]), cs = cal_factor(&r->cal[src]);
    const bool both = cp > 0 && cs > 0;
    const double fp = both ? cp : 1.0, fs = both ? cs : 1.0;
    int best = 0;
    double best_rate = (1.0 + DRAFT_MARGIN) / (round_ms(r, 0.0, 0) * fp);   /* drafting must beat plain by the margin */
    for (int k = kmin; k <= kmax; k++) {
        const double rate = round_tokens(alpha, k) / (round_ms(r, td, k) * fs);
        if (rate > best_rate) best_rate = rate, best = k;
    }
    return best;
}

/* A running estimate of a time: follows a lower sample at once and a higher one slowly
 * (on a shared machine the noise is delays, which only add). */
static void ema(double *v, double x)
{
    *v = *v < 0 || x < *v ? x : 0.9 * *v + 0.1 * x;
}

/* Draw from w[n] (weights summing to total > 0) with u in [0, 1). */
static int32_t draw_dense(const float *w, int n, double total, double u)
{
    double target = u * total, cum = 0.0;
    int last = 0;
    for (int i = 0; i < n; i++) {
        if (w[i] <= 0.0f) continue;
        cum += w[i];
        last = i;
        if (target < cum) return i;
    }
    return last;
}

/* Draft k tokens with the draft model into r->draft[1..]; returns how many (fewer when one
 * is an end-of-generation token). A draft more than `window` tokens behind starts again
 * from the last `window` tokens of hist. */
static edgellm_status model_draft(spec_run *r, int k, int window, int *n_out, edgellm_error *err)
{
    edgellm_ctx *d = r->d;
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(r->c->model);
    edgellm_status rc;
    *n_out = 0;
    if (r->n_hist - (r->d_off + d->seqs[0].n) > window) {
        if ((rc = edgellm_seq_clear(d, 0, err))) return rc;
        r->d_off = r->n_hist - window;
    }
    const int have = r->d_off + d->seqs[0].n;
    const int n_new = r->n_hist - have;       /* >= 1: the pending token at least */
    const double t0 = edgellm_time_ms();
    edgellm_batch b = {.size = sizeof b, .n_tokens = n_new, .tokens = r->hist + have};
    if ((rc = edgellm_decode_batch_internal(d, &b, err))) return rc;
    r->ss.n_draft_model_passes++;
    r->ss.n_draft_model_tokens += n_new;
    const double t1 = edgellm_time_ms();
    if (n_new <= 2) ema(&r->td, t1 - t0);    /* a catch-up of a long prompt is no draft step */
    else ema(&r->tc, (t1 - t0) / n_new), r->catchup_ms += t1 - t0;
    for (int i = 0; i < k; i++) {
        const float *logits = d->seqs[0].logits;
        int32_t t;
        if (r->greedy) {
            int best = 0;
            for (int v = 1; v < r->n_vocab; v++) if (logits[v] > logits[best]) best = v;
            t = best;
        } else {
            float *q = r->q + (size_t)i * r->n_vocab;
            if ((rc = edgellm_sampler_probs(r->ds, logits, q, err))) return rc;
            t = draw_dense(q, r->n_vocab, 1.0, edgellm_sampler_uniform(r->ds));
        }
        r->draft[1 + i] = t;
        *n_out = i + 1;
        if (i + 1 == k || edgellm_token_is_eog(tok, t)) break;
        const double ts = edgellm_time_ms();
        b.n_tokens = 1, b.tokens = &r->draft[1 + i];
        if ((rc = edgellm_decode_batch_internal(d, &b, err))) return rc;
        r->ss.n_draft_model_passes++;
        r->ss.n_draft_model_tokens++;
        ema(&r->td, edgellm_time_ms() - ts);
    }
    return EDGELLM_OK;
}

/* One round (see the top). */
static edgellm_status spec_round(spec_run *r, edgellm_gen_piece_fn cb, void *cbu, edgellm_error *err)
{
    edgellm_ctx *c = r->c;
    edgellm_status rc;
    const int base = r->n_hist - 1;                 /* cells of the target before the pass */
    const int remaining = r->g.p.n_predict >= 0 ? r->g.p.n_predict - r->g.st.n_generated : INT32_MAX;
    int kmax = EDGELLM_MIN(r->sp.draft_max, c->n_ctx - base - 2);
    kmax = EDGELLM_MIN(kmax, remaining - 1);
    if (r->d) kmax = EDGELLM_MIN(kmax, r->d->n_ctx - (r->n_hist - r->d_off));
    const int kmin = EDGELLM_MAX(r->sp.draft_min, 1);

    /* draft */
    const double t0 = edgellm_time_ms();
    r->catchup_ms = 0.0;
    int k = 0, window = DRAFT_WINDOW;
    bool from_lookup = false, dropped = false;
    r->draft[0] = r->hist[r->n_hist - 1];
    if (kmax >= kmin) {
        int want_l = kmax, want_m = kmax;
        if (r->sp.adaptive && r->tv0 < 0) {
            want_l = want_m = 0;             /* the first pass measures a plain step */
        } else if (r->sp.adaptive) {
            want_l = r->sp.lookup > 0 ? best_k(r, est_alpha(&r->acc_lookup), 0.0, kmin, kmax, SRC_LOOKUP) : 0;
            const double td = est_td(r), tb = est_tb(r);
            want_m = r->d ? best_k(r, est_alpha(&r->acc_model), td, kmin, kmax, SRC_MODEL) : 0;
            const double tc = r->tc >= 0 ? r->tc : td;
            const bool fresh = r->acc_model.kept + r->acc_model.rej == 0;   /* no model draft checked yet */
            const int rounds = fresh ? EDGELLM_MIN(remaining, c->n_ctx - r->n_hist) : r->n_idle + 1;
            const int probe_window = EDGELLM_MAX(
                (int)EDGELLM_MIN(PROBE_SHARE * rounds * r->tv0 / EDGELLM_MAX(tc, 1e-6), DRAFT_WINDOW), 2);
            if (fresh) window = probe_window;
            if (want_l || want_m) {
                r->probe_every = 16;
            } else if (++r->n_idle >= r->probe_every) {   /* a probe, only where full acceptance would pay */
                const double model_probe = probe_window * tc + kmin * (td + tb);   /* its cost, ms */
                window = probe_window;
                if (r->sp.lookup > 0 && tb < r->tv0) want_l = kmin;
                if (r->d && tb + td < r->tv0 && (fresh || model_probe <= PROBE_SHARE * r->n_idle * r->tv0))
                    want_m = kmin;
                r->n_idle = 0;
                r->probe_every = EDGELLM_MIN(EDGELLM_MAX(2 * r->probe_every, 16), 1024);
            }
        }
        if (r->sp.lookup > 0 && want_l > 0) {
            k = lookup_draft(r, r->draft + 1, want_l);
            if (k < kmin) k = 0;
            from_lookup = k > 0;
        }
        if (!k && r->d && want_m > 0) {
            if ((rc = model_draft(r, want_m, window, &k, err))) return rc;
            if (k < kmin) k = 0, dropped = true;
        }
    }
    const double t1 = edgellm_time_ms();
    r->ss.draft_ms += t1 - t0;
    /* this round's predicted cost, before its own timings update the estimates */
    const int src = k == 0 ? SRC_PLAIN : from_lookup ? SRC_LOOKUP : SRC_MODEL;
    const bool calibrate = r->sp.adaptive && r->tv0 > 0;
    double pred_ms = 0.0, pred_tok = 1.0;
    if (calibrate) {
        pred_ms = round_ms(r, src == SRC_MODEL ? est_td(r) : 0.0, k);
        pred_tok = round_tokens(est_alpha(src == SRC_LOOKUP ? &r->acc_lookup : &r->acc_model), k);
    }

    /* verify */
    int32_t seqv[EDGELLM_SPEC_MAX + 1];
    for (int i = 0; i <= k; i++) seqv[i] = r->seq;
    const edgellm_batch b = {.size = sizeof b, .n_tokens = k + 1, .tokens = r->draft, .seq = seqv, .logits = r->rows};
    if ((rc = edgellm_decode_batch_internal(c, &b, err))) return rc;
    const double t2 = edgellm_time_ms();
    r->ss.verify_ms += t2 - t1;
    r->ss.n_passes++;
    if (k == 0) {
        ema(&r->tv0, t2 - t1);
        r->plain_ms += t2 - t1, r->n_plain++;
    }
    else if (r->tv0 > 0) {
        if (t2 - t1 < r->tv0) r->tv0 = t2 - t1;   /* a longer pass bounds a one-token one */
        const double per = (t2 - t1 - r->tv0) / k;
        ema(&r->tb, per > 0 ? per : 0.0);
    }

    /* decide */
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(c->model);
    int32_t out[EDGELLM_SPEC_MAX + 1];
    int m = 0, kept = 0;
    for (int i = 0; i <= k && m < remaining; i++) {
        const float *row = r->rows + (size_t)i * r->n_vocab;
        int32_t t;
        bool keep = false;
        if (r->greedy || i == k) {
            if ((rc = edgellm_sampler_sample(r->g.smp, row, &t, err))) return rc;
            keep = i < k && t == r->draft[1 + i];
        } else {
            if ((rc = edgellm_sampler_probs(r->g.smp, row, r->p, err))) return rc;
            const int32_t x = r->draft[1 + i];
            const float *q = r->q + (size_t)i * r->n_vocab;
            const double qx = from_lookup ? 1.0 : q[x];
            const double u = edgellm_sampler_uniform(r->g.smp);
            if (qx > 0 && u * qx < r->p[x]) {
                t = x;
                keep = true;
            } else {   /* the residual norm(max(0, p - q)) */
                double total = 0.0;
                for (int v = 0; v < r->n_vocab; v++) {
                    const float w = r->p[v] - (from_lookup ? (v == x ? 1.0f : 0.0f) : q[v]);
                    r->p[v] = w > 0.0f ? w : 0.0f;
                    total += r->p[v];
                }
                if (!(total > 0.0)) {   /* p == q up to rounding: draw from p */
                    if ((rc = edgellm_sampler_probs(r->g.smp, row, r->p, err))) return rc;
                    total = 1.0;
                }
                t = draw_dense(r->p, r->n_vocab, total, edgellm_sampler_uniform(r->g.smp));
            }
        }
        edgellm_sampler_accept(r->g.smp, t);
        out[m++] = t;
        kept += keep;
        if (!keep || edgellm_token_is_eog(tok, t)) break;
    }
    if (k > 0) {
        accept_est *a = from_lookup ? &r->acc_lookup : &r->acc_model;
        a->kept = 0.9 * a->kept + kept;
        a->rej = 0.9 * a->rej + (kept < k ? 1 : 0);
        r->ss.n_drafted += k;
        r->ss.n_accepted += kept;
        r->ss.n_lookup += from_lookup ? k : 0;
        r->ss.n_draft_passes++;
    }
    const double t3 = edgellm_time_ms();
    r->ss.draft_ms += t3 - t2;   /* deciding counts with drafting's overhead */
    /* the calibration: drafting, verification and deciding; a probe's window catch-up is a
     * one-off that PROBE_SHARE bounds, and emitting (the caller's callbacks) costs the same
     * per token whatever the round; a draft dropped as too short is neither kind */
    if (calibrate && m > 0 && !dropped) cal_add(&r->cal[src], t3 - t0 - r->catchup_ms, m, pred_ms, pred_tok);

    /* emit: the target keeps last and the decided tokens but the final one */
    if ((rc = keep_cells(c, r->seq, base + m, err))) return rc;
    int emitted = 0;
    for (int i = 0; i < m; i++) {
        if ((rc = edgellm_gen_emit(c, &r->g, out[i], cb, cbu))) return rc;
        emitted++;
        if ((rc = hist_push(r, out[i], err))) return rc;
        if (r->g.state == GEN_DONE) break;
    }
    if (r->g.state == GEN_DONE && (rc = keep_cells(c, r->seq, base + emitted, err))) return rc;
    if (r->d && (rc = draft_sync(r, r->n_hist - 1, err))) return rc;
    return EDGELLM_OK;
}

/* The draft model must speak the target's vocabulary: the same size and token texts. */
static edgellm_status check_vocab(const edgellm_model *t, const edgellm_model *d, edgellm_error *err)
{
    const edgellm_tokenizer *a = edgellm_model_tokenizer(t), *b = edgellm_model_tokenizer(d);
    if (!b) return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: the draft model has no tokenizer", d->path);
    const int na = edgellm_tokenizer_n_vocab(a), nb = edgellm_tokenizer_n_vocab(b);
    if (na != nb || t->hp.n_vocab != d->hp.n_vocab)
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: the draft's vocabulary has %d tokens, the model's (%s) %d: "
                            "a draft must share the model's vocabulary", d->path, nb, t->path, na);
    for (int i = 0; i < na; i++) {
        const char *x = edgellm_token_text(a, i), *y = edgellm_token_text(b, i);
        if (strcmp(x ? x : "", y ? y : ""))
            return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: token %d of the draft's vocabulary is \"%.40s\", the "
                                "model's (%s) \"%.40s\": a draft must share the model's vocabulary", d->path, i,
                                y ? y : "", t->path, x ? x : "");
    }
    return EDGELLM_OK;
}

static edgellm_status spec_generate(spec_run *r, const char *prompt, const edgellm_generate_params *p,
                                    edgellm_token_callback ucb, void *user, edgellm_error *err)
{
    edgellm_ctx *c = r->c;
    edgellm_status rc;
    spec_cb cbu = {ucb, user};
    if ((rc = edgellm_gen_begin(&r->g, c, 0, prompt, p))) {
        if (err) *err = r->g.err;
        return rc;
    }
    edgellm_gen *g = &r->g;
    r->seq = g->seq;
    r->greedy = edgellm_sampler_greedy(g->smp);
    r->n_vocab = c->model->hp.n_vocab;
    edgellm_seq_state *q = &c->seqs[r->seq];
    if (g->n_todo == g->todo_done) {   /* an appended turn with nothing new: run the last token again */
        if (q->n == 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "speculative: nothing to condition on");
        g->todo[0] = q->tok[q->n - 1];
        g->n_todo = 1, g->todo_done = 0;
        if ((rc = keep_cells(c, r->seq, q->n - 1, err))) return rc;
    }
    for (int i = 0; i < q->n; i++)
        if ((rc = hist_push(r, q->tok[i], err))) return rc;
    for (int i = g->todo_done; i < g->n_todo; i++)
        if ((rc = hist_push(r, g->todo[i], err))) return rc;
    const size_t nv = (size_t)r->n_vocab, kx = (size_t)r->sp.draft_max;
    r->draft = edgellm_malloc((kx + 1) * sizeof *r->draft);
    r->rows = edgellm_malloc((kx + 1) * nv * sizeof *r->rows);
    r->p = edgellm_malloc(nv * sizeof *r->p);
    r->q = r->greedy || !r->d ? NULL : edgellm_malloc((kx ? kx : 1) * nv * sizeof *r->q);
    if (!r->draft || !r->rows || !r->p || (!r->greedy && r->d && !r->q))
        return edgellm_fail_nomem(err, "speculative: buffers");
    if (r->d && !r->greedy) {   /* the draft samples with the target's settings, penalties off */
        edgellm_sampler_params dp = g->p.sampling;
        dp.repeat_penalty = 1.0f, dp.frequency_penalty = 0.0f, dp.presence_penalty = 0.0f;
        dp.seed ^= 0x9E3779B97F4A7C15ULL;
        if ((rc = edgellm_sampler_new(&dp, r->n_vocab, &r->ds, err))) return rc;
    }
    /* the draft model's cached prefix is kept; it reads the rest when it first drafts */
    if (r->d && (rc = draft_sync(r, r->n_hist - 1, err))) return rc;

    /* the prompt but its last token: one pass, no logits needed */
    const int n_pre = g->n_todo - g->todo_done - 1;
    if (n_pre > 0) {
        int32_t *seqv = edgellm_malloc((size_t)n_pre * sizeof *seqv);
        if (!seqv) return edgellm_fail_nomem(err, "speculative: prompt batch");
        for (int i = 0; i < n_pre; i++) seqv[i] = r->seq;
        const edgellm_batch b = {.size = sizeof b, .n_tokens = n_pre, .tokens = g->todo + g->todo_done, .seq = seqv};
        rc = edgellm_decode_batch_internal(c, &b, err);
        edgellm_free(seqv);
        if (rc) return rc;
    }
    g->todo_done = g->n_todo;
    while (g->state == GEN_PREFILL || g->state == GEN_DECODE) {
        const bool first = g->state == GEN_PREFILL;
        const double ts = edgellm_time_ms();
        if ((rc = spec_round(r, spec_piece, &cbu, err))) return rc;
        if (g->rc) {
            if (err) *err = g->err;
            return g->rc;
        }
        if (first) g->st.prefill_ms = edgellm_time_ms() - g->t_start;
        else g->st.decode_ms += edgellm_time_ms() - ts;
    }
    return EDGELLM_OK;
}

edgellm_status edgellm_generate_speculative(edgellm_ctx *c, edgellm_ctx *draft, const char *prompt,
                                            const edgellm_generate_params *p, const edgellm_spec_params *sp,
                                            edgellm_token_callback cb, void *user, edgellm_generate_stats *stats,
                                            edgellm_spec_stats *spec_stats, edgellm_error *err)
{
    if (stats) {
        edgellm_generate_stats st = {.size = sizeof st, .stop = EDGELLM_STOP_N_PREDICT};
        if (!edgellm_sized_out(stats, &st, sizeof st))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "speculative: stats.size is 0: set it to "
                                "sizeof(edgellm_generate_stats)");
    }
    if (spec_stats) {
        edgellm_spec_stats z = {.size = sizeof z};
        if (!edgellm_sized_out(spec_stats, &z, sizeof z))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "speculative: spec_stats.size is 0: set it to "
                                "sizeof(edgellm_spec_stats)");
    }
    if (!c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "speculative: context is NULL");
    if (draft == c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "speculative: the draft context is the target's");
    if (atomic_load(&c->busy) || (draft && atomic_load(&draft->busy)))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "speculative: a generation job runs on a context (wait for it "
                            "first)");
    spec_run r = {.c = c, .d = draft, .tv0 = -1, .tb = -1, .td = -1, .tc = -1, .probe_every = 1};
    r.sp = edgellm_spec_default_params();
    edgellm_status rc = edgellm_sized_in(&r.sp, sizeof r.sp, sp, "edgellm_spec_params", err);
    if (rc) return rc;
    if (r.sp.draft_max < 0 || r.sp.draft_max > EDGELLM_SPEC_MAX || r.sp.draft_min < 0 ||
        r.sp.draft_min > r.sp.draft_max || r.sp.lookup < 0 || r.sp.lookup > 1024)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "speculative: draft_min %d, draft_max %d (0..%d, min <= max) or "
                            "lookup %d (0..1024) out of range", r.sp.draft_min, r.sp.draft_max, EDGELLM_SPEC_MAX,
                            r.sp.lookup);
    r.ss.size = sizeof r.ss;
    if (draft && (rc = check_vocab(c->model, draft->model, err))) return rc;
    if (draft) r.d_ratio = (double)draft->model->weight_bytes / (double)EDGELLM_MAX(c->model->weight_bytes, 1);
    atomic_store(&c->abort, 0);
    if (draft) atomic_store(&draft->abort, 0);
    edgellm_generate_params gp = edgellm_generate_default_params();
    if ((rc = edgellm_sized_in(&gp, sizeof gp, p, "edgellm_generate_params", err))) return rc;
    if (gp.n_predict == 0 || (!draft && r.sp.lookup == 0) || r.sp.draft_max == 0) {   /* nothing to draft */
        rc = edgellm_generate(c, prompt, p, cb, user, stats, err);
        if (spec_stats) edgellm_sized_out(spec_stats, &r.ss, sizeof r.ss);
        return rc;
    }
    rc = spec_generate(&r, prompt, p, cb, user, err);
    if (rc && (r.g.state == GEN_PREFILL || r.g.state == GEN_DECODE)) {   /* a failed pass ends the stream */
        const edgellm_stop_reason before = r.g.st.stop;
        edgellm_gen_cancel(c, &r.g);
        if (rc != EDGELLM_ERR_CANCELLED) r.g.st.stop = before;
    }
    if (stats) edgellm_sized_out(stats, &r.g.st, sizeof r.g.st);
    r.ss.pass1_ms = r.n_plain ? r.plain_ms / r.n_plain : 0.0;
    if (spec_stats) edgellm_sized_out(spec_stats, &r.ss, sizeof r.ss);
    edgellm_gen_end(&r.g);
    edgellm_sampler_free(r.ds);
    edgellm_free(r.hist);
    edgellm_free(r.draft);
    edgellm_free(r.rows);
    edgellm_free(r.p);
    edgellm_free(r.q);
    return rc;
}
