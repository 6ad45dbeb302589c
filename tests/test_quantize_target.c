/* test_quantize_target.c — `edgellm quantize --target` (src/tools/quantize_target.c) on
 * stories260K with small calibration sets (128-token windows) and two candidate types:
 *   - a KLD target is met on the calibration windows by the kept file, which is smaller
 *     than the all-Q8_0 file; the file records the recipe and every matrix's type in it
 *     matches the report;
 *   - a synthetic model (stories260K with blk.1.attn_q.weight replaced by values that Q4_0
 *     represents exactly) gets that matrix in Q4_0 (scan cost 0) even when the target
 *     pushes most other matrices to Q8_0;
 *   - a deliberately wrong prediction (scan costs scaled by 0.02) misses the target in the
 *     first round, and the verification rounds still end with a file that meets it;
 *   - a size target keeps the file within the size;
 *   - bad targets and type lists are refused (EDGELLM_ERR_MISUSE) and leave no file. */
#include "test_util.h"
#include "format/gguf.h"
#include "tensor/types.h"
#include "tools/quantize.h"

#define STORIES "models/stories260K/stories260K.gguf"
#define TEXT "models/text/tinystories_val_head.txt"

static char *text_all;
static size_t text_len;

static edgellm_quantize_target_params small_params(const char *target)
{
    edgellm_quantize_target_params p = edgellm_quantize_target_default_params();
    p.target = target;
    p.types = "q4_0,q8_0";
    p.calib = text_all;
    p.calib_len = 60000;
    p.heldout = text_all + 400000;
    p.heldout_len = 60000;
    p.n_ctx = 128;
    p.calib_chunks = 8;
    p.scan_chunks = 4;
    p.heldout_chunks = 8;
    p.quant.n_threads = 1;
    return p;
}

static int tensor_type(const char *path, const char *name)
{
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    if (edgellm_gguf_open(path, &g, &err) != EDGELLM_OK) return -2;
    const edgellm_gguf_tensor *t = edgellm_gguf_find_tensor(g, name);
    int ty = t ? t->type : -1;
    edgellm_gguf_close(g);
    return ty;
}

static void test_kld_target_met_and_recorded(void)
{
    NEED_SHARED(src, STORIES);
    if (!text_all) { test_skipped++; return; }
    const char *out = test_tmp_path("target.gguf");
    edgellm_quantize_target_params p = small_params("kld:0.012");
    edgellm_quantize_target_report r;
    CHECK_OK(edgellm_quantize_target(src, out, &p, &r, &_e));
    CHECK(r.met);
    CHECK(r.scan_measured);
    CHECK_EQ(r.n_tensors, 37);
    const edgellm_quantize_target_round *kept = &r.rounds[r.kept_round];
    CHECK(kept->met && kept->cal.kld_mean <= 0.012);
    CHECK(r.has_heldout && r.heldout.kld_mean > 0);
    /* smaller than Q8_0 everywhere (and than the source) */
    uint64_t q8 = 0;
    int n_q4 = 0, mismatched = 0;
    for (int i = 0; i < r.n_tensors; i++) {
        const edgellm_quantize_target_tensor *t = &r.tensors[i];
        for (int o = 0; o < t->n_options; o++)
            if (t->type[o] == EDGELLM_TYPE_Q8_0 || (t->n_options == 1)) q8 += t->bytes[o];
        n_q4 += t->type[t->chosen] == EDGELLM_TYPE_Q4_0;
        mismatched += tensor_type(out, t->name) != t->type[t->chosen];
    }
    uint64_t chosen = 0;
    for (int i = 0; i < r.n_tensors; i++) chosen += r.tensors[i].bytes[r.tensors[i].chosen];
    CHECK(chosen < q8);
    CHECK(n_q4 > 0);
    CHECK_EQ(mismatched, 0);
    /* the recipe is in the file */
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    CHECK(edgellm_gguf_open(out, &g, &err) == EDGELLM_OK);
    edgellm_str rs = {0};
    CHECK(g && edgellm_gguf_get_str(g, "edgellm.quant.recipe", &rs));
    CHECK(rs.len > 0 && memmem(rs.ptr, rs.len, "target kld:0.012", 16) && memmem(rs.ptr, rs.len, "blk.0.attn_q.weight=", 20));
    CHECK(g && edgellm_gguf_get_str(g, "edgellm.quant.imatrix", &rs));
    edgellm_gguf_close(g);
    fprintf(stderr, "   kept round %d of %d: %.4f bpw, calibration KLD %.5f, held-out KLD %.5f\n", r.kept_round + 1,
            r.n_rounds, r.bpw, kept->cal.kld_mean, r.heldout.kld_mean);
    edgellm_quantize_target_report_free(&r);
}

/* stories260K with blk.1.attn_q.weight = k * 2^-6, k in -8..7 and -8 in every block of 32:
 * Q4_0 holds it exactly. */
static bool make_cheap_model(const char *src, const char *dst)
{
    edgellm_gguf *g = NULL;
    edgellm_error err = {0};
    if (edgellm_gguf_open(src, &g, &err) != EDGELLM_OK) return false;
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    bool ok = w && edgellm_gguf_writer_copy_kv(w, g);
    float *exact = NULL;
    for (int64_t i = 0; ok && i < edgellm_gguf_n_tensors(g); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const void *data = t->data;
        if (!strcmp(name, "blk.1.attn_q.weight")) {
            CHECK(t->type == EDGELLM_TYPE_F32);
            exact = malloc(t->n_elements * sizeof *exact);
            for (uint64_t j = 0; j < t->n_elements; j++) {
                int k = (j % 32 == 0) ? -8 : (int)(((j * 2654435761u) >> 7) % 16) - 8;
                exact[j] = (float)k / 64.0f;
            }
            data = exact;
        }
        ok = edgellm_gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, data);
    }
    ok = ok && edgellm_gguf_writer_write(w, dst, &err) == EDGELLM_OK;
    edgellm_gguf_writer_free(w);
    edgellm_gguf_close(g);
    free(exact);
    return ok;
}

static void test_search_picks_the_known_cheap_tensor(void)
{
    NEED_SHARED(src, STORIES);
    if (!text_all) { test_skipped++; return; }
    const char *cheap = test_tmp_path("cheap.gguf"), *out = test_tmp_path("cheap-q.gguf");
    CHECK(make_cheap_model(src, cheap));
    edgellm_quantize_target_params p = small_params("kld:0.004");
    p.max_rounds = 2;
    edgellm_quantize_target_report r;
    CHECK_OK(edgellm_quantize_target(cheap, out, &p, &r, &_e));
    int n_q8 = 0, found = 0;
    for (int i = 0; i < r.n_tensors; i++) {
        const edgellm_quantize_target_tensor *t = &r.tensors[i];
        n_q8 += t->type[t->chosen] == EDGELLM_TYPE_Q8_0;
        if (strcmp(t->name, "blk.1.attn_q.weight")) continue;
        found = 1;
        for (int o = 0; o < t->n_options; o++)
            fprintf(stderr, "   %s option %s: cost %.3g, %llu bytes\n", t->name, edgellm_type_name(t->type[o]), t->cost[o],
                    (unsigned long long)t->bytes[o]);
        CHECK(t->type[t->chosen] == EDGELLM_TYPE_Q4_0);
        CHECK(t->cost[t->chosen] < 1e-7);
        CHECK(t->n_options == 1);   /* Q8_0 pruned: more bytes, no less cost */
    }
    CHECK(found);
    CHECK(n_q8 >= 10);
    CHECK_EQ(tensor_type(out, "blk.1.attn_q.weight"), EDGELLM_TYPE_Q4_0);
    edgellm_quantize_target_report_free(&r);
}

static void test_verification_catches_a_wrong_prediction(void)
{
    NEED_SHARED(src, STORIES);
    if (!text_all) { test_skipped++; return; }
    const char *out = test_tmp_path("wrong.gguf");
    edgellm_quantize_target_params p = small_params("kld:0.012");
    p.predict_scale = 0.02;   /* the scan says every matrix costs 50x less than it does */
    p.max_rounds = 8;
    edgellm_quantize_target_report r;
    CHECK_OK(edgellm_quantize_target(src, out, &p, &r, &_e));
    CHECK(r.n_rounds >= 2);
    CHECK(!r.rounds[0].met);
    CHECK(r.rounds[0].cal.kld_mean > 0.012);
    CHECK(r.met);
    CHECK(r.rounds[r.kept_round].cal.kld_mean <= 0.012);
    fprintf(stderr, "   round 1 KLD %.5f (predicted %.5f); kept round %d KLD %.5f\n", r.rounds[0].cal.kld_mean,
            r.rounds[0].predicted, r.kept_round + 1, r.rounds[r.kept_round].cal.kld_mean);
    edgellm_quantize_target_report_free(&r);
}

static void test_size_target_fits(void)
{
    NEED_SHARED(src, STORIES);
    if (!text_all) { test_skipped++; return; }
    const char *out = test_tmp_path("size.gguf");
    edgellm_quantize_target_params p = small_params("size:270KiB");
    p.scan = 2;   /* the proxy scan: no model runs */
    edgellm_quantize_target_report r;
    CHECK_OK(edgellm_quantize_target(src, out, &p, &r, &_e));
    CHECK(!r.scan_measured);
    CHECK(r.met);
    struct stat st;
    CHECK(stat(out, &st) == 0 && st.st_size <= 270 * 1024);
    CHECK(r.file_bytes == (uint64_t)st.st_size);
    edgellm_quantize_target_report_free(&r);
}

static void test_bad_targets_refused(void)
{
    NEED_SHARED(src, STORIES);
    if (!text_all) { test_skipped++; return; }
    const char *out = test_tmp_path("bad.gguf");
    const char *bad[] = {"kld", "kld:", "kld:-1", "ppl:3%", "top1:100%", "size:3XB", "dppl:3%x", NULL};
    for (int i = 0; bad[i]; i++) {
        edgellm_quantize_target_params p = small_params(bad[i]);
        edgellm_error err = {0};
        edgellm_quantize_target_report r;
        CHECK(edgellm_quantize_target(src, out, &p, &r, &err) == EDGELLM_ERR_MISUSE);
        edgellm_quantize_target_report_free(&r);
    }
    edgellm_quantize_target_params p = small_params("kld:0.01");
    p.types = "q4_0,q9_9";
    edgellm_error err = {0};
    edgellm_quantize_target_report r;
    CHECK(edgellm_quantize_target(src, out, &p, &r, &err) == EDGELLM_ERR_MISUSE && strstr(err.msg, "q9_9"));
    edgellm_quantize_target_report_free(&r);
    struct stat st;
    CHECK(stat(out, &st) != 0);
}

int main(void)
{
    const char *t = shared_path(TEXT);
    if (t) text_all = read_file(t, &text_len);
    if (text_all && text_len < 520000) { free(text_all); text_all = NULL; }
    RUN(test_bad_targets_refused);
    RUN(test_kld_target_met_and_recorded);
    RUN(test_search_picks_the_known_cheap_tensor);
    RUN(test_verification_catches_a_wrong_prediction);
    RUN(test_size_target_fits);
    free(text_all);
    return test_summary();
}
