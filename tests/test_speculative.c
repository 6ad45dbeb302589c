/* test_speculative.c — speculative decoding (edgellm_generate_speculative).
 *  - greedy identity: the tokens equal edgellm_generate's, token for token, on stories260K
 *    with drafts from its Q8_0 and Q4_0 quantizations, from itself (self-draft), from prompt
 *    lookup and from both; on the random-weight fixture (synthetic) with lookup and a
 *    self-draft; at 1 and 2 threads, fixed and adaptive draft lengths, several draft_max, and
 *    with a repeat penalty;
 *  - the sampling rule: over many seeds, the first two of three tokens sampled speculatively
 *    (two drafts from a Q4_0 draft, or lookup drafts) follow the target's distribution: Pearson's chi-square against
 *    the exact joint probabilities p(t1) p(t2 | t1) computed from the target's logits,
 *    cells with expected count >= 5 (the rest pooled), rejected at significance 0.001;
 *  - a draft model reads a bounded window of a long prompt (it catches up only when it
 *    drafts, from at most the last 256 tokens), the output still plain greedy's;
 *  - a draft with another vocabulary is refused; bad parameters are refused. */
#include "test_util.h"
#include "edgellm_tools.h"
#include <math.h>
#include <unistd.h>

#define MODEL "models/stories260K/stories260K.gguf"
#define RANDOM "models/random/llama-2-tiny-random.gguf"

typedef struct {
    int32_t tokens[1024];
    int n;
    char text[8192];
    size_t len;
} collected;

static int collect(int32_t token, const char *piece, size_t len, void *user)
{
    collected *c = user;
    if (token >= 0 && c->n < 1024) c->tokens[c->n++] = token;
    if (c->len + len < sizeof c->text) memcpy(c->text + c->len, piece, len), c->len += len;
    return 0;
}

static edgellm_ctx *new_ctx(const edgellm_model *m, int n_ctx, int n_threads)
{
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    if (edgellm_ctx_new(m, &cp, &c, &err)) fprintf(stderr, "   %s\n", err.msg);
    return c;
}

/* A quantized copy of path in a temporary file (removed by the caller). */
static int quantize_copy(const char *path, const char *type, char *out, size_t out_size)
{
    snprintf(out, out_size, "/tmp/test_speculative_%d_%s.gguf", (int)getpid(), type);
    edgellm_quantize_params qp = edgellm_quantize_default_params();
    qp.type = type;
    qp.pure = 1;
    qp.n_threads = 1;
    edgellm_error err = {0};
    if (edgellm_quantize_file(path, out, &qp, NULL, &err)) {
        fprintf(stderr, "   quantize %s: %s\n", type, err.msg);
        return 0;
    }
    return 1;
}

static const char *const prompts[] = {
    "Once upon a time",
    "",
    "Lily and Ben went to the park. Lily and Ben went to the park. Lily and",
    "The cat sat on the mat. The dog sat on the log. The cat sat",
};

static float repeat_penalty = 1.0f;   /* of the greedy runs */

/* Greedy speculative output == plain greedy output for every prompt and setting. */
static void check_identity(const edgellm_model *target, const edgellm_model *draft, int lookup, int n_predict,
                           int n_threads, const char *what)
{
    edgellm_ctx *c = new_ctx(target, 512, n_threads), *ref = new_ctx(target, 512, n_threads);
    edgellm_ctx *d = draft ? new_ctx(draft, 512, n_threads) : NULL;
    const int maxes[] = {1, 4, 16};
    for (size_t pi = 0; pi < sizeof prompts / sizeof *prompts; pi++) {
        edgellm_generate_params p = edgellm_generate_default_params();
        p.n_predict = n_predict;
        p.sampling.temperature = 0;
        p.sampling.repeat_penalty = repeat_penalty;
        collected want = {0};
        edgellm_generate_stats ws = {.size = sizeof ws};
        CHECK_OK(edgellm_generate(ref, prompts[pi], &p, collect, &want, &ws, &_e));
        for (int mi = 0; mi < 3; mi++)
            for (int adaptive = 0; adaptive <= 1; adaptive++) {
                edgellm_spec_params sp = edgellm_spec_default_params();
                sp.draft_max = maxes[mi];
                sp.lookup = lookup;
                sp.adaptive = adaptive;
                collected got = {0};
                edgellm_generate_stats gs = {.size = sizeof gs};
                edgellm_spec_stats ss = {.size = sizeof ss};
                CHECK_OK(edgellm_generate_speculative(c, d, prompts[pi], &p, &sp, collect, &got, &gs, &ss, &_e));
                CHECK_EQ(got.n, want.n);
                CHECK_EQ(gs.n_generated, ws.n_generated);
                CHECK_EQ(gs.stop, ws.stop);
                int same = got.n == want.n && !memcmp(got.tokens, want.tokens, (size_t)want.n * sizeof *want.tokens) &&
                           got.len == want.len && !memcmp(got.text, want.text, want.len);
                CHECK(same);
                if (!same)
                    fprintf(stderr, "   %s, prompt %zu, draft_max %d, adaptive %d: tokens differ\n", what, pi,
                            maxes[mi], adaptive);
                CHECK(ss.n_accepted <= ss.n_drafted);
                CHECK(ss.n_passes <= gs.n_generated + 1);
                if (pi == 0 && mi == 2 && adaptive == 0)
                    printf("   %-34s %d threads: acceptance %d/%d, %d passes for %d tokens\n", what, n_threads,
                           ss.n_accepted, ss.n_drafted, ss.n_passes, gs.n_generated);
            }
    }
    edgellm_ctx_free(c);
    edgellm_ctx_free(ref);
    edgellm_ctx_free(d);
}

static void test_greedy_identity(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path), *self = test_load_model(path);
    char q8[256], q4[256];
    if (!m || !self || !quantize_copy(path, "q8_0", q8, sizeof q8) || !quantize_copy(path, "q4_0", q4, sizeof q4)) {
        CHECK(0);
        return;
    }
    edgellm_model *m8 = test_load_model(q8), *m4 = test_load_model(q4);
    unlink(q8);
    unlink(q4);
    for (int th = 1; th <= 2; th++) {
        check_identity(m, m8, 0, 120, th, "stories260K, Q8_0 draft");
        check_identity(m, m4, 0, 120, th, "stories260K, Q4_0 draft");
        check_identity(m, self, 0, 120, th, "stories260K, self-draft");
        check_identity(m, NULL, 3, 120, th, "stories260K, lookup 3");
        check_identity(m, m4, 2, 120, th, "stories260K, lookup 2 + Q4_0 draft");
        check_identity(m4, m, 0, 80, th, "stories260K Q4_0, F32 draft");
    }
    repeat_penalty = 1.3f;   /* the penalty window takes each decided token in turn */
    check_identity(m, m8, 3, 120, 1, "repeat penalty 1.3, Q8_0 + lookup");
    repeat_penalty = 1.0f;
    /* the run stops at the same place when the context fills up */
    edgellm_ctx *c = new_ctx(m, 40, 1), *ref = new_ctx(m, 40, 1), *d = new_ctx(m4, 40, 1);
    edgellm_generate_params p = edgellm_generate_default_params();
    p.n_predict = -1;
    p.sampling.temperature = 0;
    collected want = {0}, got = {0};
    edgellm_generate_stats ws = {.size = sizeof ws}, gs = {.size = sizeof gs};
    CHECK_OK(edgellm_generate(ref, "Once upon a time", &p, collect, &want, &ws, &_e));
    CHECK_OK(edgellm_generate_speculative(c, d, "Once upon a time", &p, NULL, collect, &got, &gs, NULL, &_e));
    CHECK_EQ(gs.stop, ws.stop);
    CHECK_EQ(got.n, want.n);
    CHECK(!memcmp(got.tokens, want.tokens, (size_t)want.n * sizeof *want.tokens));
    edgellm_ctx_free(c);
    edgellm_ctx_free(ref);
    edgellm_ctx_free(d);
    edgellm_model_free(m);
    edgellm_model_free(self);
    edgellm_model_free(m8);
    edgellm_model_free(m4);
}

static void test_greedy_identity_synthetic(void)
{
    NEED_SHARED(path, RANDOM);
    edgellm_model *m = test_load_model(path), *self = test_load_model(path);
    if (!m || !self) { CHECK(0); return; }
    for (int th = 1; th <= 2; th++) {
        check_identity(m, NULL, 4, 60, th, "random weights, lookup 4");
        check_identity(m, self, 0, 60, th, "random weights, self-draft");
    }
    edgellm_model_free(m);
    edgellm_model_free(self);
}

/* A long prompt (~700 tokens): the draft model starts from a window of its end, never from
 * the whole prompt; greedy output unchanged. */
static void test_draft_window(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path);
    char q4[256], q8[256];
    if (!m || !quantize_copy(path, "q4_0", q4, sizeof q4) || !quantize_copy(path, "q8_0", q8, sizeof q8)) {
        CHECK(0);
        return;
    }
    edgellm_model *m4 = test_load_model(q4), *m8 = test_load_model(q8);
    unlink(q4);
    unlink(q8);
    char prompt[8192] = "";
    for (int i = 0; i < 48; i++) strcat(prompt, i % 2 ? "Tom had a red ball and he liked to play with it. " : "One day Lily went to the park with her mom. ");
    strcat(prompt, "Then");
    const edgellm_model *drafts[] = {m8, m4};
    for (int di = 0; di < 2; di++)
        for (int th = 1; th <= 2; th++) {
            edgellm_ctx *c = new_ctx(m, 1024, th), *ref = new_ctx(m, 1024, th), *d = new_ctx(drafts[di], 1024, th);
            edgellm_generate_params p = edgellm_generate_default_params();
            p.n_predict = 100;
            p.sampling.temperature = 0;
            collected want = {0}, got = {0};
            edgellm_generate_stats ws = {.size = sizeof ws}, gs = {.size = sizeof gs};
            edgellm_spec_stats ss = {.size = sizeof ss};
            CHECK_OK(edgellm_generate(ref, prompt, &p, collect, &want, &ws, &_e));
            CHECK(ws.n_prompt > 600);
            CHECK_OK(edgellm_generate_speculative(c, d, prompt, &p, NULL, collect, &got, &gs, &ss, &_e));
            CHECK_EQ(got.n, want.n);
            CHECK(!memcmp(got.tokens, want.tokens, (size_t)want.n * sizeof *want.tokens));
            CHECK(ss.n_draft_model_passes > 0);
            CHECK(ss.n_draft_model_tokens <= 256 + ss.n_draft_model_passes * 65);   /* never the whole prompt */
            CHECK(ss.n_draft_model_tokens < ws.n_prompt);
            if (th == 1)
                printf("   %s draft, %d-token prompt: the draft read %d tokens in %d passes, acceptance %d/%d\n",
                       di ? "Q4_0" : "Q8_0", ws.n_prompt, ss.n_draft_model_tokens, ss.n_draft_model_passes,
                       ss.n_accepted, ss.n_drafted);
            edgellm_ctx_free(c);
            edgellm_ctx_free(ref);
            edgellm_ctx_free(d);
        }
    edgellm_model_free(m);
    edgellm_model_free(m8);
    edgellm_model_free(m4);
}

/* Upper critical value of chi-square with df degrees of freedom at significance 0.001
 * (Wilson-Hilferty: df (1 - 2/(9 df) + z sqrt(2/(9 df)))^3, z = 3.0902). */
static double chi2_crit(int df)
{
    const double a = 2.0 / (9.0 * df), z = 3.0902;
    return df * pow(1.0 - a + z * sqrt(a), 3.0);
}

/* Sampling: (t1, t2) of many speculative runs against the target's exact joint law. */
static void check_distribution(edgellm_model *m, edgellm_model *draft, int lookup, const char *prompt, int n_runs,
                               const char *what)
{
    edgellm_ctx *c = new_ctx(m, 128, 1), *x = new_ctx(m, 128, 1);
    edgellm_ctx *d = draft ? new_ctx(draft, 128, 1) : NULL;
    const int nv = edgellm_tokenizer_n_vocab(edgellm_model_tokenizer(m));
    int *counts = calloc((size_t)nv * nv, sizeof *counts);
    edgellm_generate_params p = edgellm_generate_default_params();
    p.n_predict = 3;   /* two drafts for (t1, t2): kept-kept, kept-rejected, rejected */
    p.sampling.temperature = 1.0f;
    p.sampling.top_k = 0, p.sampling.top_p = 1.0f, p.sampling.min_p = 0.0f;
    edgellm_spec_params sp = edgellm_spec_default_params();
    sp.draft_max = 4;
    sp.adaptive = 0;
    sp.lookup = lookup;
    long drafted = 0, accepted = 0;
    for (int i = 0; i < n_runs; i++) {
        p.sampling.seed = 1000u + (uint64_t)i;
        collected got = {0};
        edgellm_spec_stats ss = {.size = sizeof ss};
        edgellm_status s = edgellm_generate_speculative(c, d, prompt, &p, &sp, collect, &got, NULL, &ss, NULL);
        if (s != EDGELLM_OK || got.n != 3) { CHECK(0); break; }   /* no EOS this early in these prompts */
        counts[got.tokens[0] * nv + got.tokens[1]]++;
        drafted += ss.n_drafted, accepted += ss.n_accepted;
    }
    /* exact p(t1) and p(t2 | t1) for the t1 that occurred (others have expected mass too: pooled) */
    int32_t ids[256];
    int n_ids = 0;
    edgellm_tokenize(edgellm_model_tokenizer(m), prompt, strlen(prompt), EDGELLM_TOKENIZE_ADD_BOS, ids, 256, &n_ids, NULL);
    double *p1 = calloc((size_t)nv, sizeof *p1);
    edgellm_ctx_reset(x);
    CHECK_OK(edgellm_decode(x, ids, n_ids, NULL, &_e));
    const float *l = edgellm_ctx_logits(x);
    double mx = l[0], z = 0;
    for (int v = 0; v < nv; v++) mx = l[v] > mx ? l[v] : mx;
    for (int v = 0; v < nv; v++) z += exp(l[v] - mx);
    for (int v = 0; v < nv; v++) p1[v] = exp(l[v] - mx) / z;
    double chi = 0, expected_seen = 0;
    long observed_seen = 0;
    int cells = 0;
    for (int a = 0; a < nv; a++) {
        int row = 0;
        for (int b = 0; b < nv; b++) row += counts[a * nv + b];
        if (p1[a] * n_runs < 5 && row == 0) continue;
        CHECK_OK(edgellm_ctx_truncate(x, n_ids, &_e));
        int32_t t = a;
        CHECK_OK(edgellm_decode(x, &t, 1, NULL, &_e));
        l = edgellm_ctx_logits(x);
        mx = l[0], z = 0;
        for (int v = 0; v < nv; v++) mx = l[v] > mx ? l[v] : mx;
        for (int v = 0; v < nv; v++) z += exp(l[v] - mx);
        for (int b = 0; b < nv; b++) {
            const double e = n_runs * p1[a] * exp(l[b] - mx) / z;
            if (e < 5) continue;
            const int o = counts[a * nv + b];
            chi += (o - e) * (o - e) / e;
            expected_seen += e, observed_seen += o, cells++;
        }
    }
    const double e_rest = n_runs - expected_seen, o_rest = (double)(n_runs - observed_seen);
    if (e_rest >= 5) chi += (o_rest - e_rest) * (o_rest - e_rest) / e_rest, cells++;
    const double crit = chi2_crit(cells - 1);
    printf("   %-28s %d runs, acceptance %ld/%ld, chi-square %.1f over %d cells (0.001 critical value %.1f)\n", what,
           n_runs, accepted, drafted, chi, cells, crit);
    CHECK(cells >= 10);
    CHECK(chi < crit);
    CHECK(accepted < drafted);   /* rejections happened: the residual draw was exercised */
    free(counts);
    free(p1);
    edgellm_ctx_free(c);
    edgellm_ctx_free(x);
    edgellm_ctx_free(d);
}

static void test_sampling_distribution(void)
{
    NEED_SHARED(path, MODEL);
    char q4[256];
    edgellm_model *m = test_load_model(path);
    if (!m || !quantize_copy(path, "q4_0", q4, sizeof q4)) { CHECK(0); return; }
    edgellm_model *m4 = test_load_model(q4);
    unlink(q4);
    check_distribution(m, m4, 0, "Once upon a time, there was a", 6000, "Q4_0 draft");
    /* the repeated text gives lookup drafts: one-hot q */
    check_distribution(m, NULL, 2, "The dog ran. The dog ran. The dog", 6000, "lookup 2");
    edgellm_model_free(m);
    edgellm_model_free(m4);
}

static void test_refusals(void)
{
    NEED_SHARED(path, MODEL);
    NEED_SHARED(rpath, RANDOM);
    edgellm_model *m = test_load_model(path), *r = test_load_model(rpath);
    if (!m || !r) { CHECK(0); return; }
    edgellm_ctx *c = new_ctx(m, 64, 1), *d = new_ctx(r, 64, 1);
    edgellm_error err = {0};
    edgellm_generate_params p = edgellm_generate_default_params();
    p.n_predict = 4;
    CHECK_EQ(edgellm_generate_speculative(c, d, "hi", &p, NULL, NULL, NULL, NULL, NULL, &err), EDGELLM_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "vocabulary") != NULL);
    edgellm_spec_params sp = edgellm_spec_default_params();
    sp.draft_max = 1000;
    CHECK_EQ(edgellm_generate_speculative(c, NULL, "hi", &p, &sp, NULL, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_generate_speculative(c, c, "hi", &p, NULL, NULL, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
    edgellm_spec_stats ss = {0};
    CHECK_EQ(edgellm_generate_speculative(c, NULL, "hi", &p, NULL, NULL, NULL, NULL, &ss, &err), EDGELLM_ERR_MISUSE);
    edgellm_ctx_free(c);
    edgellm_ctx_free(d);
    edgellm_model_free(m);
    edgellm_model_free(r);
}

int main(void)
{
    RUN(test_greedy_identity);
    RUN(test_greedy_identity_synthetic);
    RUN(test_draft_window);
    RUN(test_sampling_distribution);
    RUN(test_refusals);
    return test_summary();
}
