/* test_synth_bench.c — `edgellm synth` (src/tools/synth.c, shapes.c) and `edgellm bench`
 * (src/tools/bench.c) on tiny custom shapes, so the whole file runs in seconds.
 *
 * References: the published parameter totals of the built-in shapes (Hugging Face model
 * pages / safetensors metadata) recomputed here from the shape numbers with the llama
 * block's tensor list; the tensor list of a synthesised file read back with the GGUF
 * reader; the bytes a decode step reads recomputed from that list; llama-bench's JSON
 * field names (llama-bench's README), checked in output that is parsed by a small JSON
 * syntax checker below (no JSON library in the test). */
#include "test_util.h"
#include "format/gguf.h"
#include "model/model.h"
#include "tools/bench.h"
#include "tools/plan.h"
#include <ctype.h>

static char *tmp_path(const char *name)
{
    static char buf[8][512];
    static int slot = 0;
    char *p = buf[slot++ & 7];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

static edgellm_shape tiny_shape(const char *arch, int tied)
{
    edgellm_shape s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "tiny");
    snprintf(s.arch, sizeof s.arch, "%s", arch);
    s.n_layer = 2;
    s.n_embd = 128;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ff = 256;
    s.n_vocab = 300;
    s.n_ctx_train = 256;
    s.tied = tied;
    s.rope_theta = 10000.0f;
    s.rms_eps = 1e-5f;
    return s;
}

/* Parameters of a llama-block model from its shape (qwen2 adds Q/K/V biases). */
static uint64_t shape_params(const edgellm_shape *s)
{
    uint64_t E = (uint64_t)s->n_embd, KV = (uint64_t)s->n_head_kv * (E / (uint64_t)s->n_head), FF = (uint64_t)s->n_ff;
    uint64_t layer = 2 * E * E + 2 * E * KV + 3 * E * FF + 2 * E;
    if (!strcmp(s->arch, "qwen2")) layer += E + 2 * KV;
    return (uint64_t)s->n_vocab * E * (s->tied ? 1 : 2) + E + (uint64_t)s->n_layer * layer;
}

static void test_builtin_shapes_match_published_sizes(void)
{
    /* published totals: TinyLlama-1.1B 1,100,048,384; Llama-3.2-1B 1,235,814,400;
     * Qwen2.5-0.5B 494,032,768; Qwen2.5-1.5B 1,543,714,304; SmolLM2-360M 361,821,120;
     * SmolLM2-135M 134,515,008; Llama-2-7B 6,738,415,616 (HF safetensors parameter counts) */
    static const struct { const char *name; uint64_t n; } pub[] = {
        {"tinyllama-1.1b", 1100048384ull}, {"llama-3.2-1b", 1235814400ull}, {"qwen2.5-0.5b", 494032768ull},
        {"qwen2.5-1.5b", 1543714304ull},   {"smollm2-360m", 361821120ull},  {"smollm2-135m", 134515008ull},
        {"llama-2-7b", 6738415616ull},
    };
    CHECK(edgellm_shape_count() >= 7);
    for (size_t i = 0; i < sizeof pub / sizeof pub[0]; i++) {
        edgellm_shape s;
        CHECK_OK(edgellm_shape_find(pub[i].name, &s, NULL));
        if (shape_params(&s) != pub[i].n)
            fprintf(stderr, "   %s: %llu params from the shape, published %llu\n", pub[i].name,
                    (unsigned long long)shape_params(&s), (unsigned long long)pub[i].n);
        CHECK_EQ(shape_params(&s), pub[i].n);
        CHECK(s.n_embd % s.n_head == 0 && s.n_head % s.n_head_kv == 0);
        CHECK(s.rms_eps > 0 && s.rope_theta > 0 && s.n_ctx_train > 0 && s.source[0]);
    }
    edgellm_shape s;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_shape_find("TinyLlama-1.1B", &s, NULL), EDGELLM_OK);   /* case-insensitive */
    CHECK_EQ(edgellm_shape_find("gpt-5", &s, &err), EDGELLM_ERR_NOT_FOUND);
    CHECK(strstr(err.msg, "tinyllama-1.1b") != NULL);                        /* lists valid names */
}

static void synth_file(const edgellm_shape *s, const char *type, uint64_t seed, int threads, const char *out)
{
    edgellm_synth_params p = edgellm_synth_default_params();
    p.shape = *s;
    p.type = type;
    p.seed = seed;
    p.n_threads = threads;
    uint64_t n = 0, bytes = 0;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_synth(&p, out, &n, &bytes, &err), EDGELLM_OK);
    if (err.msg[0]) fprintf(stderr, "   synth: %s\n", err.msg);
    CHECK_EQ(n, shape_params(s));
    CHECK(bytes > 0);
}

static void test_synth_loads_and_runs(void)
{
    static const struct { const char *arch; int tied; const char *type; } cases[] = {
        {"llama", 0, "q4_0"}, {"llama", 1, "q4_k_m"}, {"qwen2", 1, "q8_0"}, {"llama", 0, "i4"},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        edgellm_shape s = tiny_shape(cases[ci].arch, cases[ci].tied);
        const char *out = tmp_path("synth.gguf");
        synth_file(&s, cases[ci].type, 7, 2, out);
        edgellm_model *m = NULL;
        CHECK_OK(edgellm_model_load(out, NULL, &m, NULL));
        if (!m) continue;
        edgellm_model_info info = {.size = sizeof info};
        edgellm_model_get_info(m, &info);
        CHECK(!strcmp(info.arch, cases[ci].arch));
        CHECK_EQ(info.n_layer, 2);
        CHECK_EQ(info.n_embd, 128);
        CHECK_EQ(info.n_head_kv, 2);
        CHECK_EQ(info.n_ff, 256);
        CHECK_EQ(info.n_vocab, 300);
        CHECK_EQ(info.tied_output, cases[ci].tied);
        CHECK_EQ(info.n_params, shape_params(&s));
        /* the tokenizer: specials, byte tokens, n_vocab pieces */
        const edgellm_tokenizer *t = edgellm_model_tokenizer(m);
        CHECK(t != NULL);
        if (t) {
            CHECK_EQ(edgellm_tokenizer_n_vocab(t), 300);
            CHECK_EQ(edgellm_token_bos(t), 1);
            CHECK_EQ(edgellm_token_eos(t), 2);
            CHECK(!strcmp(edgellm_token_text(t, 3 + 0x41), "<0x41>"));
            int32_t ids[32];
            int n = 0;
            CHECK_OK(edgellm_tokenize(t, "hi", 2, 1, ids, 32, &n, NULL));
            CHECK(n >= 2 && ids[0] == 1);
        }
        /* a forward pass stays finite */
        edgellm_ctx *c = NULL;
        CHECK_OK(edgellm_ctx_new(m, NULL, &c, NULL));
        int32_t tok[5] = {1, 100, 200, 299, 5};
        CHECK_OK(edgellm_decode(c, tok, 5, NULL, NULL));
        edgellm_ctx_free(c);
        /* the types follow the quantize recipe */
        int64_t n_q = 0;
        for (int64_t i = 0; i < edgellm_gguf_n_tensors(m->gguf); i++) {
            const edgellm_gguf_tensor *g = edgellm_gguf_tensor_at(m->gguf, i);
            if (g->n_dims == 1) CHECK_EQ(g->type, EDGELLM_TYPE_F32);
            else n_q++;
            /* rows of 128 fit g128; the head gets Q6_K (llama-quantize's default), whose
             * 256-blocks do not fit rows of 128, so it falls back to Q8_0 */
            bool head = edgellm_str_eq(g->name, "output.weight") ||
                        (cases[ci].tied && edgellm_str_eq(g->name, "token_embd.weight"));
            if (!strcmp(cases[ci].type, "i4") && g->n_dims == 2)
                CHECK_EQ(g->type, head ? EDGELLM_TYPE_Q8_0 : EDGELLM_TYPE_I4_G128_SYM);
            if (!strcmp(cases[ci].type, "q4_k_m") && g->n_dims == 2) /* rows of 128/256 -> Q5_0/Q8_0 or K */
                CHECK(g->type == EDGELLM_TYPE_Q5_0 || g->type == EDGELLM_TYPE_Q8_0 || g->type == EDGELLM_TYPE_Q4_K ||
                      g->type == EDGELLM_TYPE_Q6_K);
        }
        CHECK_EQ(n_q, 1 + !cases[ci].tied + 7 * 2);
        edgellm_model_free(m);
    }
}

static void test_synth_is_deterministic(void)
{
    edgellm_shape s = tiny_shape("llama", 0);
    const char *a = tmp_path("det-a.gguf"), *b = tmp_path("det-b.gguf"), *c = tmp_path("det-c.gguf");
    synth_file(&s, "q4_k_m", 123, 1, a);
    synth_file(&s, "q4_k_m", 123, 3, b);
    synth_file(&s, "q4_k_m", 124, 2, c);
    size_t na = 0, nb = 0, nc = 0;
    char *x = read_file(a, &na), *y = read_file(b, &nb), *z = read_file(c, &nc);
    CHECK(x && y && z && na == nb && na == nc);
    CHECK(x && y && memcmp(x, y, na) == 0);                  /* thread count does not matter */
    CHECK(x && z && na == nc && memcmp(x, z, na) != 0);      /* the seed does */
    free(x);
    free(y);
    free(z);
    /* the values: F32 synthesis has std ~0.02 and mean ~0 */
    const char *f = tmp_path("det-f32.gguf");
    synth_file(&s, "f32", 5, 2, f);
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(f, &g, NULL));
    const edgellm_gguf_tensor *t = g ? edgellm_gguf_find_tensor(g, "blk.1.ffn_down.weight") : NULL;
    CHECK(t != NULL);
    if (t) {
        const float *v = t->data;
        double m = 0, q = 0;
        for (uint64_t i = 0; i < t->n_elements; i++) m += v[i], q += (double)v[i] * v[i];
        m /= (double)t->n_elements;
        double sd = sqrt(q / (double)t->n_elements - m * m);
        CHECK_NEAR(sd, 0.02, 0.001);   /* 32768 samples: relative sd error ~0.4% */
        CHECK_NEAR(m, 0.0, 0.0005);
    }
    const edgellm_gguf_tensor *nrm = g ? edgellm_gguf_find_tensor(g, "output_norm.weight") : NULL;
    CHECK(nrm && ((const float *)nrm->data)[0] == 1.0f && ((const float *)nrm->data)[127] == 1.0f);
    edgellm_gguf_close(g);
}

/* branch_scale: attn_output and ffn_down have std * scale (the same values times the scale:
 * the same random streams), every other tensor is unchanged, the file size is the same;
 * with a scale near 0 the greedy text follows the last token only: the continuation of a
 * token is the same whatever came before it. */
static void test_synth_branch_scale(void)
{
    edgellm_shape s = tiny_shape("llama", 0);
    const char *a = tmp_path("bs-1.gguf"), *b = tmp_path("bs-s.gguf");
    synth_file(&s, "f32", 9, 1, a);
    edgellm_synth_params p = edgellm_synth_default_params();
    CHECK(p.branch_scale == 1.0f);
    p.shape = s;
    p.type = "f32";
    p.seed = 9;
    p.n_threads = 1;
    p.branch_scale = 0.001f;
    uint64_t bytes_b = 0;
    CHECK_OK(edgellm_synth(&p, b, NULL, &bytes_b, NULL));
    p.branch_scale = -1.0f;
    CHECK_EQ(edgellm_synth(&p, tmp_path("bs-bad.gguf"), NULL, NULL, NULL), EDGELLM_ERR_MISUSE);
    edgellm_gguf *ga = NULL, *gb = NULL;
    CHECK_OK(edgellm_gguf_open(a, &ga, NULL));
    CHECK_OK(edgellm_gguf_open(b, &gb, NULL));
    if (!ga || !gb) return;
    const char *names[] = {"blk.0.attn_output.weight", "blk.1.ffn_down.weight", "blk.0.attn_q.weight",
                           "blk.1.ffn_up.weight", "output.weight", "token_embd.weight"};
    for (int i = 0; i < 6; i++) {
        const edgellm_gguf_tensor *x = edgellm_gguf_find_tensor(ga, names[i]), *y = edgellm_gguf_find_tensor(gb, names[i]);
        CHECK(x && y && x->n_elements == y->n_elements);
        if (!x || !y) continue;
        const float *u = x->data, *v = y->data;
        const float f = i < 2 ? 0.001f : 1.0f;
        int same = 1;
        for (uint64_t k = 0; k < x->n_elements; k++) same &= fabsf(v[k] - f * u[k]) <= 1e-6f * fabsf(u[k]) + 1e-12f;
        CHECK(same);
    }
    edgellm_gguf_close(ga);
    edgellm_gguf_close(gb);
    /* greedy continuation of a token: the same after two different histories */
    edgellm_model *m = NULL;
    CHECK_OK(edgellm_model_load(b, NULL, &m, NULL));
    if (!m) return;
    edgellm_ctx *c = NULL;
    CHECK_OK(edgellm_ctx_new(m, NULL, &c, NULL));
    const int32_t h1[] = {1, 260, 261, 262, 280}, h2[] = {1, 290, 270, 280};
    int32_t next[2] = {-1, -2};
    for (int r = 0; r < 2 && c; r++) {
        CHECK_OK(edgellm_seq_clear(c, 0, NULL));
        edgellm_batch bt = {.size = sizeof bt, .n_tokens = r ? 4 : 5, .tokens = r ? h2 : h1};
        CHECK_OK(edgellm_decode_batch(c, &bt, NULL));
        const float *l = edgellm_ctx_logits(c);
        int best = 0;
        for (int v = 1; l && v < s.n_vocab; v++) if (l[v] > l[best]) best = v;
        next[r] = best;
    }
    CHECK_EQ(next[0], next[1]);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

/* Allocation failure at every point of a synthesis: EDGELLM_ERR_NOMEM, nothing leaked, no
 * file; the first run with all its memory succeeds. */
static void test_synth_oom_sweep(void)
{
    edgellm_shape s = tiny_shape("qwen2", 1);
    const char *out = tmp_path("oom.gguf");
    edgellm_synth_params p = edgellm_synth_default_params();
    p.shape = s;
    p.type = "q8_0";
    p.n_threads = 2;
    int n;
    for (n = 1; n < 10000; n++) {
        long live = edgellm_test_live_allocs();
        edgellm_test_alloc_fail_at(n);
        edgellm_status rc = edgellm_synth(&p, out, NULL, NULL, NULL);
        edgellm_test_alloc_fail_at(0);
        CHECK_EQ(edgellm_test_live_allocs(), live);
        if (rc == EDGELLM_OK) break;
        CHECK_EQ(rc, EDGELLM_ERR_NOMEM);
        struct stat st;
        CHECK(stat(out, &st) != 0);
        if (rc != EDGELLM_ERR_NOMEM) break;
    }
    CHECK(n > 3 && n < 10000);
}

static void test_synth_cli(void)
{
    char cmd[2048], out[16384];
    const char *o = tmp_path("cli-synth.gguf");
    snprintf(cmd, sizeof cmd, "%s synth --n-embd 64 --n-layer 1 --n-head 4 --n-ff 128 --n-vocab 260 --type q8_0 -o %s",
             EDGELLM_CLI, o);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    snprintf(cmd, sizeof cmd, "%s synth --list", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "tinyllama-1.1b") && strstr(out, "qwen2.5-0.5b") && strstr(out, "llama-2-7b"));
    static const char *bad[] = {"--shape nope --type q4_0 -o x.gguf", "--n-embd 64 --type q4_0 -o x.gguf",
                                "--shape tinyllama-1.1b --type q4_0", "--shape tinyllama-1.1b -o x.gguf",
                                "--n-embd 60 --n-layer 1 --n-head 7 --n-ff 64 --n-vocab 300 --type q8_0 -o x.gguf",
                                "--shape tinyllama-1.1b --type q4_0 --arch gpt2 -o x.gguf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s synth %s", test_tmpdir(), EDGELLM_CLI, bad[i]);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    }
    struct stat st;
    snprintf(cmd, sizeof cmd, "%s/x.gguf", test_tmpdir());
    CHECK(stat(cmd, &st) != 0);

    /* values that used to be replaced silently by defaults are bad command lines */
    static const char *bad_values[] = {"--rope-theta -5", "--rope-theta 0", "--rms-eps 0", "--rms-eps -1",
                                       "--std -1", "--std 0", "--rope-theta inf"};
    for (size_t i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
        snprintf(cmd, sizeof cmd, "cd %s && %s synth --shape tinyllama-1.1b --type q4_0 -o x.gguf %s", test_tmpdir(),
                 EDGELLM_CLI, bad_values[i]);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
        CHECK(strstr(out, "finite number > 0") && strstr(out, "see 'edgellm synth --help'") &&
              !strstr(out, "usage:") && !strstr(out, "threads"));
    }
    /* an unknown type: the command named once */
    snprintf(cmd, sizeof cmd, "cd %s && %s synth --shape tinyllama-1.1b --type bogus -o x.gguf", test_tmpdir(),
             EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    CHECK(strstr(out, "edgellm synth: ") && !strstr(out, "synth: synth") && !strstr(out, "quantize:"));

    /* a folder as -o fails at once, before any work */
    snprintf(cmd, sizeof cmd, "%s synth --shape llama-2-7b --type q4_0 -o %s", EDGELLM_CLI, test_tmpdir());
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "is a folder") != NULL);
    /* a model larger than the free space is refused up front, naming both sizes; nothing is left */
    snprintf(cmd, sizeof cmd, "%s synth --shape llama-2-7b --n-layer 1000 --type f32 -o %s/huge.gguf", EDGELLM_CLI,
             test_tmpdir());
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "huge.gguf: the model needs ") && strstr(out, "GiB free"));
    snprintf(cmd, sizeof cmd, "ls %s | grep -c huge", test_tmpdir());
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);   /* grep -c finds nothing: exit 1 */
}

/* ---- a minimal JSON syntax checker (RFC 8259 grammar, no semantics) ---- */
static const char *js_ws(const char *p) { while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') p++; return p; }
static const char *js_value(const char *p, int depth);
static const char *js_string(const char *p)
{
    if (*p++ != '"') return NULL;
    while (*p && *p != '"') {
        if ((unsigned char)*p < 0x20) return NULL;
        if (*p == '\\') {
            p++;
            if (*p == 'u') { for (int i = 1; i <= 4; i++) if (!isxdigit((unsigned char)p[i])) return NULL; p += 4; }
            else if (!strchr("\"\\/bfnrt", *p)) return NULL;
        }
        p++;
    }
    return *p == '"' ? p + 1 : NULL;
}
static const char *js_number(const char *p)
{
    const char *s = p;
    if (*p == '-') p++;
    if (!isdigit((unsigned char)*p)) return NULL;
    if (*p == '0') p++; else while (isdigit((unsigned char)*p)) p++;
    if (*p == '.') { p++; if (!isdigit((unsigned char)*p)) return NULL; while (isdigit((unsigned char)*p)) p++; }
    if (*p == 'e' || *p == 'E') { p++; if (*p == '+' || *p == '-') p++; if (!isdigit((unsigned char)*p)) return NULL; while (isdigit((unsigned char)*p)) p++; }
    return p > s ? p : NULL;
}
static const char *js_value(const char *p, int depth)
{
    if (depth > 32) return NULL;
    p = js_ws(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = js_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                if (!(p = js_string(js_ws(p)))) return NULL;
                p = js_ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = js_value(p, depth + 1))) return NULL;
            p = js_ws(p);
            if (*p == ',') { p++; continue; }
            return *p == close ? p + 1 : NULL;
        }
    }
    if (*p == '"') return js_string(p);
    if (!strncmp(p, "true", 4)) return p + 4;
    if (!strncmp(p, "false", 5)) return p + 5;
    if (!strncmp(p, "null", 4)) return p + 4;
    return js_number(p);
}
static bool json_valid(const char *s)
{
    const char *e = js_value(s, 0);
    return e && *js_ws(e) == 0;
}
static int count_str(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++) n++;
    return n;
}

/* pp16 and tg8 at 1 and 2 threads, n_reps repetitions, against a given 10 GB/s (no
 * 1-second bandwidth run in a unit test) */
static edgellm_bench_params small_bench(int n_reps)
{
    edgellm_bench_params p = edgellm_bench_default_params();
    p.n_prompt = 16;
    p.n_gen = 8;
    p.n_reps = n_reps;
    p.threads[0] = 1;
    p.threads[1] = 2;
    p.n_threads_list = 2;
    p.bw_gbps = 10.0;
    return p;
}

static void test_bench_library(void)
{
    edgellm_shape s = tiny_shape("llama", 1);
    const char *m = tmp_path("bench.gguf");
    synth_file(&s, "q8_0", 1, 2, m);
    edgellm_bench_params p = small_bench(2);
    edgellm_bench_report r;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_bench(m, &p, &r, &err), EDGELLM_OK);
    CHECK_EQ(r.n_results, 4);
    CHECK(!strcmp(r.results[0].test, "pp16") && !strcmp(r.results[1].test, "tg8"));
    CHECK_EQ(r.results[2].n_threads, 2);
    for (int i = 0; i < r.n_results; i++) {
        CHECK(r.results[i].avg_ts > 0 && r.results[i].avg_ns > 0 && r.results[i].stddev_ts >= 0);
        CHECK(r.results[i].samples_ts[0] > 0 && r.results[i].samples_ts[1] > 0);
    }
    CHECK(r.results[0].ttft_ms > 0);
    /* one thread cannot get more than one CPU: cpu_frac <= 1 (the CPU-time window nests in
     * the wall-time one; + 0.1 % for the clocks' granularity). Counting bench's own /proc
     * walk as run time once gave 110-125 % on runs this short, reading the CPU clock outside
     * the wall clock 100.2-100.5 % */
    for (int i = 0; i < 2; i++) CHECK(r.results[i].cpu_frac > 0 && r.results[i].cpu_frac <= 1.001);
    /* tg8 speed x bytes per token / 10 GB/s */
    CHECK_NEAR(r.results[1].roofline_frac, r.results[1].avg_ts * (double)r.results[1].bytes_per_token / 1e10, 1e-9);
    /* a given bandwidth serves every thread count: both fractions are against it */
    CHECK_NEAR(r.results[3].bw_gbps, 10.0, 0);
    CHECK_NEAR(r.results[3].roofline_frac_all, r.results[3].roofline_frac, 0);
    CHECK_EQ(r.results[0].roofline_frac, 0);   /* pp: no roofline */
    CHECK(r.load_ms > 0 && r.load_warm_ms > 0 && r.peak_rss_bytes > 0);
    CHECK_EQ(r.model_n_params, shape_params(&s));
    CHECK(strstr(r.model_type, "llama") && strstr(r.model_type, "Q8_0"));
    /* bytes per token, recomputed from the file: tied, so every tensor once, the embedding
     * table once more as the head and one row as the lookup; plus K/V rows at depth 4.5 -> 4 */
    edgellm_gguf *g = NULL;
    CHECK_OK(edgellm_gguf_open(m, &g, NULL));
    uint64_t sum = 0, row = 0;
    for (int64_t i = 0; g && i < edgellm_gguf_n_tensors(g); i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
        sum += t->size_bytes;
        if (edgellm_str_eq(t->name, "token_embd.weight")) row = t->size_bytes / 300;
    }
    edgellm_gguf_close(g);
    CHECK_EQ(r.weight_bytes_per_token, sum + row);
    CHECK_EQ(r.results[1].bytes_per_token, sum + row + 2ull * 2 * 4 * 64 * 4);   /* 2 layers, (8+1)/2 = 4 rows of kv_dim 64 */
    /* bad calls */
    p.n_prompt = 0;
    p.n_gen = 0;
    CHECK_EQ(edgellm_bench(m, &p, &r, NULL), EDGELLM_ERR_MISUSE);
    p.n_gen = 4;
    p.threads[0] = 0;
    CHECK_EQ(edgellm_bench(m, &p, &r, NULL), EDGELLM_ERR_MISUSE);
    p.threads[0] = 1;
    CHECK_EQ(edgellm_bench("/nonexistent.gguf", &p, &r, &err), EDGELLM_ERR_IO);
}

/* Context depth (llama-bench -d): the tests run again with D tokens in the KV cache,
 * labelled "tg8 @ d24"; the runs really start from D tokens (n_depth is the cache's
 * n_past when each run began), and the roofline bytes count the D + (n+1)/2 rows read. */
static void test_bench_depth(void)
{
    edgellm_shape s = tiny_shape("llama", 1);
    const char *m = tmp_path("bench-depth.gguf");
    synth_file(&s, "q8_0", 1, 2, m);
    edgellm_bench_params p = small_bench(3);   /* each run must go back to the depth, or the cache overflows */
    p.depths[0] = 0;
    p.depths[1] = 24;
    p.n_depths = 2;
    edgellm_bench_report r;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_bench(m, &p, &r, &err), EDGELLM_OK);
    CHECK_EQ(r.n_results, 8);   /* 2 thread counts x 2 depths x (pp, tg) */
    static const char *const tests[] = {"pp16", "tg8", "pp16 @ d24", "tg8 @ d24"};
    for (int i = 0; i < r.n_results && i < 8; i++) {
        CHECK(!strcmp(r.results[i].test, tests[i % 4]));
        CHECK_EQ(r.results[i].n_depth, i % 4 < 2 ? 0 : 24);
        CHECK_EQ(r.results[i].n_threads, i < 4 ? 1 : 2);
        CHECK(r.results[i].avg_ts > 0);
    }
    /* 2 layers x (24 + (8+1)/2) rows of kv_dim 64 floats, K and V, more than at depth 0 */
    CHECK_EQ(r.results[3].bytes_per_token - r.results[1].bytes_per_token, 2ull * 2 * 24 * 64 * 4);
    CHECK(r.results[2].ttft_ms > 0);
    /* bad depths */
    p.depths[1] = -1;
    CHECK_EQ(edgellm_bench(m, &p, &r, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "depth -1") != NULL);
    p.depths[1] = 24;
    p.n_depths = EDGELLM_BENCH_MAX_DEPTHS + 1;
    CHECK_EQ(edgellm_bench(m, &p, &r, NULL), EDGELLM_ERR_MISUSE);
    p.n_depths = EDGELLM_BENCH_MAX_DEPTHS;   /* 16 thread counts x 8 depths x 2 > the results */
    for (int i = 0; i < EDGELLM_BENCH_MAX_DEPTHS; i++) p.depths[i] = i;
    for (int i = 0; i < EDGELLM_BENCH_MAX_THREADS_LIST; i++) p.threads[i] = 1;
    p.n_threads_list = EDGELLM_BENCH_MAX_THREADS_LIST;
    CHECK_EQ(edgellm_bench(m, &p, &r, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "more than") != NULL);
    /* the command line: -d, its JSON n_depth and CSV column, bad values */
    char cmd[2048];
    static char out[65536];
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 4 -n 2 -d 0,12 -t 1 -r 1 -o json --bw-gbps 5 2>/dev/null)",
             EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(json_valid(out) && count_str(out, "\"test\": ") == 4);
    CHECK_EQ(count_str(out, "\"n_depth\": 12"), 2);
    CHECK_EQ(count_str(out, "\"n_depth\": 0"), 2);
    CHECK(strstr(out, "\"test\": \"tg2 @ d12\"") != NULL);
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 0 -n 2 --n-depth 12 -t 1 -r 1 -o csv --bw-gbps 5 2>/dev/null)",
             EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, ",n_gen,n_depth,test,") && strstr(out, ",0,2,12,tg2 @ d12,"));
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 0 -n 2 -d 12 -t 1 -r 1 --bw-gbps 5 2>/dev/null)", EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "| tg2 @ d12 |") != NULL);
    CHECK(strstr(out, "trained context") == NULL);
    /* past the trained context (the tiny shape's 256): measured, with a note on stderr */
    snprintf(cmd, sizeof cmd, "%s bench -m %s -p 0 -n 2 -d 300 -t 1 -r 1 --bw-gbps 5", EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "reach 302 positions") && strstr(out, "trained context length 256") &&
          strstr(out, "| tg2 @ d300 |"));
    static const char *bad[] = {"-d -1", "-d 1,x", "-d ''", "-d 1,2,3,4,5,6,7,8,9", "-d 1048577"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s bench -m %s %s", EDGELLM_CLI, m, bad[i]);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
        CHECK(strstr(out, "-d") != NULL);
    }
}

static void test_bench_cli_json_and_md(void)
{
    edgellm_shape s = tiny_shape("qwen2", 0);
    const char *m = tmp_path("bench-cli.gguf");
    synth_file(&s, "q4_0", 3, 2, m);
    char cmd[2048];
    static char out[65536];
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 8 -n 4 -t 1,2 -r 2 -o json --bw-gbps 5 2>/dev/null)", EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(json_valid(out));
    if (!json_valid(out)) fprintf(stderr, "   not JSON:\n%.2000s\n", out);
    CHECK_EQ(count_str(out, "\"test\": "), 4);   /* one object per test */
    static const char *fields[] = {"\"model_type\"", "\"model_size\"", "\"model_n_params\"", "\"n_threads\"",
                                   "\"n_prompt\"", "\"n_gen\"", "\"avg_ts\"", "\"stddev_ts\"", "\"avg_ns\"",
                                   "\"stddev_ns\"", "\"samples_ts\"", "\"load_ms\"", "\"ttft_ms\"",
                                   "\"peak_rss_bytes\"", "\"roofline_frac\"", "\"cpu_info\"", "\"kernels\""};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) CHECK_EQ(count_str(out, fields[i]), 4);
    CHECK(strstr(out, "\"test\": \"pp8\"") && strstr(out, "\"test\": \"tg4\""));
    CHECK(strstr(out, "\"model_type\": \"qwen2 ") != NULL);
    /* -p 0 skips pp */
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 0 -n 2 -t 1 -r 1 -o json --bw-gbps 5 2>/dev/null)", EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(json_valid(out) && count_str(out, "\"test\": ") == 1 && strstr(out, "tg2"));
    /* markdown and csv */
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 8 -n 2 -t 1 -r 1 --bw-gbps 5 2>/dev/null)", EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "| model |") && strstr(out, "| pp8 |") && strstr(out, "| tg2 |") && strstr(out, "peak RSS"));
    CHECK(strstr(out, "CPU: ") && strstr(out, "; kernels: "));   /* results are tuned per CPU: say which */
#if defined(__x86_64__) && defined(__linux__)
    CHECK(strstr(out, " (family 0x") != NULL);
#endif
    CHECK(strstr(out, "type_k") == NULL);   /* the default F32 cache: no KV columns, as llama-bench */
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 0 -n 2 -t 1 -r 1 --kv-type f16 --bw-gbps 5 2>/dev/null)", EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "| type_k | type_v |") && strstr(out, "| f16 | f16 | tg2 |"));
    snprintf(cmd, sizeof cmd, "(%s bench -m %s -p 8 -n 2 -t 1 -r 1 -o csv --bw-gbps 5 2>/dev/null)", EDGELLM_CLI, m);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(!strncmp(out, "model_filename,model_type", 25) && count_str(out, "\n") == 3);
    CHECK(strstr(out, ",test_time,type_k,type_v\n") && count_str(out, ",f32,f32\n") == 2);
    /* the pp row's roofline fields are empty (JSON: null), the tg row's a number */
    const char *pp_row = strstr(out, ",pp8,"), *tg_row = strstr(out, ",tg2,");
    CHECK(pp_row && tg_row);
    if (pp_row && tg_row) {
        int commas = 0;
        const char *q = pp_row;
        for (; *q && *q != '\n' && commas < 1000; q++) commas += *q == ',';
        CHECK(strstr(pp_row, ",,") != NULL && strstr(pp_row, ",,") < q);
        const char *e = strchr(tg_row, '\n');
        CHECK(e && !memmem(tg_row, (size_t)(e - tg_row), ",,", 2));
    }
    /* bad command lines and files */
    static const char *bad[] = {"-m x.gguf -o xml", "-m x.gguf -t 0", "-m x.gguf -p 0 -n 0", "-m x.gguf -r 0",
                                "", "-m x.gguf --frobnicate"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(cmd, sizeof cmd, "%s bench %s", EDGELLM_CLI, bad[i]);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    }
    snprintf(cmd, sizeof cmd, "%s bench -m /nonexistent.gguf -p 4 -n 2 --bw-gbps 5", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 1);
    CHECK(strstr(out, "/nonexistent.gguf") != NULL);
}

static void test_bench_bandwidth_cli(void)
{
    char cmd[512], out[4096];
    snprintf(cmd, sizeof cmd, "%s bench --bandwidth -t 1", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    double gbps = 0;
    const char *p = strstr(out, "bandwidth: ");
    CHECK(p && sscanf(p, "bandwidth: %lf GB/s", &gbps) == 1);
    CHECK(gbps > 0.1 && gbps < 10000);
    /* -o json / csv: machine-readable, one entry per thread count */
    snprintf(cmd, sizeof cmd, "%s bench --bandwidth -t 1 -o json", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    p = strstr(out, "\"best_gbps\": ");
    CHECK(out[0] == '[' && strstr(out, "{\"n_threads\": 1, ") && p && sscanf(p, "\"best_gbps\": %lf", &gbps) == 1 &&
          gbps > 0.1 && strstr(out, "}\n]\n"));
    snprintf(cmd, sizeof cmd, "%s bench --bandwidth -t 1 -o csv", EDGELLM_CLI);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(!strncmp(out, "n_threads,best_gbps,median_gbps,mean_gbps,n_runs,buffer_bytes\n1,", 64));
    /* a thread list with an empty entry is refused wherever it is */
    static const char *lists[] = {"1,", ",1", "1,,2"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "%s bench --bandwidth -t %s", EDGELLM_CLI, lists[i]);
        CHECK_EQ(run_capture(cmd, out, sizeof out), 2);
    }
    /* decode faster than the roofline (here: a given bandwidth far below any machine's)
     * gets the footer's note, which names the cause */
    NEED_SHARED(stories, "models/stories260K/stories260K.gguf");
    snprintf(cmd, sizeof cmd, "%s bench -m %s -p 0 -n 4 -r 1 -t 1 --no-cold --bw-gbps 0.001", EDGELLM_CLI, stories);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "note: decode ran faster than the memory roofline") &&
          strstr(out, "or the given bandwidth is below what this machine reads"));
    snprintf(cmd, sizeof cmd, "%s bench -m %s -p 0 -n 4 -r 1 -t 1 --no-cold --bw-gbps 100000", EDGELLM_CLI, stories);
    CHECK_EQ(run_capture(cmd, out, sizeof out), 0);
    CHECK(strstr(out, "faster than the memory roofline") == NULL);
}

/* The paired read of bench: a plain read of a given buffer. Bad arguments give 0; a real
 * buffer a positive rate whose checksum is consumed (values are not checked: speed). */
static void test_membw_read_of_a_buffer(void)
{
    size_t n = (size_t)8 << 20;
    uint8_t *buf = malloc(n + 3);
    CHECK(buf != NULL);
    if (!buf) return;
    memset(buf, 1, n + 3);
    CHECK(edgellm_membw_read_gbps(buf, n, 1, 2) > 0);
    CHECK(edgellm_membw_read_gbps(buf + 3, n, 2, 1) > 0);   /* unaligned start */
    CHECK_EQ(edgellm_membw_read_gbps(NULL, n, 1, 1), 0);
    CHECK_EQ(edgellm_membw_read_gbps(buf, n, 0, 1), 0);
    CHECK_EQ(edgellm_membw_read_gbps(buf, n, 1, 0), 0);
    CHECK_EQ(edgellm_membw_read_gbps(buf, 16, 4, 1), 0);     /* less than a slice per thread */
    free(buf);
}

int main(void)
{
    RUN(test_builtin_shapes_match_published_sizes);
    RUN(test_synth_loads_and_runs);
    RUN(test_synth_is_deterministic);
    RUN(test_synth_branch_scale);
    RUN(test_synth_oom_sweep);
    RUN(test_synth_cli);
    RUN(test_bench_library);
    RUN(test_bench_depth);
    RUN(test_bench_cli_json_and_md);
    RUN(test_bench_bandwidth_cli);
    RUN(test_membw_read_of_a_buffer);
    return test_summary();
}
