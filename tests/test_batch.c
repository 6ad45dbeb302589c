/* test_batch.c — several sequences in one context (edgellm_decode_batch and the sequence
 * operations). The reference is each sequence run alone in a context of its own: its
 * logits must be the same bits whatever else shares the batch, for B = 1..8 sequences, 1
 * and 2 threads, every kernel level this CPU runs, prompts that span several chunks and
 * tokens of different sequences interleaved. */
#include "test_util.h"
#include "kernels/dispatch.h"
#include "model/model.h"

#define STEPS 6

typedef struct {
    int n_vocab;
    int len[8];              /* prompt length of each sequence */
    const int32_t *tok;      /* the token pool prompts and steps are taken from */
    int n_tok;
} plan_t;

static int32_t prompt_tok(const plan_t *p, int s, int i) { return p->tok[(s * 7 + i) % p->n_tok]; }
static int32_t step_tok(const plan_t *p, int s, int k) { return p->tok[(s * 13 + k * 5 + 3) % p->n_tok]; }

/* Sequence s alone: its prompt's logits [len][V] then STEPS step logits [STEPS][V]. */
static float *run_alone(const edgellm_model *m, const plan_t *p, int s, int n_threads, int kv_type)
{
    const size_t V = (size_t)p->n_vocab;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 128;
    cp.n_threads = n_threads;
    cp.kv_type = kv_type;
    edgellm_ctx *c = NULL;
    if (edgellm_ctx_new(m, &cp, &c, NULL) != EDGELLM_OK) return NULL;
    float *out = malloc(((size_t)p->len[s] + STEPS) * V * sizeof(float));
    int32_t toks[128];
    for (int i = 0; i < p->len[s]; i++) toks[i] = prompt_tok(p, s, i);
    bool ok = edgellm_decode(c, toks, p->len[s], out, NULL) == EDGELLM_OK;
    for (int k = 0; k < STEPS && ok; k++) {
        int32_t t = step_tok(p, s, k);
        ok = edgellm_decode(c, &t, 1, NULL, NULL) == EDGELLM_OK;
        if (ok) memcpy(out + ((size_t)p->len[s] + k) * V, edgellm_ctx_logits(c), V * sizeof(float));
    }
    edgellm_ctx_free(c);
    if (!ok) { free(out); out = NULL; }
    return out;
}

/* B sequences together: the prompts interleaved token by token in one batch (every token's
 * logits kept), then STEPS batches of one token per sequence. Compares with `alone`. */
static bool run_together(const edgellm_model *m, const plan_t *p, int B, int n_threads, int kv_type,
                         float *const *alone)
{
    const size_t V = (size_t)p->n_vocab;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 128;
    cp.n_threads = n_threads;
    cp.kv_type = kv_type;
    cp.n_seq = B;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    if (edgellm_ctx_new(m, &cp, &c, &err) != EDGELLM_OK) { fprintf(stderr, "   %s\n", err.msg); return false; }
    int total = 0, maxlen = 0;
    for (int s = 0; s < B; s++) total += p->len[s], maxlen = p->len[s] > maxlen ? p->len[s] : maxlen;
    int32_t *toks = malloc((size_t)total * sizeof *toks), *seq = malloc((size_t)total * sizeof *seq);
    int *idx = malloc((size_t)total * sizeof *idx);      /* token's index in its prompt */
    float *logits = malloc((size_t)total * V * sizeof(float));
    int n = 0;
    for (int i = 0; i < maxlen; i++)
        for (int s = 0; s < B; s++)
            if (i < p->len[s]) toks[n] = prompt_tok(p, s, i), seq[n] = s, idx[n++] = i;
    edgellm_batch b = {.size = sizeof b, .n_tokens = n, .tokens = toks, .seq = seq, .logits = logits};
    bool same = edgellm_decode_batch(c, &b, &err) == EDGELLM_OK;
    if (!same) fprintf(stderr, "   decode_batch: %s\n", err.msg);
    for (int i = 0; i < n && same; i++)
        same = memcmp(logits + (size_t)i * V, alone[seq[i]] + (size_t)idx[i] * V, V * sizeof(float)) == 0;
    for (int s = 0; s < B && same; s++)   /* the kept logits are each prompt's last */
        same = edgellm_seq_logits(c, s) &&
               memcmp(edgellm_seq_logits(c, s), alone[s] + ((size_t)p->len[s] - 1) * V, V * sizeof(float)) == 0;
    for (int k = 0; k < STEPS && same; k++) {
        int32_t st[8], ss[8];
        for (int s = 0; s < B; s++) st[s] = step_tok(p, B - 1 - s, k), ss[s] = B - 1 - s;   /* any order */
        edgellm_batch sb = {.size = sizeof sb, .n_tokens = B, .tokens = st, .seq = ss};
        same = edgellm_decode_batch(c, &sb, &err) == EDGELLM_OK;
        for (int s = 0; s < B && same; s++)
            same = memcmp(edgellm_seq_logits(c, s), alone[s] + ((size_t)p->len[s] + k) * V, V * sizeof(float)) == 0;
    }
    for (int s = 0; s < B && same; s++) same = edgellm_seq_n_past(c, s) == p->len[s] + STEPS;
    free(toks), free(seq), free(idx), free(logits);
    edgellm_ctx_free(c);
    return same;
}

static void check_model_batches(const char *model_rel, int kv_type)
{
    NEED_SHARED(mpath, model_rel);
    NEED_SHARED(tpath, "data/reference/tokens.txt");
    int32_t pool[512];
    plan_t p = {.tok = pool, .n_tok = read_tokens(tpath, pool, 512)};
    edgellm_model *m = test_load_model(mpath);
    CHECK(m != NULL && p.n_tok > 8);
    if (!m || p.n_tok <= 8) { edgellm_model_free(m); return; }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    p.n_vocab = info.n_vocab;
    for (int s = 0; s < 8; s++) p.len[s] = 3 + 10 * s;    /* 3 .. 73 tokens: the last spans two chunks */
    const char *levels[] = {"ref", "scalar", "avx2", "avx512", "neon", "dotprod"};
    int n_levels = 0;
    for (size_t l = 0; l < sizeof levels / sizeof levels[0]; l++) {
        if (!edgellm_kernels_force(levels[l])) continue;   /* not on this CPU */
        n_levels++;
        for (int nt = 1; nt <= 2; nt++) {
            float *alone[8] = {0};
            bool ok = true;
            for (int s = 0; s < 8; s++) ok = ok && (alone[s] = run_alone(m, &p, s, nt, kv_type)) != NULL;
            CHECK(ok);
            for (int B = 1; B <= 8 && ok; B++) {
                bool same = run_together(m, &p, B, nt, kv_type, alone);
                if (!same) fprintf(stderr, "   %s: B=%d, %d thread(s), kernels %s: differs from alone\n", model_rel, B, nt,
                                   levels[l]);
                CHECK(same);
            }
            for (int s = 0; s < 8; s++) free(alone[s]);
        }
    }
    edgellm_kernels_force("auto");
    fprintf(stderr, "   %s, KV %s: B = 1..8 x 1, 2 threads x %d kernel levels\n", model_rel, edgellm_type_name(kv_type),
            n_levels);
    edgellm_model_free(m);
}

static void test_batch_bitexact_stories(void) { check_model_batches("models/stories260K/stories260K.gguf", EDGELLM_TYPE_F32); }
static void test_batch_bitexact_gqa_q4_0(void) { check_model_batches("data/reference/llama-gqa-q4_0.gguf", EDGELLM_TYPE_F32); }
static void test_batch_bitexact_qwen2(void) { check_model_batches("data/reference/qwen2-bias-f32.gguf", EDGELLM_TYPE_F16); }
static void test_batch_bitexact_q4_k_m_q8kv(void)
{
    check_model_batches("data/reference/llama-gqa-q4_k_m.gguf", EDGELLM_TYPE_Q8_0);
}

/* A shared prefix computed once and copied: the copy continues exactly as if it had been
 * computed in that sequence. */
static void test_seq_copy_prefix(void)
{
    NEED_SHARED(mpath, "models/stories260K/stories260K.gguf");
    edgellm_model *m = test_load_model(mpath);
    if (!m) return;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 64;
    cp.n_seq = 3;
    edgellm_ctx *c = NULL, *one = NULL;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
    cp.n_seq = 1;
    CHECK_OK(edgellm_ctx_new(m, &cp, &one, NULL));
    const int32_t sys[10] = {1, 403, 407, 261, 378, 286, 270, 259, 300, 420};
    const int32_t a[3] = {290, 291, 292}, b2[2] = {350, 351};
    CHECK_OK(edgellm_decode(c, sys, 10, NULL, NULL));                   /* sequence 0 */
    CHECK_OK(edgellm_seq_copy(c, 0, 2, 10, NULL));
    CHECK_EQ(edgellm_seq_n_past(c, 2), 10);
    CHECK(edgellm_seq_logits(c, 2) == NULL);                             /* copied cells, no logits */
    CHECK(memcmp(edgellm_seq_tokens(c, 2), sys, sizeof sys) == 0);
    const int32_t seqs2[2] = {2, 2};
    edgellm_batch bb = {.size = sizeof bb, .n_tokens = 2, .tokens = b2, .seq = seqs2};
    CHECK_OK(edgellm_decode_batch(c, &bb, NULL));
    int32_t ref[13];
    memcpy(ref, sys, sizeof sys);
    memcpy(ref + 10, b2, sizeof b2);
    CHECK_OK(edgellm_decode(one, ref, 12, NULL, NULL));
    CHECK(memcmp(edgellm_seq_logits(c, 2), edgellm_ctx_logits(one), 512 * sizeof(float)) == 0);
    /* sequence 0 goes on with its own tokens, unaffected */
    CHECK_OK(edgellm_decode(c, a, 3, NULL, NULL));
    edgellm_ctx_reset(one);
    memcpy(ref + 10, a, sizeof a);
    CHECK_OK(edgellm_decode(one, ref, 13, NULL, NULL));
    CHECK(memcmp(edgellm_ctx_logits(c), edgellm_ctx_logits(one), 512 * sizeof(float)) == 0);
    /* removing to the end is a truncation: the same logits as a fresh run of the rest */
    CHECK_OK(edgellm_seq_remove(c, 0, 11, -1, NULL));
    CHECK_EQ(edgellm_seq_n_past(c, 0), 11);
    CHECK_OK(edgellm_decode(c, a + 2, 1, NULL, NULL));
    int32_t ref2[12];
    memcpy(ref2, sys, sizeof sys);
    ref2[10] = a[0], ref2[11] = a[2];
    edgellm_ctx_reset(one);
    CHECK_OK(edgellm_decode(one, ref2, 12, NULL, NULL));
    CHECK(memcmp(edgellm_ctx_logits(c), edgellm_ctx_logits(one), 512 * sizeof(float)) == 0);
    edgellm_ctx_free(c);
    edgellm_ctx_free(one);
    edgellm_model_free(m);
}

/* Removing a middle range leaves a gap in the positions: later cells keep theirs and the
 * next token goes after the last; explicit positions must increase past it. */
static void test_seq_remove_middle_keeps_positions(void)
{
    NEED_SHARED(mpath, "models/stories260K/stories260K.gguf");
    edgellm_model *m = test_load_model(mpath);
    if (!m) return;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 32;
    cp.n_seq = 2;
    edgellm_ctx *c = NULL;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
    int32_t t[20];
    for (int i = 0; i < 20; i++) t[i] = 260 + i;
    const int32_t seq1[20] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    edgellm_batch b = {.size = sizeof b, .n_tokens = 20, .tokens = t, .seq = seq1};
    CHECK_OK(edgellm_decode_batch(c, &b, NULL));
    CHECK_OK(edgellm_seq_remove(c, 1, 5, 10, NULL));
    CHECK_EQ(edgellm_seq_n_past(c, 1), 15);
    CHECK_EQ(edgellm_seq_pos_max(c, 1), 19);
    CHECK_EQ(edgellm_seq_tokens(c, 1)[5], 270);                          /* t[10] moved down */
    CHECK(edgellm_seq_logits(c, 1) == NULL);
    int32_t x = 300, p = 19;
    edgellm_error err = {0};
    edgellm_batch bp = {.size = sizeof bp, .n_tokens = 1, .tokens = &x, .seq = seq1, .pos = &p};
    CHECK_EQ(edgellm_decode_batch(c, &bp, &err), EDGELLM_ERR_MISUSE);   /* not past 19 */
    CHECK(strstr(err.msg, "position 19") && strstr(err.msg, "last position 19"));
    p = 25;                                                              /* a further gap is allowed */
    CHECK_OK(edgellm_decode_batch(c, &bp, NULL));
    CHECK_EQ(edgellm_seq_pos_max(c, 1), 25);
    CHECK_EQ(edgellm_seq_n_past(c, 1), 16);
    CHECK_EQ(edgellm_seq_n_past(c, 0), 0);                               /* sequence 0 untouched */
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

/* Bad input: a clear status and message, nothing changed, the context usable. */
static void test_batch_bad_input(void)
{
    NEED_SHARED(mpath, "models/stories260K/stories260K.gguf");
    edgellm_model *m = test_load_model(mpath);
    if (!m) return;
    edgellm_error err = {0};
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    edgellm_ctx *c = NULL;
    cp.n_seq = 0;
    CHECK_EQ(edgellm_ctx_new(m, &cp, &c, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "n_seq 0") != NULL);
    cp.n_seq = 65;
    CHECK_EQ(edgellm_ctx_new(m, &cp, &c, &err), EDGELLM_ERR_MISUSE);
    cp.n_seq = 2;
    cp.n_ctx = 8;
    CHECK_OK(edgellm_ctx_new(m, &cp, &c, NULL));
    if (!c) { edgellm_model_free(m); return; }
    const int32_t toks[6] = {1, 300, 301, 302, 303, 304};
    int32_t seq[6] = {0, 1, 2, 0, 0, 0};
    edgellm_batch b = {.size = sizeof b, .n_tokens = 3, .tokens = toks, .seq = seq};
    CHECK_EQ(edgellm_decode_batch(c, &b, &err), EDGELLM_ERR_MISUSE);     /* sequence 2 of 2 */
    CHECK(strstr(err.msg, "sequence 2 does not exist") != NULL);
    seq[2] = -1;
    CHECK_EQ(edgellm_decode_batch(c, &b, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_seq_n_past(c, 0) + edgellm_seq_n_past(c, 1), 0);
    /* sequence 1 overflows its 8 cells: refused before any compute; 0 unchanged */
    int32_t seq_full[10] = {0, 1, 1, 1, 1, 1, 1, 1, 1, 1}, many[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    edgellm_batch bf = {.size = sizeof bf, .n_tokens = 10, .tokens = many, .seq = seq_full};
    CHECK_EQ(edgellm_decode_batch(c, &bf, &err), EDGELLM_ERR_CTX_FULL);
    CHECK(strstr(err.msg, "sequence 1") && strstr(err.msg, "n_ctx 8"));
    CHECK_EQ(edgellm_seq_n_past(c, 0), 0);
    int32_t bad_tok = 512;
    edgellm_batch bt = {.size = sizeof bt, .n_tokens = 1, .tokens = &bad_tok};
    CHECK_EQ(edgellm_decode_batch(c, &bt, &err), EDGELLM_ERR_MISUSE);
    edgellm_batch b0 = {0};
    CHECK_EQ(edgellm_decode_batch(c, &b0, &err), EDGELLM_ERR_MISUSE);   /* size 0 */
    /* sequence operations out of range */
    CHECK_EQ(edgellm_seq_clear(c, 2, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_seq_remove(c, 0, 5, 3, &err), EDGELLM_ERR_MISUSE);
    CHECK_EQ(edgellm_seq_copy(c, 0, 1, 1, &err), EDGELLM_ERR_MISUSE);   /* sequence 0 holds 0 */
    CHECK(strstr(err.msg, "holds 0") != NULL);
    CHECK_EQ(edgellm_seq_copy(c, 0, 5, 0, &err), EDGELLM_ERR_MISUSE);
    CHECK(edgellm_seq_tokens(c, 7) == NULL && edgellm_seq_logits(c, -1) == NULL && edgellm_seq_pos_max(c, 9) == -1);
    /* still usable */
    seq[2] = 1;
    CHECK_OK(edgellm_decode_batch(c, &b, NULL));
    CHECK_EQ(edgellm_seq_n_past(c, 0), 1);
    CHECK_EQ(edgellm_seq_n_past(c, 1), 2);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

/* An abort stops the pass before the next layer; the batch is not added; the next call
 * clears the flag and works. */
static void test_abort_leaves_the_context_usable(void)
{
    NEED_SHARED(mpath, "models/stories260K/stories260K.gguf");
    edgellm_model *m = test_load_model(mpath);
    if (!m) return;
    edgellm_ctx *c = NULL;
    CHECK_OK(edgellm_ctx_new(m, NULL, &c, NULL));
    const int32_t toks[4] = {1, 300, 301, 302};
    CHECK_OK(edgellm_decode(c, toks, 2, NULL, NULL));
    float before[512];
    memcpy(before, edgellm_ctx_logits(c), sizeof before);
    edgellm_ctx_abort(c);                                   /* as from another thread mid-call */
    edgellm_error err = {0};
    edgellm_batch b = {.size = sizeof b, .n_tokens = 2, .tokens = toks + 2};
    CHECK_EQ(edgellm_decode_batch_internal(c, &b, &err), EDGELLM_ERR_CANCELLED);
    CHECK(strstr(err.msg, "aborted") != NULL);
    CHECK_EQ(edgellm_ctx_n_past(c), 2);
    edgellm_ctx_abort(c);                                   /* nothing running: no effect */
    CHECK_OK(edgellm_decode(c, toks + 2, 2, NULL, NULL));
    CHECK_EQ(edgellm_ctx_n_past(c), 4);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

int main(void)
{
    RUN(test_batch_bitexact_stories);
    RUN(test_batch_bitexact_gqa_q4_0);
    RUN(test_batch_bitexact_qwen2);
    RUN(test_batch_bitexact_q4_k_m_q8kv);
    RUN(test_seq_copy_prefix);
    RUN(test_seq_remove_middle_keeps_positions);
    RUN(test_batch_bad_input);
    RUN(test_abort_leaves_the_context_usable);
    return test_summary();
}
