/*
 * test_hostile_more.c — the hostile-input classes that test_gguf_hostile.c
 * (GGUF container) does not cover: llama2.c checkpoints with negative, zero or absurd
 * header dimensions and files a few bytes short or long; tokenizer.bin files with
 * negative lengths, truncated records and bad headers; GGUF tokenizer metadata that lies
 * (the model's tokenizer.ggml.* keys).
 *
 * test_llama2c.c checks the converter's statuses and messages for a few of these
 * in-process; here every case is held to the bar, end to end:
 *   - in-process (edgellm_llama2c_parse_memory / edgellm_tokenizer_load) in a forked child
 *     with RLIMIT_AS = 1 GiB (skipped under ASan, which reserves terabytes of shadow):
 *     EDGELLM_ERR_FORMAT or _UNSUPPORTED, the input named in the message, no live
 *     allocation left, under 1 s, no signal;
 *   - through the CLI (`edgellm convert`, `edgellm tokenize`) under `ulimit -v` 2 GiB
 *     (same exception): exit status 1, exactly one line "edgellm CMD: PATH: ...", no
 *     output file, under 1 s of wall time (5 s under sanitizers, which slow start-up).
 * Each case builds its bytes itself (a tiny valid checkpoint: dim 8, hidden 16, 1 layer,
 * 2 heads, 1 KV head, vocab 4, seq_len 4; the matching 4-token tokenizer.bin), breaks one
 * rule, and a positive control checks that the unbroken pair converts.
 */
#include "test_util.h"
#include "format/gguf.h"
#include "tools/llama2c.h"
#include <stdint.h>

#define CLI_BUDGET_MS (TEST_UNDER_ASAN ? 5000.0 : 1000.0)

/* ------------------------------------------------------------ byte builders */

typedef struct { uint8_t *p; size_t n; } bytes;

static void put(bytes *b, const void *src, size_t n)
{
    b->p = realloc(b->p, b->n + n + 1);
    if (!b->p) { perror("realloc"); exit(1); }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}
static void put_i32(bytes *b, int32_t v) { put(b, &v, 4); }
static void put_f32(bytes *b, float v) { put(b, &v, 4); }

enum { DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, VOCAB, SEQ };

/* A legacy checkpoint with header h (vocab > 0: shared classifier), weights sized for the
 * *valid* tiny shape (so a changed header no longer matches the size), plus `extra` bytes
 * (negative: cut). */
static void checkpoint(bytes *b, const int32_t h[7], long extra)
{
    memset(b, 0, sizeof *b);
    for (int i = 0; i < 7; i++) put_i32(b, h[i]);
    /* tiny valid shape: 4*8 emb + 8 att + 64 wq + 32 wk + 32 wv + 64 wo + 8 ffn + 3*128 + 8 + 2*4*2 freq */
    size_t nf = 32 + 8 + 64 + 32 + 32 + 64 + 8 + 384 + 8 + 16;
    for (size_t i = 0; i < nf; i++) put_f32(b, (float)((i * 37) % 11) * 0.01f);
    if (extra > 0) for (long i = 0; i < extra; i++) put(b, "\0", 1);
    if (extra < 0) b->n -= (size_t)(-extra);
}

static const int32_t TINY[7] = {8, 16, 1, 2, 1, 4, 4};

/* tokenizer.bin: max_len, then (score, len, bytes) for "<unk>", "\n<s>\n", "\n</s>\n", " a";
 * record `bad` (or -1) gets length bad_len with its real bytes. */
static void tokbin(bytes *b, int32_t max_len, int bad, int32_t bad_len)
{
    static const char *const P[4] = {"<unk>", "\n<s>\n", "\n</s>\n", " a"};
    memset(b, 0, sizeof *b);
    put_i32(b, max_len);
    for (int i = 0; i < 4; i++) {
        put_f32(b, -(float)i);
        put_i32(b, i == bad ? bad_len : (int32_t)strlen(P[i]));
        put(b, P[i], strlen(P[i]));
    }
}

/* ------------------------------------------------------------ the cases */

typedef struct {
    const char *name;
    void (*make)(bytes *model, bytes *tok);
    int status;                 /* expected in-process status */
    const char *expect;         /* substring of the message, or NULL */
} l2c_case;

#define HDR_CASE(fn, field, value)                                                                  \
    static void fn(bytes *m, bytes *t)                                                              \
    {                                                                                               \
        int32_t h[7];                                                                               \
        memcpy(h, TINY, sizeof h);                                                                  \
        h[field] = value;                                                                           \
        checkpoint(m, h, 0);                                                                        \
        tokbin(t, 6, -1, 0);                                                                        \
    }
HDR_CASE(mk_dim_negative, DIM, -8)
HDR_CASE(mk_dim_zero, DIM, 0)
HDR_CASE(mk_dim_int32_min, DIM, INT32_MIN)
HDR_CASE(mk_hidden_negative, HIDDEN, -16)
HDR_CASE(mk_layers_zero, LAYERS, 0)
HDR_CASE(mk_layers_negative, LAYERS, -1)
HDR_CASE(mk_heads_zero, HEADS, 0)
HDR_CASE(mk_kv_heads_negative, KV_HEADS, -1)
HDR_CASE(mk_kv_heads_more_than_heads, KV_HEADS, 4)
HDR_CASE(mk_vocab_zero, VOCAB, 0)
HDR_CASE(mk_vocab_int32_min, VOCAB, INT32_MIN)
HDR_CASE(mk_seq_len_zero, SEQ, 0)
HDR_CASE(mk_seq_len_negative, SEQ, -4)
HDR_CASE(mk_dim_huge, DIM, 1 << 30)
static void mk_all_max(bytes *m, bytes *t)   /* every dimension INT32_MAX: sizes overflow 64 bits */
{
    int32_t h[7] = {INT32_MAX - 1, INT32_MAX, INT32_MAX, 2, 1, INT32_MAX, INT32_MAX};
    checkpoint(m, h, 0);
    tokbin(t, 6, -1, 0);
}
static void mk_petabytes(bytes *m, bytes *t)   /* fits 64 bits, not the file: no allocation may follow it */
{
    int32_t h[7] = {1 << 14, 1 << 16, 1 << 10, 1 << 7, 1 << 7, 1 << 20, 1 << 20};
    checkpoint(m, h, 0);
    tokbin(t, 6, -1, 0);
}
static void mk_4_bytes_short(bytes *m, bytes *t) { checkpoint(m, TINY, -4); tokbin(t, 6, -1, 0); }
static void mk_1_byte_short(bytes *m, bytes *t) { checkpoint(m, TINY, -1); tokbin(t, 6, -1, 0); }
static void mk_4_bytes_long(bytes *m, bytes *t) { checkpoint(m, TINY, 4); tokbin(t, 6, -1, 0); }
static void mk_header_27_bytes(bytes *m, bytes *t) { checkpoint(m, TINY, 0); m->n = 27; tokbin(t, 6, -1, 0); }
static void mk_empty_model(bytes *m, bytes *t) { checkpoint(m, TINY, 0); m->n = 0; tokbin(t, 6, -1, 0); }
static void mk_v1_header_short(bytes *m, bytes *t)
{
    memset(m, 0, sizeof *m);
    uint32_t magic = 0x616b3432u;
    put(m, &magic, 4);
    put_i32(m, 1);
    for (int i = 0; i < 7; i++) put_i32(m, TINY[i]);
    while (m->n < 252) put(m, "\0", 1);   /* 4 bytes short of the 256-byte header */
    tokbin(t, 6, -1, 0);
}
static void mk_v1_negative_dim(bytes *m, bytes *t)
{
    memset(m, 0, sizeof *m);
    uint32_t magic = 0x616b3432u;
    put(m, &magic, 4);
    put_i32(m, 1);
    int32_t h[7];
    memcpy(h, TINY, sizeof h);
    h[DIM] = -8;
    for (int i = 0; i < 7; i++) put_i32(m, h[i]);
    while (m->n < 256 + 4 * 600) put(m, "\0", 1);
    tokbin(t, 6, -1, 0);
}
static void mk_tok_len_negative(bytes *m, bytes *t) { checkpoint(m, TINY, 0); tokbin(t, 6, 2, -6); }
static void mk_tok_len_int32_min(bytes *m, bytes *t) { checkpoint(m, TINY, 0); tokbin(t, 6, 0, INT32_MIN); }
static void mk_tok_len_minus_1_first(bytes *m, bytes *t) { checkpoint(m, TINY, 0); tokbin(t, 6, 0, -1); }
static void mk_tok_len_past_end(bytes *m, bytes *t) { checkpoint(m, TINY, 0); tokbin(t, 64, 3, 60); }
static void mk_tok_max_len_negative(bytes *m, bytes *t) { checkpoint(m, TINY, 0); tokbin(t, -1, -1, 0); }
static void mk_tok_4_bytes_short(bytes *m, bytes *t) { checkpoint(m, TINY, 0); tokbin(t, 6, -1, 0); t->n -= 4; }
static void mk_tok_3_bytes(bytes *m, bytes *t) { checkpoint(m, TINY, 0); tokbin(t, 6, -1, 0); t->n = 3; }
static void mk_tok_extra_record(bytes *m, bytes *t)
{
    checkpoint(m, TINY, 0);
    tokbin(t, 6, -1, 0);
    put_f32(t, 0);
    put_i32(t, 1);
    put(t, "z", 1);
}
static void mk_tok_nan_score(bytes *m, bytes *t)
{
    checkpoint(m, TINY, 0);
    tokbin(t, 6, -1, 0);
    uint32_t nan_bits = 0x7FC00000u;
    memcpy(t->p + 4, &nan_bits, 4);   /* score of token 0 */
}

static const l2c_case CASES[] = {
    {"dim_negative", mk_dim_negative, EDGELLM_ERR_FORMAT, "dim is -8"},
    {"dim_zero", mk_dim_zero, EDGELLM_ERR_FORMAT, "dim is 0"},
    {"dim_int32_min", mk_dim_int32_min, EDGELLM_ERR_FORMAT, "must be positive"},
    {"hidden_negative", mk_hidden_negative, EDGELLM_ERR_FORMAT, "hidden_dim is -16"},
    {"layers_zero", mk_layers_zero, EDGELLM_ERR_FORMAT, "n_layers is 0"},
    {"layers_negative", mk_layers_negative, EDGELLM_ERR_FORMAT, "n_layers is -1"},
    {"heads_zero", mk_heads_zero, EDGELLM_ERR_FORMAT, "n_heads is 0"},
    {"kv_heads_negative", mk_kv_heads_negative, EDGELLM_ERR_FORMAT, "n_kv_heads is -1"},
    {"kv_heads_more_than_heads", mk_kv_heads_more_than_heads, EDGELLM_ERR_FORMAT, "does not divide"},
    {"vocab_zero", mk_vocab_zero, EDGELLM_ERR_FORMAT, "vocab_size is 0"},
    {"vocab_int32_min", mk_vocab_int32_min, EDGELLM_ERR_FORMAT, "vocab_size"},
    {"seq_len_zero", mk_seq_len_zero, EDGELLM_ERR_FORMAT, "seq_len is 0"},
    {"seq_len_negative", mk_seq_len_negative, EDGELLM_ERR_FORMAT, "seq_len is -4"},
    {"dim_2p30", mk_dim_huge, EDGELLM_ERR_FORMAT, NULL},
    {"all_dims_int32_max", mk_all_max, EDGELLM_ERR_FORMAT, NULL},
    {"petabyte_header", mk_petabytes, EDGELLM_ERR_FORMAT, "implies"},
    {"file_4_bytes_short", mk_4_bytes_short, EDGELLM_ERR_FORMAT, "4 bytes short"},
    {"file_1_byte_short", mk_1_byte_short, EDGELLM_ERR_FORMAT, "1 bytes short"},
    {"file_4_bytes_long", mk_4_bytes_long, EDGELLM_ERR_FORMAT, "4 bytes too many"},
    {"header_27_bytes", mk_header_27_bytes, EDGELLM_ERR_FORMAT, "too short"},
    {"empty_checkpoint", mk_empty_model, EDGELLM_ERR_FORMAT, "too short"},
    {"v1_header_4_bytes_short", mk_v1_header_short, EDGELLM_ERR_FORMAT, "256"},
    {"v1_dim_negative", mk_v1_negative_dim, EDGELLM_ERR_FORMAT, "dim is -8"},
    {"tokenizer_length_negative", mk_tok_len_negative, EDGELLM_ERR_FORMAT, "token 2 has length -6"},
    {"tokenizer_length_int32_min", mk_tok_len_int32_min, EDGELLM_ERR_FORMAT, "token 0 has length -2147483648"},
    {"tokenizer_length_minus_1", mk_tok_len_minus_1_first, EDGELLM_ERR_FORMAT, "token 0 has length -1"},
    {"tokenizer_length_past_end", mk_tok_len_past_end, EDGELLM_ERR_FORMAT, "past the end"},
    {"tokenizer_max_len_negative", mk_tok_max_len_negative, EDGELLM_ERR_FORMAT, "max_token_length is -1"},
    {"tokenizer_4_bytes_short", mk_tok_4_bytes_short, EDGELLM_ERR_FORMAT, NULL},
    {"tokenizer_3_bytes", mk_tok_3_bytes, EDGELLM_ERR_FORMAT, "too short"},
    {"tokenizer_extra_record", mk_tok_extra_record, EDGELLM_ERR_FORMAT, "count mismatch"},
    {"tokenizer_nan_score", mk_tok_nan_score, EDGELLM_ERR_FORMAT, "non-finite score"},
};
#define N_CASES ((int)(sizeof CASES / sizeof CASES[0]))

/* ------------------------------------------------------------ in-process, isolated */

typedef struct { int rc; long leaked; double ms; char msg[512]; } result;

/* The child's side of parse_isolated: the parser over copies of exactly the given sizes. */
typedef struct { const bytes *m, *t; const char *name; } parse_job;

static void parse_child(void *arg, void *out)
{
    const parse_job *j = arg;
    result *res = out;
    void *mc = malloc(j->m->n ? j->m->n : 1), *tc = malloc(j->t->n ? j->t->n : 1);   /* exact sizes */
    memcpy(mc, j->m->p, j->m->n);
    memcpy(tc, j->t->p, j->t->n);
    long before = edgellm_test_live_allocs();
    edgellm_error err = {0};
    double t0 = edgellm_time_ms();
    res->rc = edgellm_llama2c_parse_memory(mc, j->m->n, tc, j->t->n, j->name, &err);
    res->ms = edgellm_time_ms() - t0;
    res->leaked = edgellm_test_live_allocs() - before;
    memcpy(res->msg, err.msg, sizeof res->msg);
}

/* In a forked child with bounded memory and time (test_run_isolated); false when it died. */
static bool parse_isolated(const bytes *m, const bytes *t, const char *name, result *r)
{
    parse_job j = {m, t, name};
    if (test_run_isolated(parse_child, &j, r, sizeof *r, 20, r->msg, sizeof r->msg)) return true;
    r->rc = -1;
    return false;
}

/* The harness itself: a crash, a hang, a result, and the 1 GiB address-space cap. */
static void child_abort(void *arg, void *res) { (void)arg; (void)res; abort(); }
static void child_hang(void *arg, void *res) { (void)arg; (void)res; for (;;) pause(); }
static void child_ok(void *arg, void *res) { ((result *)res)->rc = *(const int *)arg; }
static void child_big_alloc(void *arg, void *res)
{
    (void)arg;
    void *p = malloc((size_t)2 << 30);   /* 2 GiB: refused under RLIMIT_AS = 1 GiB */
    ((result *)res)->rc = p == NULL;
    free(p);
}

static void test_hostile_isolated_harness(void)
{
    result r;
    int v = 41;
    CHECK(test_run_isolated(child_ok, &v, &r, sizeof r, 5, r.msg, sizeof r.msg));
    CHECK_EQ(r.rc, 41);
    CHECK(!test_run_isolated(child_abort, NULL, &r, sizeof r, 5, r.msg, sizeof r.msg));
    CHECK(strstr(r.msg, "signal 6") != NULL);
    double t0 = edgellm_time_ms();
    CHECK(!test_run_isolated(child_hang, NULL, &r, sizeof r, 1, r.msg, sizeof r.msg));
    CHECK(strstr(r.msg, "signal 14") != NULL);   /* SIGALRM */
    CHECK(edgellm_time_ms() - t0 < 5000);
    if (!TEST_UNDER_ASAN) {
        CHECK(test_run_isolated(child_big_alloc, NULL, &r, sizeof r, 5, r.msg, sizeof r.msg));
        CHECK_EQ(r.rc, 1);
    }
}

static void test_hostile_llama2c_control_converts(void)
{
    bytes m, t;
    checkpoint(&m, TINY, 0);
    tokbin(&t, 6, -1, 0);
    result r;
    CHECK(parse_isolated(&m, &t, "control.bin", &r));
    CHECK_EQ(r.rc, EDGELLM_OK);
    CHECK_EQ(r.leaked, 0);
    if (r.rc != EDGELLM_OK) fprintf(stderr, "   control: %s\n", r.msg);
    free(m.p);
    free(t.p);
}

static void test_hostile_llama2c_in_process(void)
{
    for (int i = 0; i < N_CASES; i++) {
        bytes m, t;
        CASES[i].make(&m, &t);
        char name[128];
        snprintf(name, sizeof name, "hostile/%s.bin", CASES[i].name);
        result r;
        parse_isolated(&m, &t, name, &r);
        int f0 = test_failures;
        CHECK_EQ(r.rc, CASES[i].status);
        CHECK_EQ(r.leaked, 0);
        CHECK(r.ms < 1000);
        CHECK(strstr(r.msg, name) != NULL);
        if (CASES[i].expect) CHECK(strstr(r.msg, CASES[i].expect) != NULL);
        if (test_failures != f0 || getenv("EDGELLM_TEST_VERBOSE"))
            fprintf(stderr, "   %-28s rc %d, %.2f ms, leaked %ld: %s\n", CASES[i].name, r.rc, r.ms, r.leaked, r.msg);
        free(m.p);
        free(t.p);
    }
}

/* ------------------------------------------------------------ through the CLI */

/* exit status 1, exactly one line "edgellm CMD: <path>: ...", within the time budget */
static void check_cli(const char *cmd_name, const char *cmdline, const char *path, const char *label)
{
    char full[4096], out[8192];
    snprintf(full, sizeof full, "%s%s", TEST_UNDER_ASAN ? "" : "ulimit -v 2097152; ", cmdline);
    double t0 = edgellm_time_ms();
    int rc = run_capture(full, out, sizeof out);
    double ms = edgellm_time_ms() - t0;
    char prefix[1024];
    snprintf(prefix, sizeof prefix, "edgellm %s: %s: ", cmd_name, path);
    int f0 = test_failures;
    CHECK_EQ(rc, 1);
    CHECK(!strncmp(out, prefix, strlen(prefix)));
    const char *nl = strchr(out, '\n');
    CHECK(nl != NULL && nl[1] == 0);
    CHECK(ms < CLI_BUDGET_MS);
    if (test_failures != f0) fprintf(stderr, "   %s: exit %d, %.0f ms, output:\n%s\n", label, rc, ms, out);
}

static void test_hostile_llama2c_cli_convert(void)
{
    char mp[600], tp[600], op[600], cmd[2048];
    for (int i = 0; i < N_CASES; i++) {
        bytes m, t;
        CASES[i].make(&m, &t);
        bool tok_case = !strncmp(CASES[i].name, "tokenizer_", 10);
        snprintf(mp, sizeof mp, "%s/%s.bin", test_tmpdir(), CASES[i].name);
        snprintf(tp, sizeof tp, "%s/%s.tok", test_tmpdir(), CASES[i].name);
        snprintf(op, sizeof op, "%s/%s.gguf", test_tmpdir(), CASES[i].name);
        CHECK_EQ(write_file(mp, m.p, m.n), 0);
        CHECK_EQ(write_file(tp, t.p, t.n), 0);
        snprintf(cmd, sizeof cmd, "'%s' convert --llama2c '%s' --tokenizer '%s' -o '%s'", EDGELLM_CLI, mp, tp, op);
        check_cli("convert", cmd, tok_case ? tp : mp, CASES[i].name);
        struct stat st;
        CHECK(stat(op, &st) != 0);   /* no output file */
        free(m.p);
        free(t.p);
    }
}

/* ------------------------------------------------------------ GGUF tokenizer metadata */

/* A vocab-only GGUF: 8 SentencePiece tokens, or a 4-merge gpt2 vocabulary; `defect`
 * breaks one thing. */
static const char *write_meta(const char *name, int defect)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/%s.gguf", test_tmpdir(), name);
    static const char *const TOKS[8] = {"<unk>", "<s>", "</s>", "a", "b", "ab", "\xE2\x96\x81", "\xE2\x96\x81" "ab"};
    float scores[9] = {0, 0, 0, -1, -2, -0.5f, -3, -0.1f, 0};   /* [9]: the count-mismatch case writes 9 */
    int32_t types[8] = {2, 3, 3, 1, 1, 1, 1, 1};
    edgellm_gguf_writer *w = edgellm_gguf_writer_new();
    edgellm_gguf_writer_set_str(w, "general.architecture", "llama");
    bool bpe = defect >= 10;
    edgellm_gguf_writer_set_str(w, "tokenizer.ggml.model", bpe ? "gpt2" : "llama");
    if (defect == 1) {   /* tokens is an array of floats */
        edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.tokens", EDGELLM_GGUF_FLOAT32, scores, 8);
    } else if (defect == 2) {   /* no tokens at all */
    } else if (defect == 3) {   /* zero tokens */
        edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", TOKS, NULL, 0);
    } else {
        edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", TOKS, NULL, 8);
    }
    if (defect == 4) scores[5] = NAN;
    edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.scores", EDGELLM_GGUF_FLOAT32, scores, defect == 5 ? 9 : 8);
    if (defect == 6) types[3] = -1;
    edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", EDGELLM_GGUF_INT32, types, 8);
    edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", defect == 7 ? 0x7FFFFFFFu : 1);
    if (defect == 8) edgellm_gguf_writer_set_i32(w, "tokenizer.ggml.eos_token_id", -5);
    else edgellm_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (bpe) {
        static const char *const MERGES_OK[] = {"a b"};
        static const char *const MERGES_NOSPACE[] = {"ab"};
        static const char *const MERGES_UNKNOWN[] = {"x y"};
        const char *const *mg = defect == 10 ? MERGES_NOSPACE : defect == 11 ? MERGES_UNKNOWN : MERGES_OK;
        if (defect == 12) edgellm_gguf_writer_set_arr(w, "tokenizer.ggml.merges", EDGELLM_GGUF_INT32, types, 8);
        else edgellm_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", mg, NULL, 1);
    }
    edgellm_error err = {0};
    CHECK_OK(edgellm_gguf_writer_write(w, path, &err));
    edgellm_gguf_writer_free(w);
    return path;
}

static void test_hostile_tokenizer_metadata(void)
{
    static const struct { const char *name; int defect; } META[] = {
        {"tokens_are_floats", 1}, {"tokens_missing", 2}, {"tokens_empty", 3}, {"score_nan", 4},
        {"scores_count_mismatch", 5}, {"token_type_negative", 6}, {"bos_id_2p31", 7}, {"eos_id_negative", 8},
        {"merge_without_space", 10}, {"merges_are_ints", 12},
    };
    for (size_t i = 0; i < sizeof META / sizeof META[0]; i++) {
        const char *path = write_meta(META[i].name, META[i].defect);
        /* in-process: refused (FORMAT) or, for a vocabulary edgellm cannot use, UNSUPPORTED;
         * never a handle, never a leak */
        edgellm_tokenizer *t = NULL;
        edgellm_error err = {0};
        long live = edgellm_test_live_allocs();
        edgellm_status s = edgellm_tokenizer_load(path, &t, &err);
        int f0 = test_failures;
        CHECK(s == EDGELLM_ERR_FORMAT || s == EDGELLM_ERR_UNSUPPORTED);
        CHECK(t == NULL);
        CHECK(strstr(err.msg, path) != NULL);
        CHECK_EQ(edgellm_test_live_allocs(), live);
        if (test_failures != f0) fprintf(stderr, "   %s: %s: %s\n", META[i].name, edgellm_status_name(s), err.msg);
        edgellm_tokenizer_free(t);
        char cmd[2048];
        snprintf(cmd, sizeof cmd, "'%s' tokenize -m '%s' -p 'ab ab'", EDGELLM_CLI, path);
        check_cli("tokenize", cmd, path, META[i].name);
    }
    /* the control vocabularies load; a merge of tokens the vocabulary lacks can never
     * apply and is ignored, as a file with unused merges is still usable */
    for (int d = 0; d < 3; d++) {
        const char *path = write_meta(d == 0 ? "control_spm" : d == 1 ? "control_bpe" : "merge_of_unknown_tokens",
                                      d == 0 ? 0 : d == 1 ? 99 : 11);
        edgellm_tokenizer *t = NULL;
        edgellm_error err = {0};
        CHECK_EQ(edgellm_tokenizer_load(path, &t, &err), EDGELLM_OK);
        if (!t) fprintf(stderr, "   control %d: %s\n", d, err.msg);
        edgellm_tokenizer_free(t);
    }
}

/* ------------------------------------------------------------ regressions */

/* Regression (found by fuzz/fuzz_gguf.c): edgellm_gguf_format_value wrote one
 * byte past its buffer when a string value's escapes ("\x01", 4 bytes each) ended 2 bytes
 * before the end and the "..." followed: `edgellm info` overflowed its 256-byte stack
 * buffer on a 116-byte file (tests/corpus/gguf/format-value-escape-overflow.gguf). Every
 * buffer size from 1 to 300, over strings whose escapes end at every alignment, must leave
 * the bytes after the buffer untouched and NUL-terminate inside it. */
static void test_regress_6_format_value_escape_overflow(void)
{
    int bad = 0;
    for (int lead = 0; lead < 4; lead++)
        for (int nl = 0; nl < 2; nl++) {
            uint8_t val[80];
            size_t n = 0;
            for (int i = 0; i < lead; i++) val[n++] = 'A';
            if (nl) val[n++] = '\n';
            while (n < sizeof val) val[n++] = 0x01;
            bytes b = {0};
            put(&b, "GGUF", 4);
            uint32_t v3 = 3, tstr = EDGELLM_GGUF_STRING;
            uint64_t zero = 0, one = 1, klen = 1, vlen = n;
            put(&b, &v3, 4); put(&b, &zero, 8); put(&b, &one, 8);
            put(&b, &klen, 8); put(&b, "k", 1); put(&b, &tstr, 4); put(&b, &vlen, 8); put(&b, val, n);
            edgellm_gguf *g = NULL;
            CHECK_OK(edgellm_gguf_open_memory(b.p, b.n, "regress.gguf", &g, NULL));
            for (size_t size = 1; g && size <= 300; size++) {
                uint8_t *buf = malloc(size + 16);
                memset(buf, 0xAA, size + 16);
                edgellm_gguf_format_value(g, 0, (char *)buf, size);
                bool canary = true;
                for (size_t k = size; k < size + 16; k++) canary &= buf[k] == 0xAA;
                bool terminated = memchr(buf, 0, size) != NULL;
                if ((!canary || !terminated) && bad++ < 5)
                    fprintf(stderr, "   lead %d, newline %d, size %zu: %s\n", lead, nl, size,
                            canary ? "not NUL-terminated" : "wrote past the buffer");
                free(buf);
            }
            edgellm_gguf_close(g);
            free(b.p);
        }
    CHECK_EQ(bad, 0);
}

/* Regression (found by fuzz/fuzz_gguf.c through edgellm_check_file): the reader
 * accepted general.alignment 1, 2 and 4, so Q4_0 blocks could start at odd addresses and
 * their f16 scales were loaded misaligned (UB; a fault on strict-alignment CPUs). gguf.md
 * says the alignment "must be a multiple of 8": 1, 2 and 4 are refused, 8 and 64 open. */
static void test_regress_6_alignment_below_8(void)
{
    static const uint32_t ALIGN[] = {1, 2, 4, 8, 64};
    for (size_t i = 0; i < sizeof ALIGN / sizeof ALIGN[0]; i++) {
        uint32_t a = ALIGN[i];
        bytes b = {0};
        uint32_t v3 = 3, t_u32 = EDGELLM_GGUF_UINT32, n_dims = 1, f32 = EDGELLM_TYPE_F32;
        uint64_t one = 1, klen = 17, nlen = 1, ne0 = 2, off = 0;
        put(&b, "GGUF", 4); put(&b, &v3, 4); put(&b, &one, 8); put(&b, &one, 8);
        put(&b, &klen, 8); put(&b, "general.alignment", 17); put(&b, &t_u32, 4); put(&b, &a, 4);
        put(&b, &nlen, 8); put(&b, "x", 1); put(&b, &n_dims, 4); put(&b, &ne0, 8); put(&b, &f32, 4); put(&b, &off, 8);
        while (b.n % a) put(&b, "\0", 1);
        float data[2] = {1, 2};
        put(&b, data, 8);
        edgellm_gguf *g = NULL;
        edgellm_error err = {0};
        edgellm_status s = edgellm_gguf_open_memory(b.p, b.n, "align.gguf", &g, &err);
        if (a >= 8) {
            CHECK_EQ(s, EDGELLM_OK);
            if (g) CHECK_EQ(edgellm_gguf_alignment(g), a);
        } else {
            CHECK_EQ(s, EDGELLM_ERR_FORMAT);
            CHECK(strstr(err.msg, "align.gguf") && strstr(err.msg, "general.alignment"));
        }
        if ((s == EDGELLM_OK) != (a >= 8)) fprintf(stderr, "   alignment %u: %s %s\n", a, edgellm_status_name(s), err.msg);
        edgellm_gguf_close(g);
        free(b.p);
    }
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    RUN(test_hostile_isolated_harness);
    RUN(test_hostile_llama2c_control_converts);
    RUN(test_hostile_llama2c_in_process);
    RUN(test_hostile_llama2c_cli_convert);
    RUN(test_hostile_tokenizer_metadata);
    RUN(test_regress_6_format_value_escape_overflow);
    RUN(test_regress_6_alignment_below_8);
    return test_summary();
}
