/* test_generate.c — generation for apps: the prompt cache (a repeated prompt is not
 * recomputed and gives the same text), multi-turn continuation (append), UTF-8 framing of
 * pieces, continuous batching (each prompt as alone), asynchronous jobs with abort, and
 * bad input. References: the same generation run alone from an empty context. */
#include "test_util.h"
#include "runtime/gen.h"
#include <pthread.h>

#define MODEL "models/stories260K/stories260K.gguf"

typedef struct {
    char text[4096];
    size_t len;
    int n_calls;
    int32_t tokens[512];
    int n_tokens;
} collected;

static int collect(int32_t token, const char *piece, size_t len, void *user)
{
    collected *c = user;
    if (c->len + len < sizeof c->text) memcpy(c->text + c->len, piece, len), c->len += len;
    c->text[c->len] = 0;
    if (token >= 0 && c->n_tokens < 512) c->tokens[c->n_tokens++] = token;
    c->n_calls++;
    return 0;
}

static edgellm_ctx *new_ctx(const edgellm_model *m, int n_ctx, int n_seq)
{
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_seq = n_seq;
    edgellm_ctx *c = NULL;
    edgellm_error err = {0};
    if (edgellm_ctx_new(m, &cp, &c, &err)) fprintf(stderr, "   %s\n", err.msg);
    return c;
}

static edgellm_generate_params greedy(int n)
{
    edgellm_generate_params p = edgellm_generate_default_params();
    p.n_predict = n;
    p.sampling.temperature = 0;
    return p;
}

/* The same prompt again keeps all but its last token in the cache; a longer prompt that
 * starts with it reuses it; the text is the same as from an empty context. */
static void test_prompt_cache(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path);
    if (!m) return;
    edgellm_ctx *c = new_ctx(m, 256, 1), *fresh = new_ctx(m, 256, 1);
    edgellm_generate_params p = greedy(20);
    edgellm_generate_stats st = {.size = sizeof st};
    collected a = {0}, b = {0}, f = {0};
    CHECK_OK(edgellm_generate(c, "Once upon a time, there was a little girl", &p, collect, &a, &st, NULL));
    CHECK_EQ(st.n_cached, 0);
    const int n_prompt = st.n_prompt;
    CHECK_OK(edgellm_generate(c, "Once upon a time, there was a little girl", &p, collect, &b, &st, NULL));
    CHECK_EQ(st.n_cached, n_prompt - 1);
    CHECK(a.len > 0 && strcmp(a.text, b.text) == 0);
    /* a longer prompt: its first n_prompt tokens are the same ids, so they are kept */
    collected c2 = {0};
    CHECK_OK(edgellm_generate(c, "Once upon a time, there was a little girl named Lily", &p, collect, &c2, &st, NULL));
    CHECK(st.n_cached >= n_prompt - 1);
    CHECK_OK(edgellm_generate(fresh, "Once upon a time, there was a little girl named Lily", &p, collect, &f, NULL, NULL));
    CHECK(strcmp(c2.text, f.text) == 0);
    edgellm_ctx_free(c);
    edgellm_ctx_free(fresh);
    edgellm_model_free(m);
}

/* A second turn appended to a sequence continues after everything it holds, the last
 * generated token included: the same text as generating from all those tokens at once. */
static void test_append_continues(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path);
    if (!m) return;
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(m);
    edgellm_ctx *c = new_ctx(m, 256, 2), *fresh = new_ctx(m, 256, 1);
    edgellm_generate_params p = greedy(8);
    p.seq = 1;
    collected t1 = {0}, t2 = {0}, ref = {0};
    edgellm_generate_stats st = {.size = sizeof st};
    CHECK_OK(edgellm_generate(c, "Tom had a red ball", &p, collect, &t1, &st, NULL));
    CHECK_EQ(st.stop, EDGELLM_STOP_N_PREDICT);
    CHECK_EQ(t1.n_tokens, 8);
    const int held = edgellm_seq_n_past(c, 1);          /* prompt + 7: the 8th was never decoded */
    CHECK_EQ(held, st.n_prompt + 7);
    p.append = 1;
    CHECK_OK(edgellm_generate(c, " He said", &p, collect, &t2, &st, NULL));
    CHECK_EQ(edgellm_seq_n_past(c, 0), 0);              /* sequence 0 untouched */
    /* the reference: prompt tokens + all 8 generated + " He said" (no BOS), from scratch */
    int32_t all[256];
    int n = 0, k = 0;
    CHECK_OK(edgellm_tokenize(tok, "Tom had a red ball", 18, 1, all, 256, &n, NULL));
    for (int i = 0; i < t1.n_tokens; i++) all[n++] = t1.tokens[i];
    CHECK_OK(edgellm_tokenize(tok, " He said", 8, 0, all + n, 256 - n, &k, NULL));
    n += k;
    edgellm_generate_params q = greedy(8);
    q.prompt_tokens = all;
    q.n_prompt_tokens = n;
    CHECK_OK(edgellm_generate(fresh, NULL, &q, collect, &ref, NULL, NULL));
    CHECK(t2.len > 0 && strcmp(t2.text, ref.text) == 0);
    if (strcmp(t2.text, ref.text)) fprintf(stderr, "   appended '%s' vs fresh '%s'\n", t2.text, ref.text);
    /* a turn that does not fit: a clear error naming both sizes, the sequence unchanged */
    edgellm_error err = {0};
    const int before = edgellm_seq_n_past(c, 1);
    char big[2048];
    for (int i = 0; i < 2047; i++) big[i] = "ab "[i % 3];
    big[2047] = 0;
    CHECK_EQ(edgellm_generate(c, big, &p, collect, &t2, NULL, &err), EDGELLM_ERR_CTX_FULL);
    CHECK(strstr(err.msg, "sequence 1") && strstr(err.msg, "n_ctx 256"));
    CHECK_EQ(edgellm_seq_n_past(c, 1), before);
    edgellm_ctx_free(c);
    edgellm_ctx_free(fresh);
    edgellm_model_free(m);
}

/* Pieces are whole UTF-8 characters: bytes held back until complete, bad bytes U+FFFD. */
static void test_utf8_framing(void)
{
    char pend[8], out[64];
    int np = 0;
    size_t n;
    const char euro[] = "\xE2\x82\xAC";                       /* U+20AC in three pieces */
    n = edgellm_utf8_frame(pend, &np, euro, 1, out);
    CHECK_EQ(n, 0); CHECK_EQ(np, 1);
    n = edgellm_utf8_frame(pend, &np, euro + 1, 1, out);
    CHECK_EQ(n, 0); CHECK_EQ(np, 2);
    n = edgellm_utf8_frame(pend, &np, euro + 2, 1, out);
    CHECK_EQ(n, 3); CHECK_EQ(np, 0);
    CHECK(memcmp(out, euro, 3) == 0);
    n = edgellm_utf8_frame(pend, &np, "a\xF0\x9F", 3, out);   /* 'a' + half an emoji */
    CHECK_EQ(n, 1); CHECK_EQ(np, 2);
    n = edgellm_utf8_frame(pend, &np, "\x98\x80z", 3, out);   /* U+1F600 completed, then 'z' */
    CHECK_EQ(n, 5);
    CHECK(memcmp(out, "\xF0\x9F\x98\x80z", 5) == 0);
    n = edgellm_utf8_frame(pend, &np, "\xFFx\xC0\xAF", 4, out);  /* never valid: U+FFFD each */
    CHECK_EQ(n, 10);
    CHECK(memcmp(out, "\xEF\xBF\xBDx\xEF\xBF\xBD\xEF\xBF\xBD", 10) == 0);
    n = edgellm_utf8_frame(pend, &np, "\xE2\x28", 2, out);    /* a lead byte then a non-continuation */
    CHECK_EQ(n, 4);
    CHECK(memcmp(out, "\xEF\xBF\xBD(", 4) == 0);
    n = edgellm_utf8_frame(pend, &np, "\xED\xA0", 2, out);    /* a surrogate's start: never valid */
    CHECK_EQ(n, 6);
    CHECK_EQ(np, 0);
    char big[600];                                           /* longer than the framer's chunk */
    for (int i = 0; i < 600; i += 3) memcpy(big + i, euro, 3);
    char bigout[2000];
    n = edgellm_utf8_frame(pend, &np, big, 599, bigout);     /* the last euro unfinished */
    CHECK_EQ(n, 597); CHECK_EQ(np, 2);
    CHECK(memcmp(bigout, big, 597) == 0);
}

static int batch_cb(int index, int32_t token, const char *piece, size_t len, void *user)
{
    collected *got = user;
    return collect(token, piece, len, &got[index]);
}

/* Each prompt of a batch gives exactly what it gives alone, greedy and sampled. */
static void test_generate_batch_matches_alone(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path);
    if (!m) return;
    const char *prompts[5] = {"Once upon a time", "The cat", "Lily and Ben went to the park.", "", "A big dog"};
    for (int sampled = 0; sampled <= 1; sampled++) {
        edgellm_generate_params p = greedy(24);
        if (sampled) p.sampling.temperature = 0.9f, p.sampling.seed = 42;
        collected alone[5];
        memset(alone, 0, sizeof alone);
        edgellm_ctx *one = new_ctx(m, 128, 1);
        for (int i = 0; i < 5; i++) CHECK_OK(edgellm_generate(one, prompts[i], &p, collect, &alone[i], NULL, NULL));
        edgellm_ctx_free(one);
        for (int n_seq = 1; n_seq <= 3; n_seq += 2) {
            edgellm_ctx *c = new_ctx(m, 128, n_seq);
            collected got[5];
            memset(got, 0, sizeof got);
            edgellm_generate_stats st[5];
            for (int i = 0; i < 5; i++) st[i] = (edgellm_generate_stats){.size = sizeof st[i]};
            CHECK_OK(edgellm_generate_batch(c, prompts, 5, &p, batch_cb, got, st, NULL));
            for (int i = 0; i < 5; i++) {
                CHECK(strcmp(got[i].text, alone[i].text) == 0);
                CHECK_EQ(st[i].n_generated, alone[i].n_tokens);
            }
            edgellm_ctx_free(c);
        }
    }
    edgellm_model_free(m);
}

/* ---------------------------------------------------------------- jobs ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int tokens_seen;
    int release;             /* the callback waits for this after its first token */
    int done_calls;
    edgellm_status done_status;
    collected text;
} job_state;

static int job_token(int32_t token, const char *piece, size_t len, void *user)
{
    job_state *s = user;
    pthread_mutex_lock(&s->mu);
    collect(token, piece, len, &s->text);
    s->tokens_seen++;
    pthread_cond_broadcast(&s->cv);
    while (!s->release) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

static void job_done(edgellm_status status, const edgellm_generate_stats *st, const edgellm_error *err, void *user)
{
    (void)st, (void)err;
    job_state *s = user;
    pthread_mutex_lock(&s->mu);
    s->done_calls++;
    s->done_status = status;
    pthread_mutex_unlock(&s->mu);
}

static void test_async_same_text_and_abort(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path);
    if (!m) return;
    edgellm_ctx *c = new_ctx(m, 256, 1);
    edgellm_generate_params p = greedy(32);
    collected sync = {0};
    CHECK_OK(edgellm_generate(c, "Once upon a time", &p, collect, &sync, NULL, NULL));

    /* run to the end on a worker: the same text; done called once */
    job_state s = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .release = 1};
    edgellm_job *j = NULL;
    CHECK_OK(edgellm_generate_async(c, "Once upon a time", &p, job_token, job_done, &s, &j, NULL));
    edgellm_generate_stats st = {.size = sizeof st};
    CHECK_OK(edgellm_job_wait(j, &st, NULL));
    CHECK(edgellm_job_done(j));
    CHECK_EQ(s.done_calls, 1);
    CHECK(strcmp(s.text.text, sync.text) == 0);
    edgellm_error err = {0};
    CHECK_EQ(edgellm_job_abort(j, &err), EDGELLM_ERR_MISUSE);          /* already finished */
    CHECK(strstr(err.msg, "already finished") != NULL);
    CHECK_EQ(edgellm_job_wait(j, NULL, &err), EDGELLM_ERR_MISUSE);     /* waited for once */
    edgellm_job_free(j);

    /* abort while it runs: the callback holds the worker after its first token */
    job_state a = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    p.n_predict = -1;
    CHECK_OK(edgellm_generate_async(c, "Once upon a time", &p, job_token, job_done, &a, &j, NULL));
    pthread_mutex_lock(&a.mu);
    while (a.tokens_seen == 0) pthread_cond_wait(&a.cv, &a.mu);
    pthread_mutex_unlock(&a.mu);
    CHECK_EQ(edgellm_generate(c, "x", &p, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);   /* busy */
    CHECK(strstr(err.msg, "job runs") != NULL);
    edgellm_job *j2 = NULL;
    CHECK_EQ(edgellm_generate_async(c, "x", &p, NULL, NULL, NULL, &j2, &err), EDGELLM_ERR_MISUSE);
    CHECK(j2 == NULL);
    CHECK(!edgellm_job_done(j));
    CHECK_OK(edgellm_job_abort(j, NULL));
    pthread_mutex_lock(&a.mu);
    a.release = 1;
    pthread_cond_broadcast(&a.cv);
    pthread_mutex_unlock(&a.mu);
    CHECK_EQ(edgellm_job_wait(j, &st, &err), EDGELLM_ERR_CANCELLED);
    CHECK_EQ(st.stop, EDGELLM_STOP_ABORT);
    CHECK(st.n_generated >= 1 && st.n_generated < 200);
    CHECK_EQ(a.done_calls, 1);
    CHECK_EQ(a.done_status, EDGELLM_ERR_CANCELLED);
    edgellm_job_free(j);
    /* the context is usable and gives the same text again */
    collected again = {0};
    p.n_predict = 32;
    CHECK_OK(edgellm_generate(c, "Once upon a time", &p, collect, &again, NULL, NULL));
    CHECK(strcmp(again.text, sync.text) == 0);

    /* freeing a running job aborts and waits for it */
    job_state f = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .release = 1};
    p.n_predict = -1;
    CHECK_OK(edgellm_generate_async(c, "Once upon a time", &p, job_token, job_done, &f, &j, NULL));
    edgellm_job_free(j);
    CHECK_EQ(f.done_calls, 1);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

static void test_generate_bad_input(void)
{
    NEED_SHARED(path, MODEL);
    edgellm_model *m = test_load_model(path);
    if (!m) return;
    edgellm_ctx *c = new_ctx(m, 32, 2);
    edgellm_error err = {0};
    edgellm_generate_params p = greedy(4);
    p.seq = 2;
    CHECK_EQ(edgellm_generate(c, "hi", &p, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "sequence 2 does not exist") != NULL);
    p.seq = 0;
    int32_t bad[2] = {1, 99999};
    p.prompt_tokens = bad;
    p.n_prompt_tokens = 2;
    CHECK_EQ(edgellm_generate(c, NULL, &p, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
    CHECK(strstr(err.msg, "99999") != NULL);
    edgellm_generate_stats st = {0};
    CHECK_EQ(edgellm_generate(c, "hi", NULL, NULL, NULL, &st, &err), EDGELLM_ERR_MISUSE);   /* stats.size 0 */
    edgellm_generate_params zero = {0};
    CHECK_EQ(edgellm_generate(c, "hi", &zero, NULL, NULL, NULL, &err), EDGELLM_ERR_MISUSE);
    const char *prompts[2] = {"Once upon a time", "Once upon a time, once upon a time, once upon a time, once upon a time, once upon a time, once upon"};
    edgellm_generate_params q = greedy(4);
    CHECK_EQ(edgellm_generate_batch(c, prompts, 2, &q, NULL, NULL, NULL, &err), EDGELLM_ERR_CTX_FULL);
    CHECK(strstr(err.msg, "prompt 1") != NULL);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
}

int main(void)
{
    RUN(test_prompt_cache);
    RUN(test_append_continues);
    RUN(test_utf8_framing);
    RUN(test_generate_batch_matches_alone);
    RUN(test_async_same_text_and_abort);
    RUN(test_generate_bad_input);
    return test_summary();
}
