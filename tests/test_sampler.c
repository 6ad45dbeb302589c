/* test_sampler.c — the sampler against hand-computed distributions.
 *
 * Frequency checks draw N samples with a fixed seed and compare the counts with the
 * expected probabilities by Pearson's chi-square. With k outcomes there are k-1 degrees of
 * freedom; the bound used is the 0.1% critical value (2 dof: 13.82, 1 dof: 10.83), so a
 * correct sampler fails with probability 0.001 for a random seed — and never for the fixed
 * seeds here, since the draws are deterministic. A sampler that is off by a few percent
 * in one probability exceeds the bound by an order of magnitude at N = 10^5. */
#include "common/common.h"
#include "test_util.h"
#include <time.h>

static edgellm_sampler_params plain_params(float temp)
{
    edgellm_sampler_params p = edgellm_sampler_default_params();
    p.temperature = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.repeat_last_n = 64;
    p.seed = 1234;
    return p;
}

static edgellm_sampler *make(const edgellm_sampler_params *p, int n_vocab)
{
    edgellm_sampler *s = NULL;
    edgellm_error err = {0};
    edgellm_status rc = edgellm_sampler_new(p, n_vocab, &s, &err);
    if (rc != EDGELLM_OK) fprintf(stderr, "sampler_new: %s\n", err.msg);
    return s;
}

/* Draw n tokens, count them into counts[n_vocab]. */
static void draw_counts(edgellm_sampler *s, const float *logits, int n_vocab, long n, long *counts)
{
    memset(counts, 0, sizeof(long) * (size_t)n_vocab);
    for (long i = 0; i < n; i++) {
        int32_t t = -1;
        edgellm_status rc = edgellm_sampler_sample(s, logits, &t, NULL);
        if (rc != EDGELLM_OK || t < 0 || t >= n_vocab) { counts[0] = -1; return; }
        counts[t]++;
    }
}

static double chi_square(const long *counts, const double *p, int k, long n)
{
    double chi = 0;
    for (int i = 0; i < k; i++) {
        double e = p[i] * (double)n;
        chi += (counts[i] - e) * (counts[i] - e) / e;
    }
    return chi;
}

static void test_sampler_greedy_argmax_lowest_id_on_ties(void)
{
    float logits[6] = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 3.0f};
    edgellm_sampler_params p = plain_params(0.0f);
    for (uint64_t seed = 0; seed < 5; seed++) {
        p.seed = seed;
        edgellm_sampler *s = make(&p, 6);
        CHECK(s != NULL);
        if (!s) return;
        int32_t t = -1;
        CHECK_OK(edgellm_sampler_sample(s, logits, &t, NULL));
        CHECK_EQ(t, 1);
        edgellm_sampler_free(s);
    }
    p.temperature = -1.0f;   /* negative is greedy too */
    edgellm_sampler *s = make(&p, 6);
    int32_t t = -1;
    CHECK_OK(edgellm_sampler_sample(s, logits, &t, NULL));
    CHECK_EQ(t, 1);
    edgellm_sampler_free(s);
}

static void test_sampler_top_k_1_is_greedy(void)
{
    enum { N = 1000 };
    static float logits[N];
    uint32_t x = 12345;
    int best = 0;
    for (int i = 0; i < N; i++) {
        x = x * 1664525u + 1013904223u;
        logits[i] = (float)(x >> 8) / (float)(1u << 24) * 10.0f - 5.0f;
        if (logits[i] > logits[best]) best = i;
    }
    edgellm_sampler_params p = plain_params(1.5f);
    p.top_k = 1;
    edgellm_sampler *s = make(&p, N);
    CHECK(s != NULL);
    if (!s) return;
    int same = 0;
    for (int i = 0; i < 200; i++) {
        int32_t t = -1;
        CHECK_OK(edgellm_sampler_sample(s, logits, &t, NULL));
        same += t == best;
    }
    CHECK_EQ(same, 200);
    edgellm_sampler_free(s);
}

/* probs 0.6 / 0.3 / 0.1. top_p 0.5: the first token alone has 0.6 >= 0.5. */
static void test_sampler_topp_keeps_one_token(void)
{
    float logits[3] = {logf(0.6f), logf(0.3f), logf(0.1f)};
    for (int k = 0; k <= 3; k += 3) {          /* unsorted path (top_k off) and sorted path */
        edgellm_sampler_params p = plain_params(1.0f);
        p.top_p = 0.5f;
        p.top_k = k;
        edgellm_sampler *s = make(&p, 3);
        long counts[3];
        draw_counts(s, logits, 3, 2000, counts);
        CHECK_EQ(counts[0], 2000);
        edgellm_sampler_free(s);
    }
}

/* probs 0.6 / 0.3 / 0.1, top_p 0.85: 0.6 < 0.85 <= 0.9, keep {0, 1}, renormalised to
 * 2/3 and 1/3; token 2 never appears. */
static void test_sampler_topp_two_tokens_renormalised(void)
{
    float logits[3] = {logf(0.6f), logf(0.3f), logf(0.1f)};
    for (int k = 0; k <= 3; k += 3) {
        edgellm_sampler_params p = plain_params(1.0f);
        p.top_p = 0.85f;
        p.top_k = k;
        edgellm_sampler *s = make(&p, 3);
        long counts[3];
        const long n = 100000;
        draw_counts(s, logits, 3, n, counts);
        CHECK_EQ(counts[2], 0);
        double expect[2] = {2.0 / 3.0, 1.0 / 3.0};
        double chi = chi_square(counts, expect, 2, n);
        fprintf(stderr, "   top_k %d top_p 0.85: counts %ld %ld %ld, chi2 %.2f (bound 10.83)\n", k, counts[0],
                counts[1], counts[2], chi);
        CHECK(chi < 10.83);
        edgellm_sampler_free(s);
    }
}

/* probs 0.5 / 0.3 / 0.15 / 0.05, min_p 0.2: threshold 0.2 * 0.5 = 0.1 drops token 3;
 * the rest renormalise to 0.5/0.95, 0.3/0.95, 0.15/0.95. */
static void test_sampler_minp_cut(void)
{
    float logits[4] = {logf(0.5f), logf(0.3f), logf(0.15f), logf(0.05f)};
    edgellm_sampler_params p = plain_params(1.0f);
    p.min_p = 0.2f;
    edgellm_sampler *s = make(&p, 4);
    long counts[4];
    const long n = 100000;
    draw_counts(s, logits, 4, n, counts);
    CHECK_EQ(counts[3], 0);
    double expect[3] = {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95};
    double chi = chi_square(counts, expect, 3, n);
    fprintf(stderr, "   min_p 0.2: counts %ld %ld %ld %ld, chi2 %.2f (bound 13.82)\n", counts[0], counts[1],
            counts[2], counts[3], chi);
    CHECK(chi < 13.82);
    edgellm_sampler_free(s);
}

/* The penalty's sign rule, seen through top_k = 1 (argmax after the penalty). */
static void test_sampler_penalty_sign_rule(void)
{
    edgellm_sampler_params p = plain_params(1.0f);
    p.top_k = 1;
    p.repeat_penalty = 2.0f;
    int32_t t = -1;

    /* positive: 1.0 / 2 = 0.5 < 0.9 -> token 1 wins */
    float pos[2] = {1.0f, 0.9f};
    edgellm_sampler *s = make(&p, 2);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, pos, &t, NULL));
    CHECK_EQ(t, 1);
    edgellm_sampler_free(s);

    /* negative: -1.0 * 2 = -2.0 < -1.5 -> token 1 wins (dividing would give -0.5 and keep 0) */
    float neg[2] = {-1.0f, -1.5f};
    s = make(&p, 2);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, neg, &t, NULL));
    CHECK_EQ(t, 1);
    edgellm_sampler_free(s);

    /* a token seen three times is penalised once: 1.0 / 2 = 0.5 > 0.3 keeps token 0
     * (three times would be 0.125 < 0.3) */
    float once[2] = {1.0f, 0.3f};
    s = make(&p, 2);
    edgellm_sampler_accept(s, 0);
    edgellm_sampler_accept(s, 0);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, once, &t, NULL));
    CHECK_EQ(t, 0);
    edgellm_sampler_free(s);

    /* the window: with repeat_last_n 2, token 0 accepted before two others is forgotten */
    p.repeat_last_n = 2;
    s = make(&p, 8);
    float w[8] = {1.0f, 0.9f, 0, 0, 0, 0, 0, 0};
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, w, &t, NULL));
    CHECK_EQ(t, 1);                             /* still in the window */
    edgellm_sampler_accept(s, 5);
    edgellm_sampler_accept(s, 6);
    CHECK_OK(edgellm_sampler_sample(s, w, &t, NULL));
    CHECK_EQ(t, 0);                             /* fell out of it */
    edgellm_sampler_free(s);

    /* greedy (temperature 0) applies the penalty too, as llama.cpp does: {1.0, 0.9} with
     * token 0 penalised by 2 becomes {0.5, 0.9} and greedy picks token 1 */
    p.temperature = 0.0f;
    p.repeat_last_n = 64;
    s = make(&p, 8);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, w, &t, NULL));
    CHECK_EQ(t, 1);
    edgellm_sampler_free(s);
}

/* Frequency and presence penalties (OpenAI's, as llama.cpp's penalties sampler applies
 * them): logit -= count * frequency + presence, count = occurrences in the window, after the
 * repeat penalty; seen through greedy (argmax after the penalties). */
static void test_sampler_frequency_presence(void)
{
    edgellm_sampler_params p = plain_params(0.0f);
    int32_t t = -1;
    float l[3] = {1.0f, 0.75f, 0.0f};

    /* frequency 0.1: token 0 seen twice -> 1.0 - 0.2 = 0.8 > 0.75 keeps it; three times
     * -> 0.7 < 0.75 and token 1 wins */
    p.frequency_penalty = 0.1f;
    edgellm_sampler *s = make(&p, 3);
    edgellm_sampler_accept(s, 0);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 0);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 1);
    edgellm_sampler_free(s);

    /* presence 0.3: once per token, however often it occurs: 1.0 - 0.3 = 0.7 < 0.75 */
    p.frequency_penalty = 0.0f;
    p.presence_penalty = 0.3f;
    s = make(&p, 3);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 1);
    edgellm_sampler_free(s);
    p.presence_penalty = 0.2f;                  /* 1.0 - 0.2 = 0.8 > 0.75, seen 5 times */
    s = make(&p, 3);
    for (int i = 0; i < 5; i++) edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 0);
    edgellm_sampler_free(s);

    /* negative values raise a seen token: token 2 (0.0) seen once, presence -1.1 -> 1.1 wins */
    p.presence_penalty = -1.1f;
    s = make(&p, 3);
    edgellm_sampler_accept(s, 2);
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 2);
    edgellm_sampler_free(s);

    /* after the repeat penalty: 1.0 / 2 = 0.5, then - 2 * 0.1 - 0.05 = 0.25 < 0.3 */
    float m[3] = {1.0f, 0.3f, 0.0f};
    p.repeat_penalty = 2.0f;
    p.frequency_penalty = 0.1f;
    p.presence_penalty = 0.05f;
    s = make(&p, 3);
    edgellm_sampler_accept(s, 0);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, m, &t, NULL));
    CHECK_EQ(t, 1);
    edgellm_sampler_free(s);
    p.frequency_penalty = 0.0f;                 /* 0.5 - 0.05 = 0.45 > 0.3 */
    s = make(&p, 3);
    edgellm_sampler_accept(s, 0);
    edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, m, &t, NULL));
    CHECK_EQ(t, 0);
    edgellm_sampler_free(s);

    /* the window: with repeat_last_n 2, counts cover the last two accepted only */
    p = plain_params(0.0f);
    p.repeat_last_n = 2;
    p.frequency_penalty = 0.1f;
    s = make(&p, 3);
    for (int i = 0; i < 6; i++) edgellm_sampler_accept(s, 0);   /* count 2, not 6: 0.8 > 0.75 */
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 0);
    edgellm_sampler_accept(s, 2);
    edgellm_sampler_accept(s, 2);                                /* token 0 left the window */
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 0);
    edgellm_sampler_free(s);

    /* sampling (T = 1): logits {0, 0} with token 0 seen once, presence ln 3 -> probs 1/4, 3/4 */
    p = plain_params(1.0f);
    p.presence_penalty = logf(3.0f);
    s = make(&p, 2);
    edgellm_sampler_accept(s, 0);
    float z[2] = {0.0f, 0.0f};
    long counts[2];
    const long n = 100000;
    draw_counts(s, z, 2, n, counts);
    double expect[2] = {0.25, 0.75};
    double chi = chi_square(counts, expect, 2, n);
    fprintf(stderr, "   presence ln 3: counts %ld %ld, chi2 %.2f (bound 10.83)\n", counts[0], counts[1], chi);
    CHECK(chi < 10.83);
    edgellm_sampler_free(s);

    /* not finite: refused */
    p = plain_params(0.0f);
    p.frequency_penalty = INFINITY;
    edgellm_sampler *bad = NULL;
    CHECK_EQ(edgellm_sampler_new(&p, 3, &bad, NULL), EDGELLM_ERR_MISUSE);
    p.frequency_penalty = 0.0f;
    p.presence_penalty = NAN;
    CHECK_EQ(edgellm_sampler_new(&p, 3, &bad, NULL), EDGELLM_ERR_MISUSE);
    CHECK(bad == NULL);

    /* a caller built before the two fields (size without them) gets them off */
    p = plain_params(0.0f);
    p.size = offsetof(edgellm_sampler_params, frequency_penalty);
    p.frequency_penalty = 100.0f;
    s = make(&p, 3);
    for (int i = 0; i < 3; i++) edgellm_sampler_accept(s, 0);
    CHECK_OK(edgellm_sampler_sample(s, l, &t, NULL));
    CHECK_EQ(t, 0);
    edgellm_sampler_free(s);
}

/* Penalised distribution by hand: logits {ln 4, ln 2, -ln 2} with penalty 2 on tokens 0, 2:
 * ln4/2 = ln2, -ln2*2 = -ln4 -> weights 2, 2, 1/4 -> probs 8/17, 8/17, 1/17. */
static void test_sampler_penalty_distribution(void)
{
    float logits[3] = {logf(4.0f), logf(2.0f), -logf(2.0f)};
    edgellm_sampler_params p = plain_params(1.0f);
    p.repeat_penalty = 2.0f;
    edgellm_sampler *s = make(&p, 3);
    edgellm_sampler_accept(s, 0);
    edgellm_sampler_accept(s, 2);
    long counts[3];
    const long n = 100000;
    draw_counts(s, logits, 3, n, counts);
    double expect[3] = {8.0 / 17, 8.0 / 17, 1.0 / 17};
    double chi = chi_square(counts, expect, 3, n);
    fprintf(stderr, "   penalty 2: counts %ld %ld %ld, chi2 %.2f (bound 13.82)\n", counts[0], counts[1], counts[2], chi);
    CHECK(chi < 13.82);
    edgellm_sampler_free(s);
}

static void test_sampler_seed_reproduces(void)
{
    enum { N = 300, STEPS = 500 };
    static float logits[N];
    for (int i = 0; i < N; i++) logits[i] = sinf((float)i * 0.37f) * 3.0f;
    edgellm_sampler_params p = edgellm_sampler_default_params();
    p.seed = 42;
    edgellm_sampler *a = make(&p, N), *b = make(&p, N);
    p.seed = 43;
    edgellm_sampler *c = make(&p, N);
    int same_ab = 0, same_ac = 0;
    for (int i = 0; i < STEPS; i++) {
        int32_t ta, tb, tc;
        CHECK_OK(edgellm_sampler_sample(a, logits, &ta, NULL));
        CHECK_OK(edgellm_sampler_sample(b, logits, &tb, NULL));
        CHECK_OK(edgellm_sampler_sample(c, logits, &tc, NULL));
        same_ab += ta == tb;
        same_ac += ta == tc;
    }
    CHECK_EQ(same_ab, STEPS);
    CHECK(same_ac < STEPS);
    edgellm_sampler_free(a);
    edgellm_sampler_free(b);
    edgellm_sampler_free(c);
}

/* The plain 3-token distribution 0.5 / 0.3 / 0.2 at T = 1, and at T = 2 where
 * p_i ∝ p_i^(1/2): sqrt(.5), sqrt(.3), sqrt(.2) normalised. */
static void test_sampler_frequencies_chi_square(void)
{
    float logits[3] = {logf(0.5f), logf(0.3f), logf(0.2f)};
    const long n = 100000;
    long counts[3];
    edgellm_sampler_params p = plain_params(1.0f);
    edgellm_sampler *s = make(&p, 3);
    draw_counts(s, logits, 3, n, counts);
    double e1[3] = {0.5, 0.3, 0.2};
    double chi = chi_square(counts, e1, 3, n);
    fprintf(stderr, "   T=1: counts %ld %ld %ld, chi2 %.2f (bound 13.82)\n", counts[0], counts[1], counts[2], chi);
    CHECK(chi < 13.82);
    edgellm_sampler_free(s);

    p.temperature = 2.0f;
    s = make(&p, 3);
    draw_counts(s, logits, 3, n, counts);
    double z = sqrt(0.5) + sqrt(0.3) + sqrt(0.2);
    double e2[3] = {sqrt(0.5) / z, sqrt(0.3) / z, sqrt(0.2) / z};
    chi = chi_square(counts, e2, 3, n);
    fprintf(stderr, "   T=2: counts %ld %ld %ld, chi2 %.2f (bound 13.82)\n", counts[0], counts[1], counts[2], chi);
    CHECK(chi < 13.82);
    /* a wrong temperature (T=1 probabilities) would be far off */
    CHECK(chi_square(counts, e1, 3, n) > 100.0);
    edgellm_sampler_free(s);
}

static void test_sampler_nan_rejected(void)
{
    float logits[5] = {0.1f, 0.2f, NAN, 0.3f, 0.0f};
    for (int greedy = 0; greedy <= 1; greedy++) {
        edgellm_sampler_params p = plain_params(greedy ? 0.0f : 1.0f);
        edgellm_sampler *s = make(&p, 5);
        int32_t t = 77;
        edgellm_error err = {0};
        CHECK_EQ(edgellm_sampler_sample(s, logits, &t, &err), EDGELLM_ERR_NUMERIC);
        CHECK_EQ(err.code, EDGELLM_ERR_NUMERIC);
        CHECK(strstr(err.msg, "logits[2]") != NULL);
        CHECK(strstr(err.msg, "NaN") != NULL);
        CHECK_EQ(t, 77);                        /* untouched: never silently token 0 */
        float inf_logits[3] = {0.0f, -INFINITY, 1.0f};
        CHECK_EQ(edgellm_sampler_sample(s, inf_logits, &t, &err), EDGELLM_ERR_NUMERIC);
        CHECK(strstr(err.msg, "logits[1]") != NULL);
        edgellm_sampler_free(s);
    }
}

static void test_sampler_bad_params(void)
{
    edgellm_sampler *s = NULL;
    edgellm_sampler_params p = edgellm_sampler_default_params();
    CHECK_EQ(edgellm_sampler_new(&p, 0, &s, NULL), EDGELLM_ERR_MISUSE);
    p.top_p = -0.1f;   /* 0 is valid: the most likely token (test_regress_top_p_0_keeps_the_top_token) */
    CHECK_EQ(edgellm_sampler_new(&p, 10, &s, NULL), EDGELLM_ERR_MISUSE);
    p = edgellm_sampler_default_params();
    p.top_p = 1.5f;
    CHECK_EQ(edgellm_sampler_new(&p, 10, &s, NULL), EDGELLM_ERR_MISUSE);
    p = edgellm_sampler_default_params();
    p.top_k = -1;
    CHECK_EQ(edgellm_sampler_new(&p, 10, &s, NULL), EDGELLM_ERR_MISUSE);
    p = edgellm_sampler_default_params();
    p.repeat_penalty = 0.0f;
    CHECK_EQ(edgellm_sampler_new(&p, 10, &s, NULL), EDGELLM_ERR_MISUSE);
    p = edgellm_sampler_default_params();
    p.temperature = NAN;
    CHECK_EQ(edgellm_sampler_new(&p, 10, &s, NULL), EDGELLM_ERR_MISUSE);
    CHECK(s == NULL);
    /* a NULL params pointer means defaults */
    CHECK_OK(edgellm_sampler_new(NULL, 10, &s, NULL));
    edgellm_sampler_free(s);
    CHECK_EQ(edgellm_test_live_allocs(), 0);
}

static int cmp_desc(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* 150k vocabulary: every draw lies in the brute-force top-k set / nucleus; timing printed. */
static void test_sampler_large_vocab(void)
{
    enum { N = 150000 };
    float *logits = malloc(sizeof(float) * N), *sorted = malloc(sizeof(float) * N);
    uint64_t x = 99;
    for (int i = 0; i < N; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        logits[i] = (float)((double)(x >> 11) / 9007199254740992.0 * 12.0 - 6.0);
    }
    memcpy(sorted, logits, sizeof(float) * N);
    qsort(sorted, N, sizeof(float), cmp_desc);

    /* top-k 40: the draw's logit is >= the 40th largest */
    edgellm_sampler_params p = plain_params(1.0f);
    p.top_k = 40;
    edgellm_sampler *s = make(&p, N);
    int ok = 0;
    double t0 = edgellm_time_ms();
    for (int i = 0; i < 200; i++) {
        int32_t t = -1;
        CHECK_OK(edgellm_sampler_sample(s, logits, &t, NULL));
        ok += t >= 0 && logits[t] >= sorted[39];
    }
    double ms_k = (edgellm_time_ms() - t0) / 200;
    CHECK_EQ(ok, 200);
    edgellm_sampler_free(s);

    /* top-p 0.9 without top-k, T = 0.3: nucleus computed by a full sort here */
    p = plain_params(0.3f);
    p.top_p = 0.9f;
    s = make(&p, N);
    double mx = sorted[0], z = 0;
    for (int i = 0; i < N; i++) z += exp((sorted[i] - mx) / 0.3);
    double cum = 0;
    float cut = sorted[N - 1];
    for (int i = 0; i < N; i++) {
        cum += exp((sorted[i] - mx) / 0.3) / z;
        if (cum >= 0.9) { cut = sorted[i]; break; }
    }
    ok = 0;
    t0 = edgellm_time_ms();
    for (int i = 0; i < 200; i++) {
        int32_t t = -1;
        CHECK_OK(edgellm_sampler_sample(s, logits, &t, NULL));
        ok += t >= 0 && logits[t] >= cut;
    }
    double ms_p = (edgellm_time_ms() - t0) / 200;
    CHECK_EQ(ok, 200);
    edgellm_sampler_free(s);
    fprintf(stderr, "   n_vocab 150000: %.3f ms/sample (top_k 40), %.3f ms/sample (top_p 0.9, no top_k)\n", ms_k, ms_p);
    free(logits);
    free(sorted);
}

/* Regression: top_p 0 was refused (MISUSE; `--top-p 0` exit 2) where llama.cpp's
 * top-p keeps the first token whose cumulative mass reaches p: with p = 0 the most likely
 * one alone. Unsorted (top_k off) and sorted paths; a tie goes to the lower id. */
static void test_regress_top_p_0_keeps_the_top_token(void)
{
    const float logits[4] = {1.0f, 3.0f, 2.9f, -1.0f};
    const float tie[4] = {2.0f, 0.5f, 2.0f, 1.0f};
    for (int k = 0; k <= 4; k += 4) {
        edgellm_sampler_params p = plain_params(1.5f);
        p.top_p = 0.0f;
        p.top_k = k;
        edgellm_sampler *s = make(&p, 4);
        CHECK(s != NULL);
        if (!s) continue;
        long counts[4];
        draw_counts(s, logits, 4, 2000, counts);
        CHECK_EQ(counts[1], 2000);
        draw_counts(s, tie, 4, 200, counts);
        CHECK_EQ(counts[0], 200);
        edgellm_sampler_free(s);
    }
}

int main(void)
{
    RUN(test_sampler_greedy_argmax_lowest_id_on_ties);
    RUN(test_sampler_top_k_1_is_greedy);
    RUN(test_sampler_topp_keeps_one_token);
    RUN(test_sampler_topp_two_tokens_renormalised);
    RUN(test_sampler_minp_cut);
    RUN(test_sampler_penalty_sign_rule);
    RUN(test_sampler_penalty_distribution);
    RUN(test_sampler_frequency_presence);
    RUN(test_sampler_seed_reproduces);
    RUN(test_sampler_frequencies_chi_square);
    RUN(test_sampler_nan_rejected);
    RUN(test_sampler_bad_params);
    RUN(test_sampler_large_vocab);
    RUN(test_regress_top_p_0_keeps_the_top_token);
    return test_summary();
}
