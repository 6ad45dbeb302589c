/* test_eval.c — `edgellm eval`: perplexity, comparison (live and saved logits), task sets,
 * sweep, and the CLI's input errors.
 *
 * References and tolerances:
 *   - perplexity is recomputed here by an independent scalar route: edgellm_decode over the
 *     same windows, built from the llama-perplexity rules (llama.cpp tools/perplexity/perplexity.cpp)
 *     (BOS substituted at each window start, logits n_ctx/2 .. n_ctx-2 scored; or the last
 *     S with --stride), log-softmax in double. Same forward pass, different windowing and
 *     scoring code: equal to 1e-9 relative.
 *   - thread counts: -t 1 and -t 2 agree to 1e-9 relative (the issue asks 4 digits; the
 *     thread pool makes each output element the work of one thread, so they are identical).
 *   - a model against itself: KLD exactly 0, top-1 100 %, ΔPPL 0.
 *   - saved logits with top_k = n_vocab give the live comparison's numbers (PPL, top-1, Δp
 *     to 1e-12; KLD to 1e-9 relative: only the summation order differs). With the default
 *     top_k 64 the KLD is a lower bound: <= live, and within 1 % of it for Q4_0 of
 *     stories260K (measured 0.18 % low on 20 chunks).
 *   - task sets: the expected choice / continuation is computed here with edgellm_decode /
 *     edgellm_generate; acc must then be 100 % with the right labels and 0 % with wrong ones.
 */
#include "test_util.h"
#include "tools/eval.h"
#include "common/common.h"
#include <stdbool.h>

#define STORIES "models/stories260K/stories260K.gguf"
#define VAL_TEXT "models/text/tinystories_val_head.txt"

#define tmp_path test_tmp_path

static edgellm_model *load(const char *path, int n_threads)
{
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = n_threads;
    edgellm_model *m = NULL;
    edgellm_error err = {0};
    if (edgellm_model_load(path, &mp, &m, &err) != EDGELLM_OK) fprintf(stderr, "load: %s\n", err.msg);
    return m;
}

static edgellm_eval_params params256(int chunks)
{
    edgellm_eval_params p = edgellm_eval_default_params();
    p.n_ctx = 256;
    p.max_chunks = chunks;
    return p;
}

/* A quantized copy of stories260K in the temp dir (made once). */
static const char *stories_q4_0(const char *src)
{
    static char path[512];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s", tmp_path("stories-q4_0.gguf"));
    edgellm_quantize_params qp = edgellm_quantize_default_params();
    qp.type = "q4_0";
    edgellm_error err = {0};
    if (edgellm_quantize_file(src, path, &qp, NULL, &err) != EDGELLM_OK) {
        fprintf(stderr, "quantize: %s\n", err.msg);
        path[0] = 0;
        return NULL;
    }
    return path;
}

/* ------------------------------------------------------- independent perplexity ---- */

/* PPL by the rules, straight from edgellm_decode. */
static double reference_nll(edgellm_model *m, const char *text, size_t len, int n_ctx, int stride, int chunks,
                            int64_t *n_scored)
{
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(m);
    int cap = (int)len + 8, n = 0;
    int32_t *ids = malloc((size_t)cap * sizeof *ids);
    edgellm_error err = {0};
    if (edgellm_tokenize(tok, text, len, 1, ids, cap, &n, &err) != EDGELLM_OK) { free(ids); return NAN; }
    int nv = edgellm_tokenizer_n_vocab(tok);
    bool sub_bos = edgellm_token_bos(tok) >= 0 && ids[0] == edgellm_token_bos(tok);
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    edgellm_ctx *c = NULL;
    edgellm_ctx_new(m, &cp, &c, &err);
    float *logits = malloc((size_t)n_ctx * nv * sizeof *logits);
    int32_t *win = malloc((size_t)n_ctx * sizeof *win);
    double s = 0;
    int64_t cnt = 0;
    for (int w = 0; w < chunks; w++) {
        int64_t start = (int64_t)w * (stride ? stride : n_ctx);
        if (start + n_ctx > n) break;
        memcpy(win, ids + start, (size_t)n_ctx * sizeof *win);
        if (sub_bos) win[0] = edgellm_token_bos(tok);
        edgellm_ctx_reset(c);
        if (edgellm_decode(c, win, n_ctx, logits, &err) != EDGELLM_OK) { s = NAN; break; }   /* all positions */
        int first = stride ? n_ctx - 1 - stride : n_ctx / 2;
        for (int j = first; j <= n_ctx - 2; j++) {
            const float *row = logits + (size_t)j * nv;
            float mx = row[0];
            for (int v = 1; v < nv; v++) mx = row[v] > mx ? row[v] : mx;
            double z = 0;
            for (int v = 0; v < nv; v++) z += exp((double)row[v] - mx);
            s += log(z) + mx - row[win[j + 1]];
            cnt++;
        }
    }
    free(ids);
    free(logits);
    free(win);
    edgellm_ctx_free(c);
    *n_scored = cnt;
    return s / (double)cnt;
}

static void test_eval_ppl_matches_independent_route(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    size_t len = 0;
    char *text = read_file(tpath, &len);
    edgellm_model *m = load(mpath, 2);
    CHECK(m != NULL);
    if (!m) { free(text); return; }
    edgellm_eval_params p = params256(6);
    edgellm_eval_ppl_result r;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_ppl(m, text, len, &p, &r, &err), EDGELLM_OK);
    int64_t n_ref = 0;
    double nll = reference_nll(m, text, len, 256, 0, 6, &n_ref);
    CHECK_EQ(r.n_scored, 6 * 127);
    CHECK_EQ(n_ref, r.n_scored);
    CHECK_EQ(r.n_chunks, 6);
    CHECK_NEAR(r.nll_mean, nll, 1e-9 * nll);
    CHECK_NEAR(r.ppl, exp(nll), 1e-9 * exp(nll));
    CHECK(r.ppl > 1.5 && r.ppl < 20);   /* a trained model on its own kind of text */
    CHECK(r.ppl_err > 0 && r.ppl_err < r.ppl);
    fprintf(stderr, "   stories260K F32, n_ctx 256, 6 chunks: PPL %.4f +/- %.4f\n", r.ppl, r.ppl_err);

    /* sliding windows: stride 64, the last 64 of each window scored */
    p.stride = 64;
    p.max_chunks = 10;
    CHECK_EQ(edgellm_eval_ppl(m, text, len, &p, &r, &err), EDGELLM_OK);
    nll = reference_nll(m, text, len, 256, 64, 10, &n_ref);
    CHECK_EQ(r.n_scored, 10 * 64);
    CHECK_EQ(n_ref, r.n_scored);
    CHECK_NEAR(r.nll_mean, nll, 1e-9 * nll);
    edgellm_model_free(m);
    free(text);
}

static void test_eval_ppl_same_across_threads_and_runs(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    size_t len = 0;
    char *text = read_file(tpath, &len);
    edgellm_model *m1 = load(mpath, 1), *m2 = load(mpath, 2);
    CHECK(m1 && m2);
    if (!m1 || !m2) { edgellm_model_free(m1); edgellm_model_free(m2); free(text); return; }
    edgellm_eval_params p = params256(12);
    edgellm_eval_ppl_result a, b, c;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_ppl(m1, text, len, &p, &a, &err), EDGELLM_OK);
    CHECK_EQ(edgellm_eval_ppl(m2, text, len, &p, &b, &err), EDGELLM_OK);
    CHECK_EQ(edgellm_eval_ppl(m2, text, len, &p, &c, &err), EDGELLM_OK);
    CHECK_NEAR(a.ppl, b.ppl, 1e-9 * a.ppl);   /* -t 1 vs -t 2 */
    CHECK(b.ppl == c.ppl);                    /* run to run: bit for bit */
    CHECK_EQ(a.n_text_tokens, b.n_text_tokens);
    fprintf(stderr, "   PPL -t 1: %.10f, -t 2: %.10f\n", a.ppl, b.ppl);
    edgellm_model_free(m1);
    edgellm_model_free(m2);
    free(text);
}

static void test_eval_short_text_refused(void)
{
    NEED_SHARED(mpath, STORIES);
    edgellm_model *m = load(mpath, 0);
    if (!m) { CHECK(m != NULL); return; }
    const char *text = "Once upon a time there was a little girl named Lily. She liked to play.";
    edgellm_eval_params p = params256(0);
    p.text_name = "short.txt";
    edgellm_eval_ppl_result r;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_ppl(m, text, strlen(text), &p, &r, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "short.txt") != NULL);
    CHECK(strstr(err.msg, "too short") != NULL);
    CHECK(strstr(err.msg, "512") != NULL);   /* says how many tokens are needed */
    /* bad stride */
    p.stride = 200;
    CHECK_EQ(edgellm_eval_ppl(m, text, strlen(text), &p, &r, &err), EDGELLM_ERR_MISUSE);
    edgellm_model_free(m);
}

/* ------------------------------------------------------------------- compare ---- */

static void test_eval_compare_self_is_zero(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    size_t len = 0;
    char *text = read_file(tpath, &len);
    edgellm_model *m = load(mpath, 0), *ref = load(mpath, 0);
    if (!m || !ref) { CHECK(0); free(text); return; }
    edgellm_eval_params p = params256(6);
    edgellm_eval_compare_result r;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_compare(m, ref, NULL, text, len, &p, &r, &err), EDGELLM_OK);
    CHECK(r.kld_mean == 0.0);
    CHECK(r.kld_max == 0.0);
    CHECK(r.top1_pct == 100.0);
    CHECK(r.delta_ppl_pct == 0.0);
    CHECK(r.dp_rms_pct == 0.0);
    CHECK(r.kld_exact == 1);
    CHECK_EQ(r.model.n_scored, 6 * 127);
    /* exactly one reference */
    CHECK_EQ(edgellm_eval_compare(m, ref, "x.logits", text, len, &p, &r, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_eval_compare(m, NULL, NULL, text, len, &p, &r, &err), EDGELLM_ERR_MISUSE);
    edgellm_model_free(m);
    edgellm_model_free(ref);
    free(text);
}

static void test_eval_saved_logits_match_live(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    const char *qpath = stories_q4_0(mpath);
    CHECK(qpath != NULL);
    if (!qpath) return;
    size_t len = 0;
    char *text = read_file(tpath, &len);
    edgellm_model *q = load(qpath, 0), *ref = load(mpath, 0);
    if (!q || !ref) { CHECK(0); free(text); return; }
    edgellm_eval_params p = params256(8);
    edgellm_eval_compare_result live, full, top;
    edgellm_eval_ppl_result saved_ppl;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_compare(q, ref, NULL, text, len, &p, &live, &err), EDGELLM_OK);
    CHECK(live.kld_mean > 1e-3 && live.top1_pct < 100.0);   /* q4_0 of a 260K model is visibly off */

    const char *f_full = tmp_path("ref-full.logits"), *f_top = tmp_path("ref-top64.logits");
    p.top_k = 100000;   /* >= n_vocab: everything */
    CHECK_EQ(edgellm_eval_save_logits(ref, text, len, &p, f_full, &saved_ppl, &err), EDGELLM_OK);
    p.top_k = 64;
    CHECK_EQ(edgellm_eval_save_logits(ref, text, len, &p, f_top, NULL, &err), EDGELLM_OK);
    CHECK_NEAR(saved_ppl.ppl, live.ref.ppl, 1e-6 * live.ref.ppl);

    edgellm_eval_params fp = edgellm_eval_default_params();
    fp.n_ctx = 0;   /* the file's */
    CHECK_EQ(edgellm_eval_compare(q, NULL, f_full, text, len, &fp, &full, &err), EDGELLM_OK);
    CHECK(full.kld_exact == 1);
    CHECK(full.ref.ppl == live.ref.ppl);
    CHECK(full.model.ppl == live.model.ppl);
    CHECK(full.top1_pct == live.top1_pct);
    CHECK_NEAR(full.dp_rms_pct, live.dp_rms_pct, 1e-12);
    CHECK_NEAR(full.kld_mean, live.kld_mean, 1e-9 * live.kld_mean);
    CHECK_NEAR(full.kld_p99, live.kld_p99, 1e-6 * live.kld_p99);
    CHECK_EQ(full.model.n_scored, live.model.n_scored);

    CHECK_EQ(edgellm_eval_compare(q, NULL, f_top, text, len, &fp, &top, &err), EDGELLM_OK);
    CHECK(top.kld_exact == 0);
    CHECK_EQ(top.ref_top_k, 64);
    CHECK(top.ref.ppl == live.ref.ppl);
    CHECK(top.top1_pct == live.top1_pct);
    CHECK(top.kld_mean <= live.kld_mean * (1 + 1e-9));   /* a lower bound */
    CHECK(top.kld_mean >= 0.99 * live.kld_mean);         /* stated: within 1 % at top-64 */
    fprintf(stderr, "   q4_0 KLD: live %.6f, saved full %.6f, saved top-64 %.6f (%.3f %% low)\n", live.kld_mean,
            full.kld_mean, top.kld_mean, 100 * (1 - top.kld_mean / live.kld_mean));

    /* fewer chunks than saved is fine; more is refused */
    fp.max_chunks = 4;
    CHECK_EQ(edgellm_eval_compare(q, NULL, f_top, text, len, &fp, &top, &err), EDGELLM_OK);
    CHECK_EQ(top.model.n_scored, 4 * 127);
    fp.max_chunks = 9;
    CHECK_EQ(edgellm_eval_compare(q, NULL, f_top, text, len, &fp, &top, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "chunks") != NULL);
    edgellm_model_free(q);
    edgellm_model_free(ref);
    free(text);
}

static void test_eval_saved_logits_mismatch_refused(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    NEED_SHARED(baby_bin, "models/babyllama-tok105/model5000.bin");
    NEED_SHARED(baby_tok, "models/babyllama-tok105/tok105.bin");
    size_t len = 0;
    char *text = read_file(tpath, &len);
    edgellm_model *m = load(mpath, 0);
    if (!m) { CHECK(0); free(text); return; }
    const char *f = tmp_path("mismatch.logits");
    edgellm_eval_params p = params256(3);
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_save_logits(m, text, len, &p, f, NULL, &err), EDGELLM_OK);
    edgellm_eval_compare_result r;

    /* another text: the same bytes minus the first line */
    const char *other = strchr(text, '\n') + 1;
    edgellm_eval_params fp = edgellm_eval_default_params();
    fp.n_ctx = 0;
    CHECK_EQ(edgellm_eval_compare(m, NULL, f, other, len - (size_t)(other - text), &fp, &r, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "another text") != NULL);
    CHECK(strstr(err.msg, "mismatch.logits") != NULL);
    /* another n_ctx */
    fp.n_ctx = 128;
    CHECK_EQ(edgellm_eval_compare(m, NULL, f, text, len, &fp, &r, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "n_ctx 256") != NULL && strstr(err.msg, "128") != NULL);
    fp.n_ctx = 0;
    /* another tokenizer (and model): babyllama */
    const char *baby = tmp_path("baby.gguf");
    CHECK_EQ(edgellm_convert_llama2c(baby_bin, baby_tok, baby, &err), EDGELLM_OK);
    edgellm_model *b = load(baby, 0);
    if (b) {
        CHECK_EQ(edgellm_eval_compare(b, NULL, f, text, len, &fp, &r, &err), EDGELLM_ERR_MISUSE);
        CHECK(strstr(err.msg, "tokenizer") != NULL && strstr(err.msg, "512") != NULL && strstr(err.msg, "105") != NULL);
        CHECK_EQ(edgellm_eval_compare(b, m, NULL, text, len, &p, &r, &err), EDGELLM_ERR_MISUSE);   /* live, too */
        CHECK(strstr(err.msg, "tokenizer") != NULL);
        edgellm_model_free(b);
    }
    /* damaged files: truncated, wrong magic, absent */
    size_t fsz = 0;
    char *bytes = read_file(f, &fsz);
    const char *g = tmp_path("truncated.logits");
    CHECK_EQ(write_file(g, bytes, fsz - 100), 0);
    CHECK_EQ(edgellm_eval_compare(m, NULL, g, text, len, &fp, &r, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "truncated") != NULL);
    bytes[0] = 'X';
    CHECK_EQ(write_file(g, bytes, fsz), 0);
    CHECK_EQ(edgellm_eval_compare(m, NULL, g, text, len, &fp, &r, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "does not begin with the magic") != NULL);
    bytes[0] = 'E';
    bytes[13] ^= 0x7f;   /* header size (offset 12, little-endian u32): damaged, version intact */
    CHECK_EQ(write_file(g, bytes, fsz), 0);
    CHECK_EQ(edgellm_eval_compare(m, NULL, g, text, len, &fp, &r, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "the header says") && strstr(err.msg, "damaged") && !strstr(err.msg, "this build reads"));
    bytes[13] ^= 0x7f;
    bytes[8] = 9;        /* another version */
    CHECK_EQ(write_file(g, bytes, fsz), 0);
    CHECK_EQ(edgellm_eval_compare(m, NULL, g, text, len, &fp, &r, &err), EDGELLM_ERR_FORMAT);
    CHECK(strstr(err.msg, "format version 9") && strstr(err.msg, "this build reads version 1"));
    bytes[8] = 1;
    char saved[4];
    memcpy(saved, bytes + 512, 4);
    bytes[512] = (char)0xff; bytes[513] = (char)0xff;   /* first record's target id: 65535 >= n_vocab */
    CHECK_EQ(write_file(g, bytes, fsz), 0);
    CHECK_EQ(edgellm_eval_compare(m, NULL, g, text, len, &fp, &r, &err), EDGELLM_ERR_FORMAT);
    memcpy(bytes + 512, saved, 4);
    /* the first record's "rest" log-mass (offset 520): positive (it once gave KLD inf), or
     * negative but not what the top k leave (their probabilities no longer sum to 1) */
    memcpy(saved, bytes + 520, 4);
    float rest0;
    memcpy(&rest0, saved, 4);
    const float rest_bad[2] = {50.0f, logf(expf(rest0) + 0.5f)};   /* the second: 0.5 more mass */
    for (int k = 0; k < 2; k++) {
        memcpy(bytes + 520, &rest_bad[k], 4);
        CHECK_EQ(write_file(g, bytes, fsz), 0);
        CHECK_EQ(edgellm_eval_compare(m, NULL, g, text, len, &fp, &r, &err), EDGELLM_ERR_FORMAT);
        CHECK(strstr(err.msg, "record 0") && strstr(err.msg, k ? "sum to" : "bad log-probability"));
    }
    memcpy(bytes + 520, saved, 4);
    CHECK_EQ(write_file(g, bytes, fsz), 0);                       /* restored: accepted again */
    CHECK_EQ(edgellm_eval_compare(m, NULL, g, text, len, &fp, &r, &err), EDGELLM_OK);
    CHECK_EQ(edgellm_eval_compare(m, NULL, tmp_path("absent.logits"), text, len, &fp, &r, &err), EDGELLM_ERR_IO);
    free(bytes);
    edgellm_model_free(m);
    free(text);
}

/* ---------------------------------------------------------------------- tasks ---- */

/* Sum of ln p(choice tokens | context), computed directly. */
static double choice_ll(edgellm_model *m, const char *context, const char *choice)
{
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(m);
    char joined[1024];
    snprintf(joined, sizeof joined, "%s%s", context, choice);
    int32_t a[512], b[512];
    int na = 0, nb = 0;
    edgellm_tokenize(tok, context, strlen(context), 1, a, 512, &na, NULL);
    edgellm_tokenize(tok, joined, strlen(joined), 1, b, 512, &nb, NULL);
    int p = 0;
    while (p < na && p < nb && a[p] == b[p]) p++;
    int nv = edgellm_tokenizer_n_vocab(tok);
    edgellm_ctx *c = NULL;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 512;
    edgellm_ctx_new(m, &cp, &c, NULL);
    float *lg = malloc((size_t)nb * nv * sizeof *lg);
    edgellm_decode(c, b, nb, lg, NULL);
    double s = 0;
    for (int j = p; j < nb; j++) {
        const float *row = lg + (size_t)(j - 1) * nv;
        double z = 0;
        for (int v = 0; v < nv; v++) z += exp((double)row[v]);
        s += row[b[j]] - log(z);
    }
    free(lg);
    edgellm_ctx_free(c);
    return s;
}

typedef struct {
    char   buf[256];
    size_t n;
} gen_text;

static int collect(int32_t t, const char *piece, size_t n, void *u)
{
    (void)t;
    gen_text *g = u;
    if (g->n + n < sizeof g->buf) { memcpy(g->buf + g->n, piece, n); g->n += n; g->buf[g->n] = 0; }
    return 0;
}

/* A generation item stops at the first newline after some non-blank text; leading blank
 * lines do not stop it (they once hid every later newline: generation ran to max tokens and
 * "contains" matched text from later lines). */
static void test_eval_gen_stop_rule(void)
{
    static const struct { const char *text; bool done; } cases[] = {
        {"", false},          {"\n", false},         {"\n\n \t", false},     {" dog", false},
        {"\n dog", false},    {" dog\n", true},       {"\n dog ran\n", true}, {"\n\n dog\n the", true},
        {"dog\nran\n", true}, {"\r\n dog\r\n", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const bool done = edgellm_eval_gen_done(cases[i].text, strlen(cases[i].text));
        if (done != cases[i].done) fprintf(stderr, "   case %zu\n", i);
        CHECK(done == cases[i].done);
    }
}

static void test_eval_task_scores_match_direct(void)
{
    NEED_SHARED(mpath, STORIES);
    edgellm_model *m = load(mpath, 0);
    if (!m) { CHECK(0); return; }
    static const char *ctxs[3] = {
        "Lily had a red ball. She loved her ball very much. Every day, Lily played with her red",
        "Once upon a time, there was a little dog named Max. Every morning, Max the",
        "Tom went to the park with his mom. He did not want to leave the",
    };
    static const char *const choices[3][3] = {{" ball", " spoon", " tree"}, {" dog", " cup", " sun"},
                                              {" park", " box", " hat"}};
    edgellm_eval_item right[4], wrong[4];
    for (int i = 0; i < 3; i++) {
        int best = 0;
        double bs = -INFINITY;
        for (int c = 0; c < 3; c++) {
            double s = choice_ll(m, ctxs[i], choices[i][c]);
            if (s > bs) { bs = s; best = c; }
        }
        right[i] = (edgellm_eval_item){ctxs[i], choices[i], 3, best, NULL};
        wrong[i] = (edgellm_eval_item){ctxs[i], choices[i], 3, (best + 1) % 3, NULL};
    }
    /* a generation item: the answer is the first word of the greedy continuation */
    const char *prompt = "Once upon a time, there was a little girl named";
    edgellm_ctx *c = NULL;
    edgellm_ctx_new(m, NULL, &c, NULL);
    edgellm_generate_params gp = edgellm_generate_default_params();
    gp.n_predict = 4;
    gp.sampling.temperature = 0;
    gen_text gt = {"", 0};
    edgellm_generate_stats st = {.size = sizeof st};
    CHECK_EQ(edgellm_generate(c, prompt, &gp, collect, &gt, &st, NULL), EDGELLM_OK);
    edgellm_ctx_free(c);
    char word[64] = "";
    sscanf(gt.buf, " %63[A-Za-z]", word);
    CHECK(word[0] != 0);
    right[3] = (edgellm_eval_item){prompt, NULL, 0, 0, word};
    wrong[3] = (edgellm_eval_item){prompt, NULL, 0, 0, "Zzyzx"};

    edgellm_eval_task_params tp = edgellm_eval_task_default_params();
    edgellm_eval_task_result r;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_task(m, m, right, 4, &tp, &r, &err), EDGELLM_OK);
    CHECK_EQ(r.n_mc, 3);
    CHECK_EQ(r.n_gen, 1);
    CHECK(r.has_ref);
    /* the reference is the same model: its positions are the model's, counted separately */
    CHECK(r.max_positions[0] > 0 && r.max_positions[1] == r.max_positions[0]);
    CHECK(r.max_positions_item[1] == r.max_positions_item[0] && r.max_positions_item[0] >= 0);
    CHECK(!strcmp(r.metrics[0].name, "acc") && r.metrics[0].pct == 100.0 && r.metrics[0].n == 3);
    CHECK(r.metrics[2].pct == 100.0 && r.metrics[3].pct == 100.0);   /* exact, contains */
    CHECK(r.metrics[0].gap_pts == 0.0 && r.metrics[0].gap_pct == 0.0);
    CHECK_NEAR(r.metrics[0].err_pct, 0.0, 1e-12);
    /* positions: with only the multiple-choice items, the most any item decoded is the
     * longest context + choice, BOS included, counted here by the tokenizer, less the last
     * token (scored, never decoded) */
    {
        const edgellm_tokenizer *tok = edgellm_model_tokenizer(m);
        int most = 0, most_item = -1;
        for (int i = 0; i < 3; i++)
            for (int c = 0; c < 3; c++) {
                char joined[256];
                int32_t ids[256];
                int n = 0;
                snprintf(joined, sizeof joined, "%s%s", ctxs[i], choices[i][c]);
                CHECK_OK(edgellm_tokenize(tok, joined, strlen(joined), 1, ids, 256, &n, NULL));
                if (n > most) { most = n; most_item = i; }
            }
        CHECK_EQ(edgellm_eval_task(m, NULL, right, 3, &tp, &r, &err), EDGELLM_OK);
        CHECK_EQ(r.max_positions[0], most - 1);   /* the choice's last token is predicted, not decoded */
        CHECK_EQ(r.max_positions_item[0], most_item);
        CHECK(r.max_positions[1] == 0 && r.max_positions_item[1] == -1);   /* no reference */
        CHECK(r.n_past_ctx_train[0] == 0 && r.n_past_ctx_train[1] == 0);   /* all within 2048 */
    }
    CHECK_EQ(edgellm_eval_task(m, NULL, wrong, 4, &tp, &r, &err), EDGELLM_OK);
    CHECK(r.metrics[0].pct == 0.0);
    CHECK(r.metrics[2].pct == 0.0 && r.metrics[3].pct == 0.0);
    CHECK(!r.has_ref && isnan(r.metrics[0].ref_pct));

    /* bad items name their index */
    edgellm_eval_item bad = right[1];
    bad.label = 3;
    edgellm_eval_item two[2] = {right[0], bad};
    CHECK_EQ(edgellm_eval_task(m, NULL, two, 2, &tp, &r, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "item 1") != NULL);
    edgellm_model_free(m);
}

/* ---------------------------------------------------------------------- sweep ---- */

static void test_eval_sweep_rows_match_compare(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    size_t len = 0;
    char *text = read_file(tpath, &len);
    edgellm_eval_sweep_params sp = edgellm_eval_sweep_default_params();
    sp.eval = params256(3);
    sp.types = "q4_0, i4:g128:asym";
    sp.bench_tokens = 8;
    sp.bench_reps = 1;
    sp.tmp_dir = test_tmpdir();
    edgellm_eval_sweep_report *r = malloc(sizeof *r);
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_sweep(mpath, text, len, &sp, r, &err), EDGELLM_OK);
    CHECK_EQ(r->n_rows, 2);
    CHECK(!strcmp(r->ref.type, "F32"));
    CHECK(!strcmp(r->rows[0].type, "Q4_0"));
    CHECK(!strcmp(r->rows[1].type, "I4_G128_ASYM"));
    /* 35 layer matrices + embd + output = 37: the output gets Q6_K (llama-quantize's default),
     * whose 256-blocks do not fit rows of 64, so Q8_0 */
    CHECK(strstr(r->rows[0].used, "Q4_0 x31") != NULL);
    CHECK(strstr(r->rows[0].used, "Q8_0 x1") != NULL);
    CHECK(strstr(r->rows[0].used, "F16 x5") != NULL);         /* ffn_down rows of 172 fit no 32-block */
    CHECK(strstr(r->rows[1].used, "I4_G64_ASYM") != NULL);    /* n_embd 64: g128 falls back to g64 */
    CHECK(r->rows[0].file_bytes > 0 && r->rows[0].file_bytes < r->ref.file_bytes / 3);
    CHECK(r->rows[0].tok_per_s > 0 && r->ref.tok_per_s > 0);
    CHECK(r->ref.cmp.kld_mean == 0.0 && r->ref.cmp.top1_pct == 100.0);
    CHECK(r->tmp_dir[0] == 0);   /* removed */

    /* the Q4_0 row is what a separate quantize + compare gives */
    const char *qpath = stories_q4_0(mpath);
    edgellm_model *q = qpath ? load(qpath, 0) : NULL, *ref = load(mpath, 0);
    if (q && ref) {
        edgellm_eval_compare_result c;
        edgellm_eval_params p = params256(3);
        CHECK_EQ(edgellm_eval_compare(q, ref, NULL, text, len, &p, &c, &err), EDGELLM_OK);
        CHECK(c.kld_mean == r->rows[0].cmp.kld_mean);
        CHECK(c.model.ppl == r->rows[0].cmp.model.ppl);
    }
    edgellm_model_free(q);
    edgellm_model_free(ref);
    /* an unknown type is refused before any work */
    sp.types = "q8_0,q9_9";
    CHECK_EQ(edgellm_eval_sweep(mpath, text, len, &sp, r, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "q9_9") != NULL);
    sp.types = "i4:g100";
    CHECK_EQ(edgellm_eval_sweep(mpath, text, len, &sp, r, &err), EDGELLM_ERR_MISUSE);
    free(r);
    free(text);
}

/* Every allocation failure in ppl / save-logits / compare-from-file returns NOMEM (or an
 * error it caused) and leaks nothing. */
static void test_eval_alloc_failures_leak_nothing(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    size_t len = 0;
    char *text = read_file(tpath, &len);
    len = 40000;   /* enough for 2 chunks of 256; keeps each call quick */
    edgellm_model *m = load(mpath, 1);
    if (!m) { CHECK(0); free(text); return; }
    edgellm_eval_params p = params256(2);
    p.top_k = 16;
    const char *f = tmp_path("oom.logits");
    edgellm_error err = {0};
    CHECK_EQ(edgellm_eval_save_logits(m, text, len, &p, f, NULL, &err), EDGELLM_OK);
    const char *g = tmp_path("oom2.logits");
    for (int which = 0; which < 3; which++) {
        int n_fail = 0;
        for (int n = 1; n < 10000; n++) {
            long live = edgellm_test_live_allocs();
            edgellm_eval_ppl_result pr;
            edgellm_eval_compare_result cr;
            edgellm_test_alloc_fail_at(n);
            edgellm_status rc = which == 0 ? edgellm_eval_ppl(m, text, len, &p, &pr, &err)
                              : which == 1 ? edgellm_eval_save_logits(m, text, len, &p, g, NULL, &err)
                                           : edgellm_eval_compare(m, NULL, f, text, len, NULL, &cr, &err);
            edgellm_test_alloc_fail_at(0);
            CHECK_EQ(edgellm_test_live_allocs(), live);
            if (rc == EDGELLM_OK) break;
            n_fail++;
            if (rc != EDGELLM_ERR_NOMEM) { CHECK_EQ(rc, EDGELLM_ERR_NOMEM); fprintf(stderr, "   n=%d: %s\n", n, err.msg); break; }
        }
        CHECK(n_fail > 3);   /* the sweep did reach the allocations */
    }
    edgellm_model_free(m);
    free(text);
}

/* -------------------------------------------------------------------- helpers ---- */

static void test_eval_stats_helpers(void)
{
    float v[5] = {4, 1, 3, 2, 0};
    edgellm_eval_sort_floats(v, 5);
    CHECK(v[0] == 0 && v[4] == 4);
    CHECK_NEAR(edgellm_eval_quantile_sorted(v, 5, 0.5), 2.0, 0);
    CHECK_NEAR(edgellm_eval_quantile_sorted(v, 5, 0.99), 3.96, 1e-6);
    CHECK_NEAR(edgellm_eval_quantile_sorted(v, 5, 1.0), 4.0, 0);
    CHECK(isnan(edgellm_eval_quantile_sorted(v, 0, 0.5)));
    double mean, err;
    edgellm_eval_mean_err(10.0, 30.0, 4, &mean, &err);   /* samples 1,2,3,4: var 1.25, /(n-1) */
    CHECK_NEAR(mean, 2.5, 1e-12);
    CHECK_NEAR(err, sqrt(1.25 / 3.0), 1e-12);
    float x[4] = {1.0f, 3.0f, 3.0f, -2.0f};
    CHECK_EQ(edgellm_eval_argmax(x, 4), 1);   /* lowest id on ties */
    CHECK_NEAR(edgellm_eval_logsumexp(x, 4), log(exp(1.0) + 2 * exp(3.0) + exp(-2.0)), 1e-12);
    CHECK(edgellm_fnv64(EDGELLM_FNV64_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);   /* FNV-1a 64 test vector */
}

/* ------------------------------------------------------------------------ CLI ---- */

static int cli(const char *args, char *out, size_t n)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s", EDGELLM_CLI, args);
    return run_capture(cmd, out, n);
}

/* Items longer than the model's trained context (stories260K: 2048) get a warning that
 * counts them and names the longest; short items none. */
static void test_eval_cli_task_warns_past_training(void)
{
    NEED_SHARED(mpath, STORIES);
    const char *f = tmp_path("long.jsonl");
    size_t cap = 64 * 1024, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "{\"prompt\": \"Tom had a dog. Tom loved his\", \"answer\": \"dog\"}\n");
    n += (size_t)snprintf(text + n, cap - n, "{\"context\": \"");
    for (int i = 0; i < 300; i++) n += (size_t)snprintf(text + n, cap - n, "Lily had a red ball. ");
    n += (size_t)snprintf(text + n, cap - n, "She played with her\", \"choices\": [\" ball\", \" cat\"], \"label\": 0}\n");
    write_file(f, text, n);
    char out[8192], args[1024];
    snprintf(args, sizeof args, "eval task -m %s --data %s", mpath, f);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "1 of 2 items uses more positions than") && strstr(out, "trained context 2048") &&
          strstr(out, "its score measures") && strstr(out, "the longest: ") && strstr(out, "long.jsonl:2,"));
    /* two long items (the longer one third) and the short one */
    n += (size_t)snprintf(text + n, cap - n, "{\"context\": \"");
    for (int i = 0; i < 320; i++) n += (size_t)snprintf(text + n, cap - n, "Lily had a red ball. ");
    n += (size_t)snprintf(text + n, cap - n, "She played with her\", \"choices\": [\" ball\", \" cat\"], \"label\": 0}\n");
    write_file(f, text, n);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "2 of 3 items use more positions than") && strstr(out, "their scores measure") &&
          strstr(out, "long.jsonl:3,"));
    /* with a reference: one warning per model, each with its own count */
    snprintf(args, sizeof args, "eval task -m %s --ref %s --data %s", mpath, mpath, f);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    const char *w1 = strstr(out, "2 of 3 items use more positions than");
    CHECK(w1 && strstr(w1 + 1, "2 of 3 items use more positions than"));
    snprintf(args, sizeof args, "eval task -m %s --data %s --limit 1", mpath, f);   /* the short item only */
    CHECK_EQ(cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "trained context") == NULL);
    CHECK(strstr(out, "1 item (") != NULL);
    /* a reference that scores 0: the gap in percent of it is undefined, said in words (it
     * printed "+nan %") */
    const char *zero = "{\"prompt\": \"Tom had a dog. Tom loved his\", \"answer\": \"Zzyzx\"}\n";
    write_file(f, zero, strlen(zero));
    snprintf(args, sizeof args, "eval task -m %s --ref %s --data %s", mpath, mpath, f);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "the reference scores 0") && !strstr(out, "nan"));
    /* another subcommand's option is refused, not ignored (task -o wrote no file) */
    snprintf(args, sizeof args, "eval task -m %s --data %s -o x.json", mpath, f);
    CHECK_EQ(cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "-o is not an option of eval task (only eval save-logits and sweep take it)") != NULL);
    snprintf(args, sizeof args, "eval ppl -m %s -f %s --top-k 5", mpath, f);
    CHECK_EQ(cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "--top-k is not an option of eval ppl") != NULL);
    snprintf(args, sizeof args, "eval sweep -m %s -f %s --kv-type f16", mpath, f);
    CHECK_EQ(cli(args, out, sizeof out), 2);
    CHECK(strstr(out, "--kv-type is not an option of eval sweep") != NULL);
    free(text);
}

static void test_eval_cli_jsonl_errors_name_the_line(void)
{
    NEED_SHARED(mpath, STORIES);
    const char *f = tmp_path("bad.jsonl");
    const char *lines =
        "{\"context\": \"Lily had a ball.\", \"choices\": [\" ball\", \" cat\"], \"label\": 0}\n"
        "\n"
        "{\"prompt\": \"Tom had a dog. Tom loved his\", \"answer\": \"dog\"}\n"
        "{\"context\": \"Lily had a ball.\", \"choices\": [\" ball\", \" cat\"], \"label\": 0,}\n";
    write_file(f, lines, strlen(lines));
    char out[4096], args[1024];
    snprintf(args, sizeof args, "eval task -m %s --data %s", mpath, f);
    CHECK_EQ(cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "bad.jsonl:4:") != NULL);
    CHECK(strstr(out, "not valid JSON") != NULL);

    static const struct { const char *line, *what; } cases[] = {
        {"{\"context\": \"x\", \"choices\": [\" a\", \" b\"], \"label\": 2}\n", "label"},
        {"{\"context\": \"x\", \"choices\": [\" a\"], \"label\": 0}\n", "choices"},
        {"{\"context\": \"x\", \"choices\": [\" a\", 7], \"label\": 0}\n", "choice 1"},
        {"{\"prompt\": \"x\", \"answer\": \"\"}\n", "answer"},
        {"{\"question\": \"x\"}\n", "an item needs"},
        {"[1, 2]\n", "object"},
        {"{\"context\": \"x\", \"choices\": [\" a\", \" b\"], \"label\": 0, \"answer\": \"a\"}\n", "keys of both kinds"},
        {"{\"prompt\": \"x\", \"answer\": \"y\", \"label\": 0}\n", "keys of both kinds"},
        {"{\"prompt\": \"x\", \"answer\": \"y\"} trailing\n", "not valid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"prompt\": \"Tom had a dog. Tom loved his\", \"answer\": \"dog\"}\n%s",
                 cases[i].line);
        write_file(f, text, strlen(text));
        CHECK_EQ(cli(args, out, sizeof out), 1);
        bool ok = strstr(out, "bad.jsonl:2:") && strstr(out, cases[i].what);
        if (!ok) fprintf(stderr, "   case %zu: %s", i, out);
        CHECK(ok);
    }
}

static void test_eval_cli_commands(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    char out[8192], args[2048];
    /* a text shorter than one chunk */
    const char *shortf = tmp_path("short.txt");
    write_file(shortf, "Once upon a time.", 17);
    snprintf(args, sizeof args, "eval ppl -m %s -f %s -c 64", mpath, shortf);
    CHECK_EQ(cli(args, out, sizeof out), 1);
    CHECK(strstr(out, "too short") != NULL && strstr(out, "short.txt") != NULL);
    /* ppl prints the estimate */
    snprintf(args, sizeof args, "eval ppl -m %s -f %s -c 256 --chunks 2 -t 2", mpath, tpath);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "PPL = ") != NULL && strstr(out, "254 predictions") != NULL);
    /* save-logits then compare with it */
    const char *lf = tmp_path("cli.logits");
    snprintf(args, sizeof args, "eval save-logits -m %s -f %s -c 256 --chunks 2 -o %s", mpath, tpath, lf);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    snprintf(args, sizeof args, "eval compare -m %s --ref-logits %s -f %s", mpath, lf, tpath);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "same top token     100.000") != NULL);
    /* the committed task sets parse and run */
    char data[1024];
    snprintf(data, sizeof data, "%s/../data/tasks", strrchr(__FILE__, '/') ? "" : ".");
    const char *src = __FILE__;   /* .../tests/test_eval.c */
    const char *slash = strrchr(src, '/');
    if (slash) snprintf(data, sizeof data, "%.*s/../data/tasks", (int)(slash - src), src);
    char mc[1100], gen[1100];
    snprintf(mc, sizeof mc, "%s/tinystories_mc.jsonl", data);
    snprintf(gen, sizeof gen, "%s/tinystories_gen.jsonl", data);
    struct stat st;
    if (stat(mc, &st) == 0 && stat(gen, &st) == 0) {
        snprintf(args, sizeof args, "eval task -m %s --data %s --limit 10", mpath, mc);
        CHECK_EQ(cli(args, out, sizeof out), 0);
        CHECK(strstr(out, "10 items (10 multiple choice") != NULL && strstr(out, "acc_norm") != NULL);
        snprintf(args, sizeof args, "eval task -m %s --ref %s --data %s --limit 5", mpath, mpath, gen);
        CHECK_EQ(cli(args, out, sizeof out), 0);
        CHECK(strstr(out, "exact") != NULL && strstr(out, "+0.00 pts") != NULL);
    } else {
        fprintf(stderr, "   (task sets not found under %s)\n", data);
    }
    /* command-line errors */
    snprintf(args, sizeof args, "eval ppl -m %s -f %s -c 256 --stride 200", mpath, tpath);
    CHECK_EQ(cli(args, out, sizeof out), 2);   /* stride > n_ctx/2: a bad command line */
    CHECK(strstr(out, "edgellm eval ppl: stride 200") && !strstr(out, "eval: "));
    snprintf(args, sizeof args, "eval sweep -m %s -f %s --types bogus --no-results", mpath, tpath);
    CHECK_EQ(cli(args, out, sizeof out), 2);   /* an unknown type, refused before any work */
    CHECK(strstr(out, "edgellm eval sweep: 'bogus': unknown type") && !strstr(out, "sweep: eval sweep") &&
          !strstr(out, "quantize:"));
    CHECK_EQ(cli("eval ppl --bogus", out, sizeof out), 2);
    CHECK(strstr(out, "see 'edgellm eval ppl --help'") && !strstr(out, "usage:"));
    CHECK_EQ(cli("eval", out, sizeof out), 2);
    CHECK_EQ(cli("eval frobnicate", out, sizeof out), 2);
    snprintf(args, sizeof args, "eval compare -m %s -f %s", mpath, tpath);
    CHECK_EQ(cli(args, out, sizeof out), 2);   /* neither --ref nor --ref-logits */
    snprintf(args, sizeof args, "eval ppl -m %s -f %s -c 3", mpath, tpath);
    CHECK_EQ(cli(args, out, sizeof out), 2);
}

/* Regression: a reference probability of exactly 0 (ln p = -inf: a masked logit,
 * or a saved file with -inf entries) made KLD mean, median, p99 and max NaN (0 * -inf), and
 * PPL(ref) "inf +/- -nan". Terms where the reference gives 0 count 0; where the model gives
 * 0 to a token the reference allows, that position's KLD is +inf, counted, and the
 * summaries say inf, never NaN. Both record kinds: the whole vocabulary (a live reference,
 * edgellm_eval_record_full) and saved top-k entries with a rest bucket. */
static void test_regress_kld_with_zero_probabilities(void)
{
    edgellm_eval_acc a;
    CHECK_OK(edgellm_eval_acc_init(&a, 4, 8, NULL));
    float lp[4];
    edgellm_eval_ref_record rec;
    const float ref_logits[4] = {0.0f, 1.0f, -INFINITY, 2.0f};   /* token 2 masked */
    edgellm_eval_record_full(ref_logits, 4, 3, lp, &rec);
    CHECK(isinf(lp[2]) && lp[2] < 0);
    /* the model puts mass on token 2, which the reference rules out: term 0, KLD finite */
    const float m1[4] = {0.0f, 1.0f, 0.5f, 2.0f};
    edgellm_eval_acc_add(&a, &rec, m1);
    CHECK_EQ(a.n_kld_inf, 0);
    const double lse_r = log(exp(0.0) + exp(1.0) + exp(2.0)), lse_m = log(exp(0.0) + exp(1.0) + exp(0.5) + exp(2.0));
    double want = 0;   /* float-rounded log-probs, as the accumulator keeps them */
    for (int v = 0; v < 4; v++)
        if (v != 2)
            want += exp((double)(float)(ref_logits[v] - lse_r)) *
                    ((double)(float)(ref_logits[v] - lse_r) - (double)(float)(m1[v] - lse_m));
    CHECK_NEAR(a.kld[0], want, 1e-6);
    /* the model rules out token 1, which the reference allows: +inf, counted */
    const float m2[4] = {0.0f, -INFINITY, 0.5f, 2.0f};
    edgellm_eval_acc_add(&a, &rec, m2);
    CHECK_EQ(a.n_kld_inf, 1);
    CHECK(isinf(a.kld[1]) && a.kld[1] > 0);
    /* saved top-2 entries {3, 1} and a rest bucket: the model rules out token 1 again */
    const int32_t ids[2] = {3, 1};
    const float tl[2] = {lp[3], lp[1]};
    const edgellm_eval_ref_record top = {.target = 3, .target_lp = lp[3], .top = 3, .rest_lp = lp[0], .n = 2,
                                         .ids = ids, .lp = tl};
    edgellm_eval_acc_add(&a, &top, m2);
    CHECK_EQ(a.n_kld_inf, 2);
    edgellm_eval_acc_add(&a, &top, m1);   /* finite */
    CHECK(isfinite(a.kld[3]));
    edgellm_eval_compare_result r;
    memset(&r, 0, sizeof r);
    edgellm_eval_acc_finish(&a, &r);
    CHECK_EQ(r.n_kld_inf, 2);
    CHECK(isinf(r.kld_mean) && isinf(r.kld_err) && isinf(r.kld_max) && isinf(r.kld_p99));
    CHECK(isfinite(r.kld_median) || isinf(r.kld_median));   /* 2 of 4 infinite: on the edge, not NaN */
    CHECK(!isnan(r.kld_median) && !isnan(r.ln_ratio_mean) && !isnan(r.ln_ratio_err) && !isnan(r.dp_mean_pct));
    edgellm_eval_acc_free(&a);
    /* the summaries' helpers on infinite samples */
    const float inf2[3] = {0.5f, INFINITY, INFINITY};
    CHECK(isinf(edgellm_eval_quantile_sorted(inf2, 3, 0.5)));
    CHECK(isinf(edgellm_eval_quantile_sorted(inf2, 3, 0.75)));
    double mean, err;
    edgellm_eval_mean_err(INFINITY, INFINITY, 3, &mean, &err);
    CHECK(isinf(mean) && isinf(err));
}

/* The same through a saved-logits file: at the first position its least likely entry is
 * set to -inf (the sum stays 1 to the file check's 1e-3), at the second the target's, the
 * others renormalised (as a model with that logit masked would have saved them); compared
 * with the model that saved it. The first position's KLD is exactly 0 (the patched term
 * counts 0, the others are equal), PPL(ref) is inf, no summary is NaN and the CLI prints no
 * "nan". */
static void test_regress_kld_saved_logits_with_minus_inf(void)
{
    NEED_SHARED(mpath, STORIES);
    NEED_SHARED(tpath, VAL_TEXT);
    size_t len = 0;
    char *text = read_file(tpath, &len);
    edgellm_model *m = load(mpath, 0);
    if (!m || !text) { CHECK(0); free(text); edgellm_model_free(m); return; }
    const char *f = tmp_path("minus-inf.logits");
    edgellm_eval_params p = params256(1);
    p.top_k = 100000;   /* the whole vocabulary */
    edgellm_error err = {0};
    CHECK_OK(edgellm_eval_save_logits(m, text, len, &p, f, NULL, &err));
    size_t n = 0;
    char *b = read_file(f, &n);
    CHECK(b != NULL && n > 512);
    if (!b) { free(text); edgellm_model_free(m); return; }
    uint32_t nv, k, target;
    memcpy(&nv, b + 16, 4);
    memcpy(&k, b + 20, 4);
    CHECK_EQ(k, nv);
    const size_t rs = 12 + 8 * (size_t)k;
    const float minf = -INFINITY;
    char *r0 = b + 512, *r1 = r0 + rs;
    float *lp0 = (float *)(r0 + 12 + 4 * (size_t)k), *lp1 = (float *)(r1 + 12 + 4 * (size_t)k);
    memcpy(&target, r0, 4);
    uint32_t last;
    memcpy(&last, r0 + 12 + 4 * ((size_t)k - 1), 4);
    CHECK(last != target);
    lp0[k - 1] = minf;                   /* entries are sorted: the last is the least likely */
    memcpy(&target, r1, 4);
    memcpy(r1 + 4, &minf, 4);
    double pt = 0;
    for (uint32_t j = 0; j < k; j++) {
        uint32_t id;
        memcpy(&id, r1 + 12 + 4 * j, 4);
        if (id == target) { pt = exp((double)lp1[j]); lp1[j] = minf; }
    }
    CHECK(pt > 0 && pt < 0.999);
    for (uint32_t j = 0; j < k; j++)
        if (!isinf(lp1[j])) lp1[j] = (float)((double)lp1[j] - log1p(-pt));
    CHECK_EQ(write_file(f, b, n), 0);
    free(b);
    edgellm_eval_params fp = edgellm_eval_default_params();
    fp.n_ctx = 0;
    edgellm_eval_compare_result r;
    CHECK_OK(edgellm_eval_compare(m, NULL, f, text, len, &fp, &r, &err));
    CHECK_EQ(r.n_kld_inf, 0);
    CHECK(isfinite(r.kld_mean) && isfinite(r.kld_max) && isfinite(r.kld_p99) && r.kld_median == 0.0);
    CHECK_NEAR(r.kld_max, -log1p(-pt), 1e-3 * -log1p(-pt) + 1e-6);   /* position 2: sum p' ln(p'/p) */
    CHECK(isinf(r.ref.ppl) && !isnan(r.ref.ppl_err));
    CHECK(!isnan(r.kld_err) && !isnan(r.ln_ratio_mean) && !isnan(r.ln_ratio_err) && !isnan(r.delta_ppl_pct));
    char args[2048], out[16384];
    snprintf(args, sizeof args, "eval compare -m %s --ref-logits %s -f %s", mpath, f, tpath);
    CHECK_EQ(cli(args, out, sizeof out), 0);
    CHECK(strstr(out, "nan") == NULL);
    CHECK(strstr(out, "KLD mean") != NULL);
    edgellm_model_free(m);
    free(text);
}

int main(void)
{
    RUN(test_eval_stats_helpers);
    RUN(test_eval_ppl_matches_independent_route);
    RUN(test_eval_ppl_same_across_threads_and_runs);
    RUN(test_eval_short_text_refused);
    RUN(test_eval_compare_self_is_zero);
    RUN(test_eval_saved_logits_match_live);
    RUN(test_eval_saved_logits_mismatch_refused);
    RUN(test_eval_gen_stop_rule);
    RUN(test_eval_task_scores_match_direct);
    RUN(test_eval_sweep_rows_match_compare);
    RUN(test_eval_alloc_failures_leak_nothing);
    RUN(test_eval_cli_jsonl_errors_name_the_line);
    RUN(test_eval_cli_task_warns_past_training);
    RUN(test_eval_cli_commands);
    RUN(test_regress_kld_with_zero_probabilities);
    RUN(test_regress_kld_saved_logits_with_minus_inf);
    return test_summary();
}
