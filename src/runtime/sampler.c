/*
 * sampler.c — choosing the next token from a row of logits.
 *
 * Pipeline (public contract in include/edgellm.h, "Sampling"):
 *
 *   temperature <= 0 : greedy. argmax (lowest id on ties) over the logits after the
 *                      penalties of step 1 (as llama.cpp applies them); no filters
 *                      and no RNG are involved, so greedy runs are exactly reproducible
 *                      and independent of the seed. With repeat_penalty 1 it is the plain
 *                      argmax of the raw logits.
 *   otherwise        : 1. repetition penalty over the last repeat_last_n accepted tokens:
 *                         a positive logit is divided by repeat_penalty, a negative one is
 *                         multiplied by it (the CTRL rule, Keskar et al. 2019,
 *                         arXiv:1909.05858, sign-corrected as llama.cpp does). A token that
 *                         occurs several times in the window is penalised once. Then the
 *                         OpenAI frequency and presence penalties: logit -= count *
 *                         frequency_penalty + presence_penalty, count = the token's
 *                         occurrences in the window (llama.cpp's penalties sampler,
 *                         ggml-org/llama.cpp:src/llama-sampler.cpp,
 *                         llama_sampler_penalties_apply: the same window, order and formula).
 *                      2. top-k (0 = off): partial selection with a size-k min-heap,
 *                         O(n log k), then a sort of the k survivors only.
 *                      3. temperature: logits / T.
 *                      4. softmax over the survivors (max-subtracted, sums in double).
 *                      5. top-p (1 = off; Holtzman et al. 2019, arXiv:1904.09751): keep the
 *                         smallest prefix, in descending probability, whose mass is >= p;
 *                         always at least one token: p = 0 keeps the most likely token
 *                         only, as llama.cpp's top-p sampler (src/llama-sampler.cpp) does. Without top-k the candidates are not
 *                         sorted yet: a linear histogram of the probabilities finds the
 *                         bins that hold the nucleus, and only their tokens are sorted.
 *                      6. min-p (0 = off): drop tokens with prob < min_p * p_max.
 *                      7. renormalise and draw u in [0,1) from the sampler's own RNG.
 *
 * Ordering ties: candidates are ranked by (probability desc, token id asc), so every step
 * is deterministic for a given seed.
 *
 * RNG: xorshift64* (S. Vigna, "An experimental exploration of Marsaglia's xorshift
 * generators, scrambled", ACM TOMS 2016): state ^= state>>12; state ^= state<<25;
 * state ^= state>>27; output = state * 0x2545F4914F6CDD1D. The 64-bit seed is first mixed
 * with one round of splitmix64 (Steele, Lea, Flood, OOPSLA 2014) so that small or zero
 * seeds give a well-spread, non-zero state. A draw is the top 53 bits of the output / 2^53.
 * The same seed and the same sequence of sample/accept calls reproduce the same tokens.
 *
 * Non-numbers: any NaN or +-inf in the logits returns EDGELLM_ERR_NUMERIC naming the
 * first offending index; a token is never chosen from a broken row.
 *
 * Memory: all buffers are allocated once in edgellm_sampler_new (about 12 bytes per
 * vocabulary entry plus the penalty window); sampling allocates nothing.
 */
#include "common/common.h"
#include "sampler.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    float   v;    /* logit, then probability */
    int32_t id;
} edgellm_cand;

struct edgellm_sampler {
    edgellm_sampler_params p;
    int           n_vocab;
    uint64_t      rng;        /* xorshift64* state, never 0                        */
    int32_t      *hist;       /* [repeat_last_n] ring of accepted tokens           */
    int           hist_len;   /* valid entries in hist (<= repeat_last_n)          */
    int           hist_pos;   /* next slot to overwrite                            */
    int32_t      *hist_tmp;   /* [repeat_last_n] scratch for de-duplication        */
    float        *work;       /* [n_vocab] penalised copy of the logits            */
    edgellm_cand *cand;       /* [n_vocab] surviving candidates                    */
};

edgellm_sampler_params edgellm_sampler_default_params(void)
{
    edgellm_sampler_params p = {.size = sizeof p};
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 0x5eedULL;
    p.frequency_penalty = 0.0f;
    p.presence_penalty = 0.0f;
    return p;
}

/* ---- RNG ---------------------------------------------------------------------------- */

static uint64_t edgellm_splitmix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double rng_uniform(uint64_t *s)   /* [0, 1) */
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- construction ------------------------------------------------------------------- */

edgellm_status edgellm_sampler_new(const edgellm_sampler_params *p, int n_vocab, edgellm_sampler **out,
                                   edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: out is NULL");
    *out = NULL;
    edgellm_sampler_params d = edgellm_sampler_default_params();
    edgellm_status rc = edgellm_sized_in(&d, sizeof d, p, "edgellm_sampler_params", err);
    if (rc) return rc;
    p = &d;
    if (n_vocab <= 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: n_vocab %d must be positive", n_vocab);
    if (isnan(p->temperature) || isinf(p->temperature))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: temperature must be a finite number");
    if (p->top_k < 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: top_k %d must be >= 0", p->top_k);
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: top_p %g must be in [0, 1]", (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: min_p %g must be in [0, 1]", (double)p->min_p);
    if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: repeat_penalty %g must be a positive number",
                            (double)p->repeat_penalty);
    if (p->repeat_last_n < 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: repeat_last_n %d must be >= 0", p->repeat_last_n);
    if (!isfinite(p->frequency_penalty) || !isfinite(p->presence_penalty))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: frequency_penalty %g and presence_penalty %g must be "
                            "finite numbers", (double)p->frequency_penalty, (double)p->presence_penalty);

    edgellm_sampler *s = edgellm_calloc(1, sizeof *s);
    if (!s) return edgellm_fail_nomem(err, "sampler");
    s->p = *p;
    s->n_vocab = n_vocab;
    s->rng = edgellm_splitmix64(p->seed);
    if (s->rng == 0) s->rng = 0x9E3779B97F4A7C15ULL;   /* xorshift must not start at 0 */
    size_t nv = (size_t)n_vocab, nh = (size_t)(p->repeat_last_n > 0 ? p->repeat_last_n : 1);
    s->work = edgellm_malloc(nv * sizeof *s->work);
    s->cand = edgellm_malloc(nv * sizeof *s->cand);
    s->hist = edgellm_malloc(nh * sizeof *s->hist);
    s->hist_tmp = edgellm_malloc(nh * sizeof *s->hist_tmp);
    if (!s->work || !s->cand || !s->hist || !s->hist_tmp) {
        edgellm_sampler_free(s);
        return edgellm_fail_nomem(err, "sampler");
    }
    *out = s;
    return EDGELLM_OK;
}

void edgellm_sampler_free(edgellm_sampler *s)
{
    if (!s) return;
    edgellm_free(s->work);
    edgellm_free(s->cand);
    edgellm_free(s->hist);
    edgellm_free(s->hist_tmp);
    edgellm_free(s);
}

void edgellm_sampler_accept(edgellm_sampler *s, int32_t token)
{
    if (!s || s->p.repeat_last_n <= 0) return;
    s->hist[s->hist_pos] = token;
    s->hist_pos = (s->hist_pos + 1) % s->p.repeat_last_n;
    if (s->hist_len < s->p.repeat_last_n) s->hist_len++;
}

/* ---- pipeline steps ----------------------------------------------------------------- */

/* a ranks before b: higher value, then lower id. */
static inline bool cand_before(edgellm_cand a, edgellm_cand b)
{
    return a.v > b.v || (a.v == b.v && a.id < b.id);
}

static int cand_cmp(const void *pa, const void *pb)
{
    edgellm_cand a = *(const edgellm_cand *)pa, b = *(const edgellm_cand *)pb;
    if (cand_before(a, b)) return -1;
    if (cand_before(b, a)) return 1;
    return 0;
}

static int i32_cmp(const void *pa, const void *pb)
{
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    return (a > b) - (a < b);
}

/* Copy logits into s->work and penalise each distinct token of the window once: the
 * repeat penalty, then count * frequency_penalty + presence_penalty subtracted (count: its
 * occurrences in the window). Returns the row to read from (the logits themselves when no
 * penalty applies). */
static const float *apply_penalty(edgellm_sampler *s, const float *logits)
{
    const float r = s->p.repeat_penalty, freq = s->p.frequency_penalty, pres = s->p.presence_penalty;
    if ((r == 1.0f && freq == 0.0f && pres == 0.0f) || s->hist_len == 0) return logits;
    memcpy(s->work, logits, (size_t)s->n_vocab * sizeof *s->work);
    memcpy(s->hist_tmp, s->hist, (size_t)s->hist_len * sizeof *s->hist_tmp);
    qsort(s->hist_tmp, (size_t)s->hist_len, sizeof *s->hist_tmp, i32_cmp);
    for (int i = 0; i < s->hist_len;) {
        const int32_t t = s->hist_tmp[i];
        int count = 1;                                         /* a run of equal ids: one token */
        while (i + count < s->hist_len && s->hist_tmp[i + count] == t) count++;
        i += count;
        if (t < 0 || t >= s->n_vocab) continue;
        float v = s->work[t];
        v = v > 0.0f ? v / r : v * r;
        s->work[t] = v - (float)count * freq - pres;
    }
    return s->work;
}

static void heap_sift_down(edgellm_cand *h, int n, int i)   /* min-heap: root ranks last */
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cand_before(h[m], h[l])) m = l;
        if (r < n && cand_before(h[m], h[r])) m = r;
        if (m == i) return;
        edgellm_cand t = h[i]; h[i] = h[m]; h[m] = t;
        i = m;
    }
}

/* The k best of row[n_vocab] into s->cand, sorted best first. Returns k. */
static int select_top_k(edgellm_sampler *s, const float *row, int k)
{
    edgellm_cand *h = s->cand;
    for (int i = 0; i < k; i++) { h[i].v = row[i]; h[i].id = i; }
    for (int i = k / 2 - 1; i >= 0; i--) heap_sift_down(h, k, i);
    for (int i = k; i < s->n_vocab; i++) {
        edgellm_cand c = {row[i], i};
        if (cand_before(c, h[0])) { h[0] = c; heap_sift_down(h, k, 0); }
    }
    qsort(h, (size_t)k, sizeof *h, cand_cmp);
    return k;
}

/* Logits -> probabilities in place: exp((v - max) / T) / sum. */
static void softmax_temp(edgellm_cand *c, int n, float temp)
{
    float mx = c[0].v;
    for (int i = 1; i < n; i++) if (c[i].v > mx) mx = c[i].v;
    double sum = 0.0;
    for (int i = 0; i < n; i++) { c[i].v = expf((c[i].v - mx) / temp); sum += c[i].v; }
    for (int i = 0; i < n; i++) c[i].v = (float)(c[i].v / sum);
}

/* Keep the smallest best-first prefix with mass >= p. Returns the new count (>= 1).
 * Unsorted input (no top-k) is not sorted in full: probabilities are binned linearly on
 * [0, p_max] into EDGELLM_TOPP_BINS bins, bins are summed from the top until their mass
 * reaches p, and only the tokens of those bins (the nucleus plus part of one bin) are
 * sorted. O(n) plus a sort of roughly the nucleus. */
#define EDGELLM_TOPP_BINS 1024
static int top_p_filter(edgellm_cand *c, int n, float p, bool sorted)
{
    if (p >= 1.0f || n <= 1) return n;
    if (!sorted) {
        double mass[EDGELLM_TOPP_BINS] = {0};
        float pmax = c[0].v;
        for (int i = 1; i < n; i++) if (c[i].v > pmax) pmax = c[i].v;
        const float scale = (float)EDGELLM_TOPP_BINS / pmax;
        for (int i = 0; i < n; i++) {
            int b = (int)(c[i].v * scale);
            mass[b < EDGELLM_TOPP_BINS ? b : EDGELLM_TOPP_BINS - 1] += c[i].v;
        }
        int lo = 0;
        double cum = 0.0;
        for (int b = EDGELLM_TOPP_BINS - 1; b >= 0; b--) {
            cum += mass[b];
            if (cum >= p) { lo = b; break; }
        }
        int m = 0;
        for (int i = 0; i < n; i++) {
            int b = (int)(c[i].v * scale);
            if ((b < EDGELLM_TOPP_BINS ? b : EDGELLM_TOPP_BINS - 1) >= lo) c[m++] = c[i];
        }
        n = m;   /* >= 1: the top bin holds p_max */
        qsort(c, (size_t)n, sizeof *c, cand_cmp);
    }
    double cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += c[i].v;
        if (cum >= p) return i + 1;
    }
    return n;
}

static int min_p_filter(edgellm_cand *c, int n, float min_p)
{
    if (min_p <= 0.0f || n <= 1) return n;
    float pmax = c[0].v;
    for (int i = 1; i < n; i++) if (c[i].v > pmax) pmax = c[i].v;
    float thr = min_p * pmax;
    int m = 0;
    for (int i = 0; i < n; i++) if (c[i].v >= thr) c[m++] = c[i];
    return m;   /* the max survives: pmax >= min_p * pmax */
}

static int32_t draw(edgellm_sampler *s, const edgellm_cand *c, int n)
{
    double total = 0.0;
    for (int i = 0; i < n; i++) total += c[i].v;
    double target = rng_uniform(&s->rng) * total, cum = 0.0;
    for (int i = 0; i < n; i++) {
        cum += c[i].v;
        if (target < cum) return c[i].id;
    }
    return c[n - 1].id;   /* rounding left target == total */
}

/* ---- entry point -------------------------------------------------------------------- */

/* EDGELLM_ERR_NUMERIC naming the first non-finite logit, else OK. */
static edgellm_status check_finite(const float *logits, int n, edgellm_error *err)
{
    for (int i = 0; i < n; i++) {
        if (!isfinite(logits[i]))
            return edgellm_fail(err, EDGELLM_ERR_NUMERIC,
                                "sampler: logits[%d] is %s (of %d): the forward pass produced a non-number",
                                i, isnan(logits[i]) ? "NaN" : (logits[i] > 0 ? "+inf" : "-inf"), n);
    }
    return EDGELLM_OK;
}

/* Index of the largest of row[n]; the first maximum wins. */
static int argmax(const float *row, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++) if (row[i] > row[best]) best = i;
    return best;
}

/* The candidates of a sampled (temperature > 0) step in s->cand: top-k, softmax with the
 * temperature, top-p, min-p. Returns how many remain. */
static int candidates(edgellm_sampler *s, const float *row, int n)
{
    int nc;
    bool sorted;
    if (s->p.top_k > 0 && s->p.top_k < n) {
        nc = select_top_k(s, row, s->p.top_k);
        sorted = true;
    } else {
        for (int i = 0; i < n; i++) { s->cand[i].v = row[i]; s->cand[i].id = i; }
        nc = n;
        sorted = false;
    }
    softmax_temp(s->cand, nc, s->p.temperature);
    nc = top_p_filter(s->cand, nc, s->p.top_p, sorted);
    return min_p_filter(s->cand, nc, s->p.min_p);
}

edgellm_status edgellm_sampler_sample(edgellm_sampler *s, const float *logits, int32_t *token, edgellm_error *err)
{
    if (!s || !logits || !token) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: NULL argument");
    const int n = s->n_vocab;
    edgellm_status st = check_finite(logits, n, err);
    if (st) return st;
    const float *row = apply_penalty(s, logits);
    if (s->p.temperature <= 0.0f) {            /* greedy: first maximum wins */
        *token = argmax(row, n);
        return EDGELLM_OK;
    }
    const int nc = candidates(s, row, n);
    *token = draw(s, s->cand, nc);
    return EDGELLM_OK;
}

/* ---- the distribution itself (speculative decoding, sampler.h) ------------------------ */

edgellm_status edgellm_sampler_probs(edgellm_sampler *s, const float *logits, float *probs, edgellm_error *err)
{
    if (!s || !logits || !probs) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sampler: NULL argument");
    const int n = s->n_vocab;
    edgellm_status st = check_finite(logits, n, err);
    if (st) return st;
    const float *row = apply_penalty(s, logits);
    memset(probs, 0, (size_t)n * sizeof *probs);
    if (s->p.temperature <= 0.0f) {
        probs[argmax(row, n)] = 1.0f;
        return EDGELLM_OK;
    }
    const int nc = candidates(s, row, n);
    double total = 0.0;
    for (int i = 0; i < nc; i++) total += s->cand[i].v;
    for (int i = 0; i < nc; i++) probs[s->cand[i].id] = (float)(s->cand[i].v / total);
    return EDGELLM_OK;
}

double edgellm_sampler_uniform(edgellm_sampler *s)
{
    return rng_uniform(&s->rng);
}

int edgellm_sampler_greedy(const edgellm_sampler *s)
{
    return s->p.temperature <= 0.0f;
}
