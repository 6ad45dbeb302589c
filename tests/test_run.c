/* test_run.c — the generation loop (edgellm_generate) and 'edgellm run'.
 *
 * Acceptance references are llama2.c run.c's greedy outputs (shared/models/.../expected_*.txt,
 * see PROVENANCE.md). How run.c prints, and how we compare:
 *   - run.c's -n counts forward passes (positions), so it prints n - n_prompt + 1 tokens
 *     after BOS, the prompt's own pieces included; ours counts generated tokens (as
 *     llama.cpp). With a prompt our text continues past the reference; with an empty
 *     prompt (just BOS) both print exactly n tokens. We check a prefix either way.
 *   - run.c prints the prompt's pieces after BOS with the first piece's leading space
 *     stripped; for "Once upon a time" that is exactly the prompt text, which we echo as
 *     given. With an empty prompt both start at the first generated piece, with its
 *     SentencePiece leading space stripped.
 *   - run.c ends with printf("\n"); that newline is not generated text, so the reference
 *     minus its final "\n" must be a prefix of our stdout (ours continues, then prints its
 *     own final newline). */
#include "test_util.h"
#include <stdbool.h>
#include "tiny_model.h"

/* A path in this binary's temp dir; each call gets its own slot, valid until exit. */
static const char *tmp_path(const char *name)
{
    static char slots[128][512];
    static int used;
    if (used == 128) { fprintf(stderr, "tmp_path: out of slots\n"); exit(1); }
    char *p = slots[used++];
    snprintf(p, 512, "%s/%s", test_tmpdir(), name);
    return p;
}

/* Run the CLI (test_util.h). */
#define run_cli test_run_cli

/* The reference text without run.c's final newline. */
static char *expected_prefix(const char *path)
{
    size_t n = 0;
    char *s = read_file(path, &n);
    if (!s) return NULL;
    if (n > 0 && s[n - 1] == '\n') s[n - 1] = 0;
    return s;
}

static bool starts_with_report(const char *got, const char *want, const char *what)
{
    size_t n = strlen(want);
    if (strncmp(got, want, n) == 0) return true;
    size_t i = 0;
    while (got[i] && got[i] == want[i]) i++;
    fprintf(stderr, "   %s: first difference at byte %zu of %zu\n   want: \"%.60s\"\n   got:  \"%.60s\"\n", what, i, n,
            want + i, got + i);
    return false;
}

static void check_greedy(const char *model, const char *prompt_arg, int n, const char *expected_path, const char *what)
{
    char err[8192], args[2048];
    char *out = NULL, *want = expected_prefix(expected_path);
    CHECK(want != NULL);
    if (!want) return;
    snprintf(args, sizeof args, "run -m %s %s -n %d --temp 0", model, prompt_arg, n);
    int rc = run_cli(args, &out, err, sizeof err);
    CHECK_EQ(rc, 0);
    if (rc != 0) fprintf(stderr, "   stderr: %s\n", err);
    CHECK(starts_with_report(out, want, what));
    fprintf(stderr, "   %s: %zu reference bytes matched; stdout %zu bytes\n", what, strlen(want), strlen(out));
    free(out);
    free(want);
}

static const char *convert_tmp(const char *bin, const char *tok, const char *name)
{
    const char *out = tmp_path(name);
    edgellm_error err = {0};
    edgellm_status rc = edgellm_convert_llama2c(bin, tok, out, &err);
    CHECK_EQ(rc, EDGELLM_OK);
    if (rc != EDGELLM_OK) { fprintf(stderr, "   convert: %s\n", err.msg); return NULL; }
    return out;
}

/* ---- acceptance ------------------------------------------------------------------------ */

static void test_run_stories260k_gguf_prompt_greedy(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    NEED_SHARED(ref, "models/stories260K/expected_greedy_prompt_n64.txt");
    check_greedy(model, "-p 'Once upon a time'", 64, ref, "stories260K.gguf prompt n64");
}

static void test_run_stories260k_converted_prompt_greedy(void)
{
    NEED_SHARED(bin, "models/stories260K/stories260K.bin");
    NEED_SHARED(tok, "models/stories260K/tok512.bin");
    NEED_SHARED(ref, "models/stories260K/expected_greedy_prompt_n64.txt");
    const char *g = convert_tmp(bin, tok, "stories.gguf");
    if (g) check_greedy(g, "-p 'Once upon a time'", 64, ref, "converted stories260K.bin prompt n64");
}

static void test_run_stories260k_empty_prompt_greedy(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    NEED_SHARED(ref, "models/stories260K/expected_greedy_n200.txt");
    check_greedy(model, "-p ''", 200, ref, "stories260K.gguf empty prompt n200");
}

static void test_run_babyllama_converted_empty_prompt_greedy(void)
{
    NEED_SHARED(bin, "models/babyllama-tok105/model5000.bin");
    NEED_SHARED(tok, "models/babyllama-tok105/tok105.bin");
    NEED_SHARED(ref, "models/babyllama-tok105/expected_greedy_n200.txt");
    const char *g = convert_tmp(bin, tok, "baby.gguf");
    if (g) check_greedy(g, "-p ''", 200, ref, "babyllama model5000.bin empty prompt n200");
}

/* seq_len 128: -n 128 after BOS needs 129 positions; generation stops cleanly when the
 * cache is full, after 128 tokens (run.c prints 127). */
static void test_run_aidreams_converted_ctx_full(void)
{
    NEED_SHARED(bin, "models/aidreams260K/aidreams260K.bin");
    NEED_SHARED(tok, "models/aidreams260K/tok512.bin");
    NEED_SHARED(ref, "models/aidreams260K/expected_greedy_n128.txt");
    const char *g = convert_tmp(bin, tok, "aidreams.gguf");
    if (!g) return;
    check_greedy(g, "-p ''", 128, ref, "aidreams260K.bin empty prompt n128");
    char err[8192], args[1024];
    snprintf(args, sizeof args, "run -m %s -p '' -n 500 --temp 0", g);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 0);
    CHECK(strstr(err, "context full") != NULL);
    CHECK(strstr(err, "generated: 128 tokens") != NULL);
}

/* ---- the CLI's contract ----------------------------------------------------------------- */

static void test_run_bad_flags_exit_2(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    const char *bad[] = {
        "--bogus",           "-n",                "-n -3",             "-n abc",
        "--temp -0.5",       "--temp x",          "--top-p -0.1",      "--top-p 1.5",
        "--min-p 2",         "--top-k -1",        "--repeat-penalty 0", "--seed -1",
        "-c 0",              "-t 0",              "-p a -f b",          "extra",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1024], err[8192];
        snprintf(args, sizeof args, "run -m %s %s", model, bad[i]);
        int rc = run_cli(args, NULL, err, sizeof err);
        if (rc != 2) fprintf(stderr, "   '%s' exited %d\n", bad[i], rc);
        CHECK_EQ(rc, 2);
        /* one error line, then a pointer to --help: no usage text scrolling the error away */
        CHECK(strstr(err, "see 'edgellm run --help'") != NULL);
        CHECK(strstr(err, "usage: edgellm run") == NULL);
    }
    /* --temp inf names the real rule */
    {
        char args[1024], err2[8192];
        snprintf(args, sizeof args, "run -m %s --temp inf", model);
        CHECK_EQ(run_cli(args, NULL, err2, sizeof err2), 2);
        CHECK(strstr(err2, "in [0, 1e6)") != NULL);
        snprintf(args, sizeof args, "run -m %s --temp 1e6", model);      /* the bound is in the message */
        CHECK_EQ(run_cli(args, NULL, err2, sizeof err2), 2);
        CHECK(strstr(err2, "in [0, 1e6)") != NULL);
        snprintf(args, sizeof args, "run -m %s --repeat-penalty 1e9", model);
        CHECK_EQ(run_cli(args, NULL, err2, sizeof err2), 2);
        CHECK(strstr(err2, "in (0, 1e6)") != NULL);
    }
    char err[8192];
    CHECK_EQ(run_cli("run -p hi", NULL, err, sizeof err), 2);   /* no -m */
}

static void test_run_errors_exit_1_and_name_the_file(void)
{
    char err[8192], args[1024];
    CHECK_EQ(run_cli("run -m /nonexistent/model.gguf -p hi", NULL, err, sizeof err), 1);
    CHECK(strstr(err, "edgellm run: /nonexistent/model.gguf: ") != NULL);
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    snprintf(args, sizeof args, "run -m %s -f /nonexistent/prompt.txt", model);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
    CHECK(strstr(err, "edgellm run: /nonexistent/prompt.txt: ") != NULL);
    /* prompt longer than the context: refused, with both counts */
    snprintf(args, sizeof args, "run -m %s -c 8 -p 'Once upon a time, there was a little girl named Lily.'", model);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
    CHECK(strstr(err, "edgellm run: ") && strstr(err, "stories260K.gguf: ") && strstr(err, "holds only 8"));
    /* ... and nothing reached stdout before the refusal */
    char *out = NULL;
    CHECK_EQ(run_cli(args, &out, err, sizeof err), 1);
    CHECK(out && out[0] == 0);
    free(out);
    /* a folder as the prompt file: the path and the reason */
    snprintf(args, sizeof args, "run -m %s -f /tmp", model);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 1);
    CHECK(strstr(err, "/tmp: ") && strstr(err, "directory"));
    /* -c beyond the trained context (stories260K: 2048) warns on one stderr line, and still runs */
    snprintf(args, sizeof args, "run -m %s -c 4096 -n 4 --temp 0 -p hi", model);
    CHECK_EQ(run_cli(args, NULL, err, sizeof err), 0);
    CHECK(strstr(err, "warning: -c 4096 exceeds the model's trained context length") != NULL);
}

static void test_run_prompt_file_and_seed(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    const char *pf = tmp_path("prompt.txt");
    write_file(pf, "Once upon a time", 16);
    char err[8192], args[1024];
    char *a = NULL, *b = NULL, *c = NULL;
    snprintf(args, sizeof args, "run -m %s -f %s -n 48 --temp 0.9 --seed 7", model, pf);
    CHECK_EQ(run_cli(args, &a, err, sizeof err), 0);
    CHECK_EQ(run_cli(args, &b, err, sizeof err), 0);
    snprintf(args, sizeof args, "run -m %s -f %s -n 48 --temp 0.9 --seed 8", model, pf);
    CHECK_EQ(run_cli(args, &c, err, sizeof err), 0);
    CHECK(strncmp(a, "Once upon a time", 16) == 0);
    CHECK(strcmp(a, b) == 0);       /* same seed, same text */
    CHECK(strcmp(a, c) != 0);       /* another seed, another text */
    CHECK(strstr(err, "prompt: 5 tokens") != NULL);   /* BOS + 4 pieces */
    CHECK(strstr(err, "generated: 48 tokens") != NULL);
    CHECK(strstr(err, "tok/s") != NULL);
    free(a); free(b); free(c);
}

/* ---- the library loop -------------------------------------------------------------------- */

typedef struct { int calls, stop_after; char text[4096]; size_t len; } collect;

static int collect_cb(int32_t token, const char *piece, size_t len, void *user)
{
    collect *c = user;
    c->calls++;
    if (c->len + len < sizeof c->text) { memcpy(c->text + c->len, piece, len); c->len += len; c->text[c->len] = 0; }
    return c->stop_after > 0 && c->calls >= c->stop_after;
}

static void test_run_generate_api(void)
{
    NEED_SHARED(path, "models/stories260K/stories260K.gguf");
    NEED_SHARED(ref_path, "models/stories260K/expected_greedy_prompt_n64.txt");
    edgellm_model *m = NULL;
    edgellm_ctx *ctx = NULL;
    edgellm_error err = {0};
    CHECK_OK(edgellm_model_load(path, NULL, &m, &err));
    if (!m) { fprintf(stderr, "   %s\n", err.msg); return; }
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 32;
    CHECK_OK(edgellm_ctx_new(m, &cp, &ctx, &err));
    if (!ctx) { edgellm_model_free(m); return; }
    edgellm_generate_params gp = edgellm_generate_default_params();
    gp.sampling.temperature = 0;
    edgellm_generate_stats st = {.size = sizeof st};

    /* greedy through the API reproduces the reference continuation (the CLI test's twin) */
    collect c = {0};
    gp.n_predict = 20;
    CHECK_OK(edgellm_generate(ctx, "Once upon a time", &gp, collect_cb, &c, &st, &err));
    char *ref = read_file(ref_path, NULL);
    CHECK(ref && strncmp(ref, "Once upon a time", 16) == 0 && strncmp(ref + 16, c.text, c.len) == 0);
    free(ref);
    CHECK_EQ(st.n_prompt, 5);
    CHECK_EQ(st.n_generated, 20);
    CHECK_EQ(c.calls, 20);
    CHECK_EQ(st.stop, EDGELLM_STOP_N_PREDICT);
    CHECK_EQ(edgellm_ctx_n_past(ctx), 5 + 20 - 1);   /* the last token is never decoded */
    CHECK(st.prefill_ms >= 0 && st.decode_ms >= 0);

    /* the callback stops it */
    collect c2 = {0};
    c2.stop_after = 3;
    CHECK_OK(edgellm_generate(ctx, "Once upon a time", &gp, collect_cb, &c2, &st, &err));
    CHECK_EQ(st.stop, EDGELLM_STOP_CALLBACK);
    CHECK_EQ(st.n_generated, 3);

    /* n_predict 0: prefill only */
    gp.n_predict = 0;
    CHECK_OK(edgellm_generate(ctx, "Once upon a time", &gp, NULL, NULL, &st, &err));
    CHECK_EQ(st.n_generated, 0);
    CHECK_EQ(st.stop, EDGELLM_STOP_N_PREDICT);

    /* context full: 32 positions, 5 prompt tokens -> 28 tokens generated, clean stop */
    gp.n_predict = 1000;
    CHECK_OK(edgellm_generate(ctx, "Once upon a time", &gp, NULL, NULL, &st, &err));
    CHECK_EQ(st.stop, EDGELLM_STOP_CTX_FULL);
    CHECK_EQ(st.n_generated, 32 - 5 + 1);
    CHECK_EQ(edgellm_ctx_n_past(ctx), 32);

    /* a prompt that does not fit is refused before any compute */
    edgellm_ctx_reset(ctx);
    /* BOS + 31 pieces (shared/data/reference/stories260K.tokens.txt): exactly fits 32 */
    const char *fits = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park.";
    gp.n_predict = 1;
    CHECK_OK(edgellm_generate(ctx, fits, &gp, NULL, NULL, &st, &err));
    CHECK_EQ(st.n_prompt, 32);
    CHECK_EQ(st.n_generated, 1);
    CHECK_EQ(st.stop, EDGELLM_STOP_N_PREDICT);
    edgellm_ctx_reset(ctx);
    const char *longp = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. Lily";
    CHECK_EQ(edgellm_generate(ctx, longp, &gp, NULL, NULL, &st, &err), EDGELLM_ERR_CTX_FULL);
    CHECK(strstr(err.msg, "33 tokens") != NULL && strstr(err.msg, "holds only 32") != NULL);
    CHECK_EQ(st.n_prompt, 33);
    CHECK_EQ(edgellm_ctx_n_past(ctx), 0);

    /* empty prompt: BOS alone, first piece without its leading space */
    collect c3 = {0};
    gp.n_predict = 3;
    CHECK_OK(edgellm_generate(ctx, "", &gp, collect_cb, &c3, &st, &err));
    CHECK_EQ(st.n_prompt, 1);
    CHECK(strncmp(c3.text, "Once upon", 9) == 0);
    /* --no-bos with an empty prompt still starts from BOS (nothing else to condition on) */
    gp.add_bos = 0;
    CHECK_OK(edgellm_generate(ctx, "", &gp, NULL, NULL, &st, &err));
    CHECK_EQ(st.n_prompt, 1);

    edgellm_ctx_free(ctx);
    edgellm_model_free(m);
}

/* Regression: `--top-p 0` exited 2; as in llama.cpp it keeps the most likely token
 * only, so sampling at any temperature and seed prints the greedy text. */
static void test_regress_run_top_p_0_is_greedy(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    char args[1024], err[8192];
    char *greedy = NULL, *top0 = NULL;
    snprintf(args, sizeof args, "run -m %s -p 'Once upon a time' -n 24 --temp 0", model);
    CHECK_EQ(run_cli(args, &greedy, err, sizeof err), 0);
    snprintf(args, sizeof args, "run -m %s -p 'Once upon a time' -n 24 --temp 1.3 --top-k 0 --seed 9 --top-p 0", model);
    CHECK_EQ(run_cli(args, &top0, err, sizeof err), 0);
    CHECK(greedy && top0 && !strcmp(greedy, top0));
    free(greedy);
    free(top0);
}

/* Well-formed UTF-8 (Unicode 15.0 §3.9, Table 3-7): no stray, overlong, surrogate or
 * truncated sequence. */
static bool valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        const unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!len || i + len > n) return false;
        unsigned lo = 0x80, hi = 0xBF;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
        for (size_t k = 1; k < len; k++) {
            if (s[i + k] < (k == 1 ? lo : 0x80) || s[i + k] > (k == 1 ? hi : 0xBF)) return false;
        }
        i += len;
    }
    return true;
}

/* A model whose greedy continuation of BOS is the byte tokens F0 9F A6 99 (U+1F999, 🦙) and
 * then </s>: token i of that chain embeds as e_i, every layer adds 0, and output row
 * succ(i) is 10 e_i. */
static const char *llama_emoji_model(void)
{
    static char path[600];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s/llama-emoji.gguf", test_tmpdir());
    tiny_model *t = tiny_new(TINY_BYTE_VOCAB, 8, 1, 1, 1, 8, 64);
    t->byte_vocab = 1;
    const int chain[6] = {1, TINY_BYTE(0xF0), TINY_BYTE(0x9F), TINY_BYTE(0xA6), TINY_BYTE(0x99), 2};
    for (int i = 0; i < 5; i++) {
        t->token_embd[chain[i] * 8 + i] = 1.0f;
        t->output[chain[i + 1] * 8 + i] = 10.0f;
    }
    if (!tiny_write(t, path)) path[0] = 0;
    tiny_free(t);
    return path;
}

/* Regression (streaming): the four byte-fallback tokens of 🦙 printed the invalid
 * bytes f0 9f under `run -n 2`, and the callback got one raw byte per call. Pieces carry
 * whole characters: -n 2 stops with two bytes held, which come out as U+FFFD (one per
 * byte, in a last callback with token -1); -n 4 gives the character whole, in the call of
 * its last byte. */
static void test_regress_stream_keeps_utf8_whole(void)
{
    const char *path = llama_emoji_model();
    CHECK(path[0] != 0);
    if (!path[0]) return;
    char args[1024], err[8192];
    char *out = NULL;
    snprintf(args, sizeof args, "run -m %s -p '' -n 2 --temp 0", path);
    CHECK_EQ(run_cli(args, &out, err, sizeof err), 0);
    CHECK(out && valid_utf8((const unsigned char *)out, strlen(out)));
    CHECK(out && strstr(out, "\xF0\x9F") == NULL && strstr(out, "\xEF\xBF\xBD\xEF\xBF\xBD") != NULL);
    free(out);
    out = NULL;
    snprintf(args, sizeof args, "run -m %s -p '' -n 4 --temp 0", path);
    CHECK_EQ(run_cli(args, &out, err, sizeof err), 0);
    CHECK(out && valid_utf8((const unsigned char *)out, strlen(out)) && strstr(out, "\xF0\x9F\xA6\x99") != NULL);
    free(out);

    edgellm_model *m = NULL;
    edgellm_ctx *ctx = NULL;
    CHECK_OK(edgellm_model_load(path, NULL, &m, NULL));
    if (!m) return;
    CHECK_OK(edgellm_ctx_new(m, NULL, &ctx, NULL));
    edgellm_generate_params gp = edgellm_generate_default_params();
    gp.sampling.temperature = 0;
    gp.n_predict = 2;
    collect c = {0};
    CHECK_OK(edgellm_generate(ctx, "", &gp, collect_cb, &c, NULL, NULL));
    CHECK_EQ(c.calls, 3);                                   /* two tokens, then token -1 */
    CHECK(c.len == 6 && !memcmp(c.text, "\xEF\xBF\xBD\xEF\xBF\xBD", 6));
    collect c4 = {0};
    gp.n_predict = 8;                                       /* 4 bytes, then </s> */
    CHECK_OK(edgellm_generate(ctx, "", &gp, collect_cb, &c4, NULL, NULL));
    CHECK(c4.len == 4 && !memcmp(c4.text, "\xF0\x9F\xA6\x99", 4));
    edgellm_ctx_free(ctx);
    edgellm_model_free(m);
}

int main(void)
{
    RUN(test_run_stories260k_gguf_prompt_greedy);
    RUN(test_run_stories260k_converted_prompt_greedy);
    RUN(test_run_stories260k_empty_prompt_greedy);
    RUN(test_run_babyllama_converted_empty_prompt_greedy);
    RUN(test_run_aidreams_converted_ctx_full);
    RUN(test_run_bad_flags_exit_2);
    RUN(test_regress_run_top_p_0_is_greedy);
    RUN(test_run_errors_exit_1_and_name_the_file);
    RUN(test_run_prompt_file_and_seed);
    RUN(test_run_generate_api);
    RUN(test_regress_stream_keeps_utf8_whole);
    return test_summary();
}
