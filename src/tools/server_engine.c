/*
 * server_engine.c — the engine thread of `edgellm serve` (contract in server.h).
 *
 * One thread owns the context: slot i is sequence i, with its own n_ctx cells. Its loop:
 *   1. take requests from the queue into free slots: the slot whose cached tokens share the
 *      longest prefix with the prompt (ties: the one used least recently, so that other
 *      caches live longer); edgellm_gen_begin keeps that prefix (append 0) and reports it
 *      as n_cached, so a chat's next turn recomputes only what is new;
 *   2. cancel the streams whose client went away, whose deadline passed, or, while
 *      draining, all of them once the drain deadline passed (edgellm_gen_cancel);
 *   3. one edgellm_gen_step: every decoding slot's next token plus prompt tokens of the
 *      slots still reading their prompt, at most prefill_batch of those per step (chunked
 *      prefill: decoding slots get a token every step while a long prompt is read);
 *   4. pieces go to their request as they come (stop strings matched there); finished
 *      streams complete their request and free their slot.
 * With speculative decoding (a single slot) step 3 is a whole edgellm_generate_speculative
 * call per request, its token callback doing step 2's checks.
 * Lock order: the engine's mutex before a task's; the connection threads never hold a
 * task's mutex while calling in here.
 */
#include "server.h"
#include "../runtime/gen.h"
#include <string.h>
#include <time.h>

#define EDGELLM_SRV_RATE_WINDOW 10   /* seconds of the tok/s gauge */

struct edgellm_srv_engine {
    edgellm_ctx *ctx;
    edgellm_ctx *draft;                /* speculative decoding: the draft's context or NULL */
    edgellm_spec_params sp;
    bool spec;                         /* one slot, each request speculative, whole       */
    int n_slots, n_ctx, prefill_batch, queue_cap;
    edgellm_gen *gens;                 /* [n_slots]; engine thread only                  */
    edgellm_srv_task **running;        /* [n_slots] the request in each slot; engine thread */
    uint64_t *last_used;               /* [n_slots] when each slot last took a request    */
    uint64_t use_counter;
    size_t max_stop;                   /* engine thread: longest stop string of a request */
    pthread_t thread;
    bool started;

    pthread_mutex_t mu;                /* guards what follows                             */
    pthread_cond_t cv;
    edgellm_srv_task **queue;          /* ring [queue_cap]                                */
    int q_head, q_len;
    int n_running;                     /* requests taken from the queue and not finished  */
    bool draining, quit;
    double drain_deadline;
    edgellm_srv_stats st;
    uint64_t rate_tokens[EDGELLM_SRV_RATE_WINDOW + 1];   /* tokens per second, by second % (window + 1) */
    int64_t rate_sec[EDGELLM_SRV_RATE_WINDOW + 1];
    double t_start;
};

/* ---------------------------------------------------------------- tasks ---- */

edgellm_srv_task *edgellm_srv_task_new(void)
{
    edgellm_srv_task *t = edgellm_calloc(1, sizeof *t);
    if (!t) return NULL;
    if (pthread_mutex_init(&t->mu, NULL)) {
        edgellm_free(t);
        return NULL;
    }
    pthread_condattr_t ca;   /* timed waits on the monotonic clock */
    const bool attr = pthread_condattr_init(&ca) == 0;
    if (attr) pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    const int cv_rc = pthread_cond_init(&t->cv, attr ? &ca : NULL);
    if (attr) pthread_condattr_destroy(&ca);
    if (cv_rc) {
        pthread_mutex_destroy(&t->mu);
        edgellm_free(t);
        return NULL;
    }
    atomic_init(&t->cancel, 0);
    t->refs = 1;
    t->gp = edgellm_generate_default_params();
    return t;
}

void edgellm_srv_task_release(edgellm_srv_task *t)
{
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    const int left = --t->refs;
    pthread_mutex_unlock(&t->mu);
    if (left > 0) return;
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    edgellm_free(t->tokens);
    edgellm_free(t->text);
    for (int i = 0; i < t->n_stop; i++) edgellm_free(t->stop[i]);
    edgellm_free(t->stop);
    edgellm_free(t->out);
    edgellm_free(t);
}

/* The request ends without running (or with an error): status, type, message. */
static void task_fail(edgellm_srv_task *t, int http, const char *type, const char *msg)
{
    pthread_mutex_lock(&t->mu);
    edgellm_srv_fail(&t->err, http, type, NULL, "%s", msg);
    t->state = EDGELLM_SRV_DONE;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    edgellm_srv_task_release(t);   /* the engine's reference */
}

/* ---------------------------------------------------------------- pieces ---- */

static void count_rate(edgellm_srv_engine *e, uint64_t n)
{
    const int64_t sec = (int64_t)(edgellm_time_ms() / 1000.0);
    const int i = (int)(sec % (EDGELLM_SRV_RATE_WINDOW + 1));
    if (e->rate_sec[i] != sec) e->rate_sec[i] = sec, e->rate_tokens[i] = 0;
    e->rate_tokens[i] += n;
}

/* A piece of slot's stream (gen.h's callback): append it to the request, cut at a stop
 * string. Non-zero stops the stream. */
static int on_piece(void *user, int slot, int32_t token, const char *piece, size_t len)
{
    edgellm_srv_engine *e = user;
    edgellm_srv_task *t = e->running[slot];
    if (!t) return 1;
    int stop = 0;
    pthread_mutex_lock(&t->mu);
    if (!t->stopped_by_word && len) {
        if (t->out_len + len + 1 > t->out_cap) {
            size_t cap = t->out_cap ? t->out_cap : 256;
            while (cap < t->out_len + len + 1) cap *= 2;
            char *bigger = edgellm_realloc(t->out, cap);
            if (!bigger) {
                pthread_mutex_unlock(&t->mu);
                atomic_store(&t->cancel, 1);
                return 1;
            }
            t->out = bigger;
            t->out_cap = cap;
        }
        const size_t before = t->out_len;
        memcpy(t->out + t->out_len, piece, len);
        t->out_len += len;
        t->out[t->out_len] = 0;
        if (t->n_stop) {
            /* a new match ends in this piece, so starts at most max_stop - 1 bytes before it */
            const size_t from = before > e->max_stop ? before - e->max_stop : 0;
            size_t safe = 0;
            const long at = edgellm_srv_find_stop(t->out + from, t->out_len - from, t->stop, t->n_stop, &safe);
            if (at >= 0) {
                t->out_len = from + (size_t)at;
                t->out[t->out_len] = 0;
                t->stopped_by_word = 1;
                stop = 1;
            }
            t->out_safe = from + safe;
        } else {
            t->out_safe = t->out_len;
        }
    }
    if (token >= 0) {
        t->n_generated++;
        if (t->t_first == 0) t->t_first = edgellm_time_ms();
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (token >= 0) {
        pthread_mutex_lock(&e->mu);
        count_rate(e, 1);
        e->st.generated_tokens++;
        pthread_mutex_unlock(&e->mu);
    }
    return stop || atomic_load(&t->cancel);
}

/* ---------------------------------------------------------- speculative ---- */

typedef struct {
    edgellm_srv_engine *e;
    int slot;
} spec_user;

/* The token callback of a speculative request: the cancel checks of the step loop (client
 * gone, deadline, drain over, quitting), then on_piece. */
static int spec_piece(int32_t token, const char *piece, size_t len, void *user)
{
    const spec_user *u = user;
    edgellm_srv_engine *e = u->e;
    edgellm_srv_task *t = e->running[u->slot];
    const double now = edgellm_time_ms();
    if (t && t->deadline > 0 && now > t->deadline) {
        pthread_mutex_lock(&t->mu);
        t->timed_out = 1;
        pthread_mutex_unlock(&t->mu);
        return 1;
    }
    pthread_mutex_lock(&e->mu);
    const bool stop = e->quit || (e->draining && now > e->drain_deadline);
    pthread_mutex_unlock(&e->mu);
    return stop || on_piece(e, u->slot, token, piece, len);
}

/* Run t's generation to its end with edgellm_generate_speculative; the stream is left
 * GEN_DONE with its stats, status and error, as a stepped one (finish_slot collects it). */
static void run_speculative(edgellm_srv_engine *e, int slot, edgellm_srv_task *t, const edgellm_generate_params *gp)
{
    edgellm_gen *g = &e->gens[slot];
    spec_user u = {e, slot};
    edgellm_spec_stats ss = {.size = sizeof ss};
    g->st = (edgellm_generate_stats){.size = sizeof g->st};
    g->err = (edgellm_error){0};
    g->rc = edgellm_generate_speculative(e->ctx, e->draft, t->text, gp, &e->sp, spec_piece, &u, &g->st, &ss, &g->err);
    g->state = GEN_DONE;
    pthread_mutex_lock(&e->mu);
    e->st.prompt_tokens += (uint64_t)g->st.n_prompt;
    e->st.cached_tokens += (uint64_t)g->st.n_cached;
    e->st.prefix_hits += g->st.n_cached > 0;
    e->st.spec_drafted += (uint64_t)ss.n_drafted;
    e->st.spec_accepted += (uint64_t)ss.n_accepted;
    e->st.spec_passes += (uint64_t)ss.n_passes;
    e->st.spec_draft_passes += (uint64_t)ss.n_draft_passes;
    e->st.spec_tokens += (uint64_t)g->st.n_generated;
    if (ss.pass1_ms > 0 && g->st.n_generated > 1 && g->st.decode_ms > 0) {   /* the first token is the prefill's */
        e->st.spec_decode_ms += g->st.decode_ms;
        e->st.spec_plain_ms += (g->st.n_generated - 1) * ss.pass1_ms;
    }
    pthread_mutex_unlock(&e->mu);
}

/* ---------------------------------------------------------------- slots ---- */

/* Start t in the free slot whose cache shares the longest prefix with its prompt. */
static void start_task(edgellm_srv_engine *e, edgellm_srv_task *t)
{
    int best = -1, best_len = -1;
    for (int i = 0; i < e->n_slots; i++) {
        if (e->running[i]) continue;
        const int n = edgellm_seq_n_past(e->ctx, i);
        const int32_t *toks = edgellm_seq_tokens(e->ctx, i);
        int k = 0;
        while (k < n && k < t->n_tokens && toks[k] == t->tokens[k]) k++;
        if (k > best_len || (k == best_len && e->last_used[i] < e->last_used[best])) best = i, best_len = k;
    }
    const int slot = best;   /* a free slot exists: the caller took only as many requests */
    e->running[slot] = t;
    e->last_used[slot] = ++e->use_counter;
    pthread_mutex_lock(&t->mu);
    t->state = EDGELLM_SRV_RUNNING;
    pthread_mutex_unlock(&t->mu);
    for (int i = 0; i < t->n_stop; i++) e->max_stop = EDGELLM_MAX(e->max_stop, strlen(t->stop[i]));
    edgellm_generate_params gp = t->gp;
    gp.seq = slot;
    gp.append = 0;
    if (!t->text) {
        gp.prompt_tokens = t->tokens;
        gp.n_prompt_tokens = t->n_tokens;
    }
    edgellm_gen *g = &e->gens[slot];
    if (e->spec) {
        run_speculative(e, slot, t, &gp);
        return;
    }
    edgellm_gen_begin(g, e->ctx, slot, t->text, &gp);   /* a failure leaves it GEN_DONE: collected */
    if (g->state == GEN_PREFILL) {
        pthread_mutex_lock(&t->mu);
        t->n_prompt = g->st.n_prompt;
        t->n_cached = g->st.n_cached;
        pthread_mutex_unlock(&t->mu);
        pthread_mutex_lock(&e->mu);
        e->st.prompt_tokens += (uint64_t)g->st.n_prompt;
        e->st.cached_tokens += (uint64_t)g->st.n_cached;
        e->st.prefix_hits += g->st.n_cached > 0;
        pthread_mutex_unlock(&e->mu);
    }
}

/* A finished stream completes its request and frees the slot. */
static void finish_slot(edgellm_srv_engine *e, int slot)
{
    edgellm_gen *g = &e->gens[slot];
    edgellm_srv_task *t = e->running[slot];
    pthread_mutex_lock(&e->mu);                /* the counters move before the client hears */
    pthread_mutex_lock(&t->mu);
    e->n_running--;
    e->st.requests_done++;
    e->st.cancelled += atomic_load(&t->cancel) != 0;
    e->st.timed_out += t->timed_out != 0;
    pthread_mutex_unlock(&e->mu);
    t->n_prompt = g->st.n_prompt;
    t->n_cached = g->st.n_cached;
    t->n_generated = g->st.n_generated;
    if (g->rc != EDGELLM_OK) {
        const bool client = g->rc == EDGELLM_ERR_CTX_FULL || g->rc == EDGELLM_ERR_MISUSE;
        edgellm_srv_fail(&t->err, client ? 400 : 500,
                         g->rc == EDGELLM_ERR_CTX_FULL ? "exceed_context_size_error"
                         : client                      ? "invalid_request_error"
                                                       : "server_error",
                         NULL, "%s", g->err.msg[0] ? g->err.msg : edgellm_status_name(g->rc));
    }
    t->finish = g->st.stop == EDGELLM_STOP_EOS || t->stopped_by_word ? "stop" : "length";
    t->out_safe = t->out_len;          /* what was held back for a stop string that did not come */
    t->state = EDGELLM_SRV_DONE;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    g->state = GEN_IDLE;
    e->running[slot] = NULL;
    edgellm_srv_task_release(t);
}

/* Drop the queued requests that were cancelled or whose deadline passed (engine mutex held). */
static void prune_queue(edgellm_srv_engine *e, double now)
{
    int kept = 0;
    for (int i = 0; i < e->q_len; i++) {
        edgellm_srv_task *t = e->queue[(e->q_head + i) % e->queue_cap];
        if (atomic_load(&t->cancel)) {
            e->st.cancelled++;
            task_fail(t, 499, "cancelled", "the client went away");
        } else if (t->deadline > 0 && now > t->deadline) {
            e->st.timed_out++;
            task_fail(t, 503, "unavailable_error", "the request waited for a slot longer than the server's --timeout");
        } else {
            e->queue[(e->q_head + kept) % e->queue_cap] = t;
            kept++;
        }
    }
    e->q_len = kept;
}

static void *engine_main(void *arg)
{
    edgellm_srv_engine *e = arg;
    edgellm_srv_task **admit = edgellm_malloc((size_t)e->n_slots * sizeof *admit);
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!e->quit && e->q_len == 0 && e->n_running == 0) pthread_cond_wait(&e->cv, &e->mu);
        const double now = edgellm_time_ms();
        prune_queue(e, now);
        int n_admit = 0;
        while (admit && !e->quit && e->q_len > 0 && e->n_running < e->n_slots) {
            admit[n_admit++] = e->queue[e->q_head];
            e->q_head = (e->q_head + 1) % e->queue_cap;
            e->q_len--;
            e->n_running++;
        }
        const bool quit = e->quit, drain_over = e->draining && now > e->drain_deadline;
        pthread_mutex_unlock(&e->mu);
        for (int i = 0; i < n_admit; i++) start_task(e, admit[i]);

        /* cancel: the client went away, the deadline passed, the drain is over, quitting */
        for (int i = 0; i < e->n_slots; i++) {
            edgellm_srv_task *t = e->running[i];
            edgellm_gen *g = &e->gens[i];
            if (!t || (g->state != GEN_PREFILL && g->state != GEN_DECODE)) continue;
            const bool late = t->deadline > 0 && now > t->deadline;
            if (late || quit || drain_over || atomic_load(&t->cancel)) {
                if (late) {
                    pthread_mutex_lock(&t->mu);
                    t->timed_out = 1;
                    pthread_mutex_unlock(&t->mu);
                }
                edgellm_gen_cancel(e->ctx, g);
            }
        }
        int active = 0;
        for (int i = 0; i < e->n_slots; i++)
            active += e->gens[i].state == GEN_PREFILL || e->gens[i].state == GEN_DECODE;
        if (active) {
            edgellm_error err = {0};
            const edgellm_status rc =
                edgellm_gen_step(e->ctx, e->gens, e->n_slots, e->prefill_batch, on_piece, e, &active, &err);
            if (rc != EDGELLM_OK)   /* the pass failed: every stream ends with its error */
                for (int i = 0; i < e->n_slots; i++) {
                    edgellm_gen *g = &e->gens[i];
                    if (g->state != GEN_PREFILL && g->state != GEN_DECODE) continue;
                    edgellm_gen_cancel(e->ctx, g);
                    g->rc = rc;
                    g->err = err;
                }
        }
        for (int i = 0; i < e->n_slots; i++)
            if (e->running[i] && e->gens[i].state == GEN_DONE) finish_slot(e, i);
        int64_t used = 0;
        for (int i = 0; i < e->n_slots; i++) used += edgellm_seq_n_past(e->ctx, i);
        pthread_mutex_lock(&e->mu);
        e->st.kv_cells_used = used;
        const bool done = e->quit && e->n_running == 0;
        pthread_mutex_unlock(&e->mu);
        if (done) break;
    }
    pthread_mutex_lock(&e->mu);   /* quitting: what is still queued fails */
    while (e->q_len > 0) {
        edgellm_srv_task *t = e->queue[e->q_head];
        e->q_head = (e->q_head + 1) % e->queue_cap;
        e->q_len--;
        task_fail(t, 503, "unavailable_error", "the server is shutting down");
    }
    pthread_mutex_unlock(&e->mu);
    edgellm_free(admit);
    return NULL;
}

/* ---------------------------------------------------------------- API ---- */

edgellm_status edgellm_srv_engine_start(edgellm_ctx *c, int queue_size, int prefill_batch, edgellm_ctx *draft,
                                        const edgellm_spec_params *sp, edgellm_srv_engine **out, edgellm_error *err)
{
    *out = NULL;
    if (sp && edgellm_ctx_n_seq(c) != 1)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: speculative decoding needs a single slot (-np 1)");
    edgellm_srv_engine *e = edgellm_calloc(1, sizeof *e);
    if (!e) return edgellm_fail_nomem(err, "server engine");
    e->ctx = c;
    e->draft = draft;
    e->spec = sp != NULL;
    if (sp) e->sp = *sp;
    e->n_slots = edgellm_ctx_n_seq(c);
    e->n_ctx = edgellm_ctx_n_ctx(c);
    e->prefill_batch = prefill_batch > 0 ? prefill_batch : 256;
    e->queue_cap = queue_size > 0 ? queue_size : 1;
    e->gens = edgellm_calloc((size_t)e->n_slots, sizeof *e->gens);
    e->running = edgellm_calloc((size_t)e->n_slots, sizeof *e->running);
    e->last_used = edgellm_calloc((size_t)e->n_slots, sizeof *e->last_used);
    e->queue = edgellm_calloc((size_t)e->queue_cap, sizeof *e->queue);
    e->st.n_slots = e->n_slots;
    e->st.kv_cells = (int64_t)e->n_slots * e->n_ctx;
    e->t_start = edgellm_time_ms();
    if (!e->gens || !e->running || !e->last_used || !e->queue || pthread_mutex_init(&e->mu, NULL)) {
        edgellm_free(e->gens), edgellm_free(e->running), edgellm_free(e->last_used), edgellm_free(e->queue);
        edgellm_free(e);
        return edgellm_fail_nomem(err, "server engine");
    }
    if (pthread_cond_init(&e->cv, NULL) || pthread_create(&e->thread, NULL, engine_main, e)) {
        pthread_mutex_destroy(&e->mu);
        edgellm_free(e->gens), edgellm_free(e->running), edgellm_free(e->last_used), edgellm_free(e->queue);
        edgellm_free(e);
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "server: cannot start the engine thread");
    }
    e->started = true;
    *out = e;
    return EDGELLM_OK;
}

int edgellm_srv_engine_submit(edgellm_srv_engine *e, edgellm_srv_task *t)
{
    pthread_mutex_lock(&e->mu);
    int rc = 0;
    if (e->draining || e->quit) rc = 503;
    else if (e->q_len + e->n_running >= e->queue_cap + e->n_slots) rc = 429;
    if (rc == 0) {
        pthread_mutex_lock(&t->mu);
        t->refs++;
        t->state = EDGELLM_SRV_QUEUED;
        pthread_mutex_unlock(&t->mu);
        e->queue[(e->q_head + e->q_len) % e->queue_cap] = t;
        e->q_len++;
        pthread_cond_signal(&e->cv);
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

void edgellm_srv_engine_drain(edgellm_srv_engine *e, double drain_deadline)
{
    pthread_mutex_lock(&e->mu);
    e->draining = true;
    e->drain_deadline = drain_deadline;
    while (e->q_len > 0) {
        edgellm_srv_task *t = e->queue[e->q_head];
        e->q_head = (e->q_head + 1) % e->queue_cap;
        e->q_len--;
        task_fail(t, 503, "unavailable_error", "the server is shutting down");
    }
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

int edgellm_srv_engine_busy(edgellm_srv_engine *e)
{
    pthread_mutex_lock(&e->mu);
    const int n = e->q_len + e->n_running;
    pthread_mutex_unlock(&e->mu);
    return n;
}

void edgellm_srv_engine_stats(edgellm_srv_engine *e, edgellm_srv_stats *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->st;
    out->queue_len = e->q_len;
    out->slots_busy = e->n_running;
    const double now = edgellm_time_ms();
    const int64_t sec = (int64_t)(now / 1000.0);
    uint64_t n = 0;
    for (int i = 0; i <= EDGELLM_SRV_RATE_WINDOW; i++)   /* the last whole seconds, this one left out */
        if (e->rate_sec[i] < sec && e->rate_sec[i] >= sec - EDGELLM_SRV_RATE_WINDOW) n += e->rate_tokens[i];
    const double span = EDGELLM_MIN((double)EDGELLM_SRV_RATE_WINDOW, (now - e->t_start) / 1000.0);
    out->tokens_per_second = span >= 1.0 ? (double)n / span : 0.0;
    pthread_mutex_unlock(&e->mu);
}

void edgellm_srv_engine_free(edgellm_srv_engine *e)
{
    if (!e) return;
    if (e->started) {
        pthread_mutex_lock(&e->mu);
        e->quit = true;
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
        pthread_join(e->thread, NULL);
    }
    for (int i = 0; i < e->n_slots; i++) edgellm_gen_end(&e->gens[i]);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    edgellm_free(e->gens);
    edgellm_free(e->running);
    edgellm_free(e->last_used);
    edgellm_free(e->queue);
    edgellm_free(e);
}
