/* test_quantize_tool.c — `edgellm quantize` (src/tools/quantize.c, quant_recipe.c) against
 * independent references:
 *   - llama.cpp's own quantization of the same F32 file (shared/data/reference/
 *     llama-gqa-{q4_0,q8_0,q4_k_m}.gguf, made by llama-quantize from llama-gqa-f32.gguf):
 *     every tensor gets the same type, and the bytes of every quantized tensor are
 *     identical (required for Q4_0/Q8_0; also true, and checked, for the Q4_K/Q6_K mix);
 *   - the float64 reference logits of those fixtures (.exact.f32): the logits of our files
 *     must lie within 0.15·s of them (s = their standard deviation; the README's bound
 *     for quantized weights);
 *   - stories260K quantized to Q8_0 still reproduces the greedy continuation in
 *     models/stories260K/expected_greedy_prompt_n64.txt (through the CLI);
 *   - llama.cpp's use_more_bits rule, evaluated by hand for 22 layers (TinyLlama).
 * Plus: shape fallbacks (stories260K has rows of 64 and 172), --keep, requantization,
 * thread-count independence, NaN inputs, the command line's exit codes, and that a failed
 * run never leaves an output file. */
#include "test_util.h"
#include "format/gguf.h"
#include "tools/quantize.h"
#include <dirent.h>

#define REF "data/reference/"
#define STORIES "models/stories260K/stories260K.gguf"

static char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int slot = 0;
    char *p = buf[slot++ & 7];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Files in the temporary directory whose name contains ".tmp." (the writer's temporaries). */
static int leftover_temporaries(void)
{
    DIR *d = opendir(test_tmpdir());
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) n += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return n;
}

static edgellm_status quantize(const char *in, const char *out, const char *type, int n_threads,
                               edgellm_quantize_report *r)
{
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = type;
    p.pure = 1;   /* the fixtures were made with llama-quantize --pure */
    p.n_threads = n_threads;
    edgellm_error err = {0};
    edgellm_status rc = edgellm_quantize_file(in, out, &p, r, &err);
    if (rc != EDGELLM_OK) fprintf(stderr, "   quantize %s -> %s: %s\n", in, type, err.msg);
    return rc;
}

/* Every tensor: same name, type and shape; identical bytes where `types_to_compare`
 * (bitmask by type id < 32) includes the type. Returns the number of tensors compared. */
static int compare_with_llamacpp(const char *ours, const char *theirs, uint32_t types_to_compare)
{
    edgellm_gguf *a = NULL, *b = NULL;
    CHECK_OK(edgellm_gguf_open(ours, &a, NULL));
    CHECK_OK(edgellm_gguf_open(theirs, &b, NULL));
    if (!a || !b) { edgellm_gguf_close(a); edgellm_gguf_close(b); return 0; }
    CHECK_EQ(edgellm_gguf_n_tensors(a), edgellm_gguf_n_tensors(b));
    int compared = 0;
    for (int64_t i = 0; i < edgellm_gguf_n_tensors(b); i++) {
        const edgellm_gguf_tensor *tb = edgellm_gguf_tensor_at(b, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)tb->name.len, tb->name.ptr);
        const edgellm_gguf_tensor *ta = edgellm_gguf_find_tensor(a, name);
        CHECK(ta != NULL);
        if (!ta) continue;
        if (ta->type != tb->type) fprintf(stderr, "   %s: ours %d, llama.cpp %d\n", name, ta->type, tb->type);
        CHECK_EQ(ta->type, tb->type);
        CHECK_EQ(ta->n_elements, tb->n_elements);
        CHECK_EQ(ta->ne[0], tb->ne[0]);
        if (ta->type != tb->type || ta->size_bytes != tb->size_bytes) continue;
        if (tb->type < 32 && (types_to_compare >> tb->type & 1)) {
            int same = memcmp(ta->data, tb->data, (size_t)ta->size_bytes) == 0;
            if (!same) fprintf(stderr, "   %s (%s): bytes differ from llama.cpp's\n", name, edgellm_type_name(ta->type));
            CHECK(same);
            compared++;
        }
    }
    /* general.file_type is llama.cpp's value */
    int64_t fa = -1, fb = -2;
    CHECK(edgellm_gguf_get_i64(a, "general.file_type", &fa));
    CHECK(edgellm_gguf_get_i64(b, "general.file_type", &fb));
    CHECK_EQ(fa, fb);
    uint32_t qv = 0;
    CHECK(edgellm_gguf_get_u32(a, "general.quantization_version", &qv));
    CHECK_EQ(qv, 2);
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
    return compared;
}

static void test_quantize_q4_0_bytes_identical_to_llamacpp(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    NEED_SHARED(ref, REF "llama-gqa-q4_0.gguf");
    const char *out = tmp_path("gqa-q4_0.gguf");
    edgellm_quantize_report r;
    CHECK_OK(quantize(src, out, "q4_0", 2, &r));
    CHECK_EQ(r.n_fallbacks, 0);
    CHECK_EQ(r.file_type, 2);
    CHECK_EQ(r.scheme_edgellm, 0);
    CHECK_EQ(r.edgellm_only, 0);
    /* 7 matrices per layer x 2 + token_embd + output = 16 Q4_0 tensors */
    CHECK_EQ(compare_with_llamacpp(out, ref, 1u << EDGELLM_TYPE_Q4_0), 16);
    edgellm_quantize_report_free(&r);
}

static void test_quantize_q8_0_bytes_identical_to_llamacpp(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    NEED_SHARED(ref, REF "llama-gqa-q8_0.gguf");
    const char *out = tmp_path("gqa-q8_0.gguf");
    edgellm_quantize_report r;
    CHECK_OK(quantize(src, out, "q8_0", 1, &r));
    CHECK_EQ(compare_with_llamacpp(out, ref, 1u << EDGELLM_TYPE_Q8_0), 16);
    /* Q8_0 of values ~N(0, 0.02): error at most half a step (amax/127/2) per block, and
     * the report's SQNR agrees with 8-bit rounding (~45 dB for Gaussian blocks of 32) */
    for (int i = 0; i < r.n_tensors; i++) {
        const edgellm_quantize_tensor *t = &r.tensors[i];
        if (t->type != EDGELLM_TYPE_Q8_0) continue;
        CHECK(t->sqnr_db > 40 && t->sqnr_db < 50);
        CHECK_EQ(t->n_saturated, 0);
        CHECK(t->rmse > 0 && t->max_abs_err >= t->rmse);
    }
    edgellm_quantize_report_free(&r);
}

static void test_quantize_q4_k_m_recipe_matches_llamacpp(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    NEED_SHARED(ref, REF "llama-gqa-q4_k_m.gguf");
    const char *out = tmp_path("gqa-q4_k_m.gguf");
    edgellm_quantize_report r;
    CHECK_OK(quantize(src, out, "q4_k_m", 2, &r));
    CHECK_EQ(r.file_type, 15);
    /* types must all agree (output and blk.1 attn_v/ffn_down Q6_K, the rest Q4_K) */
    int n = compare_with_llamacpp(out, ref, (1u << EDGELLM_TYPE_Q4_K) | (1u << EDGELLM_TYPE_Q6_K));
    CHECK_EQ(n, 16);
    edgellm_quantize_report_free(&r);
}

/* Logits of a model over the fixture tokens vs the .exact.f32 reference of llama.cpp's
 * file of the same type: max |diff| <= 0.15 s. */
static void check_logits(const char *model, const char *exact_rel, const char *label)
{
    const char *tpath = shared_path(REF "tokens.txt");
    const char *epath = shared_path(exact_rel);
    if (!tpath || !epath) { fprintf(stderr, "   SKIP logits %s\n", label); return; }
    int32_t tok[64];
    int n = 0;
    char *s = read_file(tpath, NULL), *p = s, *end;
    for (long v; s && n < 64 && (v = strtol(p, &end, 10), end != p); p = end) tok[n++] = (int32_t)v;
    free(s);
    size_t size = 0;
    float *ref = read_file(epath, &size);
    edgellm_model *m = NULL;
    edgellm_ctx *c = NULL;
    CHECK_OK(edgellm_model_load(model, NULL, &m, NULL));
    if (!m || !ref) { free(ref); edgellm_model_free(m); return; }
    CHECK_OK(edgellm_ctx_new(m, NULL, &c, NULL));
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    CHECK_EQ(size, (size_t)n * (size_t)info.n_vocab * 4);
    float *lg = malloc(size);
    edgellm_error err = {0};
    CHECK_EQ(edgellm_decode(c, tok, n, lg, &err), EDGELLM_OK);
    size_t cnt = size / 4;
    double mean = 0, var = 0, d = 0;
    for (size_t i = 0; i < cnt; i++) mean += ref[i];
    mean /= (double)cnt;
    for (size_t i = 0; i < cnt; i++) var += (ref[i] - mean) * (ref[i] - mean);
    double sd = sqrt(var / (double)cnt);
    for (size_t i = 0; i < cnt; i++) d = fmax(d, fabs((double)lg[i] - ref[i]));
    fprintf(stderr, "   %s: max |ours - exact| = %.4f s (bound 0.15 s)\n", label, d / sd);
    CHECK(d <= 0.15 * sd);
    free(lg);
    free(ref);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

static void test_quantized_files_logits_within_tolerance(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    static const char *types[] = {"q4_0", "q8_0", "q4_k_m"};
    for (int i = 0; i < 3; i++) {
        char name[64], exact[128];
        snprintf(name, sizeof name, "logits-%s.gguf", types[i]);
        snprintf(exact, sizeof exact, REF "llama-gqa-%s.exact.f32", types[i]);
        const char *out = tmp_path(name);
        CHECK_OK(quantize(src, out, types[i], 0, NULL));
        check_logits(out, exact, types[i]);
    }
}

/* use_more_bits for 22 layers, by hand: n/8 = 2, 7n/8 = 19; i < 2, i >= 19, and
 * (i - 2) % 3 == 2 for i = 4, 7, 10, 13, 16. */
static void test_recipe_use_more_bits_by_hand(void)
{
    static const int expect[22] = {1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 1};
    for (int i = 0; i < 22; i++) CHECK_EQ(edgellm_quant_use_more_bits(i, 22), expect[i]);
    /* and the recipe uses it for attn_v/ffn_down only */
    edgellm_quant_scheme s;
    CHECK_OK(edgellm_quant_scheme_parse("q4_k_m", 0, 0, &s, NULL));
    edgellm_quant_recipe r = {.scheme = &s, .n_layer = 22, .tied = true, .output_type = -1, .embd_type = -1};
    edgellm_quant_choice c;
    int64_t ne[2] = {2048, 256};
    edgellm_quant_choose(&r, "blk.4.attn_v.weight", 2, ne, EDGELLM_TYPE_F32, &c);
    CHECK_EQ(c.type, EDGELLM_TYPE_Q6_K);
    edgellm_quant_choose(&r, "blk.5.attn_v.weight", 2, ne, EDGELLM_TYPE_F32, &c);
    CHECK_EQ(c.type, EDGELLM_TYPE_Q4_K);
    edgellm_quant_choose(&r, "blk.4.attn_q.weight", 2, ne, EDGELLM_TYPE_F32, &c);
    CHECK_EQ(c.type, EDGELLM_TYPE_Q4_K);
    edgellm_quant_choose(&r, "token_embd.weight", 2, ne, EDGELLM_TYPE_F32, &c);   /* tied head */
    CHECK_EQ(c.type, EDGELLM_TYPE_Q6_K);
    int64_t ne896[2] = {896, 896};   /* Qwen2.5-0.5B rows: 3.5 x 256 (Qwen/Qwen2.5-0.5B config.json) */
    edgellm_quant_choose(&r, "blk.3.attn_q.weight", 2, ne896, EDGELLM_TYPE_F32, &c);
    CHECK_EQ(c.type, EDGELLM_TYPE_Q5_0);
    CHECK(c.fallback);
    edgellm_quant_choose(&r, "blk.0.ffn_down.weight", 2, ne896, EDGELLM_TYPE_F32, &c);
    CHECK_EQ(c.type, EDGELLM_TYPE_Q8_0);
    int64_t ne1[1] = {896};
    edgellm_quant_choose(&r, "blk.0.attn_norm.weight", 1, ne1, EDGELLM_TYPE_F16, &c);
    CHECK_EQ(c.type, EDGELLM_TYPE_F32);
    CHECK(c.convert);
    /* group types and their names */
    CHECK_OK(edgellm_quant_scheme_parse("i4", 128, 1, &s, NULL));
    CHECK_EQ(s.base_type, EDGELLM_TYPE_I4_G128_ASYM);
    CHECK(s.edgellm_only);
    CHECK(!strcmp(s.label, "i4 g128 asym"));
    CHECK_EQ(edgellm_quant_scheme_parse("i4", 96, 0, &s, NULL), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_quant_scheme_parse("q4_0", 128, 0, &s, NULL), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_quant_scheme_parse("q9_0", 0, 0, &s, NULL), EDGELLM_ERR_MISUSE);
}

static void test_stories_q8_0_reproduces_greedy_text(void)
{
    NEED_SHARED(src, STORIES);
    NEED_SHARED(exp_path, "models/stories260K/expected_greedy_prompt_n64.txt");
    const char *out = tmp_path("stories-q8_0.gguf");
    edgellm_quantize_report r;
    CHECK_OK(quantize(src, out, "q8_0", 2, &r));
    /* rows of 172 (ffn_down) do not fit Q8_0's 32-blocks: F16, reported */
    int n_f16 = 0;
    for (int i = 0; i < r.n_tensors; i++)
        if (strstr(r.tensors[i].name, "ffn_down")) {
            CHECK_EQ(r.tensors[i].type, EDGELLM_TYPE_F16);
            CHECK(r.tensors[i].fallback);
            CHECK(strstr(r.tensors[i].note, "172") != NULL);
            n_f16++;
        } else if (r.tensors[i].n_dims == 2) {
            CHECK_EQ(r.tensors[i].type, EDGELLM_TYPE_Q8_0);
        }
    CHECK_EQ(n_f16, 5);
    CHECK_EQ(r.n_fallbacks, 5);
    edgellm_quantize_report_free(&r);

    char *expect = read_file(exp_path, NULL);
    char cmd[2048], got[8192];
    snprintf(cmd, sizeof cmd, "(%s run -m %s -p 'Once upon a time' -n 64 --temp 0 2>/dev/null)", EDGELLM_CLI, out);
    CHECK_EQ(run_capture(cmd, got, sizeof got), 0);
    size_t n = expect ? strlen(expect) : 0;
    while (n && (expect[n - 1] == '\n' || expect[n - 1] == ' ')) n--;
    CHECK(expect && n > 20 && strncmp(got, expect, n) == 0);
    if (expect && strncmp(got, expect, n)) fprintf(stderr, "   got: %.300s\n   expected: %.300s\n", got, expect);
    free(expect);
}

static void test_stories_i4_and_q4_0_report_tables(void)
{
    NEED_SHARED(src, STORIES);
    static const char *args[] = {"--type i4 --group 128", "--type i4 --group 128 --asym", "--type q4_0"};
    static const char *fallback[] = {"I4_G128_SYM does not fit rows of 64: I4_G64_SYM",
                                     "I4_G128_ASYM does not fit rows of 64: I4_G64_ASYM",
                                     "Q4_0 does not fit rows of 172: F16"};
    for (int i = 0; i < 3; i++) {
        char cmd[2048], report[64];
        static char out[65536];
        snprintf(report, sizeof report, "report%d.%s", i, i == 1 ? "csv" : "json");
        const char *rpath = tmp_path(report), *opath = tmp_path("stories-i4.gguf");
        snprintf(cmd, sizeof cmd, "%s quantize %s %s %s --report %s", EDGELLM_CLI, src, opath, args[i], rpath);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
        CHECK(strstr(out, "sqnr_db") != NULL);           /* the table header */
        CHECK(strstr(out, fallback[i]) != NULL);         /* fallbacks are said */
        CHECK(strstr(out, "bits per weight") != NULL);   /* totals */
        /* no row of stories260K fits g128: the file holds g64, and both quantize's last line
         * and plan's label say so (they named the recipe's I4_G128 alone) */
        if (i < 2) {
            CHECK(strstr(out, i == 0 ? "no row fit it: the group-wise tensors are I4_G64_SYM"
                                     : "no row fit it: the group-wise tensors are I4_G64_ASYM") != NULL);
            edgellm_plan_model pm;
            CHECK_OK(edgellm_plan_model_from_gguf(opath, &pm, NULL));
            CHECK(!strcmp(pm.file_label, i == 0 ? "I4_G64_SYM" : "I4_G64_ASYM"));
        }
        char *rep = read_file(rpath, NULL);
        CHECK(rep != NULL);
        if (rep) {
            CHECK(strstr(rep, "blk.0.ffn_down.weight") != NULL);
            if (i == 1) CHECK(!strncmp(rep, "name,src_type,type", 18));
            else CHECK(strstr(rep, "\"tensors\": [") != NULL && strstr(rep, "\"sqnr_db\"") != NULL);
        }
        free(rep);
        /* the edgellm-only files name their scheme and still load and run */
        edgellm_gguf *g = NULL;
        CHECK_OK(edgellm_gguf_open(opath, &g, NULL));
        edgellm_str s = {0};
        if (i < 2) {
            CHECK(edgellm_gguf_get_str(g, "edgellm.quant.scheme", &s));
            CHECK(edgellm_str_eq(s, i == 0 ? "i4 g128 sym" : "i4 g128 asym"));
            CHECK(edgellm_gguf_find_key(g, "general.file_type") < 0);
        }
        edgellm_gguf_close(g);
        snprintf(cmd, sizeof cmd, "(%s run -m %s -p 'Once upon a time' -n 8 --temp 0 2>/dev/null)", EDGELLM_CLI, opath);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
        CHECK(!strncmp(out, "Once upon a time", 16));
    }
}

/* i4 asked of a model whose rows fit no group size: every tensor falls back to F16/F32, so the
 * file has only llama.cpp types and must say so with a valid general.file_type (MOSTLY_F16),
 * not the edgellm-only marker and not -1 written as 4294967295 */
static void test_i4_all_fallback_is_a_standard_file(void)
{
    NEED_SHARED(src, "models/random/llama-2-tiny-random.gguf");
    char cmd[2048];
    static char out[65536];
    const char *opath = tmp_path("tiny-i4.gguf");
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type i4 --group 128", EDGELLM_CLI, src, opath);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "no tensor fit it") != NULL);
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(opath, &g, NULL));
    int64_t ft = -2;
    CHECK(g && edgellm_gguf_get_i64(g, "general.file_type", &ft));
    CHECK_EQ(ft, 1);
    CHECK(g && edgellm_gguf_find_key(g, "edgellm.quant.scheme") < 0);
    edgellm_gguf_close(g);
    /* the report says so too: edgellm's types asked for, none taken */
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = "i4";
    p.group = 128;
    edgellm_quantize_report r;
    CHECK_OK(edgellm_quantize_file(src, opath, &p, &r, NULL));
    CHECK_EQ(r.scheme_edgellm, 1);
    CHECK_EQ(r.edgellm_only, 0);
    CHECK_EQ(r.file_type, 1);
    edgellm_quantize_report_free(&r);
    remove(opath);
}

static void test_keep_pattern_keeps_float(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    const char *out = tmp_path("keep.gguf");
    edgellm_quantize_params p = edgellm_quantize_default_params();
    const char *keep[] = {"*attn_v*", "output.*"};
    p.type = "q4_0";
    p.keep = keep;
    p.n_keep = 2;
    edgellm_quantize_report r;
    CHECK_OK(edgellm_quantize_file(src, out, &p, &r, NULL));
    edgellm_gguf *a = NULL, *b = NULL;
    CHECK_OK(edgellm_gguf_open(out, &a, NULL));
    CHECK_OK(edgellm_gguf_open(src, &b, NULL));
    int kept = 0;
    for (int64_t i = 0; a && b && i < edgellm_gguf_n_tensors(a); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(a, i);
        char name[96];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const edgellm_gguf_tensor *s = edgellm_gguf_find_tensor(b, name);
        bool k = strstr(name, "attn_v") || !strcmp(name, "output.weight");
        if (k) {   /* kept exactly: same type, same bytes */
            CHECK_EQ(t->type, EDGELLM_TYPE_F32);
            CHECK(t->size_bytes == s->size_bytes && !memcmp(t->data, s->data, (size_t)t->size_bytes));
            kept++;
        } else if (t->n_dims == 2) {
            CHECK_EQ(t->type, EDGELLM_TYPE_Q4_0);
        }
    }
    CHECK_EQ(kept, 3);
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
    edgellm_quantize_report_free(&r);
}

static void test_requantize_and_thread_independence(void)
{
    NEED_SHARED(q8, REF "llama-gqa-q8_0.gguf");
    const char *o1 = tmp_path("req1.gguf"), *o3 = tmp_path("req3.gguf");
    edgellm_quantize_report r;
    CHECK_OK(quantize(q8, o1, "q4_k_m", 1, &r));
    CHECK_EQ(r.requantized, 1);
    edgellm_quantize_report_free(&r);
    CHECK_OK(quantize(q8, o3, "q4_k_m", 3, NULL));
    size_t n1 = 0, n3 = 0;
    char *a = read_file(o1, &n1), *b = read_file(o3, &n3);
    CHECK(a && b && n1 == n3 && n1 > 0 && memcmp(a, b, n1) == 0);
    free(a);
    free(b);
    /* the CLI warns about requantization */
    char cmd[1024], out[16384];
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q4_0", EDGELLM_CLI, q8, tmp_path("req-cli.gguf"));
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "already quantized") != NULL);
}

/* A model whose matrix holds a NaN: EDGELLM_ERR_NUMERIC naming the tensor, and no output
 * file (the writer streams into a temporary that is removed). */
static void test_nan_input_fails_without_output(void)
{
    const char *in = tmp_path("nan.gguf"), *out = tmp_path("nan-q4.gguf");
    static float w[64 * 64], v[64];
    for (int i = 0; i < 64 * 64; i++) w[i] = (float)((i * 37) % 101 - 50) * 0.01f;
    for (int i = 0; i < 64; i++) v[i] = 1.0f;
    w[64 * 40 + 3] = NAN;
    edgellm_gguf_writer *wr = edgellm_gguf_writer_new();
    int64_t ne2[2] = {64, 64}, ne1[1] = {64};
    CHECK(edgellm_gguf_writer_set_str(wr, "general.architecture", "llama"));
    CHECK(edgellm_gguf_writer_add_tensor(wr, "a.weight", EDGELLM_TYPE_F32, 2, ne2, w));   /* fine */
    CHECK(edgellm_gguf_writer_add_tensor(wr, "n.weight", EDGELLM_TYPE_F32, 1, ne1, v));
    CHECK(edgellm_gguf_writer_add_tensor(wr, "blk.0.attn_q.weight", EDGELLM_TYPE_F32, 2, ne2, w));
    CHECK_OK(edgellm_gguf_writer_write(wr, in, NULL));
    edgellm_gguf_writer_free(wr);
    w[64 * 40 + 3] = 0;
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = "q4_0";
    edgellm_error err = {0};
    CHECK_EQ(edgellm_quantize_file(in, out, &p, NULL, &err), EDGELLM_ERR_NUMERIC);
    CHECK(strstr(err.msg, "a.weight") != NULL);
    CHECK(!exists(out));
    CHECK_EQ(leftover_temporaries(), 0);
}

/* Tensor names are whatever bytes a file holds: the report's CSV quotes them (commas,
 * quotes, newlines: every record keeps its 12 fields) and its JSON stays valid UTF-8 (a
 * byte that is not UTF-8 becomes \ufffd; quotes and control bytes are escaped). */
static void test_report_escapes_odd_names(void)
{
    const char *in = tmp_path("oddnames.gguf"), *out = tmp_path("oddnames-q8.gguf");
    const char *csv = tmp_path("oddnames.csv"), *json = tmp_path("oddnames.json");
    static float w[64 * 64];
    for (int i = 0; i < 64 * 64; i++) w[i] = (float)((i * 37) % 101 - 50) * 0.01f;
    edgellm_gguf_writer *wr = edgellm_gguf_writer_new();
    int64_t ne2[2] = {64, 64};
    CHECK(edgellm_gguf_writer_add_tensor(wr, "a,\"b\"\nc\xff.weight", EDGELLM_TYPE_F32, 2, ne2, w));
    CHECK(edgellm_gguf_writer_add_tensor(wr, "plain.weight", EDGELLM_TYPE_F32, 2, ne2, w));
    CHECK_OK(edgellm_gguf_writer_write(wr, in, NULL));
    edgellm_gguf_writer_free(wr);
    char cmd[4096], log[8192];
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q8_0 --report %s", EDGELLM_CLI, in, out, k ? json : csv);
        CHECK_EQ(run_capture(cmd, log, sizeof log), 0);
        CHECK(strstr(log, "wrote the report to ") && strstr(log, k ? json : csv));
    }
    char *c = read_file(csv, NULL), *j = read_file(json, NULL);
    CHECK(c && j);
    if (c) CHECK_EQ(csv_records(c, 12), 4);   /* header, 2 tensors, TOTAL */
    if (c) CHECK(strstr(c, "\"a,\"\"b\"\"\nc\xff.weight\",") != NULL);
    if (j) CHECK(!strchr(j, '\xff') && strstr(j, "\"a,\\\"b\\\"\\u000ac\\ufffd.weight\"") != NULL);
    free(c);
    free(j);
}

/* BF16 input: converting to F32 is exact (bf16 -> f32 only appends zero bits), so every
 * written value equals the source's, and the report says the error is 0 (SQNR +inf). */
static void test_bf16_input_converts_exactly(void)
{
    NEED_SHARED(src, REF "llama-gqa-bf16.gguf");
    const char *out = tmp_path("bf16-f32.gguf");
    edgellm_quantize_report r;
    CHECK_OK(quantize(src, out, "f32", 2, &r));
    CHECK_EQ(r.requantized, 0);
    int n_conv = 0;
    for (int i = 0; i < r.n_tensors; i++)
        if (r.tensors[i].src_type == EDGELLM_TYPE_BF16) {
            CHECK_EQ(r.tensors[i].type, EDGELLM_TYPE_F32);
            CHECK(r.tensors[i].rmse == 0 && isinf(r.tensors[i].sqnr_db));
            n_conv++;
        }
    CHECK_EQ(n_conv, 16);
    edgellm_quantize_report_free(&r);
    edgellm_gguf *a = NULL, *b = NULL;
    CHECK_OK(edgellm_gguf_open(out, &a, NULL));
    CHECK_OK(edgellm_gguf_open(src, &b, NULL));
    const edgellm_gguf_tensor *ta = a ? edgellm_gguf_find_tensor(a, "blk.1.ffn_up.weight") : NULL;
    const edgellm_gguf_tensor *tb = b ? edgellm_gguf_find_tensor(b, "blk.1.ffn_up.weight") : NULL;
    CHECK(ta && tb && ta->type == EDGELLM_TYPE_F32 && tb->type == EDGELLM_TYPE_BF16);
    int same = ta && tb;
    for (uint64_t i = 0; same && i < tb->n_elements; i++) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)tb->data + 2 * i, 2);
        uint32_t u = (uint32_t)h << 16;
        same = !memcmp((const uint8_t *)ta->data + 4 * i, &u, 4);
    }
    CHECK(same);
    int64_t ft = -1;
    CHECK(a && edgellm_gguf_get_i64(a, "general.file_type", &ft) && ft == 0);
    edgellm_gguf_close(a);
    edgellm_gguf_close(b);
}

/* The writer's streaming extension (gguf.h): a producer that writes fewer or more bytes
 * than declared, or fails, leaves no file; remove_kv drops a copied key. */
typedef struct { int mode; } prod_state;
static edgellm_status producer(void *user, uint64_t tag, edgellm_gguf_sink *sink, edgellm_error *err)
{
    const prod_state *s = user;
    static const uint8_t bytes[256];
    (void)tag;
    if (s->mode == 3) return edgellm_fail(err, EDGELLM_ERR_IO, "producer says no");
    size_t n = s->mode == 0 ? 256 : s->mode == 1 ? 200 : 256;
    bool ok = edgellm_gguf_sink_put(sink, bytes, n);
    if (s->mode == 2) ok = !edgellm_gguf_sink_put(sink, bytes, 1) && ok;   /* one too many: refused */
    return ok ? EDGELLM_OK : edgellm_fail(err, EDGELLM_ERR_IO, "put failed");
}

static void test_writer_stream_contract(void)
{
    for (int mode = 0; mode < 4; mode++) {
        char name[32];
        snprintf(name, sizeof name, "stream%d.gguf", mode);
        const char *out = tmp_path(name);
        prod_state st = {mode};
        edgellm_gguf_writer *w = edgellm_gguf_writer_new();
        int64_t ne[2] = {32, 2};   /* 2 rows of 32 F32 = 256 bytes */
        CHECK(edgellm_gguf_writer_set_u32(w, "general.file_type", 7));
        CHECK(edgellm_gguf_writer_set_str(w, "general.architecture", "llama"));
        CHECK(edgellm_gguf_writer_remove_kv(w, "general.file_type"));
        CHECK(!edgellm_gguf_writer_remove_kv(w, "general.file_type"));
        CHECK(edgellm_gguf_writer_add_tensor_stream(w, "t.weight", EDGELLM_TYPE_F32, 2, ne, producer, &st, 0));
        edgellm_error err = {0};
        edgellm_status rc = edgellm_gguf_writer_write(w, out, &err);
        edgellm_gguf_writer_free(w);
        CHECK_EQ(rc, mode == 0 ? EDGELLM_OK : mode == 3 ? EDGELLM_ERR_IO : EDGELLM_ERR_MISUSE);
        CHECK_EQ(exists(out), mode == 0);
        if (mode == 0) {
            edgellm_gguf *g = NULL;
            CHECK_OK(edgellm_gguf_open(out, &g, NULL));
            CHECK(g && edgellm_gguf_find_key(g, "general.file_type") < 0 && edgellm_gguf_n_kv(g) == 1);
            const edgellm_gguf_tensor *t = g ? edgellm_gguf_find_tensor(g, "t.weight") : NULL;
            CHECK(t && t->size_bytes == 256 && ((const float *)t->data)[63] == 0.0f);
            edgellm_gguf_close(g);
        }
    }
    CHECK_EQ(leftover_temporaries(), 0);
}

/* Allocation failure at every point of a quantization: EDGELLM_ERR_NOMEM, nothing leaked,
 * no output file; and the run that gets all its memory succeeds. */
static void test_quantize_oom_sweep(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    const char *out = tmp_path("oom.gguf");
    edgellm_quantize_params p = edgellm_quantize_default_params();
    p.type = "q4_k_m";
    p.n_threads = 2;
    int n;
    for (n = 1; n < 10000; n++) {
        long live = edgellm_test_live_allocs();
        edgellm_quantize_report r;
        edgellm_test_alloc_fail_at(n);
        edgellm_status rc = edgellm_quantize_file(src, out, &p, &r, NULL);
        edgellm_test_alloc_fail_at(0);
        edgellm_quantize_report_free(&r);
        CHECK_EQ(edgellm_test_live_allocs(), live);
        if (rc == EDGELLM_OK) break;
        CHECK_EQ(rc, EDGELLM_ERR_NOMEM);
        CHECK(!exists(out));
        if (rc != EDGELLM_ERR_NOMEM) break;
    }
    CHECK(n > 3 && n < 10000);
    CHECK(exists(out));
    CHECK_EQ(leftover_temporaries(), 0);
}

/* --embd-type / --output-type take edgellm's group-wise types by the short names --type
 * takes ("i4", "i4_g64", "i8:g256:asym", any case), not only I4_G128_SYM; a wrong one is
 * refused with the list of names (a new user tried i4 and got no hint) */
static void test_cli_tensor_type_aliases(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    const char *out = tmp_path("alias.gguf");
    char cmd[2048], buf[16384];
    static const struct { const char *flag; int want; } ok[] = {
        {"--embd-type i4_g64", EDGELLM_TYPE_I4_G64_SYM}, {"--embd-type I8:G64:ASYM", EDGELLM_TYPE_I8_G64_ASYM},
        {"--output-type i4_g64_asym", EDGELLM_TYPE_I4_G64_ASYM}, {"--embd-type Q4_0", EDGELLM_TYPE_Q4_0}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q8_0 %s", EDGELLM_CLI, src, out, ok[i].flag);
        CHECK_EQ(run_capture(cmd, buf, sizeof buf), 0);
        edgellm_gguf *g = NULL;
        CHECK_OK(edgellm_gguf_open(out, &g, NULL));
        const edgellm_gguf_tensor *t =
            g ? edgellm_gguf_find_tensor(g, strstr(ok[i].flag, "embd") ? "token_embd.weight" : "output.weight") : NULL;
        CHECK(t && (int)t->type == ok[i].want);
        edgellm_gguf_close(g);
        remove(out);
    }
    static const char *const bad[] = {"i4_g32", "i5", "i4_asymm", "i4_g64_x", "'i 4'", "i4_g+64", "i4_g0128",
                                      "i4_g99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q8_0 --embd-type %s", EDGELLM_CLI, src, out, bad[i]);
        CHECK_EQ(run_capture(cmd, buf, sizeof buf), 2);
        CHECK(strstr(buf, bad[i]) && strstr(buf, "i4_g64_asym"));
        CHECK(!exists(out));
    }
}

static void test_cli_exit_codes(void)
{
    NEED_SHARED(src, REF "llama-gqa-f32.gguf");
    const char *out = tmp_path("cli-bad.gguf");
    char cmd[2048], buf[8192];
    static const char *bad_flags[] = {"--type q9_9", "--type i4 --group 100", "--type q4_0 --group 64",
                                      "--type q4_0 --bogus", "", "--type q4_0 --report r.txt",
                                      "--type q4_0 --output-type nonsense", "--type q4_0 -t 0",
                                      "--type q4_0 --keep ''", "--type q4_0 --keep '*attn_v*,'"};
    for (size_t i = 0; i < sizeof bad_flags / sizeof bad_flags[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s quantize %s %s %s", EDGELLM_CLI, src, out, bad_flags[i]);
        CHECK_EQ(run_capture(cmd, buf, sizeof buf), 2);
        CHECK(!exists(out));
        /* the command named once; one line and a pointer to --help instead of the usage */
        CHECK(!strstr(buf, "quantize: quantize") && !strstr(buf, "usage:"));
        if (bad_flags[i][0]) CHECK(strstr(buf, "see 'edgellm quantize --help'") != NULL);
    }
    /* a report folder that does not exist is found before quantizing: exit 1, no OUT */
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q8_0 --report %s/no-such-dir/r.csv", EDGELLM_CLI, src, out,
             test_tmpdir());
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 1);
    CHECK(!exists(out) && strstr(buf, "edgellm quantize: ") && strstr(buf, "no-such-dir/r.csv: cannot write the report"));
    /* ... and a report path that is a folder */
    char dir_csv[700];
    snprintf(dir_csv, sizeof dir_csv, "%s/a-folder.csv", test_tmpdir());
    CHECK_EQ(mkdir(dir_csv, 0755), 0);
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q8_0 --report %s", EDGELLM_CLI, src, out, dir_csv);
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 1);
    CHECK(!exists(out) && strstr(buf, "a-folder.csv: cannot write the report there: Is a directory"));
    rmdir(dir_csv);
    /* a --keep pattern that matches nothing still quantizes, with a warning naming it */
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q8_0 --keep '*attn_v*,*atn_k*'", EDGELLM_CLI, src, out);
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 0);
    CHECK(strstr(buf, "--keep '*atn_k*' matched no tensor name") && !strstr(buf, "--keep '*attn_v*' matched"));
    remove(out);
    snprintf(cmd, sizeof cmd, "%s quantize %s --type q4_0", EDGELLM_CLI, src);   /* no output path */
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 2);
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q4_0", EDGELLM_CLI, src, src);   /* in == out */
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 2);
    /* bad input: missing, and not GGUF -> 1, message names the file, no output */
    snprintf(cmd, sizeof cmd, "%s quantize /nonexistent/x.gguf %s --type q4_0", EDGELLM_CLI, out);
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 1);
    CHECK(strstr(buf, "/nonexistent/x.gguf") != NULL);
    const char *junk = tmp_path("junk.gguf");
    write_file(junk, "this is not a gguf file at all.....", 35);
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q4_0", EDGELLM_CLI, junk, out);
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 1);
    CHECK(strstr(buf, "junk.gguf") != NULL);
    CHECK(!exists(out));
    /* unwritable output directory -> 1 */
    snprintf(cmd, sizeof cmd, "%s quantize %s /nonexistent-dir/o.gguf --type q4_0", EDGELLM_CLI, src);
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 1);
    CHECK_EQ(leftover_temporaries(), 0);
    /* and a good run exits 0 */
    snprintf(cmd, sizeof cmd, "%s quantize %s %s --type q5_1 --keep '*attn_k*' -t 2", EDGELLM_CLI, src, out);
    CHECK_EQ(run_capture(cmd, buf, sizeof buf), 0);
    CHECK(exists(out));
}

int main(void)
{
    RUN(test_recipe_use_more_bits_by_hand);
    RUN(test_quantize_q4_0_bytes_identical_to_llamacpp);
    RUN(test_quantize_q8_0_bytes_identical_to_llamacpp);
    RUN(test_quantize_q4_k_m_recipe_matches_llamacpp);
    RUN(test_quantized_files_logits_within_tolerance);
    RUN(test_stories_q8_0_reproduces_greedy_text);
    RUN(test_stories_i4_and_q4_0_report_tables);
    RUN(test_i4_all_fallback_is_a_standard_file);
    RUN(test_keep_pattern_keeps_float);
    RUN(test_requantize_and_thread_independence);
    RUN(test_bf16_input_converts_exactly);
    RUN(test_nan_input_fails_without_output);
    RUN(test_report_escapes_odd_names);
    RUN(test_writer_stream_contract);
    RUN(test_quantize_oom_sweep);
    RUN(test_cli_tensor_type_aliases);
    RUN(test_cli_exit_codes);
    return test_summary();
}
