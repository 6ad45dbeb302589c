/*
 * test_numeric.c — numeric guards:
 *   - RMSNorm and softmax (src/kernels/ops.c) stay finite and accurate for extreme inputs:
 *     values near FLT_MAX, 1e30, 1e-30, subnormals, all-equal rows, one spike, -inf
 *     masked entries. Reference: the same formulas evaluated in double here (RMSNorm:
 *     x / sqrt(mean(x^2) + eps) * w, Zhang & Sennrich 2019; softmax with the maximum
 *     subtracted). Tolerance: 1e-5 relative for RMSNorm (float rounding of x*scale*w, and
 *     a subnormal scale for x near FLT_MAX keeps >= 20 bits), 1e-6 absolute for softmax
 *     probabilities.
 *   - edgellm_check_file (`edgellm info --check`, src/tools/check.c) finds NaN and +-inf in
 *     F32, F16, BF16, F64 and quantized tensors (a NaN f16 block scale), names the first
 *     bad tensor and element, ignores integer tensors, counts types it cannot dequantize
 *     as skipped, and passes a clean real model.
 *   - A NaN in a real model's weights makes `edgellm run` fail with a clear message
 *     (EDGELLM_ERR_NUMERIC from edgellm_decode), and `edgellm info --check` names the tensor.
 */
#include "test_util.h"
#include "common/common.h"
#include "format/gguf.h"
#include "kernels/ops.h"
#include <float.h>

/* ------------------------------------------------------------------ RMSNorm */

static void rmsnorm_ref(double *out, const float *x, const float *w, int n, float eps)
{
    /* scaled to stay exact in double for x up to FLT_MAX: mean(x^2) <= 1.2e77 */
    double ss = 0;
    for (int i = 0; i < n; i++) ss += (double)x[i] * x[i];
    double scale = 1.0 / sqrt(ss / n + (double)eps);
    for (int i = 0; i < n; i++) out[i] = (double)x[i] * scale * (double)w[i];
}

static void check_rmsnorm(const char *what, const float *x, int n, float eps)
{
    float *w = calloc((size_t)n, sizeof *w), *out = calloc((size_t)n, sizeof *out);
    double *ref = malloc((size_t)n * sizeof *ref);
    for (int i = 0; i < n; i++) w[i] = 0.5f + (float)(i % 7) / 7.0f;
    edgellm_rmsnorm(out, x, w, n, eps);
    rmsnorm_ref(ref, x, w, n, eps);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        bool ok = isfinite(out[i]) && fabs(out[i] - ref[i]) <= 1e-5 * fabs(ref[i]) + 1e-37;
        if (!ok && bad++ < 3)
            fprintf(stderr, "   rmsnorm %s n=%d eps=%g: out[%d] = %.9g, reference %.9g\n", what, n, (double)eps, i,
                    (double)out[i], ref[i]);
    }
    CHECK_EQ(bad, 0);
    /* in place (out == x) gives the same bits */
    float *y = malloc((size_t)n * sizeof *y);
    memcpy(y, x, (size_t)n * sizeof *y);
    edgellm_rmsnorm(y, y, w, n, eps);
    CHECK(!memcmp(y, out, (size_t)n * sizeof *y));
    free(w); free(out); free(ref); free(y);
}

static void test_numeric_rmsnorm_extreme_inputs(void)
{
    static const int NS[] = {1, 3, 64, 4096};
    static const float EPS[] = {1e-5f, 1e-6f};
    float *x = malloc(4096 * sizeof *x);
    for (size_t a = 0; a < sizeof NS / sizeof NS[0]; a++)
        for (size_t b = 0; b < 2; b++) {
            int n = NS[a];
            float eps = EPS[b];
            for (int i = 0; i < n; i++) x[i] = 1e30f;
            check_rmsnorm("all 1e30", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = -3e38f;
            check_rmsnorm("all -3e38", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = FLT_MAX;
            check_rmsnorm("all FLT_MAX", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = 1e-30f;
            check_rmsnorm("all 1e-30", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = 1e-40f;   /* subnormal */
            check_rmsnorm("all 1e-40", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = 0.0f;
            check_rmsnorm("all zero", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = 7.0f;
            check_rmsnorm("all equal", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = i % 2 ? -1e30f : 1e-30f;
            check_rmsnorm("alternating 1e-30/-1e30", x, n, eps);
            for (int i = 0; i < n; i++) x[i] = i == n / 2 ? 3e38f : 1.0f;
            check_rmsnorm("one spike of 3e38", x, n, eps);
        }
    /* all equal: every output is w[i] / sqrt(1 + eps/c^2) ~ w[i] */
    float one[8], w[8], out[8];
    for (int i = 0; i < 8; i++) { one[i] = 1e30f; w[i] = 1.0f; }
    edgellm_rmsnorm(out, one, w, 8, 1e-5f);
    for (int i = 0; i < 8; i++) CHECK_NEAR(out[i], 1.0, 1e-6);
    free(x);
}

/* ------------------------------------------------------------------ softmax */

static void check_softmax(const char *what, const float *x, int n)
{
    float *y = malloc((size_t)n * sizeof *y);
    memcpy(y, x, (size_t)n * sizeof *y);
    edgellm_softmax(y, n);
    double max = -INFINITY, sum = 0;
    for (int i = 0; i < n; i++) max = x[i] > max ? x[i] : max;
    for (int i = 0; i < n; i++) sum += exp((double)x[i] - max);
    double total = 0;
    int bad = 0;
    for (int i = 0; i < n; i++) {
        double ref = exp((double)x[i] - max) / sum;
        total += y[i];
        bool ok = isfinite(y[i]) && y[i] >= 0 && fabs(y[i] - ref) <= 1e-6 && (x[i] != -INFINITY || y[i] == 0);
        if (!ok && bad++ < 3)
            fprintf(stderr, "   softmax %s n=%d: y[%d] = %.9g, reference %.9g\n", what, n, i, (double)y[i], ref);
    }
    CHECK_EQ(bad, 0);
    CHECK_NEAR(total, 1.0, 1e-5);
    free(y);
}

static void test_numeric_softmax_extreme_inputs(void)
{
    float x[4096];
    static const int NS[] = {1, 2, 5, 4096};
    for (size_t a = 0; a < sizeof NS / sizeof NS[0]; a++) {
        int n = NS[a];
        for (int i = 0; i < n; i++) x[i] = 1e30f;
        check_softmax("all 1e30", x, n);
        for (int i = 0; i < n; i++) x[i] = -1e30f;
        check_softmax("all -1e30", x, n);
        for (int i = 0; i < n; i++) x[i] = i % 2 ? -1e-30f : 1e-30f;
        check_softmax("+-1e-30", x, n);
        for (int i = 0; i < n; i++) x[i] = i % 3 == 1 ? -INFINITY : (float)(i % 5) - 2.0f;
        if (n > 1) check_softmax("-inf masked", x, n);
        for (int i = 0; i < n; i++) x[i] = i % 2 ? -FLT_MAX : FLT_MAX;
        check_softmax("FLT_MAX / -FLT_MAX", x, n);
        for (int i = 0; i < n; i++) x[i] = (float)i * 100.0f;
        check_softmax("ramp of 100", x, n);
        for (int i = 0; i < n; i++) x[i] = i == 0 ? -INFINITY : -3e38f;
        if (n > 1) check_softmax("-inf and -3e38", x, n);
    }
    /* exact expectations */
    float y[4] = {1e30f, -1e30f, 0.0f, 1e-30f};
    edgellm_softmax(y, 4);
    CHECK(y[0] == 1.0f && y[1] == 0.0f && y[2] == 0.0f && y[3] == 0.0f);
    float m[3] = {0.0f, -INFINITY, 0.0f};
    edgellm_softmax(m, 3);
    CHECK(m[0] == 0.5f && m[1] == 0.0f && m[2] == 0.5f);
}

/* ------------------------------------------------------------------ check_file */

static const char *tmp(const char *name)
{
    static char buf[8][512];
    static int slot;
    char *p = buf[slot++ & 7];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* Copy of a real model with `bits` written over element `idx` of tensor `name`. */
static const char *poke(const char *src, const char *out_name, const char *name, uint64_t idx, uint32_t bits)
{
    size_t size = 0;
    uint8_t *p = read_file(src, &size);
    CHECK(p != NULL);
    if (!p) return NULL;
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open_memory(p, size, src, &g, NULL));
    const edgellm_gguf_tensor *t = g ? edgellm_gguf_find_tensor(g, name) : NULL;
    CHECK(t != NULL && t->type == EDGELLM_TYPE_F32 && idx < t->n_elements);
    const char *path = tmp(out_name);
    if (t) {
        memcpy((uint8_t *)t->data + 4 * idx, &bits, 4);   /* t->data points into p */
        CHECK_EQ(write_file(path, p, size), 0);
    }
    edgellm_gguf_close(g);
    free(p);
    return path;
}

static void test_numeric_check_clean_model(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    edgellm_check_report r;
    edgellm_error err = {0};
    CHECK_OK(edgellm_check_file(model, &r, &err));
    CHECK_EQ(r.found, 0);
    CHECK_EQ(r.n_tensors, 48);
    CHECK_EQ(r.n_tensors_checked, 48);
    CHECK_EQ(r.n_tensors_skipped, 0);
    edgellm_gguf *g = NULL;   /* the element count, from the reader's tensor table */
    CHECK_OK(edgellm_gguf_open(model, &g, NULL));
    uint64_t n_el = 0;
    for (int64_t i = 0; g && i < edgellm_gguf_n_tensors(g); i++) n_el += edgellm_gguf_tensor_at(g, i)->n_elements;
    edgellm_gguf_close(g);
    CHECK_EQ(r.n_values, n_el);
    CHECK_EQ(n_el, 292800);
    CHECK_EQ(r.tensor_index, -1);
    CHECK_EQ(edgellm_check_file(tmp("missing.gguf"), &r, &err), EDGELLM_ERR_IO);
    CHECK_EQ(edgellm_check_file(NULL, &r, &err), EDGELLM_ERR_MISUSE);
}

static void test_numeric_check_finds_nan_and_inf_in_real_model(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    const char *nan_path = poke(model, "nan.gguf", "blk.0.attn_q.weight", 64 * 3 + 5, 0x7FC00000u);
    edgellm_check_report r;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_check_file(nan_path, &r, &err), EDGELLM_ERR_NUMERIC);
    CHECK_EQ(r.found, 1);
    CHECK(!strcmp(r.tensor, "blk.0.attn_q.weight"));
    CHECK_EQ(r.element, 197);
    CHECK_EQ(r.row, 3);
    CHECK_EQ(r.col, 5);
    CHECK(isnan(r.value));
    CHECK(strstr(err.msg, nan_path) && strstr(err.msg, "blk.0.attn_q.weight") && strstr(err.msg, "NaN") &&
          strstr(err.msg, "row 3, column 5"));
    fprintf(stderr, "   %s\n", err.msg);
    /* -inf in the last tensor's last element: everything before it was scanned */
    const char *inf_path = poke(model, "inf.gguf", "blk.4.ffn_norm.weight", 63, 0xFF800000u);
    CHECK_EQ(edgellm_check_file(inf_path, &r, &err), EDGELLM_ERR_NUMERIC);
    CHECK(!strcmp(r.tensor, "blk.4.ffn_norm.weight") && r.element == 63 && isinf(r.value) && r.value < 0);
    CHECK(strstr(err.msg, "-inf") != NULL);
}

/* A file of small tensors, each with one defect or none (built with the GGUF writer). */
static void test_numeric_check_types(void)
{
    uint16_t f16[64], bf16[64];
    float f32[64];
    double f64[8];
    int32_t i32[8];
    for (int i = 0; i < 64; i++) {
        f32[i] = (float)i;
        f16[i] = edgellm_f32_to_f16((float)i);
        bf16[i] = edgellm_f32_to_bf16((float)i);
    }
    for (int i = 0; i < 8; i++) { f64[i] = i; i32[i] = 0x7FC00000; }   /* NaN bits, but integers */
    uint8_t q8[34 * 4];   /* 4 Q8_0 blocks: scale f16, 32 int8 */
    memset(q8, 1, sizeof q8);
    for (int b = 0; b < 4; b++) { uint16_t d = edgellm_f32_to_f16(0.5f); memcpy(q8 + 34 * b, &d, 2); }
    uint8_t iq2[66] = {0};   /* one IQ2_XXS block: no dequantizer in edgellm */

    struct { const char *name; int defect; } cases[] = {
        {"clean", 0}, {"f16 +inf", 1}, {"bf16 NaN", 2}, {"f64 NaN", 3}, {"q8_0 NaN scale", 4}, {"f32 -inf", 5},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int d = cases[c].defect;
        uint16_t f16c[64], bf16c[64];
        float f32c[64];
        double f64c[8];
        uint8_t q8c[sizeof q8];
        memcpy(f16c, f16, sizeof f16c); memcpy(bf16c, bf16, sizeof bf16c); memcpy(f32c, f32, sizeof f32c);
        memcpy(f64c, f64, sizeof f64c); memcpy(q8c, q8, sizeof q8c);
        if (d == 1) f16c[10] = 0x7C00;
        if (d == 2) bf16c[20] = 0x7FC0;
        if (d == 3) f64c[7] = NAN;
        if (d == 4) { uint16_t nan16 = 0x7E00; memcpy(q8c + 34 * 2, &nan16, 2); }
        if (d == 5) f32c[63] = -INFINITY;
        edgellm_gguf_writer *w = edgellm_gguf_writer_new();
        edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
        int64_t ne64[1] = {64}, ne8[1] = {8}, ne128[2] = {64, 2}, ne256[1] = {256};
        edgellm_gguf_writer_add_tensor(w, "ints", EDGELLM_TYPE_I32, 1, ne8, i32);
        edgellm_gguf_writer_add_tensor(w, "iq2", EDGELLM_TYPE_IQ2_XXS, 1, ne256, iq2);
        edgellm_gguf_writer_add_tensor(w, "half", EDGELLM_TYPE_F16, 1, ne64, f16c);
        edgellm_gguf_writer_add_tensor(w, "brain", EDGELLM_TYPE_BF16, 1, ne64, bf16c);
        edgellm_gguf_writer_add_tensor(w, "double", EDGELLM_TYPE_F64, 1, ne8, f64c);
        edgellm_gguf_writer_add_tensor(w, "q8", EDGELLM_TYPE_Q8_0, 2, ne128, q8c);
        edgellm_gguf_writer_add_tensor(w, "single", EDGELLM_TYPE_F32, 1, ne64, f32c);
        const char *path = tmp("types.gguf");
        edgellm_error err = {0};
        CHECK_OK(edgellm_gguf_writer_write(w, path, &err));
        edgellm_gguf_writer_free(w);
        edgellm_check_report r;
        edgellm_status s = edgellm_check_file(path, &r, &err);
        static const char *const want_tensor[] = {"", "half", "brain", "double", "q8", "single"};
        static const uint64_t want_elem[] = {0, 10, 20, 7, 64, 63};
        if (d == 0) {
            CHECK_EQ(s, EDGELLM_OK);
            CHECK_EQ(r.n_tensors, 7);
            CHECK_EQ(r.n_tensors_checked, 6);
            CHECK_EQ(r.n_tensors_skipped, 1);
            CHECK_EQ(r.n_values, 8 + 64 + 64 + 8 + 128 + 64);
        } else {
            CHECK_EQ(s, EDGELLM_ERR_NUMERIC);
            CHECK(!strcmp(r.tensor, want_tensor[d]));
            CHECK_EQ(r.element, want_elem[d]);
            CHECK(strstr(err.msg, want_tensor[d]) != NULL);
            if (s != EDGELLM_ERR_NUMERIC || strcmp(r.tensor, want_tensor[d]) || r.element != want_elem[d])
                fprintf(stderr, "   %s: %s, %s\n", cases[c].name, edgellm_status_name(s), err.msg);
        }
    }
}

/* ------------------------------------------------------------------ CLI */

static void test_numeric_cli_info_check_and_run(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    char cmd[2048], out[65536];
    snprintf(cmd, sizeof cmd, "'%s' info --check '%s'", EDGELLM_CLI, model);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "check: 48 tensors, 292800 values scanned, all finite") != NULL);

    const char *bad = poke(model, "cli-nan.gguf", "blk.2.ffn_down.weight", 1000, 0x7FC00000u);
    snprintf(cmd, sizeof cmd, "( '%s' info --check '%s' 2>&1 >/dev/null )", EDGELLM_CLI, bad);   /* stderr only */
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    char want[1024];
    snprintf(want, sizeof want, "edgellm info: %s: tensor blk.2.ffn_down.weight", bad);
    CHECK(strstr(out, want) != NULL && strstr(out, "is NaN") != NULL);
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);   /* one line */
    fprintf(stderr, "   %s", out);

    snprintf(cmd, sizeof cmd, "( '%s' run -m '%s' -p 'Once upon a time' -n 8 --temp 0 -t 1 2>&1 >/dev/null )",
             EDGELLM_CLI, bad);
    int rc = run_capture(cmd, out, sizeof out);
    CHECK_EQ(rc, 1);
    snprintf(want, sizeof want, "edgellm run: %s: NaN or inf in the logits", bad);
    CHECK(strstr(out, want) != NULL);
    if (rc != 1 || !strstr(out, want)) fprintf(stderr, "   run: exit %d:\n%s\n", rc, out);
}

int main(void)
{
    RUN(test_numeric_rmsnorm_extreme_inputs);
    RUN(test_numeric_softmax_extreme_inputs);
    RUN(test_numeric_check_clean_model);
    RUN(test_numeric_check_finds_nan_and_inf_in_real_model);
    RUN(test_numeric_check_types);
    RUN(test_numeric_cli_info_check_and_run);
    return test_summary();
}
