/* test_kv_f16.c — the F16 KV cache option (edgellm_ctx_params.kv_type = EDGELLM_TYPE_F16).
 *
 * Kernel: edgellm_attend_f16 against a float64 reference over the same half rows widened
 * exactly (odd head_dims reach every loop tail); tolerance 1e-5 relative to the output scale
 * (float rounding of a head_dim dot and an n_pos-term weighted sum).
 * Model (../shared fixtures): F16-cache logits stay within 0.02 · s of the F32-cache logits
 * (s = std dev of the F32 logits; rounding keys/values to 11 significant bits perturbs the
 * scores by ~2^-11 relative) and within 0.02 · s of the float64 reference logits; greedy
 * decoding of stories260K over 64 tokens picks the same tokens with either cache; with F16,
 * prefill equals token-by-token decode and 1, 2 and 3 threads agree bit for bit (the same
 * arithmetic per row as with F32); the cache takes half the bytes; other kv_type values are
 * refused (UNSUPPORTED for a known type, MISUSE for an unknown id; Q8_0 is refused for
 * stories260K, whose head_dim 8 is not whole Q8_0 blocks: test_kv_q8_0.c); the CLI refuses
 * --kv-type values other than f32/f16/q8_0 with exit 2. */
#include "test_util.h"
#include "kernels/dispatch.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "tools/bench.h"
#include "tiny_model.h"

#define REF "data/reference/"
#define STORIES "models/stories260K/stories260K.gguf"

/* ---- kernel ---- */

static void test_attend_f16_kernel(void)
{
    enum { NPOS = 37, MAXHD = 129, STRIDE = 2 * MAXHD + 5 };
    static const int hds[] = {1, 3, 7, 8, 33, 64, 129};
    static uint16_t k[NPOS * STRIDE], v[NPOS * STRIDE];
    float q[MAXHD], out[MAXHD], scores[NPOS];
    uint32_t s = 12345;
    for (int i = 0; i < NPOS * STRIDE; i++) {
        s = s * 1664525u + 1013904223u;
        k[i] = edgellm_f32_to_f16(((float)(s >> 8) / 16777216.0f - 0.5f) * 4.0f);
        s = s * 1664525u + 1013904223u;
        v[i] = edgellm_f32_to_f16(((float)(s >> 8) / 16777216.0f - 0.5f) * 4.0f);
    }
    for (size_t h = 0; h < sizeof hds / sizeof hds[0]; h++) {
        int hd = hds[h];
        for (int i = 0; i < hd; i++) { s = s * 1664525u + 1013904223u; q[i] = (float)(s >> 8) / 16777216.0f - 0.5f; }
        for (int np = 1; np <= NPOS; np += 12) {
            float scale = 1.0f / sqrtf((float)hd);
            edgellm_attend_f16(out, q, k + 3, v + 3, STRIDE, hd, np, scale, scores, edgellm_kernels_vec_dot(EDGELLM_TYPE_F16));
            /* float64 reference over the exactly widened halves */
            double sc[NPOS], mx = -1e300, sum = 0, err = 0, mag = 0;
            for (int j = 0; j < np; j++) {
                double d = 0;
                for (int i = 0; i < hd; i++) d += (double)q[i] * edgellm_f16_to_f32(k[3 + j * STRIDE + i]);
                sc[j] = d * scale;
                mx = fmax(mx, sc[j]);
            }
            for (int j = 0; j < np; j++) sum += (sc[j] = exp(sc[j] - mx));
            for (int i = 0; i < hd; i++) {
                double o = 0;
                for (int j = 0; j < np; j++) o += sc[j] / sum * edgellm_f16_to_f32(v[3 + j * STRIDE + i]);
                err = fmax(err, fabs(o - out[i]));
                mag = fmax(mag, fabs(o));
            }
            if (err > 1e-5 * fmax(mag, 1.0)) fprintf(stderr, "   head_dim %d n_pos %d: err %.3g\n", hd, np, err);
            CHECK(err <= 1e-5 * fmax(mag, 1.0));
        }
    }
    /* axpy: exact element-wise y + a*x in float */
    float y[33], y2[33];
    for (int i = 0; i < 33; i++) y[i] = y2[i] = (float)i * 0.25f - 3.0f;
    edgellm_axpy_f16(y, 0.3f, v, 33);
    int same = 1;
    for (int i = 0; i < 33; i++) {
        float e = y2[i] + 0.3f * edgellm_f16_to_f32(v[i]);
        same &= memcmp(&e, &y[i], 4) == 0;
    }
    CHECK(same);
}

/* ---- model ---- */

static void close_case(const char *model_rel, const char *exact_rel, const char *tok_rel)
{
    test_kv_close_to_f32(model_rel, exact_rel, tok_rel, EDGELLM_TYPE_F16, "f16kv", 0.02);
}

static void test_f16_close_to_f32(void)
{
    close_case(STORIES, REF "stories260K.exact.f32", REF "stories260K.tokens.txt");
    close_case(REF "llama-gqa-f32.gguf", REF "llama-gqa-f32.exact.f32", REF "tokens.txt");      /* GQA */
    close_case(REF "qwen2-bias-f32.gguf", REF "qwen2-bias-f32.exact.f32", REF "tokens.txt");    /* NeoX */
}

static void greedy(const edgellm_model *m, int kv_type, int n, int32_t *out)
{
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_threads = 1;
    cp.kv_type = kv_type;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_ctx_new(m, &cp, &c, &err), EDGELLM_OK);
    if (!c) return;
    int32_t t = 1;   /* BOS of the llama2.c vocabulary */
    for (int i = 0; i < n; i++) {
        if (edgellm_decode(c, &t, 1, NULL, &err) != EDGELLM_OK) { CHECK(0); break; }
        const float *l = edgellm_ctx_logits(c);
        int best = 0;
        for (int v = 1; v < m->hp.n_vocab; v++) best = l[v] > l[best] ? v : best;
        out[i] = t = best;
    }
    edgellm_ctx_free(c);
}

static void test_f16_greedy_same_tokens(void)
{
    NEED_SHARED(mpath, STORIES);
    edgellm_model *m = test_load_model(mpath);
    CHECK(m != NULL);
    if (!m) return;
    int32_t a[64] = {0}, b[64] = {0};
    greedy(m, EDGELLM_TYPE_F32, 64, a);
    greedy(m, EDGELLM_TYPE_F16, 64, b);
    int first = -1;
    for (int i = 0; i < 64 && first < 0; i++) if (a[i] != b[i]) first = i;
    if (first >= 0) fprintf(stderr, "   greedy tokens differ from step %d\n", first);
    CHECK(first < 0);
    edgellm_model_free(m);
}

static void test_f16_prefill_decode_threads_bitexact(void)
{
    test_kv_bitexact(REF "llama-gqa-f32.gguf", REF "tokens.txt", EDGELLM_TYPE_F16);
}

static void test_kv_bytes_halved(void)
{
    NEED_SHARED(mpath, STORIES);
    edgellm_model *m = test_load_model(mpath);
    CHECK(m != NULL);
    if (!m) return;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    CHECK_EQ(cp.kv_type, EDGELLM_TYPE_F32);
    cp.n_ctx = 100;
    edgellm_ctx *c32 = NULL, *c16 = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_ctx_new(m, &cp, &c32, &err), EDGELLM_OK);
    cp.kv_type = EDGELLM_TYPE_F16;
    CHECK_EQ(edgellm_ctx_new(m, &cp, &c16, &err), EDGELLM_OK);
    if (c32 && c16) {
        size_t want32 = 2ull * m->hp.n_layer * 100 * m->hp.kv_dim * 4;
        CHECK_EQ(c32->kv.size_bytes, want32);
        CHECK_EQ(c16->kv.size_bytes, want32 / 2);
        CHECK_EQ(c16->kv.type, EDGELLM_TYPE_F16);
    }
    CHECK_EQ(edgellm_bench_kv_bytes_per_token(m, 10, EDGELLM_TYPE_F32),
             2 * edgellm_bench_kv_bytes_per_token(m, 10, EDGELLM_TYPE_F16));
    CHECK_EQ(edgellm_bench_kv_bytes_per_token(m, 10, EDGELLM_TYPE_F16), 2ull * m->hp.n_layer * 10 * m->hp.kv_dim * 2);
    edgellm_ctx_free(c32);
    edgellm_ctx_free(c16);
    edgellm_model_free(m);
}

static void test_bad_kv_type_refused(void)
{
    NEED_SHARED(mpath, STORIES);
    edgellm_model *m = test_load_model(mpath);
    CHECK(m != NULL);
    if (!m) return;
    static const struct { int type; edgellm_status want; } cases[] = {
        {EDGELLM_TYPE_Q8_0, EDGELLM_ERR_UNSUPPORTED}, {EDGELLM_TYPE_BF16, EDGELLM_ERR_UNSUPPORTED},
        {EDGELLM_TYPE_Q4_K, EDGELLM_ERR_UNSUPPORTED}, {-1, EDGELLM_ERR_MISUSE}, {999, EDGELLM_ERR_MISUSE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.kv_type = cases[i].type;
        edgellm_ctx *c = (edgellm_ctx *)&cp;   /* must be reset to NULL */
        edgellm_error err = {0};
        CHECK_EQ(edgellm_ctx_new(m, &cp, &c, &err), cases[i].want);
        CHECK(c == NULL);
        CHECK(strstr(err.msg, mpath) != NULL);
    }
    edgellm_model_free(m);
}

static void test_cli_kv_type(void)
{
    NEED_SHARED(mpath, STORIES);
    char cmd[4096], out[4096];
    snprintf(cmd, sizeof cmd, "%s run -m %s -n 8 --temp 0 --kv-type q4_0", EDGELLM_CLI, mpath);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    CHECK(strstr(out, "f32, f16 or q8_0") != NULL);
    snprintf(cmd, sizeof cmd, "%s bench -m %s --kv-type f8", EDGELLM_CLI, mpath);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    snprintf(cmd, sizeof cmd, "%s run -m %s -n 2 --temp 0 --kv-type F16", EDGELLM_CLI, mpath);   /* any case */
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    /* same text with either cache (greedy agrees, test above) */
    char a[4096], b[4096];
    snprintf(cmd, sizeof cmd, "{ %s run -m %s -p 'Once upon a time' -n 24 --temp 0 --kv-type f32 2>/dev/null; }",
             EDGELLM_CLI, mpath);
    CHECK_EQ(run_capture(cmd, a, sizeof a), 0);
    snprintf(cmd, sizeof cmd, "{ %s run -m %s -p 'Once upon a time' -n 24 --temp 0 --kv-type f16 2>/dev/null; }",
             EDGELLM_CLI, mpath);
    CHECK_EQ(run_capture(cmd, b, sizeof b), 0);
    CHECK(strlen(a) > 20 && strcmp(a, b) == 0);
}

/* ---- saturation ---- */

typedef struct { int n; char last[512]; } warn_log;
static void on_warn(edgellm_log_level level, const char *msg, void *user)
{
    warn_log *w = user;
    if (level > EDGELLM_LOG_WARN) return;
    w->n++;
    snprintf(w->last, sizeof w->last, "%s", msg);
}

/* One layer, one head of 32, byte vocabulary; token t embeds as e_{t % 32}, so its normed
 * input is e_{t % 32} * sqrt(32) and its value row holds one element of value_scale *
 * sqrt(32); wo brings the attention back to ~0.6. */
static bool write_big_value_model(const char *path, float value_scale)
{
    tiny_model *t = tiny_new(TINY_BYTE_VOCAB, 32, 1, 1, 1, 32, 64);
    t->byte_vocab = 1;
    for (int v = 0; v < TINY_BYTE_VOCAB; v++) {
        t->token_embd[v * 32 + v % 32] = 1.0f;
        for (int d = 0; d < 32; d++) t->output[v * 32 + d] = 0.1f * sinf(0.7f * (float)v + (float)d);
    }
    for (int d = 0; d < 32; d++) {
        t->L[0].wv[d * 32 + d] = value_scale;
        t->L[0].wo[d * 32 + d] = 0.1f / value_scale;
    }
    bool ok = tiny_write(t, path);
    tiny_free(t);
    return ok;
}

/* Regression: values beyond IEEE half's range (a model whose V rows reach ~67,900)
 * became inf in an F16 cache, and decoding failed with "NaN or inf in the logits" where an
 * F32 cache ran. Now they are stored as +-65504, counted (one element per token here) and
 * said once through the log; the logits stay finite and near the F32 cache's. The Q8_0
 * cache's block scale likewise (its quantizer holds the scale at 65504 past 127 x 65504). */
static void test_regress_kv_saturates_instead_of_inf(void)
{
    static const struct { int type; float scale; uint16_t stored; } cases[] = {
        {EDGELLM_TYPE_F16, 12000.0f, 0x7BFF},      /* v = 67,882: half rounding gives inf */
        {EDGELLM_TYPE_Q8_0, 2000000.0f, 0x7BFF},   /* v = 1.13e7 > 127 x 65504: scale 65504 */
    };
    const int32_t toks[3] = {1, TINY_BYTE(0x41), TINY_BYTE(0xF0)};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/big-values-%s.gguf", test_tmpdir(), edgellm_type_name(cases[i].type));
        CHECK(write_big_value_model(path, cases[i].scale));
        edgellm_model *m = test_load_model(path);
        CHECK(m != NULL);
        if (!m) continue;
        const int V = TINY_BYTE_VOCAB;
        float *l32 = malloc(3 * (size_t)V * sizeof(float)), *lq = malloc(3 * (size_t)V * sizeof(float));
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.n_threads = 1;
        edgellm_ctx *c = NULL;
        CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
        CHECK_OK(edgellm_decode(c, toks, 3, l32, NULL));
        CHECK_EQ(c->kv.n_saturated, 0);
        edgellm_ctx_free(c);
        warn_log w = {0};
        edgellm_log_set(on_warn, &w, EDGELLM_LOG_WARN);
        cp.kv_type = cases[i].type;
        edgellm_error err = {0};
        CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
        CHECK_EQ(edgellm_decode(c, toks, 3, lq, &err), EDGELLM_OK);
        if (err.msg[0]) fprintf(stderr, "   %s: %s\n", edgellm_type_name(cases[i].type), err.msg);
        CHECK_EQ(c->kv.n_saturated, 3);
        CHECK_EQ(w.n, 1);
        CHECK(strstr(w.last, edgellm_type_name(cases[i].type)) && strstr(w.last, "65504"));
        /* the stored value: the largest half (F16 element t % 32; the Q8_0 block's scale) */
        const uint8_t *row = (const uint8_t *)edgellm_kv_v_head(&c->kv, 0, 0, 0) + 1 * c->kv.row_bytes;
        uint16_t h;
        memcpy(&h, cases[i].type == EDGELLM_TYPE_F16 ? row + 2 * (TINY_BYTE(0x41) % 32) : row, 2);
        CHECK_EQ(h, cases[i].stored);
        double worst = 0;
        for (int k = 0; k < 3 * V; k++) {
            CHECK(isfinite(lq[k]));
            worst = fmax(worst, fabs((double)lq[k] - l32[k]));
        }
        CHECK(worst < 0.05);   /* the attention term is 0.1 x 65504 / 67882 of 0.1 x 5.66 */
        edgellm_ctx_free(c);
        edgellm_log_set(NULL, NULL, EDGELLM_LOG_DEBUG);
        /* the CLI runs (it printed "NaN or inf in the logits" and exited 1) and warns once */
        char cmd[4096], out[8192];
        snprintf(cmd, sizeof cmd, "%s run -m %s -p '' -n 3 --temp 0 --kv-type %s", EDGELLM_CLI, path,
                 cases[i].type == EDGELLM_TYPE_F16 ? "f16" : "q8_0");
        CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
        CHECK(strstr(out, "warning: KV cache") != NULL);
        CHECK(strstr(out, "NaN or inf") == NULL);
        free(l32);
        free(lq);
        edgellm_model_free(m);
        remove(path);
    }
}

int main(void)
{
    RUN(test_attend_f16_kernel);
    RUN(test_f16_close_to_f32);
    RUN(test_f16_greedy_same_tokens);
    RUN(test_f16_prefill_decode_threads_bitexact);
    RUN(test_kv_bytes_halved);
    RUN(test_bad_kv_type_refused);
    RUN(test_cli_kv_type);
    RUN(test_regress_kv_saturates_instead_of_inf);
    return test_summary();
}
