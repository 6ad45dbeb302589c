/* test_rope_scaling.c — RoPE frequency scaling (src/model/rope_scaling.c, ops.c
 * edgellm_rope_table_scaled) inside the engine. The float64 reference of each scaling is
 * tests/test_rope_reference.py; here, on small random-weight models written with
 * tests/tiny_model.h:
 *   - the table: neutral scaling gives edgellm_rope_table's bits; YaRN's angles and
 *     magnitude against the formulas in double (ramp, correction dims, 1 + 0.1 ln s);
 *   - a scaled model keeps the engine's invariants: prefill equals token-by-token decode
 *     and 1 and 2 threads agree bit for bit (the keys enter the cache already rotated);
 *     the F16 and Q8_0 caches stay as close to the F32 cache as they do without scaling
 *     (within twice the unscaled model's largest deviation, + 0.01 s; s = the logits'
 *     spread; this small random model's peaked attention makes Q8_0 deviate by ~0.2 s in
 *     the worst logit either way), while the scaling itself moves the logits by more than
 *     0.2 s past the original context;
 *   - edgellm_model_get_info reports the scaling; a file without scaling keys takes the
 *     plain table (so every existing model's logits are untouched);
 *   - refusals: an unimplemented type (longrope) is EDGELLM_ERR_UNSUPPORTED naming it and
 *     the key; a negative factor, a rope_freqs.weight of the wrong length or with a value
 *     <= 0 are EDGELLM_ERR_FORMAT. */
#include "test_util.h"
#include "kernels/ops.h"
#include "model/model.h"
#include "tiny_model.h"

#define NV 48
#define NE 64
#define NT 150   /* positions evaluated; the original context is 48 */

static void test_table_neutral_and_yarn(void)
{
    enum { RD = 32 };
    float c0[RD / 2], s0[RD / 2], c1[RD / 2], s1[RD / 2];
    const edgellm_rope_scaling neutral = {.freq_scale = 1.0, .mscale = 1.0};
    for (int64_t pos = 0; pos < 5000; pos += 97) {
        edgellm_rope_table(c0, s0, pos, RD, 10000.0f);
        edgellm_rope_table_scaled(c1, s1, pos, RD, 10000.0f, &neutral);
        CHECK(!memcmp(c0, c1, sizeof c0) && !memcmp(s0, s1, sizeof s0));
    }
    /* YaRN, s = 4, L = 48: correction dims floor/ceil of RD ln(L / (2 pi b)) / (2 ln base) */
    const double s = 4, L = 48, base = 10000;
    const double lo = fmax(0, floor(RD * log(L / (32 * 2 * M_PI)) / (2 * log(base))));
    const double hi = fmin(RD - 1, ceil(RD * log(L / (1 * 2 * M_PI)) / (2 * log(base))));
    const edgellm_rope_scaling y = {.freq_scale = 1 / s, .ext_factor = 1, .corr_low = lo, .corr_high = hi,
                                    .mscale = 1 + 0.1 * log(s)};
    const int64_t pos = 1234;
    edgellm_rope_table_scaled(c1, s1, pos, RD, (float)base, &y);
    double worst = 0;
    for (int i = 0; i < RD / 2; i++) {
        const double f = pow(base, -2.0 * i / RD), ramp = 1 - fmin(1, fmax(0, (i - lo) / (hi - lo)));
        const double th = pos * f / s * (1 - ramp) + pos * f * ramp, m = 1 + 0.1 * log(s);
        worst = fmax(worst, fmax(fabs(c1[i] - cos(th) * m), fabs(s1[i] - sin(th) * m)));
    }
    CHECK(worst < 1e-6);
    CHECK(lo == 0 && hi == 4);   /* the ramp spans pairs 0..4 of 16 here */
}

/* A random-weight model: 2 layers, 2 heads of 32 (1 KV head), with rope keys from `keys`
 * (NULL: none) and rope_freqs (NULL: none; [16]). */
typedef struct { const char *type; float factor; int n_ctx_orig; } rope_keys;

static bool write_model(const char *path, const rope_keys *keys, const float *freqs, int n_freqs)
{
    tiny_model *t = tiny_new(NV, NE, 2, 2, 1, 96, 192);
    uint32_t r = 777;
#define RND() (r = r * 1664525u + 1013904223u, ((float)(r >> 8) / 16777216.0f - 0.5f) * 0.8f)
    for (int i = 0; i < NV * NE; i++) t->token_embd[i] = RND(), t->output[i] = RND();
    for (int l = 0; l < 2; l++) {
        for (int i = 0; i < NE * NE; i++) t->L[l].wq[i] = RND(), t->L[l].wo[i] = RND();
        for (int i = 0; i < 32 * NE; i++) t->L[l].wk[i] = RND(), t->L[l].wv[i] = RND();
        for (int i = 0; i < 96 * NE; i++) t->L[l].w_gate[i] = RND(), t->L[l].w_up[i] = RND(), t->L[l].w_down[i] = RND();
    }
#undef RND
    if (keys) {
        if (keys->type) edgellm_gguf_writer_set_str(t->w, "llama.rope.scaling.type", keys->type);
        edgellm_gguf_writer_set_f32(t->w, "llama.rope.scaling.factor", keys->factor);
        if (keys->n_ctx_orig)
            edgellm_gguf_writer_set_u32(t->w, "llama.rope.scaling.original_context_length", (uint32_t)keys->n_ctx_orig);
    }
    const int64_t ne[1] = {n_freqs};
    if (freqs) edgellm_gguf_writer_add_tensor(t->w, "rope_freqs.weight", EDGELLM_TYPE_F32, 1, ne, freqs);
    bool ok = tiny_write(t, path);
    tiny_free(t);
    return ok;
}

/* Logits [NT][NV] of the model at path: kv_type, threads, prefill (or one token per call). */
static bool logits_of(edgellm_model *m, int kv_type, int n_threads, bool decode, float *out)
{
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.kv_type = kv_type;
    cp.n_threads = n_threads;
    cp.n_ctx = NT;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    if (edgellm_ctx_new(m, &cp, &c, &err)) { fprintf(stderr, "   %s\n", err.msg); return false; }
    int32_t toks[NT];
    for (int i = 0; i < NT; i++) toks[i] = (i * 7 + 3) % NV;
    bool ok = true;
    if (!decode) ok = edgellm_decode(c, toks, NT, out, &err) == EDGELLM_OK;
    for (int i = 0; decode && ok && i < NT; i++) ok = edgellm_decode(c, toks + i, 1, out + (size_t)i * NV, &err) == EDGELLM_OK;
    if (!ok) fprintf(stderr, "   %s\n", err.msg);
    edgellm_ctx_free(c);
    return ok;
}

static double max_diff(const float *a, const float *b, int from)
{
    double d = 0;
    for (int i = from * NV; i < NT * NV; i++) d = fmax(d, fabs((double)a[i] - b[i]));
    return d;
}

static void test_scaled_models_keep_the_invariants(void)
{
    static const float llama3ish[16] = {1, 1, 1, 1, 1.2f, 1.7f, 2.5f, 4, 6, 8, 8, 8, 8, 8, 8, 8};
    static const struct { const char *name; rope_keys k; bool has_keys; const float *freqs; int want_type; } cases[] = {
        {"yarn", {"yarn", 4.0f, 48}, true, NULL, EDGELLM_ROPE_SCALING_YARN},
        {"linear", {"linear", 4.0f, 0}, true, NULL, EDGELLM_ROPE_SCALING_LINEAR},
        {"rope_freqs", {NULL, 0, 0}, false, llama3ish, EDGELLM_ROPE_SCALING_NONE},
    };
    char plain_path[600];
    snprintf(plain_path, sizeof plain_path, "%s/rope-plain.gguf", test_tmpdir());
    CHECK(write_model(plain_path, NULL, NULL, 0));
    edgellm_model *pm = test_load_model(plain_path);
    CHECK(pm != NULL);
    if (!pm) return;
    CHECK(!pm->hp.rope.scaled);   /* no keys: the plain table, today's arithmetic */
    float *plain = malloc(sizeof(float) * NT * NV), *a = malloc(sizeof(float) * NT * NV),
          *b = malloc(sizeof(float) * NT * NV);
    CHECK(logits_of(pm, EDGELLM_TYPE_F32, 1, false, plain));
    CHECK(logits_of(pm, EDGELLM_TYPE_F16, 1, false, a));
    const double plain16 = max_diff(plain, a, 0);
    CHECK(logits_of(pm, EDGELLM_TYPE_Q8_0, 1, false, a));
    const double plain8 = max_diff(plain, a, 0);
    fprintf(stderr, "   unscaled   F16 cache within %.4f, Q8_0 within %.4f of F32\n", plain16, plain8);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/rope-%s.gguf", test_tmpdir(), cases[i].name);
        CHECK(write_model(path, cases[i].has_keys ? &cases[i].k : NULL, cases[i].freqs, 16));
        edgellm_model *m = test_load_model(path);
        CHECK(m != NULL);
        if (!m) continue;
        CHECK(m->hp.rope.scaled);
        edgellm_model_info info = {.size = sizeof info};
        CHECK_OK(edgellm_model_get_info(m, &info));
        CHECK_EQ(info.rope_scaling, cases[i].want_type);
        CHECK_EQ(info.rope_n_freq_factors, cases[i].freqs ? 16 : 0);
        if (cases[i].has_keys) CHECK(info.rope_scaling_factor == 4.0f);
        if (cases[i].want_type == EDGELLM_ROPE_SCALING_YARN) {
            CHECK_EQ(info.rope_n_ctx_orig, 48);
            CHECK_NEAR(info.rope_attn_factor, 1 + 0.1 * log(4.0), 1e-6);
        }
        CHECK(logits_of(m, EDGELLM_TYPE_F32, 1, false, a));
        double spread = 0, mean = 0;
        for (int k = 0; k < NT * NV; k++) mean += a[k];
        mean /= NT * NV;
        for (int k = 0; k < NT * NV; k++) spread += (a[k] - mean) * (a[k] - mean);
        spread = sqrt(spread / (NT * NV));
        const double effect = max_diff(a, plain, 48);
        fprintf(stderr, "   %-10s spread %.3f, scaling moves the logits by %.3f past position 48\n", cases[i].name,
                spread, effect);
        CHECK(effect > 0.2 * spread);
        CHECK(logits_of(m, EDGELLM_TYPE_F32, 1, true, b));
        CHECK(!memcmp(a, b, sizeof(float) * NT * NV));   /* prefill == decode */
        CHECK(logits_of(m, EDGELLM_TYPE_F32, 2, false, b));
        CHECK(!memcmp(a, b, sizeof(float) * NT * NV));   /* threads */
        CHECK(logits_of(m, EDGELLM_TYPE_F16, 1, true, b));
        const double d16 = max_diff(a, b, 0);
        CHECK(logits_of(m, EDGELLM_TYPE_Q8_0, 2, false, b));
        const double dq8 = max_diff(a, b, 0);
        fprintf(stderr, "   %-10s F16 cache within %.4f, Q8_0 within %.4f of F32\n", cases[i].name, d16, dq8);
        CHECK(d16 <= 2 * plain16 + 0.01 * spread);   /* as far as without scaling, no further */
        CHECK(dq8 <= 2 * plain8 + 0.01 * spread);
        edgellm_model_free(m);
        remove(path);
    }
    free(plain);
    free(a);
    free(b);
    edgellm_model_free(pm);
    remove(plain_path);
}

static void test_refusals_name_the_problem(void)
{
    static const float bad_value[16] = {1, 1, 0.0f, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const float fine[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const struct {
        const char *name; rope_keys k; bool has_keys; const float *freqs; int n_freqs;
        edgellm_status want; const char *says;
    } cases[] = {
        {"longrope", {"longrope", 4.0f, 0}, true, NULL, 0, EDGELLM_ERR_UNSUPPORTED, "RoPE scaling type 'longrope'"},
        {"unknown", {"ntk-by-parts", 2.0f, 0}, true, NULL, 0, EDGELLM_ERR_UNSUPPORTED, "llama.rope.scaling.type"},
        {"negative", {"linear", -2.0f, 0}, true, NULL, 0, EDGELLM_ERR_FORMAT, "RoPE scaling factor -2"},
        {"freqs-zero", {NULL, 0, 0}, false, bad_value, 16, EDGELLM_ERR_FORMAT, "rope_freqs.weight[2] = 0"},
        {"freqs-length", {NULL, 0, 0}, false, fine, 15, EDGELLM_ERR_FORMAT, "rope_freqs.weight' must be F32 {16}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[600];
        snprintf(path, sizeof path, "%s/rope-bad-%s.gguf", test_tmpdir(), cases[i].name);
        CHECK(write_model(path, cases[i].has_keys ? &cases[i].k : NULL, cases[i].freqs, cases[i].n_freqs));
        edgellm_model *m = NULL;
        edgellm_error err = {0};
        CHECK_EQ(edgellm_model_load(path, NULL, &m, &err), cases[i].want);
        CHECK(m == NULL);
        if (!strstr(err.msg, cases[i].says) || !strstr(err.msg, path))
            fprintf(stderr, "   %s: message: %s\n", cases[i].name, err.msg);
        CHECK(strstr(err.msg, cases[i].says) && strstr(err.msg, path));
        remove(path);
    }
}

int main(void)
{
    RUN(test_table_neutral_and_yarn);
    RUN(test_scaled_models_keep_the_invariants);
    RUN(test_refusals_name_the_problem);
    return test_summary();
}
