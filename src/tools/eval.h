/*
 * eval.h — internal side of `edgellm eval` (public contract: include/edgellm.h,
 * "Evaluation"). The pieces, one concept per file:
 *
 *   eval.c          defaults, the window plan (tokenize + cut into windows), the window
 *                   runner (one model over one window -> logits of the scored positions),
 *                   hashing, statistics helpers
 *   eval_ppl.c      edgellm_eval_ppl
 *   eval_logits.c   the saved-logits file (layout in its opening comment), reference
 *                   records, edgellm_eval_save_logits
 *   eval_compare.c  per-position comparison (KLD, top-1, delta-p) and edgellm_eval_compare
 *   eval_task.c     multiple-choice and generation task sets (choice scoring below)
 *   eval_sweep.c    quantize-and-compare over a list of types
 */
#ifndef EDGELLM_TOOLS_EVAL_H
#define EDGELLM_TOOLS_EVAL_H

#include "../common/common.h"
#include "edgellm_tools.h"

/* ---------------------------------------------------------------- window plan ---- */

/* The text as tokens and the windows cut from it (conventions in edgellm.h). */
typedef struct {
    int32_t *tokens;          /* [n_tokens], owned                                     */
    int64_t  n_tokens;
    int      n_ctx;           /* tokens per window                                     */
    int      stride;          /* 0: disjoint windows scored on their second half       */
    int      first;           /* logits at positions first .. n_ctx-2 are scored       */
    int      n_pred;          /* predictions per window: n_ctx - 1 - first             */
    int      n_windows;
    int32_t  bos;             /* substituted at each window start; -1: none            */
    uint64_t text_hash;       /* FNV-1a 64 of the text bytes                           */
    uint64_t text_bytes;
} edgellm_eval_plan;

/* Tokenize text and lay out the windows. Refuses a text with fewer than 2 * n_ctx
 * tokens (EDGELLM_ERR_MISUSE) and bad params. */
edgellm_status edgellm_eval_plan_make(const edgellm_tokenizer *tok, const char *text, size_t len,
                                      const edgellm_eval_params *p, edgellm_eval_plan *out, edgellm_error *err);
void edgellm_eval_plan_free(edgellm_eval_plan *pl);
/* First text token of window w. */
int64_t edgellm_eval_plan_start(const edgellm_eval_plan *pl, int w);

/* -------------------------------------------------------------- window runner ---- */

/* One model evaluating windows of a plan. */
typedef struct {
    edgellm_ctx *ctx;
    int      n_vocab;
    int32_t *win;             /* [n_ctx] the window's tokens, BOS substituted          */
    float   *logits;          /* [n_pred][n_vocab]: row i predicts win[first + i + 1]  */
    double   eval_ms;         /* time spent in edgellm_decode                          */
    int64_t  n_evaluated;     /* tokens passed through the model                       */
} edgellm_eval_runner;

edgellm_status edgellm_eval_runner_init(edgellm_eval_runner *r, const edgellm_model *m, const edgellm_eval_plan *pl,
                                        int n_threads, int kv_type, edgellm_error *err);
void edgellm_eval_runner_free(edgellm_eval_runner *r);
/* Evaluate window w: decode win[0 .. first) without logits, then win[first .. n_ctx-1)
 * with logits into r->logits (the last token of a window is never needed). */
edgellm_status edgellm_eval_runner_window(edgellm_eval_runner *r, const edgellm_eval_plan *pl, int w,
                                          edgellm_error *err);
/* Target token of prediction i of the current window. */
static inline int32_t edgellm_eval_target(const edgellm_eval_runner *r, const edgellm_eval_plan *pl, int i)
{
    return r->win[pl->first + i + 1];
}

/* Fill a perplexity block from sums of nll and nll^2 over n predictions (eval_ppl.c);
 * r (may be NULL) gives the timing. */
void edgellm_eval_fill_ppl(edgellm_eval_ppl_result *out, const edgellm_eval_plan *pl, int n_windows, double s_nll,
                           double s2_nll, int64_t n, const edgellm_eval_runner *r);

/* -------------------------------------------------------------------- helpers ---- */

/* ln sum exp(x[i]) over n floats, in double (max-shifted). */
double edgellm_eval_logsumexp(const float *x, int n);
/* Index of the largest value; the lowest index on ties. */
int edgellm_eval_argmax(const float *x, int n);

/* FNV-1a 64-bit hash (http://www.isthe.com/chongo/tech/comp/fnv/), chainable. */
#define EDGELLM_FNV64_INIT 0xcbf29ce484222325ull
uint64_t edgellm_fnv64(uint64_t h, const void *data, size_t n);
/* Hash of a tokenizer: n_vocab, BOS, EOS and every token's text including its NUL. */
uint64_t edgellm_eval_tokenizer_hash(const edgellm_tokenizer *t);

/* Mean and standard error of the mean from sum x and sum x^2 over n samples
 * (sqrt(var / (n - 1)), as llama-perplexity). An infinite mean has error +inf. */
void edgellm_eval_mean_err(double sum, double sum2, int64_t n, double *mean, double *err);
/* Linear-interpolated quantile q in [0, 1] of v[n], sorted in place. NaN when n == 0;
 * +inf when it falls on or between +inf values (never NaN for NaN-free v). */
double edgellm_eval_quantile_sorted(const float *v, int64_t n, double q);
void edgellm_eval_sort_floats(float *v, int64_t n);

/* File name part of a path (borrowed pointer into path). */
const char *edgellm_eval_basename(const char *path);
/* The model's file path as loaded (borrowed). */
const char *edgellm_eval_model_path(const edgellm_model *m);

/* ----------------------------------------------------------------- task sets ---- */

/* Whether a generation item's output text[len] is complete: it holds a newline after some
 * non-blank text (leading blank lines are skipped, the answer is on the first line that
 * has one). */
bool edgellm_eval_gen_done(const char *text, size_t len);

/* Log-likelihood of every choice of multiple-choice item `it` (index `item` for messages;
 * rules in eval_task.c) with ctx's model: scores[it->n_choices], in nats. The context is
 * decoded once; each choice rolls the cache back to the context tokens it shares
 * (edgellm_ctx_truncate) and decodes only the rest, which gives the same scores, bit for
 * bit, as evaluating context + choice from an empty cache. ctx is reset first and left
 * holding the last choice. *logits / *logits_cap: a scratch buffer reused across calls
 * (start with NULL / 0; free with edgellm_free). Statuses: EDGELLM_ERR_MISUSE (a choice
 * adds no token, or nothing precedes it), EDGELLM_ERR_CTX_FULL (context + choice exceed
 * n_ctx), EDGELLM_ERR_NOMEM, those of edgellm_tokenize / edgellm_decode. */
edgellm_status edgellm_eval_choice_scores(edgellm_ctx *ctx, const edgellm_eval_item *it, int item, float **logits,
                                          size_t *logits_cap, double *scores, edgellm_error *err);

/* ------------------------------------------------------- reference records ---- */

/* The reference's distribution at one scored position: either the whole vocabulary in id
 * order (ids == NULL, n == n_vocab) or the top n entries, largest first, with rest_lp =
 * ln of the probability mass outside them. */
typedef struct {
    int32_t        target;    /* the actual next token                                 */
    float          target_lp; /* reference ln p(target)                                */
    int32_t        top;       /* reference argmax (lowest id on ties)                  */
    float          rest_lp;   /* ln P(outside the entries); -inf when all are present  */
    int            n;
    const int32_t *ids;       /* [n] or NULL (identity)                                */
    const float   *lp;        /* [n] ln p                                              */
} edgellm_eval_ref_record;

/* Saved-logits file (eval_logits.c). */
typedef struct edgellm_eval_logits_file edgellm_eval_logits_file;

/* Open a logits file, validate its header and size, and check it against the model under
 * test (tokenizer and shape): a mismatch is EDGELLM_ERR_MISUSE naming the field and both
 * values; a damaged file is EDGELLM_ERR_FORMAT. */
edgellm_status edgellm_eval_logits_open(const char *path, const edgellm_model *m, edgellm_eval_logits_file **out,
                                        edgellm_error *err);
/* The window layout the file was saved with (n_ctx, stride, windows). */
void edgellm_eval_logits_layout(const edgellm_eval_logits_file *f, int *n_ctx, int *stride, int *n_windows, int *top_k);
/* Check the plan (text tokens) against the file's header. */
edgellm_status edgellm_eval_logits_check_plan(const edgellm_eval_logits_file *f, const edgellm_eval_plan *pl,
                                              edgellm_error *err);
/* Read the records of the next window into rec[n_pred] (valid until the next call). */
edgellm_status edgellm_eval_logits_next(edgellm_eval_logits_file *f, edgellm_eval_ref_record *rec,
                                        edgellm_error *err);
const char *edgellm_eval_logits_model_name(const edgellm_eval_logits_file *f);
void edgellm_eval_logits_close(edgellm_eval_logits_file *f);

/* ---------------------------------------------------------- comparison stats ---- */

typedef struct {
    double   s_nll_ref, s2_nll_ref, s_nll, s2_nll;   /* sums and sums of squares        */
    double   s_diff, s2_diff;                         /* nll - nll_ref                   */
    double   s_kld, s2_kld;
    double   s_dp, s2_dp;                             /* p(target) - p_ref(target)       */
    int64_t  n, n_same_top;
    int64_t  n_kld_inf;                               /* positions whose KLD is +inf     */
    float   *kld;                                     /* [cap] per-position KLD, owned   */
    int64_t  cap;
    uint8_t *mask;                                    /* [n_vocab] scratch               */
    int      n_vocab;
} edgellm_eval_acc;

edgellm_status edgellm_eval_acc_init(edgellm_eval_acc *a, int n_vocab, int64_t n_positions, edgellm_error *err);
void edgellm_eval_acc_free(edgellm_eval_acc *a);
/* Add one position: the reference record and the model's raw logits [n_vocab]. */
void edgellm_eval_acc_add(edgellm_eval_acc *a, const edgellm_eval_ref_record *ref, const float *logits);
/* Reference record from raw reference logits [n_vocab]: the whole vocabulary; lp_buf
 * [n_vocab] receives the log-probabilities (float, as a saved file would hold them). */
void edgellm_eval_record_full(const float *logits, int n_vocab, int32_t target, float *lp_buf,
                              edgellm_eval_ref_record *rec);
/* Final statistics into out (except ref/model ppl blocks' counts, filled by the caller). */
void edgellm_eval_acc_finish(edgellm_eval_acc *a, edgellm_eval_compare_result *out);

/* Progress helper: calls p->progress with the fraction; EDGELLM_ERR_CANCELLED when it
 * asks to stop. */
edgellm_status edgellm_eval_report_progress(const edgellm_eval_params *p, double fraction, const char *what,
                                            edgellm_error *err);

#endif
