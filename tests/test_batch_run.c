/* test_batch_run.c — offline batches: edgellm_generate_batch_each (per-prompt parameters),
 * `edgellm run --batch-file` (order, ids, per-line n_predict, the same text as `run -p`
 * alone, hostile lines) and `edgellm bench -b` (options, the table in md/csv/json,
 * edgellm_batched_bench's rows), the KV cache of one sequence against
 * edgellm_plan_kv_bytes, and plan's batched-decode model (EDGELLM_PLAN_BATCH_MODEL). */
#include "test_util.h"
#include "model/model.h"
#include "tools/plan.h"
#include "kernels/matmul.h"
#include "tensor/types.h"

#define run_cli test_run_cli

static const char *tmp_path(const char *name)
{
    static char slots[64][512];
    static int used;
    if (used == 64) { fprintf(stderr, "tmp_path: out of slots\n"); exit(1); }
    char *p = slots[used++];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

static const char *write_tmp(const char *name, const char *text)
{
    const char *p = tmp_path(name);
    if (write_file(p, text, strlen(text)) != 0) { fprintf(stderr, "cannot write %s\n", p); exit(1); }
    return p;
}

/* ------------------------------------------------------------ the library ---- */

typedef struct {
    char text[8][512];
    size_t len[8];
} texts;

static int collect(int index, int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    texts *t = user;
    if (index >= 0 && index < 8 && t->len[index] + len < sizeof t->text[index]) {
        memcpy(t->text[index] + t->len[index], piece, len);
        t->len[index] += len;
    }
    return 0;
}

static int collect1(int32_t token, const char *piece, size_t len, void *user) { return collect(0, token, piece, len, user); }

static void test_generate_batch_each(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    edgellm_model *m = test_load_model(path);
    CHECK(m != NULL);
    if (!m) return;
    const char *prompts[5] = {"Once upon a time", "The cat", "", "Lily and Tom", NULL};
    const int n_pred[5] = {12, 3, 7, 0, 5};
    edgellm_generate_params p[5];
    const edgellm_generate_params *pp[5];
    const int32_t ids[2] = {1, 403};   /* BOS and a token: a prompt given as ids */
    for (int i = 0; i < 5; i++) {
        p[i] = edgellm_generate_default_params();
        p[i].n_predict = n_pred[i];
        p[i].sampling.temperature = i == 1 ? 0.8f : 0.0f;   /* one sampled with its seed */
        p[i].sampling.seed = 1234;
        pp[i] = &p[i];
    }
    p[4].prompt_tokens = ids;
    p[4].n_prompt_tokens = 2;
    for (int B = 1; B <= 3; B += 2) {
        edgellm_ctx_params cp = edgellm_ctx_default_params();
        cp.n_ctx = 64;
        cp.n_seq = B;
        edgellm_ctx *c = NULL;
        CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
        if (!c) continue;
        texts got = {0};
        edgellm_generate_stats st[5];
        for (int i = 0; i < 5; i++) st[i] = (edgellm_generate_stats){.size = sizeof st[i]};
        edgellm_error err = {0};
        CHECK_EQ(edgellm_generate_batch_each(c, prompts, pp, 5, collect, &got, st, &err), EDGELLM_OK);
        for (int i = 0; i < 5; i++) {
            /* alone, in a fresh context: the same text and counts */
            edgellm_ctx *a = NULL;
            cp.n_seq = 1;
            CHECK_OK(edgellm_ctx_new(m, &cp, &a, NULL));
            texts one = {0};
            edgellm_generate_stats s1 = {.size = sizeof s1};
            CHECK_EQ(edgellm_generate(a, prompts[i], &p[i], collect1, &one, &s1, NULL), EDGELLM_OK);
            CHECK_EQ(got.len[i], one.len[0]);
            CHECK(memcmp(got.text[i], one.text[0], one.len[0]) == 0);
            CHECK_EQ(st[i].n_generated, s1.n_generated);
            CHECK_EQ(st[i].n_prompt, s1.n_prompt);
            CHECK_EQ(st[i].stop, s1.stop);
            if (i != 1) CHECK_EQ(st[i].n_generated, n_pred[i]);   /* greedy noise never hits EOS this soon */
            edgellm_ctx_free(a);
        }
        CHECK_EQ(st[4].n_prompt, 2);
        /* misuse */
        CHECK_EQ(edgellm_generate_batch_each(c, prompts, NULL, 5, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
        const edgellm_generate_params *with_null[2] = {&p[0], NULL};
        CHECK_EQ(edgellm_generate_batch_each(c, prompts, with_null, 2, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
        CHECK(strstr(err.msg, "params[1]") != NULL);
        edgellm_generate_params zero = {0};
        const edgellm_generate_params *bad[1] = {&zero};
        CHECK_EQ(edgellm_generate_batch_each(c, prompts, bad, 1, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
        CHECK_EQ(edgellm_generate_batch_each(c, prompts, pp, 0, NULL, NULL, NULL, &err), EDGELLM_OK);
        edgellm_ctx_free(c);
    }
    edgellm_model_free(m);
}

/* The KV cache one sequence takes in a context equals plan's formula for the same n_ctx. */
static void check_kv_bytes(const edgellm_model *m, int kv_type, int n_ctx, int n_seq)
{
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_seq = n_seq;
    cp.kv_type = kv_type;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    CHECK_EQ(edgellm_ctx_new(m, &cp, &c, &err), EDGELLM_OK);
    if (!c) { fprintf(stderr, "   %s\n", err.msg); return; }
    const edgellm_hparams *hp = &m->hp;
    const uint64_t plan = edgellm_plan_kv_bytes(hp->n_layer, n_ctx, hp->n_head_kv, hp->head_dim, kv_type);
    CHECK(plan > 0);
    CHECK_EQ(c->kv.size_bytes % (size_t)n_seq, 0);
    CHECK_EQ(c->kv.size_bytes / (size_t)n_seq, plan);
    edgellm_ctx_free(c);
}

static void test_kv_bytes_per_sequence_match_plan(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    edgellm_model *m = test_load_model(path);
    CHECK(m != NULL);
    if (!m) return;
    check_kv_bytes(m, EDGELLM_TYPE_F32, 100, 3);
    check_kv_bytes(m, EDGELLM_TYPE_F16, 512, 8);
    edgellm_model_free(m);
    /* Q8_0 needs head_dim a multiple of 32: a small synthetic model with head_dim 32 */
    edgellm_synth_params sp = edgellm_synth_default_params();
    snprintf(sp.shape.name, sizeof sp.shape.name, "kv-test");
    snprintf(sp.shape.arch, sizeof sp.shape.arch, "llama");
    sp.shape.n_layer = 2, sp.shape.n_embd = 128, sp.shape.n_head = 4, sp.shape.n_head_kv = 2;
    sp.shape.n_ff = 256, sp.shape.n_vocab = 300, sp.shape.n_ctx_train = 512;
    sp.shape.rope_theta = 10000, sp.shape.rms_eps = 1e-5f;
    sp.type = "q8_0";
    sp.n_threads = 1;
    const char *out = tmp_path("kv32.gguf");
    edgellm_error err = {0};
    CHECK_EQ(edgellm_synth(&sp, out, NULL, NULL, &err), EDGELLM_OK);
    if (err.msg[0]) fprintf(stderr, "   synth: %s\n", err.msg);
    if (!(m = test_load_model(out))) { CHECK(m != NULL); return; }
    check_kv_bytes(m, EDGELLM_TYPE_Q8_0, 96, 4);
    check_kv_bytes(m, EDGELLM_TYPE_F16, 96, 4);
    edgellm_model_free(m);
}

typedef struct {
    int n;
    int b[8];
    edgellm_batched_bench_info info;
    bool sane;
} rows_seen;

static int on_row(const edgellm_batched_bench_info *info, const edgellm_batched_bench_row *r, void *user)
{
    rows_seen *s = user;
    if (s->n < 8) s->b[s->n] = r->b;
    s->n++;
    s->info = *info;
    s->sane &= r->pp == 8 && r->tg == 4 && r->n_kv == r->b * 12 && r->t_pp > 0 && r->t_tg > 0 &&
               fabs(r->t - (r->t_pp + r->t_tg)) < 1e-9 && fabs(r->s_tg - r->b * 4 / r->t_tg) < 1e-6 * r->s_tg &&
               fabs(r->s_pp - r->b * 8 / r->t_pp) < 1e-6 * r->s_pp && fabs(r->s - r->b * 12 / r->t) < 1e-6 * r->s &&
               r->s_tg_peak >= r->s_tg * (1 - 1e-9);
    return 0;
}

static int stop_at_first(const edgellm_batched_bench_info *info, const edgellm_batched_bench_row *r, void *user)
{
    (void)info, (void)r;
    (*(int *)user)++;
    return 1;
}

static void test_batched_bench_api(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    edgellm_batched_bench_params p = edgellm_batched_bench_default_params();
    CHECK_EQ(p.n_prompt, 128);
    CHECK_EQ(p.n_gen, 64);
    p.n_prompt = 8;
    p.n_gen = 4;
    p.sizes[0] = 1, p.sizes[1] = 3, p.sizes[2] = 2;
    p.n_sizes = 3;
    p.n_threads = 2;
    p.kv_type = EDGELLM_TYPE_F16;
    rows_seen s = {.sane = true};
    edgellm_error err = {0};
    CHECK_EQ(edgellm_batched_bench(path, &p, on_row, &s, &err), EDGELLM_OK);
    CHECK_EQ(s.n, 3);
    CHECK_EQ(s.b[0], 1);
    CHECK_EQ(s.b[1], 3);
    CHECK_EQ(s.b[2], 2);
    CHECK(s.sane);
    CHECK_EQ(s.info.n_seq, 3);
    CHECK_EQ(s.info.n_ctx, 12);
    CHECK_EQ(s.info.n_threads, 2);
    CHECK(strstr(s.info.model_type, "llama") != NULL);
    /* the reported KV bytes per sequence are plan's */
    edgellm_plan_model pm;
    CHECK_OK(edgellm_plan_model_from_gguf(path, &pm, NULL));
    CHECK_EQ(s.info.kv_bytes_per_seq, edgellm_plan_kv_bytes(pm.n_layer, 12, pm.n_head_kv, pm.head_dim, EDGELLM_TYPE_F16));
    /* misuse and cancel */
    p.sizes[1] = 65;
    CHECK_EQ(edgellm_batched_bench(path, &p, on_row, &s, &err), EDGELLM_ERR_MISUSE);
    p.sizes[1] = 3;
    p.n_gen = 0;
    CHECK_EQ(edgellm_batched_bench(path, &p, on_row, &s, &err), EDGELLM_ERR_MISUSE);
    p.n_gen = 4;
    int calls = 0;
    CHECK_EQ(edgellm_batched_bench(path, &p, stop_at_first, &calls, &err), EDGELLM_ERR_CANCELLED);
    CHECK_EQ(calls, 1);
    CHECK_EQ(edgellm_batched_bench("/nonexistent/x.gguf", &p, on_row, &s, &err), EDGELLM_ERR_IO);
}

/* ---------------------------------------------------------- run --batch-file ---- */

/* The "text" of output line i (JSON-unescaped for the plain ASCII the stories model
 * writes: \" \\ \n only), or NULL. */
static char *line_text(const char *out, int i)
{
    const char *l = out;
    for (int k = 0; k < i && l; k++) {
        l = strchr(l, '\n');
        if (l) l++;
    }
    if (!l) return NULL;
    const char *t = strstr(l, "\"text\": \"");
    const char *nl = strchr(l, '\n');
    if (!t || (nl && t > nl)) return NULL;
    t += 9;
    char *r = malloc(strlen(t) + 1);
    size_t n = 0;
    for (; *t && *t != '"'; t++) {
        if (*t == '\\') {
            t++;
            r[n++] = *t == 'n' ? '\n' : *t;
        } else {
            r[n++] = *t;
        }
    }
    r[n] = 0;
    return r;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_run_batch_file(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    const char *prompts[6] = {"Once upon a time", "The cat", "", "Lily and Tom went to the park", "A \\\"big\\\" dog",
                              "One day"};
    const char *alone_p[6] = {"Once upon a time", "The cat", "", "Lily and Tom went to the park", "A \"big\" dog",
                              "One day"};
    const int n_pred[6] = {-1, 5, 9, 0, 14, 3};   /* -1: the -n default */
    char file[4096] = "";
    size_t len = 0;
    for (int i = 0; i < 6; i++) {
        if (i == 3) len += (size_t)snprintf(file + len, sizeof file - len, "\n   \n");   /* blank lines are skipped */
        if (n_pred[i] < 0)
            len += (size_t)snprintf(file + len, sizeof file - len, "{\"id\": \"p%d\", \"prompt\": \"%s\"}\n", i, prompts[i]);
        else if (i == 4)
            len += (size_t)snprintf(file + len, sizeof file - len, "{\"prompt\": \"%s\", \"max_tokens\": %d, \"id\": %d, "
                                    "\"other\": [1, 2]}\n", prompts[i], n_pred[i], 40 + i);
        else
            len += (size_t)snprintf(file + len, sizeof file - len, "{\"prompt\": \"%s\", \"n_predict\": %d, \"id\": "
                                    "{\"k\": %d}}\n", prompts[i], n_pred[i], i);
    }
    const char *in = write_tmp("prompts.jsonl", file);
    char args[8192], err[8192];
    char *alone[6] = {0};
    for (int i = 0; i < 6; i++) {   /* each prompt alone: run -p, greedy */
        char *out = NULL;
        snprintf(args, sizeof args, "run -m %s -p '%s' -n %d --temp 0", model, alone_p[i], n_pred[i] < 0 ? 11 : n_pred[i]);
        CHECK_EQ(run_cli(args, &out, err, sizeof err), 0);
        size_t pl = strlen(alone_p[i]), ol = strlen(out);
        CHECK(ol >= pl + 1 && !strncmp(out, alone_p[i], pl));
        if (ol >= pl + 1) out[ol - 1] = 0;   /* run's final newline */
        alone[i] = strdup(ol >= pl ? out + pl : "");
        free(out);
    }
    const int batches[3] = {1, 2, 8};
    for (int bi = 0; bi < 3; bi++) {
        const char *o = tmp_path(bi == 0 ? "out1.jsonl" : bi == 1 ? "out2.jsonl" : "out8.jsonl");
        snprintf(args, sizeof args, "run -m %s --batch-file %s -b %d -n 11 --temp 0 -o %s", model, in, batches[bi], o);
        char *so = NULL;
        int rc = run_cli(args, &so, err, sizeof err);
        CHECK_EQ(rc, 0);
        if (rc) fprintf(stderr, "   %s\n", err);
        CHECK_EQ(strlen(so), 0);                                   /* -o: nothing on stdout */
        CHECK(strstr(err, "batch: 6 prompts") != NULL);            /* the summary */
        CHECK(strstr(err, "tok/s aggregate") != NULL);
        free(so);
        char *out = read_file(o, NULL);
        CHECK(out != NULL);
        if (!out) continue;
        CHECK_EQ(count_lines(out), 6);
        for (int i = 0; i < 6; i++) {
            char want[64];
            snprintf(want, sizeof want, "{\"index\": %d, ", i);
            const char *l = out;
            for (int k = 0; k < i && l; k++) l = strchr(l, '\n') + 1;
            CHECK(!strncmp(l, want, strlen(want)));                 /* input order */
            char *t = line_text(out, i);
            CHECK(t && !strcmp(t, alone[i]));                       /* the text of run -p alone */
            if (t && strcmp(t, alone[i])) fprintf(stderr, "   prompt %d: batch '%s' alone '%s'\n", i, t, alone[i]);
            free(t);
        }
        CHECK(strstr(out, "\"id\": \"p0\", \"prompt\": \"Once upon a time\"") != NULL);
        CHECK(strstr(out, "\"id\": {\"k\":1}") != NULL);            /* any JSON value, echoed */
        CHECK(strstr(out, "\"id\": 44, \"prompt\": \"A \\\"big\\\" dog\"") != NULL);
        CHECK(strstr(out, "\"n_generated\": 11, \"stop\": \"length\"") != NULL);
        CHECK(strstr(out, "\"n_generated\": 5, \"stop\": \"length\"") != NULL);
        CHECK(strstr(out, "\"n_generated\": 14, \"stop\": \"length\"") != NULL);
        CHECK(strstr(out, "\"n_generated\": 0, \"stop\": \"length\"") != NULL);
        CHECK(strstr(out, "\"ttft_ms\": ") != NULL && strstr(out, "\"tok_s\": ") != NULL);
        free(out);
    }
    /* stdout by default, and -c per sequence: a small n_ctx stops at ctx_full */
    char *so = NULL;
    snprintf(args, sizeof args, "run -m %s --batch-file %s -b 3 -n 11 -c 14 --temp 0", model, in);
    CHECK_EQ(run_cli(args, &so, err, sizeof err), 0);
    CHECK_EQ(count_lines(so), 6);
    CHECK(strstr(so, "\"stop\": \"ctx_full\"") != NULL);
    CHECK(strstr(err, "n_ctx 14 per sequence") != NULL);
    free(so);
    for (int i = 0; i < 6; i++) free(alone[i]);
}

/* A bad file: exit 1, the message names FILE:LINE (or FILE) and the problem, no output. */
static void expect_bad(const char *model, const char *name, const char *text, const char *where, const char *what)
{
    const char *in = write_tmp(name, text);
    const char *o = tmp_path("never.jsonl");
    char args[4096], err[8192], want[600];
    snprintf(args, sizeof args, "run -m %s --batch-file %s -n 4 --temp 0 -o %s", model, in, o);
    char *so = NULL;
    const int rc = run_cli(args, &so, err, sizeof err);
    CHECK_EQ(rc, 1);
    snprintf(want, sizeof want, "%s%s", in, where);
    CHECK(strstr(err, want) != NULL);
    CHECK(strstr(err, what) != NULL);
    if (!strstr(err, want) || !strstr(err, what)) fprintf(stderr, "   %s: stderr: %s\n", name, err);
    CHECK_EQ(strlen(so), 0);
    struct stat st;
    CHECK(stat(o, &st) != 0);   /* nothing half-written */
    free(so);
}

static void test_run_batch_file_hostile(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    const char *ok = "{\"prompt\": \"Once\"}\n";
    char buf[1024];
    snprintf(buf, sizeof buf, "%s{\"prompt\": \"x\"\n", ok);
    expect_bad(model, "notjson.jsonl", buf, ":2:", "not valid JSON");
    snprintf(buf, sizeof buf, "%s%snot json at all\n", ok, ok);
    expect_bad(model, "text.jsonl", buf, ":3:", "not valid JSON");
    snprintf(buf, sizeof buf, "%s{\"prompt\": \"x\"} trailing\n", ok);
    expect_bad(model, "trailing.jsonl", buf, ":2:", "not valid JSON");
    expect_bad(model, "array.jsonl", "[\"a\"]\n", ":1:", "must be a JSON object");
    snprintf(buf, sizeof buf, "%s{\"text\": \"x\"}\n", ok);
    expect_bad(model, "noprompt.jsonl", buf, ":2:", "no \"prompt\"");
    snprintf(buf, sizeof buf, "%s%s{\"prompt\": 42}\n", ok, ok);
    expect_bad(model, "notstring.jsonl", buf, ":3:", "\"prompt\" must be a string");
    expect_bad(model, "nullprompt.jsonl", "{\"prompt\": null}\n", ":1:", "\"prompt\" must be a string");
    expect_bad(model, "huge.jsonl", "{\"prompt\": \"a\", \"n_predict\": 1e300}\n", ":1:", "\"n_predict\" must be an integer");
    expect_bad(model, "big.jsonl", "{\"prompt\": \"a\", \"max_tokens\": 3000000000}\n", ":1:",
               "\"max_tokens\" must be an integer in [0, 2147483647]");
    expect_bad(model, "neg.jsonl", "{\"prompt\": \"a\", \"n_predict\": -5}\n", ":1:", "must be an integer");
    expect_bad(model, "frac.jsonl", "{\"prompt\": \"a\", \"n_predict\": 2.5}\n", ":1:", "must be an integer");
    expect_bad(model, "strnum.jsonl", "{\"prompt\": \"a\", \"n_predict\": \"7\"}\n", ":1:", "must be an integer");
    expect_bad(model, "disagree.jsonl", "{\"prompt\": \"a\", \"n_predict\": 3, \"max_tokens\": 4}\n", ":1:", "disagree");
    expect_bad(model, "nulesc.jsonl", "{\"prompt\": \"a\\u0000b\"}\n", ":1:", "\\u0000");
    expect_bad(model, "empty.jsonl", "", "", "no prompts");
    expect_bad(model, "blank.jsonl", "\n  \n\n", "", "no prompts");
    /* a NUL byte inside a line */
    {
        const char *in = tmp_path("nul.jsonl");
        const char bytes[] = "{\"prompt\": \"a\"}\n{\"prompt\": \"b\0c\"}\n";
        CHECK_EQ(write_file(in, bytes, sizeof bytes - 1), 0);
        char args[4096], err[8192];
        snprintf(args, sizeof args, "run -m %s --batch-file %s -n 2", model, in);
        CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
        CHECK(strstr(err, ":2: contains a NUL byte") != NULL);
    }
    /* a prompt longer than n_ctx per sequence: refused before any compute, naming the line */
    {
        char big[4096];
        size_t n = (size_t)snprintf(big, sizeof big, "%s{\"prompt\": \"", ok);
        for (int i = 0; i < 200; i++) n += (size_t)snprintf(big + n, sizeof big - n, "cat ");
        snprintf(big + n, sizeof big - n, "\"}\n");
        const char *in = write_tmp("long.jsonl", big);
        char args[4096], err[8192];
        snprintf(args, sizeof args, "run -m %s --batch-file %s -c 64 -n 2", model, in);
        char *so = NULL;
        CHECK_EQ(run_cli(args, &so, err, sizeof err), 1);
        CHECK(strstr(err, ":2: the prompt is") != NULL && strstr(err, "raise -c") != NULL);
        CHECK_EQ(strlen(so), 0);
        free(so);
    }
    /* a missing file, an output that cannot be written, the command line */
    char args[4096], err[8192];
    snprintf(args, sizeof args, "run -m %s --batch-file /nonexistent/p.jsonl", model);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
    CHECK(strstr(err, "/nonexistent/p.jsonl") != NULL);
    const char *in = write_tmp("one.jsonl", ok);
    snprintf(args, sizeof args, "run -m %s --batch-file %s -o /nonexistent/dir/out.jsonl", model, in);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
    CHECK(strstr(err, "/nonexistent/dir/out.jsonl") != NULL);
    snprintf(args, sizeof args, "run -m %s --batch-file %s -o %s", model, in, in);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
    snprintf(args, sizeof args, "run -m %s --batch-file %s -p hi", model, in);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 2);
    snprintf(args, sizeof args, "run -m %s -p hi -b 4", model);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 2);
    CHECK(strstr(err, "--batch-file") != NULL);
    snprintf(args, sizeof args, "run -m %s --batch-file %s -b 0", model, in);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 2);
    snprintf(args, sizeof args, "run -m %s --batch-file %s -b 65", model, in);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 2);
    snprintf(args, sizeof args, "run --help");
    char *so = NULL;
    CHECK_EQ(run_cli(args, &so, err, sizeof err), 0);
    CHECK(strstr(so, "--batch-file") != NULL && strstr(so, "per sequence") != NULL);
    free(so);
}

/* ---------------------------------------------------------------- bench -b ---- */

static void test_bench_batched_cli(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    char args[4096], err[8192];
    char *out = NULL;
    /* md: llama.cpp batched-bench's columns, one row per B */
    snprintf(args, sizeof args, "bench -m %s -b 1,2 -p 8 -n 4 -t 1 --kv-type f16", model);
    CHECK_EQ(run_cli(args, &out, err, sizeof err), 0);
    CHECK(strstr(out, "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |") != NULL);
    CHECK(strstr(out, "|     8 |      4 |    1 |     12 |") != NULL);
    CHECK(strstr(out, "|     8 |      4 |    2 |     24 |") != NULL);
    CHECK(strstr(out, "KV cache per sequence:") != NULL && strstr(out, "plan computes") != NULL);
    CHECK(strstr(out, "S_TG) vs B=1: B=2 ") != NULL);
    CHECK(strstr(out, "fastest TG step, as aggregate tok/s: B=1 ") != NULL);
    free(out);
    /* csv: a header and one record per B, 19 fields each */
    snprintf(args, sizeof args, "bench -m %s -b 1,3,2 -p 4 -n 2 -t 1 -o csv", model);
    CHECK_EQ(run_cli(args, &out, err, sizeof err), 0);
    CHECK(!strncmp(out, "model_filename,model_type,n_threads,type_k,type_v,n_ctx_seq,kv_bytes_per_seq,pp,tg,pl,n_kv,"
                        "t_pp,speed_pp,t_tg,speed_tg,t,speed,wait_frac,speed_tg_peak\n", 100));
    CHECK_EQ(csv_records(out, 19), 4);
    CHECK(strstr(out, ",4,2,3,18,") != NULL);   /* pp, tg, pl, n_kv */
    free(out);
    /* json: an array of objects with batched-bench's jsonl keys */
    snprintf(args, sizeof args, "bench -m %s -b 2 -p 4 -n 2 -t 1 -o json", model);
    CHECK_EQ(run_cli(args, &out, err, sizeof err), 0);
    CHECK(out[0] == '[' && strstr(out, "\n]\n") != NULL);
    CHECK(strstr(out, "\"pp\": 4, \"tg\": 2, \"pl\": 2, \"n_kv\": 12, \"t_pp\": ") != NULL);
    CHECK(strstr(out, "\"speed_tg\": ") != NULL && strstr(out, "\"speed\": ") != NULL);
    free(out);
    /* the option's parsing */
    static const char *bad[] = {"-b 0", "-b 1,,2", "-b 1,", "-b x", "-b 65", "-b 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
                                "-b 2 -n 0", "-b 2 -d 16", "-b 2 --bandwidth", "-b 2 --bw-gbps 10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "bench -m %s %s", model, bad[i]);
        CHECK_EQ(run_cli(args, NULL, err, sizeof err), 2);
        if (!strstr(err, "see 'edgellm bench --help'")) fprintf(stderr, "   %s: %s\n", bad[i], err);
    }
    snprintf(args, sizeof args, "bench -m /nonexistent/m.gguf -b 2");
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
}

/* ------------------------------------------------------------ plan's batch model ---- */

static void test_plan_batch_model(void)
{
    /* a 2-layer shape: n_embd 64, 4 heads of 16, 2 KV heads, n_ff 128, vocab 100 */
    edgellm_plan_model m;
    CHECK_OK(edgellm_plan_model_from_shape(2, 64, 4, 2, 128, 100, &m, NULL));
    edgellm_plan_device d;
    memset(&d, 0, sizeof d);
    d.bw_gbps = 10.0, d.bw_measured = 1, d.n_big_cores = 2, d.gflops_big = 5.0;
    const double kv = 2.0 * 2 * 100 * 32 * 2, rows = edgellm_plan_rows_per_token(&m);
    /* memory-bound: the weights once and each sequence's KV; the per-row work once per step */
    for (int b = 1; b <= 8; b *= 2) {
        const double t = (85e6 + b * kv) / 8.5e9 + rows * EDGELLM_PLAN_ROW_OVERHEAD_S / 2 + 2 * EDGELLM_PLAN_SYNC_OVERHEAD_S;
        CHECK_NEAR(edgellm_plan_batch_steps_per_s(&m, &d, 85000000, 1000, 500, 100, EDGELLM_TYPE_F16, b, 0.85), 1.0 / t,
                   1e-6 / t);
    }
    /* compute-bound: the first sequence at dec_params, each further one at batch_params */
    const double attn = 4.0 * 2 * 4 * 16 * 100;
    for (int b = 1; b <= 8; b *= 2) {
        const double t = ((2e9 + attn) + (b - 1) * (1e9 + attn)) / 10e9;
        CHECK_NEAR(edgellm_plan_batch_steps_per_s(&m, &d, 1000, 1000000000ull, 500000000ull, 100, EDGELLM_TYPE_F16, b,
                                                  0.85), 1.0 / t, 1e-9 / t);
    }
    /* batch 1 is the single-sequence formula */
    CHECK_NEAR(edgellm_plan_batch_steps_per_s(&m, &d, 85000000, 1000, 7, 100, EDGELLM_TYPE_F16, 1, 0.85),
               edgellm_plan_decode_steps_per_s(&m, &d, 85000000, 1000, 100, EDGELLM_TYPE_F16, 1, 0.85), 1e-9);
    /* batch_params: the cheaper of each tensor's prefill and decode cost */
    edgellm_plan_recipe r;
    CHECK_OK(edgellm_plan_recipe_from_name("Q4_0", &r, NULL));
    edgellm_plan_tensor t[64];
    const size_t n = edgellm_plan_shape_tensors(&m, t, 64);
    edgellm_plan_weights w;
    edgellm_plan_recipe_weights(&r, t, n, m.n_layer, m.tied_embeddings, &w);
    CHECK(w.batch_params > 0 && w.batch_params <= w.pp_params && w.batch_params <= w.dec_params);
    CHECK_OK(edgellm_plan_recipe_from_name("F16", &r, NULL));
    edgellm_plan_recipe_weights(&r, t, n, m.n_layer, m.tied_embeddings, &w);
    CHECK(w.batch_params < w.dec_params);   /* F16: its tile kernel (prefill) is the cheaper */
}

/* -------------------------------------------------- the kernels at 2..8 tokens ---- */

/* y for n tokens at once equals y token by token, bit for bit, for rows wide enough that
 * the few-token path takes its groups in several chunks (Q4_0 and Q8_0). */
static void test_matmul_few_tokens_equal_one_by_one(void)
{
    const int types[2] = {EDGELLM_TYPE_Q4_0, EDGELLM_TYPE_Q8_0};
    const int64_t shapes[3][2] = {{37, 5632}, {18, 8448}, {16, 2048}};
    uint32_t s = 99;
    for (int ti = 0; ti < 2; ti++)
        for (int si = 0; si < 3; si++) {
            const int64_t rows = shapes[si][0], cols = shapes[si][1];
            const edgellm_type_traits *tr = edgellm_type_get_traits(types[ti]);
            edgellm_tensor W = {0};
            W.type = types[ti], W.ne0 = cols, W.ne1 = rows, W.row_bytes = edgellm_type_row_size(W.type, cols);
            uint8_t *w = malloc(W.row_bytes * (size_t)rows);
            float *row = malloc(sizeof(float) * (size_t)cols), *x = malloc(sizeof(float) * (size_t)cols * 8);
            float *y = malloc(sizeof(float) * (size_t)rows * 8), *y1 = malloc(sizeof(float) * (size_t)rows);
            void *scratch = malloc(edgellm_matmul_scratch_size(&W, 8));
            for (int64_t r = 0; r < rows; r++) {
                for (int64_t i = 0; i < cols; i++) row[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
                tr->from_float_ref(row, w + (size_t)r * W.row_bytes, cols);
            }
            W.data = w;
            for (int64_t i = 0; i < cols * 8; i++) x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
            for (int n = 2; n <= 8; n++) {
                edgellm_matmul(NULL, y, &W, x, n, scratch);
                bool same = true;
                for (int t = 0; t < n; t++) {
                    edgellm_matmul(NULL, y1, &W, x + (size_t)t * (size_t)cols, 1, scratch);
                    same &= memcmp(y1, y + (size_t)t * (size_t)rows, sizeof(float) * (size_t)rows) == 0;
                }
                CHECK(same);
                if (!same) fprintf(stderr, "   %s %lldx%lld n=%d differs\n", edgellm_type_name(W.type), (long long)rows,
                                   (long long)cols, n);
            }
            free(w), free(row), free(x), free(y), free(y1), free(scratch);
        }
}

int main(void)
{
    RUN(test_generate_batch_each);
    RUN(test_kv_bytes_per_sequence_match_plan);
    RUN(test_batched_bench_api);
    RUN(test_run_batch_file);
    RUN(test_run_batch_file_hostile);
    RUN(test_bench_batched_cli);
    RUN(test_plan_batch_model);
    RUN(test_matmul_few_tokens_equal_one_by_one);
    return test_summary();
}
