/*
 * generate.c — the public generation calls (include/edgellm.h, "generation") on top of the
 * engine of gen.c: edgellm_generate (one stream, prefilled in one pass), edgellm_generate_batch
 * and edgellm_generate_batch_each (continuous batching over the context's sequences, one
 * parameter set for all prompts or one each) and the asynchronous jobs
 * (edgellm_generate_async: edgellm_generate on a worker thread).
 *
 * Jobs: the worker runs the generation with the context marked busy (public calls on it
 * other than abort are refused meanwhile), then the done callback, then marks the job
 * finished. The abort flag is cleared by edgellm_generate_async on the caller's thread
 * before the worker starts, so an abort right after it returns is never lost.
 */
#include "gen.h"
#include "../common/common.h"
#include <stdio.h>
#include <string.h>

edgellm_generate_params edgellm_generate_default_params(void)
{
    edgellm_generate_params p = {.size = sizeof p};
    p.n_predict = 128;
    p.add_bos = 1;
    p.sampling = edgellm_sampler_default_params();
    p.seq = 0;
    p.append = 0;
    return p;
}

typedef struct {
    edgellm_token_callback cb;
    void *user;
} single_cb;

static int single_piece(void *user, int index, int32_t token, const char *piece, size_t len)
{
    (void)index;
    const single_cb *s = user;
    return s->cb ? s->cb(token, piece, len, s->user) : 0;
}

static edgellm_status busy_refusal(const edgellm_ctx *c, const char *what, edgellm_error *err)
{
    return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: %s: a generation job runs on this context (wait for it first)",
                        c->model->path, what);
}

/* edgellm_generate without the entry checks: the job's worker runs this. */
static edgellm_status generate(edgellm_ctx *c, const char *prompt, const edgellm_generate_params *p,
                               edgellm_token_callback cb, void *user, edgellm_generate_stats *stats, edgellm_error *err)
{
    edgellm_gen g = {0};
    single_cb s = {cb, user};
    edgellm_status rc = edgellm_gen_begin(&g, c, 0, prompt, p);
    if (rc == EDGELLM_OK) rc = edgellm_gen_run(c, &g, 1, 0, single_piece, NULL, &s, err);
    else if (err) *err = g.err;
    if (rc == EDGELLM_OK && g.rc) {
        rc = g.rc;
        if (err) *err = g.err;
    }
    if (stats) edgellm_sized_out(stats, &g.st, sizeof g.st);
    edgellm_gen_end(&g);
    return rc;
}

edgellm_status edgellm_generate(edgellm_ctx *c, const char *prompt, const edgellm_generate_params *p,
                                edgellm_token_callback cb, void *user, edgellm_generate_stats *stats,
                                edgellm_error *err)
{
    if (stats) {
        edgellm_generate_stats st = {.size = sizeof st, .stop = EDGELLM_STOP_N_PREDICT};
        if (!edgellm_sized_out(stats, &st, sizeof st))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: stats.size is 0: set it to sizeof(edgellm_generate_stats)");
    }
    if (!c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: context is NULL");
    if (atomic_load(&c->busy)) return busy_refusal(c, "generate", err);
    atomic_store(&c->abort, 0);   /* a public call starts: an earlier abort is spent */
    return generate(c, prompt, p, cb, user, stats, err);
}

/* ------------------------------------------------------------------- batches ---- */

typedef struct {
    edgellm_ctx *c;
    const char *const *prompts;
    int n_prompts, next;
    const edgellm_generate_params *p;
    const edgellm_generate_params *const *each;   /* per prompt (edgellm_generate_batch_each), or NULL */
    edgellm_batch_callback cb;
    void *user;
    edgellm_generate_stats *stats;
} batch_run;

static int batch_piece(void *user, int index, int32_t token, const char *piece, size_t len)
{
    const batch_run *b = user;
    return b->cb ? b->cb(index, token, piece, len, b->user) : 0;
}

/* Begin prompt b->next in stream g (its sequence stays the slot's). */
static bool batch_begin_next(batch_run *b, edgellm_gen *g, int seq)
{
    if (b->next >= b->n_prompts) return false;
    const int index = b->next++;
    edgellm_generate_params p = edgellm_generate_default_params();
    edgellm_sized_in(&p, sizeof p, b->each ? b->each[index] : b->p, "edgellm_generate_params", NULL);
    p.seq = seq;
    p.append = 0;
    /* a shared p's prompt_tokens belong to no prompt in particular: a NULL prompt is "" */
    const char *prompt = b->prompts ? b->prompts[index] : NULL;
    if (!prompt && !b->each) prompt = "";
    if (edgellm_gen_begin(g, b->c, index, prompt, &p))   /* named in the message */
        snprintf(g->err.msg + strlen(g->err.msg), sizeof g->err.msg - strlen(g->err.msg), " (prompt %d)", index);
    return true;
}

static bool batch_refill(void *user, edgellm_gen *g)
{
    batch_run *b = user;
    if (b->stats && g->rc == EDGELLM_OK) edgellm_sized_out(&b->stats[g->index], &g->st, sizeof g->st);
    return batch_begin_next(b, g, g->seq);
}

/* Both batch calls: one shared p, or each[i] per prompt. */
static edgellm_status generate_batch(edgellm_ctx *c, const char *const *prompts, int n_prompts,
                                     const edgellm_generate_params *p, const edgellm_generate_params *const *each,
                                     edgellm_batch_callback cb, void *user, edgellm_generate_stats *stats,
                                     edgellm_error *err)
{
    if (!c || (!prompts && !each && n_prompts > 0) || n_prompts < 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate_batch: NULL context or prompts, or n_prompts %d < 0",
                            n_prompts);
    if (atomic_load(&c->busy)) return busy_refusal(c, "generate_batch", err);
    edgellm_status rc = EDGELLM_OK;
    for (int i = 0; i < (each ? n_prompts : 1); i++) {
        edgellm_generate_params check = edgellm_generate_default_params();
        if ((rc = edgellm_sized_in(&check, sizeof check, each ? each[i] : p, "edgellm_generate_params", err))) {
            if (each && err) snprintf(err->msg + strlen(err->msg), sizeof err->msg - strlen(err->msg), " (params[%d])", i);
            return rc;
        }
    }
    for (int i = 0; stats && i < n_prompts; i++) {
        edgellm_generate_stats st = {.size = sizeof st};
        if (!edgellm_sized_out(&stats[i], &st, sizeof st))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate_batch: stats[%d].size is 0: set each to "
                                "sizeof(edgellm_generate_stats)", i);
    }
    atomic_store(&c->abort, 0);
    const int n_slots = EDGELLM_MIN(c->n_seq, EDGELLM_MAX(n_prompts, 1));
    edgellm_gen *gens = edgellm_calloc((size_t)n_slots, sizeof *gens);
    if (!gens) return edgellm_fail_nomem(err, "generate_batch");
    batch_run b = {.c = c, .prompts = prompts, .n_prompts = n_prompts, .p = p, .each = each, .cb = cb, .user = user,
                   .stats = stats};
    for (int s = 0; s < n_slots && rc == EDGELLM_OK; s++)
        if (batch_begin_next(&b, &gens[s], s) && gens[s].rc) {
            rc = gens[s].rc;
            if (err) *err = gens[s].err;
        }
    if (rc == EDGELLM_OK) rc = edgellm_gen_run(c, gens, n_slots, 0, batch_piece, batch_refill, &b, err);
    for (int s = 0; s < n_slots; s++) edgellm_gen_end(&gens[s]);
    edgellm_free(gens);
    return rc;
}

edgellm_status edgellm_generate_batch(edgellm_ctx *c, const char *const *prompts, int n_prompts,
                                      const edgellm_generate_params *p, edgellm_batch_callback cb, void *user,
                                      edgellm_generate_stats *stats, edgellm_error *err)
{
    return generate_batch(c, prompts, n_prompts, p, NULL, cb, user, stats, err);
}

edgellm_status edgellm_generate_batch_each(edgellm_ctx *c, const char *const *prompts,
                                           const edgellm_generate_params *const *params, int n_prompts,
                                           edgellm_batch_callback cb, void *user, edgellm_generate_stats *stats,
                                           edgellm_error *err)
{
    if (!params && n_prompts > 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate_batch_each: params is NULL");
    for (int i = 0; i < n_prompts; i++)
        if (!params[i]) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate_batch_each: params[%d] is NULL", i);
    return generate_batch(c, prompts, n_prompts, NULL, params, cb, user, stats, err);
}

/* ---------------------------------------------------------------------- jobs ---- */

struct edgellm_job {
    pthread_t thread;
    edgellm_ctx *c;
    char *prompt;                  /* copies: the caller's may be gone                    */
    int32_t *tokens;
    edgellm_generate_params p;
    edgellm_token_callback cb;
    edgellm_done_callback done;
    void *user;
    edgellm_status rc;
    edgellm_generate_stats st;
    edgellm_error err;
    atomic_int finished;           /* done has returned                                  */
    bool joined;
};

static void *job_main(void *arg)
{
    edgellm_job *j = arg;
    j->st = (edgellm_generate_stats){.size = sizeof j->st};
    j->rc = generate(j->c, j->prompt, &j->p, j->cb, j->user, &j->st, &j->err);
    atomic_store(&j->c->busy, 0);
    if (j->done) j->done(j->rc, &j->st, &j->err, j->user);
    atomic_store(&j->finished, 1);
    return NULL;
}

edgellm_status edgellm_generate_async(edgellm_ctx *c, const char *prompt, const edgellm_generate_params *p,
                                      edgellm_token_callback cb, edgellm_done_callback done, void *user,
                                      edgellm_job **out, edgellm_error *err)
{
    if (out) *out = NULL;
    if (!c || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate_async: NULL context or out");
    edgellm_job *j = edgellm_calloc(1, sizeof *j);
    if (!j) return edgellm_fail_nomem(err, "generate_async");
    j->c = c, j->cb = cb, j->done = done, j->user = user;
    j->p = edgellm_generate_default_params();
    edgellm_status rc = edgellm_sized_in(&j->p, sizeof j->p, p, "edgellm_generate_params", err);
    if (!rc && prompt && !(j->prompt = edgellm_strdup(prompt))) rc = edgellm_fail_nomem(err, "generate_async: prompt");
    if (!rc && !prompt && j->p.n_prompt_tokens > 0 && j->p.prompt_tokens) {
        const size_t bytes = (size_t)j->p.n_prompt_tokens * sizeof(int32_t);
        if (!(j->tokens = edgellm_malloc(bytes))) rc = edgellm_fail_nomem(err, "generate_async: prompt tokens");
        else j->p.prompt_tokens = memcpy(j->tokens, j->p.prompt_tokens, bytes);
    }
    int idle = 0;
    if (!rc && !atomic_compare_exchange_strong(&c->busy, &idle, 1)) rc = busy_refusal(c, "generate_async", err);
    if (rc) {
        edgellm_free(j->prompt);
        edgellm_free(j->tokens);
        edgellm_free(j);
        return rc;
    }
    atomic_store(&c->abort, 0);   /* before the worker starts: an abort from now on counts */
    const int e = edgellm_thread_create(&j->thread, job_main, j);
    if (e) {
        atomic_store(&c->busy, 0);
        edgellm_free(j->prompt);
        edgellm_free(j->tokens);
        edgellm_free(j);
        return edgellm_fail(err, EDGELLM_ERR_IO, "generate_async: cannot start a thread: %s", strerror(e));
    }
    *out = j;
    return EDGELLM_OK;
}

int edgellm_job_done(const edgellm_job *j) { return j ? atomic_load(&j->finished) : 1; }

edgellm_status edgellm_job_abort(edgellm_job *j, edgellm_error *err)
{
    if (!j) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "job_abort: NULL job");
    if (atomic_load(&j->finished))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "job_abort: the generation has already finished (%s)",
                            j->rc ? edgellm_status_name(j->rc) : "EDGELLM_OK");
    edgellm_ctx_abort(j->c);
    return EDGELLM_OK;
}

edgellm_status edgellm_job_wait(edgellm_job *j, edgellm_generate_stats *stats, edgellm_error *err)
{
    if (!j) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "job_wait: NULL job");
    if (j->joined) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "job_wait: the job was already waited for");
    pthread_join(j->thread, NULL);
    j->joined = true;
    if (stats) edgellm_sized_out(stats, &j->st, sizeof j->st);
    if (err && j->rc) *err = j->err;
    return j->rc;
}

void edgellm_job_free(edgellm_job *j)
{
    if (!j) return;
    if (!j->joined) {
        if (!atomic_load(&j->finished)) edgellm_ctx_abort(j->c);
        pthread_join(j->thread, NULL);
    }
    edgellm_free(j->prompt);
    edgellm_free(j->tokens);
    edgellm_free(j);
}
