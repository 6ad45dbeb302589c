/*
 * server_http.c — the HTTP side of `edgellm serve` (edgellm_server_run, edgellm_tools.h):
 * libmicrohttpd with a thread per connection, so a connection's thread may wait for its
 * request's tokens; the engine thread (server_engine.c) computes them.
 *
 * A request, on its connection's thread:
 *   headers  route (404, 405), key (401; /health needs none), loading or draining (503),
 *            content type (415), Content-Length above the limit (413): answered before the
 *            body is read
 *   body     gathered up to max_body_bytes (413 beyond: answered at once, then the
 *            connection closes)
 *   parse    server_request.c (400 with an OpenAI error object), model name (400)
 *   prompt   chat: rendered with the template and tokenized (edgellm_chat_tokenize),
 *            oldest turns after the system message dropped until it leaves room for the
 *            answer; completion: tokenized as `edgellm run` does (BOS, no special tokens),
 *            400 exceed_context_size_error when it does not fit the slot
 *   queue    edgellm_srv_engine_submit (429 + Retry-After when full)
 *   answer   the whole JSON once done, or Server-Sent Events: "data: {chunk}\n\n" per piece
 *            (stop strings held back until they cannot match), a last chunk with
 *            finish_reason, a usage chunk when stream_options.include_usage, "data: [DONE]"
 * While it waits, the connection's socket is checked every 100 ms: a client that closed
 * it (or half-closed it) cancels its request, which frees the slot within one step.
 *
 * Limits against hostile clients: header bytes (MHD_OPTION_CONNECTION_MEMORY_LIMIT, 64 KiB:
 * larger headers get 431/413 from libmicrohttpd), idle connections (30 s), connections
 * (256 at a time), bodies (max_body_bytes), JSON nesting (cJSON's 1000 levels), messages
 * and stop strings per request (server.h).
 */
#include "server.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(EDGELLM_HAVE_MICROHTTPD) && defined(EDGELLM_HAVE_CJSON)
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#define EDGELLM_SRV_HTTP 1
#endif

/* Seconds a connection may stay without any byte in either direction while its request is
 * read or while it waits for its next request (slow senders, idle keep-alive). While an
 * accepted request is answered the bound is the request's own timeout instead (answer_timeout):
 * a slow prefill or a long answer sends nothing for longer than this. */
#define IDLE_TIMEOUT_S 30u

static atomic_int g_stop_requested;
static atomic_int g_stop_fd = -1;       /* write end of the running server's pipe */
static atomic_flag g_running = ATOMIC_FLAG_INIT;

void edgellm_server_stop(void)
{
    atomic_store(&g_stop_requested, 1);
    const int fd = atomic_load(&g_stop_fd);
    if (fd >= 0) {
        const char b = 1;
        ssize_t w = write(fd, &b, 1);   /* async-signal-safe; a full pipe already wakes it */
        (void)w;
    }
}

edgellm_server_params edgellm_server_default_params(void)
{
    edgellm_server_params p = {.size = sizeof p};
    p.host = "127.0.0.1";
    p.port = 8080;
    p.n_parallel = 4;
    p.kv_type = EDGELLM_TYPE_F32;
    p.queue_size = 64;
    p.timeout_s = 600;
    p.prefill_batch = 256;
    p.max_body_bytes = (size_t)8 << 20;
    p.drain_s = 30;
    p.spec = edgellm_spec_default_params();
    return p;
}

#ifndef EDGELLM_SRV_HTTP

edgellm_status edgellm_server_run(const edgellm_server_params *p, edgellm_error *err)
{
    (void)p;
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "serve: edgellm was built without libmicrohttpd or cJSON "
                        "(apt-get install libmicrohttpd-dev libcjson-dev, then rebuild)");
}

#else

enum { R_NONE = 0, R_HEALTH, R_METRICS, R_MODELS, R_CHAT, R_COMPLETION };

typedef struct {
    edgellm_server_params p;
    struct MHD_Daemon *d;
    atomic_int ready, draining;
    atomic_int open_requests;                 /* requests between their first call and completion */
    atomic_uint_fast64_t next_id;
    edgellm_model *model;
    edgellm_ctx *ctx;
    edgellm_ctx *dctx;                         /* speculative decoding: the draft's    */
    const char *tmpl;                         /* chat template text                           */
    char *tmpl_own;
    char model_id[256];
    int n_ctx, n_slots, n_vocab;
    long long created;
    size_t key_len;
    pthread_mutex_t mu;                       /* guards eng and by_status                     */
    edgellm_srv_engine *eng;
    uint64_t by_status[600];
} srv;

typedef struct {                              /* one request: MHD's con_cls                   */
    srv *s;
    int route;
    bool counted, responded;
    int retry_after;                          /* s in Retry-After of a 429/503; 0: 1          */
    char *body;
    size_t len, cap;
    double t0;
} req;

static void logf_(srv *s, edgellm_log_level level, const char *fmt, ...) EDGELLM_PRINTF(3, 4);
static void logf_(srv *s, edgellm_log_level level, const char *fmt, ...)
{
    if (!s->p.log) return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    s->p.log(s->p.user, level, line);
}

static void count_status(srv *s, int status)
{
    pthread_mutex_lock(&s->mu);
    if (status >= 100 && status < 600) s->by_status[status]++;
    pthread_mutex_unlock(&s->mu);
}

/* Queue body (malloc'd, taken) with status and content type; Retry-After for 429/503. */
static enum MHD_Result send_body(req *r, struct MHD_Connection *c, int status, char *body, const char *type)
{
    if (!body) {
        status = 500;
        body = strdup("{\"error\":{\"code\":500,\"message\":\"out of memory\",\"param\":null,\"type\":\"server_error\"}}");
        if (!body) return MHD_NO;
        type = "application/json";
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    char retry[16];
    snprintf(retry, sizeof retry, "%d", r->retry_after > 0 ? r->retry_after : 1);
    if (status == 429 || status == 503) MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, retry);
    const enum MHD_Result ok = MHD_queue_response(c, (unsigned)status, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES) {
        r->responded = true;
        count_status(r->s, status);
    }
    return ok;
}

static enum MHD_Result send_error(req *r, struct MHD_Connection *c, const edgellm_srv_error *e)
{
    return send_body(r, c, e->http, edgellm_srv_error_json(e), "application/json; charset=utf-8");
}

static enum MHD_Result send_errorf(req *r, struct MHD_Connection *c, int http, const char *type, const char *param,
                                   const char *fmt, ...) EDGELLM_PRINTF(6, 7);
static enum MHD_Result send_errorf(req *r, struct MHD_Connection *c, int http, const char *type, const char *param,
                                   const char *fmt, ...)
{
    edgellm_srv_error e = {.http = http, .type = type};
    snprintf(e.param, sizeof e.param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    return send_error(r, c, &e);
}

/* ---------------------------------------------------------------- checks ---- */

/* given[0..glen) equals the key, in time that depends on glen only. */
static bool key_matches(const char *given, size_t glen, const char *key, size_t klen)
{
    volatile unsigned char diff = (unsigned char)(glen != klen);
    for (size_t i = 0; i < glen; i++) diff |= (unsigned char)(given[i] ^ key[i % klen]);
    return diff == 0;
}

static bool authorized(srv *s, struct MHD_Connection *c)
{
    if (!s->key_len) return true;
    const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (v && !strncasecmp(v, "Bearer ", 7)) {
        v += 7;
        while (*v == ' ') v++;
        return key_matches(v, strlen(v), s->p.api_key, s->key_len);
    }
    v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Api-Key");
    return v && key_matches(v, strlen(v), s->p.api_key, s->key_len);
}

/* The client closed (or half-closed) the connection. */
static bool client_gone(int fd)
{
    if (fd < 0) return false;
    struct pollfd pf = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&pf, 1, 0) <= 0) return false;
    if (pf.revents & (POLLERR | POLLHUP | POLLRDHUP | POLLNVAL)) return true;
    if (pf.revents & POLLIN) {
        char b;
        const ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
    }
    return false;
}

static int conn_fd(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    return ci ? ci->connect_fd : -1;
}

static int route_of(const char *url, const char *method, bool *method_ok)
{
    static const struct { const char *path, *method; int route; } routes[] = {
        {"/health", "GET", R_HEALTH},        {"/v1/health", "GET", R_HEALTH},
        {"/metrics", "GET", R_METRICS},      {"/v1/models", "GET", R_MODELS},
        {"/models", "GET", R_MODELS},        {"/v1/chat/completions", "POST", R_CHAT},
        {"/chat/completions", "POST", R_CHAT}, {"/v1/completions", "POST", R_COMPLETION},
        {"/completions", "POST", R_COMPLETION},
    };
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(url, routes[i].path)) {
            *method_ok = !strcmp(method, routes[i].method) || (!strcmp(method, "HEAD") && !strcmp(routes[i].method, "GET"));
            return routes[i].route;
        }
    return R_NONE;
}

/* Content types a body is read as JSON from: none, application/json, text/plain, and
 * application/x-www-form-urlencoded (what `curl -d` sends without -H). */
static bool json_content_type(const char *ct)
{
    if (!ct) return true;
    while (*ct == ' ') ct++;
    static const char *const ok[] = {"application/json", "text/plain", "application/x-www-form-urlencoded"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        const size_t n = strlen(ok[i]);
        if (!strncasecmp(ct, ok[i], n) && (ct[n] == 0 || ct[n] == ';' || ct[n] == ' ')) return true;
    }
    return false;
}

/* ---------------------------------------------------------------- simple routes ---- */

static enum MHD_Result do_health(req *r, struct MHD_Connection *c)
{
    if (!atomic_load(&r->s->ready))
        return send_errorf(r, c, 503, "unavailable_error", NULL, "Loading model");
    return send_body(r, c, 200, strdup("{\"status\":\"ok\"}"), "application/json; charset=utf-8");
}

static enum MHD_Result do_models(req *r, struct MHD_Connection *c)
{
    srv *s = r->s;
    return send_body(r, c, 200, edgellm_srv_models_json(s->model_id, s->created, s->n_ctx, s->n_slots, s->model),
                     "application/json; charset=utf-8");
}

/* Prometheus text exposition format 0.0.4 (prometheus.io/docs/instrumenting/exposition_formats). */
static enum MHD_Result do_metrics(req *r, struct MHD_Connection *c)
{
    srv *s = r->s;
    edgellm_srv_stats st = {0};
    uint64_t by_status[600];
    pthread_mutex_lock(&s->mu);
    if (s->eng) edgellm_srv_engine_stats(s->eng, &st);
    memcpy(by_status, s->by_status, sizeof by_status);
    pthread_mutex_unlock(&s->mu);
    size_t cap = 8192, n = 0;
    char *out = malloc(cap);
    if (!out) return MHD_NO;
#define PUT(...) do { int k_ = snprintf(out + n, cap - n, __VA_ARGS__); if (k_ > 0) n += (size_t)k_ < cap - n ? (size_t)k_ : cap - n - 1; } while (0)
#define METRIC(name, type, help, fmt, v) PUT("# HELP " name " " help "\n# TYPE " name " " type "\n" name " " fmt "\n", v)
    PUT("# HELP edgellm_requests_total HTTP requests answered, by status code.\n"
        "# TYPE edgellm_requests_total counter\n");
    for (int i = 100; i < 600; i++)
        if (by_status[i]) PUT("edgellm_requests_total{status=\"%d\"} %llu\n", i, (unsigned long long)by_status[i]);
    METRIC("edgellm_prompt_tokens_total", "counter", "Prompt tokens of the requests that ran.", "%llu",
           (unsigned long long)st.prompt_tokens);
    METRIC("edgellm_prompt_tokens_cached_total", "counter",
           "Prompt tokens found in a slot's cache (prefix reuse), not recomputed.", "%llu",
           (unsigned long long)st.cached_tokens);
    METRIC("edgellm_prefix_cache_hits_total", "counter", "Requests that reused a cached prefix of their prompt.",
           "%llu", (unsigned long long)st.prefix_hits);
    METRIC("edgellm_generated_tokens_total", "counter", "Tokens generated.", "%llu",
           (unsigned long long)st.generated_tokens);
    METRIC("edgellm_generation_tokens_per_second", "gauge", "Tokens generated per second over the last 10 s.", "%.3f",
           st.tokens_per_second);
    METRIC("edgellm_requests_finished_total", "counter", "Requests that ran to their end.", "%llu",
           (unsigned long long)st.requests_done);
    METRIC("edgellm_requests_cancelled_total", "counter", "Requests cancelled because their client went away.", "%llu",
           (unsigned long long)st.cancelled);
    METRIC("edgellm_requests_timed_out_total", "counter", "Requests stopped by the per-request timeout.", "%llu",
           (unsigned long long)st.timed_out);
    METRIC("edgellm_queue_length", "gauge", "Requests waiting for a slot.", "%d", st.queue_len);
    METRIC("edgellm_slots_busy", "gauge", "Slots generating or reading a prompt.", "%d", st.slots_busy);
    METRIC("edgellm_slots", "gauge", "Slots (-np), each with its own context.", "%d", s->n_slots);
    METRIC("edgellm_slot_context_tokens", "gauge", "KV cells of each slot (-c).", "%d", s->n_ctx);
    METRIC("edgellm_kv_cache_used_cells", "gauge", "KV cells holding a token, over all slots.", "%lld",
           (long long)st.kv_cells_used);
    METRIC("edgellm_kv_cache_cells", "gauge", "KV cells in all (slots x context).", "%lld", (long long)st.kv_cells);
    METRIC("edgellm_kv_cache_usage_ratio", "gauge", "Used KV cells / all KV cells.", "%.4f",
           st.kv_cells ? (double)st.kv_cells_used / (double)st.kv_cells : 0.0);
    if (st.gov_level >= 0) {   /* the governor (docs/governor.md) */
        METRIC("edgellm_governor_level", "gauge", "Governor level: 0 nominal, 1 warm, 2 hot, 3 critical.", "%d",
               st.gov_level);
        METRIC("edgellm_governor_paused", "gauge", "1 while the level pauses: new requests get 503.", "%d",
               st.gov_paused);
        METRIC("edgellm_governor_temperature_celsius", "gauge", "Hottest readable thermal zone (NaN: unknown).",
               "%.1f", st.gov_temp_c);
        METRIC("edgellm_governor_max_tokens_per_second", "gauge", "The level's cap over all slots (0: none).", "%.3f",
               st.gov_max_tok_s);
        METRIC("edgellm_governor_threads", "gauge", "Compute threads of the context.", "%d", st.gov_threads);
        METRIC("edgellm_governor_level_changes_total", "counter", "Governor level changes.", "%llu",
               (unsigned long long)st.gov_changes);
        METRIC("edgellm_governor_held_seconds_total", "counter", "Time steps were held by the cap or a pause.",
               "%.3f", st.gov_slept_s);
        METRIC("edgellm_governor_refused_total", "counter", "Requests refused (503) while paused.", "%llu",
               (unsigned long long)st.gov_refused);
        METRIC("edgellm_governor_contexts_remade_total", "counter", "Contexts re-made for another thread count.",
               "%llu", (unsigned long long)st.gov_ctx_remade);
    }
    if (s->dctx || s->p.spec.lookup > 0) {   /* speculative decoding (-np 1) */
        METRIC("edgellm_spec_drafted_tokens_total", "counter", "Draft tokens proposed (draft model and lookup).", "%llu",
               (unsigned long long)st.spec_drafted);
        METRIC("edgellm_spec_accepted_tokens_total", "counter", "Draft tokens the model kept.", "%llu",
               (unsigned long long)st.spec_accepted);
        METRIC("edgellm_spec_acceptance_ratio", "gauge", "Accepted / drafted tokens.", "%.4f",
               st.spec_drafted ? (double)st.spec_accepted / (double)st.spec_drafted : 0.0);
        METRIC("edgellm_spec_accepted_per_draft", "gauge", "Mean accepted length: accepted tokens per checked draft.",
               "%.4f", st.spec_draft_passes ? (double)st.spec_accepted / (double)st.spec_draft_passes : 0.0);
        METRIC("edgellm_spec_target_passes_per_token", "gauge", "Model passes per generated token (1: plain decoding).",
               "%.4f", st.spec_tokens ? (double)st.spec_passes / (double)st.spec_tokens : 0.0);
        METRIC("edgellm_spec_speedup", "gauge",
               "Decode speed-up: the tokens at the measured one-token pass time over the time they took.", "%.4f",
               st.spec_decode_ms > 0 ? st.spec_plain_ms / st.spec_decode_ms : 0.0);
    }
#undef METRIC
#undef PUT
    return send_body(r, c, 200, out, "text/plain; version=0.0.4; charset=utf-8");
}

/* ---------------------------------------------------------------- prompts ---- */

/* Tokens of msgs[0..n) rendered with the template, special tokens parsed (a count only:
 * the message spans are not protected; for choosing what to drop). -1 on failure. */
static int estimate_tokens(srv *s, const edgellm_chat_message *msgs, int n, int32_t *buf, int cap)
{
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(s->model);
    edgellm_chat_params cp = edgellm_chat_default_params();
    const int32_t bos = edgellm_token_bos(tok), eos = edgellm_token_eos(tok);
    cp.bos_token = bos >= 0 ? edgellm_token_text(tok, bos) : "";
    cp.eos_token = eos >= 0 ? edgellm_token_text(tok, eos) : "";
    edgellm_chat_text *txt = NULL;
    if (edgellm_chat_template_render(s->tmpl, "chat template", msgs, n, &cp, &txt, NULL)) return -1;
    size_t len = 0;
    const char *str = edgellm_chat_text_str(txt, &len);
    int count = 0;
    const edgellm_status rc = edgellm_tokenize(tok, str, len, EDGELLM_TOKENIZE_SPECIAL, buf, cap, &count, NULL);
    edgellm_chat_text_free(txt);
    return rc == EDGELLM_OK || (rc == EDGELLM_ERR_MISUSE && count > cap) ? count : -1;
}

/* The chat as tokens that fit max_tokens: whole old turns after a leading system message
 * are dropped (*n_dropped). Long chats first find the turn to start from by a binary search
 * over token counts, then edgellm_chat_tokenize decides exactly. */
static bool chat_tokens(srv *s, const edgellm_srv_request *rq, int max_tokens, int32_t **out, int *n_out,
                        int *n_dropped, edgellm_srv_error *e)
{
    int32_t *buf = edgellm_malloc(((size_t)max_tokens + 1) * sizeof *buf);
    edgellm_chat_message *kept = edgellm_malloc((size_t)rq->n_msgs * sizeof *kept);
    int *starts = edgellm_malloc(((size_t)rq->n_msgs + 1) * sizeof *starts);
    if (!buf || !kept || !starts) {
        edgellm_free(buf), edgellm_free(kept), edgellm_free(starts);
        return edgellm_srv_fail(e, 500, "server_error", NULL, "out of memory");
    }
    const int first = !strcmp(rq->msgs[0].role, "system") ? 1 : 0;
    int from = first;                          /* messages [first, from) are left out */
    if (rq->n_msgs - first > 16) {
        /* turn starts: first, then each user message after it (as chat.c drops them) */
        int n_starts = 0;
        starts[n_starts++] = first;
        for (int i = first + 1; i < rq->n_msgs; i++)
            if (!strcmp(rq->msgs[i].role, "user")) starts[n_starts++] = i;
        int lo = 0, hi = n_starts - 1;         /* the smallest start index that fits */
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            int n = 0;
            for (int i = 0; i < first; i++) kept[n++] = rq->msgs[i];
            for (int i = starts[mid]; i < rq->n_msgs; i++) kept[n++] = rq->msgs[i];
            const int count = estimate_tokens(s, kept, n, buf, max_tokens);
            if (count >= 0 && count <= max_tokens) hi = mid;
            else lo = mid + 1;
        }
        from = starts[lo];
    }
    int n = 0;
    for (int i = 0; i < first; i++) kept[n++] = rq->msgs[i];
    for (int i = from; i < rq->n_msgs; i++) kept[n++] = rq->msgs[i];
    int count = 0, dropped = 0;
    edgellm_error err = {0};
    const edgellm_status rc = edgellm_chat_tokenize(s->model, s->tmpl, kept, n, NULL, buf, max_tokens, &count,
                                                    &dropped, &err);
    edgellm_free(kept);
    edgellm_free(starts);
    if (rc != EDGELLM_OK) {
        edgellm_free(buf);
        if (rc == EDGELLM_ERR_CTX_FULL)
            return edgellm_srv_fail(e, 400, "exceed_context_size_error", "messages", "%s", err.msg);
        if (rc == EDGELLM_ERR_NOMEM) return edgellm_srv_fail(e, 500, "server_error", NULL, "%s", err.msg);
        return edgellm_srv_fail(e, 400, "invalid_request_error", "messages", "%s", err.msg);
    }
    *out = buf;
    *n_out = count;
    *n_dropped = from - first + dropped;
    return true;
}

static uint64_t mix64(uint64_t x)   /* splitmix64's finalizer (Steele, Lea, Flood, OOPSLA 2014) */
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* ---------------------------------------------------------------- streaming ---- */

typedef struct {
    srv *s;
    edgellm_srv_task *task;
    edgellm_srv_info info;
    char id[48];
    int fd, include_usage;
    size_t sent;                              /* bytes of task->out sent                      */
    bool started, finished;
    char *buf;                                /* SSE bytes not yet handed to libmicrohttpd    */
    size_t buf_len, buf_off, buf_cap;
    double t0;
    const char *path;
} sse;

/* Append "data: JSON\n\n" (json taken). */
static bool sse_put(sse *st, char *json)
{
    if (!json) return false;
    const size_t n = strlen(json), need = st->buf_len + n + 8;
    if (need > st->buf_cap) {
        size_t cap = st->buf_cap ? st->buf_cap : 1024;
        while (cap < need) cap *= 2;
        char *b = realloc(st->buf, cap);
        if (!b) {
            free(json);
            return false;
        }
        st->buf = b;
        st->buf_cap = cap;
    }
    memcpy(st->buf + st->buf_len, "data: ", 6);
    memcpy(st->buf + st->buf_len + 6, json, n);
    memcpy(st->buf + st->buf_len + 6 + n, "\n\n", 2);
    st->buf_len += n + 8;
    free(json);
    return true;
}

static void log_request(srv *s, const char *path, int status, const edgellm_srv_task *t, double t0)
{
    logf_(s, EDGELLM_LOG_INFO, "POST %s %d: prompt %d tokens (%d cached), %d generated, %s, %.0f ms", path, status,
          t->n_prompt, t->n_cached, t->n_generated, t->err.http ? t->err.msg : t->finish ? t->finish : "-",
          edgellm_time_ms() - t0);
}

static ssize_t sse_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    sse *st = cls;
    edgellm_srv_task *t = st->task;
    for (;;) {
        if (st->buf_off < st->buf_len) {
            const size_t n = EDGELLM_MIN(max, st->buf_len - st->buf_off);
            memcpy(out, st->buf + st->buf_off, n);
            st->buf_off += n;
            return (ssize_t)n;
        }
        st->buf_len = st->buf_off = 0;
        if (st->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        if (!st->started) {                   /* chat: the assistant's role first, as OpenAI */
            st->started = true;
            if (t->kind == EDGELLM_SRV_CHAT && !sse_put(st, edgellm_srv_chunk_json(t->kind, &st->info, "", 0, 1, NULL, 0)))
                return MHD_CONTENT_READER_END_WITH_ERROR;
            continue;
        }
        pthread_mutex_lock(&t->mu);
        while (t->out_safe == st->sent && t->state != EDGELLM_SRV_DONE) {
            struct timespec ts;
            clock_gettime(CLOCK_MONOTONIC, &ts);
            ts.tv_nsec += 100 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
            if (pthread_cond_timedwait(&t->cv, &t->mu, &ts) == ETIMEDOUT && client_gone(st->fd)) {
                atomic_store(&t->cancel, 1);
                pthread_mutex_unlock(&t->mu);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        const size_t from = st->sent, to = t->out_safe;
        char *piece = to > from ? malloc(to - from) : NULL;
        if (piece) memcpy(piece, t->out + from, to - from);
        st->sent = to;
        const bool done = t->state == EDGELLM_SRV_DONE && to == t->out_len;
        const edgellm_srv_error err = t->err;
        st->info.n_prompt = t->n_prompt, st->info.n_cached = t->n_cached, st->info.n_generated = t->n_generated;
        st->info.timed_out = t->timed_out;
        const char *finish = t->finish;
        pthread_mutex_unlock(&t->mu);
        if (to > from) {
            const bool ok = piece && sse_put(st, edgellm_srv_chunk_json(t->kind, &st->info, piece, to - from, 0, NULL, 0));
            free(piece);
            if (!ok) {
                atomic_store(&t->cancel, 1);
                return MHD_CONTENT_READER_END_WITH_ERROR;
            }
        }
        if (done) {
            if (err.http) {
                sse_put(st, edgellm_srv_error_json(&err));
            } else {
                sse_put(st, edgellm_srv_chunk_json(t->kind, &st->info, "", 0, 0, finish ? finish : "length", 0));
                if (st->include_usage) sse_put(st, edgellm_srv_chunk_json(t->kind, &st->info, "", 0, 0, NULL, 1));
            }
            const size_t need = st->buf_len + 16;
            if (need > st->buf_cap) {
                char *b = realloc(st->buf, need);
                if (!b) return MHD_CONTENT_READER_END_WITH_ERROR;
                st->buf = b, st->buf_cap = need;
            }
            memcpy(st->buf + st->buf_len, "data: [DONE]\n\n", 14);
            st->buf_len += 14;
            st->finished = true;
            log_request(st->s, st->path, err.http ? err.http : 200, t, st->t0);
        }
    }
}

static void sse_free(void *cls)
{
    sse *st = cls;
    if (!st->finished) {                      /* cut short: the client went away */
        pthread_mutex_lock(&st->task->mu);
        log_request(st->s, st->path, 499, st->task, st->t0);
        pthread_mutex_unlock(&st->task->mu);
        count_status(st->s, 499);
    }
    atomic_store(&st->task->cancel, 1);       /* a stream cut short stops its generation */
    edgellm_srv_task_release(st->task);
    free(st->buf);
    free(st);
}

/* ---------------------------------------------------------------- generation ---- */

static enum MHD_Result do_generate(req *r, struct MHD_Connection *c, const char *path)
{
    srv *s = r->s;
    const edgellm_srv_kind kind = r->route == R_CHAT ? EDGELLM_SRV_CHAT : EDGELLM_SRV_COMPLETION;
    edgellm_srv_request rq;
    edgellm_srv_error e;
    if (!edgellm_srv_request_parse(r->body, r->len, kind, &rq, &e)) return send_error(r, c, &e);
    if (rq.model && strcmp(rq.model, s->model_id) != 0 && strcmp(rq.model, s->p.model_path) != 0) {
        edgellm_srv_fail(&e, 400, "invalid_request_error", "model", "the model '%.128s' is not served here; this "
                         "server serves '%.100s'", rq.model, s->model_id);
        edgellm_srv_request_free(&rq);
        return send_error(r, c, &e);
    }
    edgellm_srv_task *t = edgellm_srv_task_new();
    if (!t) {
        edgellm_srv_request_free(&rq);
        return send_errorf(r, c, 500, "server_error", NULL, "out of memory");
    }
    t->kind = kind;
    int n_dropped = 0;
    bool ok;
    if (kind == EDGELLM_SRV_CHAT) {
        /* leave room for the answer: max_tokens, else a quarter of the context; at most half */
        const int want = rq.n_predict >= 0 ? rq.n_predict : s->n_ctx / 4;
        const int reserve = EDGELLM_MIN(want, s->n_ctx / 2);
        ok = chat_tokens(s, &rq, s->n_ctx - reserve, &t->tokens, &t->n_tokens, &n_dropped, &e);
    } else if (rq.prompt) {
        const edgellm_tokenizer *tok = edgellm_model_tokenizer(s->model);
        const size_t len = strlen(rq.prompt);
        const int cap = (int)EDGELLM_MIN(len + 8, (size_t)1 << 30);
        ok = (t->tokens = edgellm_malloc((size_t)cap * sizeof *t->tokens)) != NULL;
        if (!ok) edgellm_srv_fail(&e, 500, "server_error", NULL, "out of memory");
        edgellm_error err = {0};
        if (ok && edgellm_tokenize(tok, rq.prompt, len, EDGELLM_TOKENIZE_ADD_BOS, t->tokens, cap, &t->n_tokens, &err)) {
            ok = edgellm_srv_fail(&e, 400, "invalid_request_error", "prompt", "%s", err.msg);
        }
        t->text = rq.prompt;                   /* gen_begin tokenizes it again, as edgellm run */
        rq.prompt = NULL;
    } else {
        t->tokens = rq.prompt_tokens, t->n_tokens = rq.n_prompt_tokens;
        rq.prompt_tokens = NULL;
        ok = true;
        for (int i = 0; i < t->n_tokens && ok; i++)
            if (t->tokens[i] >= s->n_vocab)
                ok = edgellm_srv_fail(&e, 400, "invalid_request_error", "prompt", "token id %d is outside the "
                                      "vocabulary (%d tokens)", (int)t->tokens[i], s->n_vocab);
    }
    if (ok && kind == EDGELLM_SRV_COMPLETION && t->n_tokens > s->n_ctx)
        ok = edgellm_srv_fail(&e, 400, "exceed_context_size_error", "prompt", "the prompt has %d tokens but a slot's "
                              "context holds %d (-c)", t->n_tokens, s->n_ctx);
    if (!ok) {
        edgellm_srv_request_free(&rq);
        edgellm_srv_task_release(t);
        return send_error(r, c, &e);
    }
    /* the generation's parameters */
    const uint64_t id = atomic_fetch_add(&s->next_id, 1) + 1;
    t->gp.n_predict = rq.n_predict;
    t->gp.add_bos = 1;
    t->gp.sampling = rq.sampling;
    if (!rq.has_seed) t->gp.sampling.seed = mix64(id ^ ((uint64_t)time(NULL) << 20) ^ (uint64_t)(edgellm_time_ms() * 1e3));
    if (rq.repeat_last_n_ctx) t->gp.sampling.repeat_last_n = s->n_ctx;
    if (rq.n_stop) {
        if (!(t->stop = edgellm_calloc((size_t)rq.n_stop, sizeof *t->stop))) {
            edgellm_srv_request_free(&rq);
            edgellm_srv_task_release(t);
            return send_errorf(r, c, 500, "server_error", NULL, "out of memory");
        }
        for (int i = 0; i < rq.n_stop; i++) t->stop[i] = rq.stop[i], rq.stop[i] = NULL;
        t->n_stop = rq.n_stop;
        rq.n_stop = 0;
    }
    t->t_arrival = r->t0;
    t->deadline = s->p.timeout_s > 0 ? r->t0 + s->p.timeout_s * 1000.0 : 0;
    t->seq_no = id;
    const int stream = rq.stream, include_usage = rq.include_usage;
    edgellm_srv_request_free(&rq);

    pthread_mutex_lock(&s->mu);
    const bool paused = s->eng && !atomic_load(&s->draining) && edgellm_srv_engine_paused(s->eng, 1);
    const int busy = paused ? 503 : s->eng && !atomic_load(&s->draining) ? edgellm_srv_engine_submit(s->eng, t) : 503;
    pthread_mutex_unlock(&s->mu);
    if (!busy) {
        /* until the answer's last byte: --timeout (plus the idle bound), not the idle bound */
        const double ts = s->p.timeout_s;
        const unsigned answer_timeout = ts > 0 && ts < 1e7 ? (unsigned)ts + 1u + IDLE_TIMEOUT_S : 0u;
        MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, answer_timeout);
    }
    if (busy) {
        edgellm_srv_task_release(t);
        if (busy == 429)
            return send_errorf(r, c, 429, "rate_limit_error", NULL, "all %d slots are busy and %d requests wait "
                               "(--queue); retry later", s->n_slots, s->p.queue_size);
        if (paused) {
            r->retry_after = 5;
            return send_errorf(r, c, 503, "unavailable_error", NULL, "the device is too hot or its battery too low: "
                               "the governor pauses new requests until the level drops; retry later");
        }
        return send_errorf(r, c, 503, "unavailable_error", NULL, "the server is shutting down");
    }
    edgellm_srv_info info = {.model = s->model_id, .created = (long long)time(NULL), .n_dropped = n_dropped};
    char idbuf[48];
    snprintf(idbuf, sizeof idbuf, "%s-%016llx", kind == EDGELLM_SRV_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long long)mix64(id ^ (uint64_t)s->created));
    info.id = idbuf;
    const int fd = conn_fd(c);

    if (stream) {
        sse *st = calloc(1, sizeof *st);
        struct MHD_Response *resp =
            st ? MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_read, st, sse_free) : NULL;
        if (!resp) {
            atomic_store(&t->cancel, 1);
            edgellm_srv_task_release(t);
            free(st);
            return send_errorf(r, c, 500, "server_error", NULL, "out of memory");
        }
        st->s = s, st->task = t, st->info = info, st->fd = fd, st->include_usage = include_usage;
        snprintf(st->id, sizeof st->id, "%s", idbuf);
        st->info.id = st->id;
        st->t0 = r->t0;
        st->path = path;
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream; charset=utf-8");
        MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
        const enum MHD_Result q = MHD_queue_response(c, MHD_HTTP_OK, resp);
        MHD_destroy_response(resp);           /* the stream's state goes with it (sse_free) */
        if (q == MHD_YES) {
            r->responded = true;
            count_status(s, 200);
        }
        return q;
    }

    /* not streamed: wait for the end, watching the client */
    bool gone = false;
    double last_check = edgellm_time_ms();
    pthread_mutex_lock(&t->mu);
    while (t->state != EDGELLM_SRV_DONE) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&t->cv, &t->mu, &ts);   /* woken by each piece, or after 100 ms */
        if (!gone && edgellm_time_ms() - last_check >= 100) {
            last_check = edgellm_time_ms();
            if (client_gone(fd)) {
                gone = true;
                atomic_store(&t->cancel, 1);
            }
        }
    }
    pthread_mutex_unlock(&t->mu);
    info.n_prompt = t->n_prompt, info.n_cached = t->n_cached, info.n_generated = t->n_generated;
    info.timed_out = t->timed_out;
    enum MHD_Result res;
    if (gone) {
        log_request(s, path, 499, t, r->t0);
        count_status(s, 499);
        res = MHD_NO;                          /* nobody to answer: close */
    } else if (t->err.http) {
        log_request(s, path, t->err.http, t, r->t0);
        res = send_error(r, c, &t->err);
    } else {
        log_request(s, path, 200, t, r->t0);
        res = send_body(r, c, 200, edgellm_srv_final_json(kind, &info, t->out ? t->out : "", t->out_len, t->finish),
                        "application/json; charset=utf-8");
    }
    edgellm_srv_task_release(t);
    return res;
}

/* ---------------------------------------------------------------- dispatch ---- */

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    srv *s = cls;
    req *r = *con_cls;
    if (!r) {                                  /* headers are in: answer what needs no body */
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        r->s = s;
        r->t0 = edgellm_time_ms();
        *con_cls = r;
        atomic_fetch_add(&s->open_requests, 1);
        bool method_ok = false;
        r->route = route_of(url, method, &method_ok);
        if (r->route == R_NONE)
            return send_errorf(r, c, 404, "not_found_error", NULL, "no endpoint %.200s (endpoints: /v1/chat/completions, "
                               "/v1/completions, /v1/models, /health, /metrics)", url);
        if (!method_ok) return send_errorf(r, c, 405, "invalid_request_error", NULL, "%.16s is not allowed on %.200s",
                                           method, url);
        if (r->route == R_HEALTH) return do_health(r, c);
        if (!authorized(s, c)) return send_errorf(r, c, 401, "authentication_error", NULL, "Invalid API Key");
        if (!atomic_load(&s->ready)) return send_errorf(r, c, 503, "unavailable_error", NULL, "Loading model");
        if (atomic_load(&s->draining))
            return send_errorf(r, c, 503, "unavailable_error", NULL, "the server is shutting down");
        if (r->route == R_METRICS) return do_metrics(r, c);
        if (r->route == R_MODELS) return do_models(r, c);
        const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!json_content_type(ct))
            return send_errorf(r, c, 415, "invalid_request_error", NULL, "Content-Type %.100s: the body must be JSON "
                               "(application/json)", ct);
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > s->p.max_body_bytes)
            return send_errorf(r, c, 413, "invalid_request_error", NULL, "the body has %.24s bytes; at most %zu",
                               cl, s->p.max_body_bytes);
        return MHD_YES;
    }
    if (r->responded) {                        /* answered early: drop the rest of the body */
        *upload_size = 0;
        return MHD_YES;
    }
    if (*upload_size) {
        if (*upload_size > s->p.max_body_bytes - r->len) {
            *upload_size = 0;
            if (send_errorf(r, c, 413, "invalid_request_error", NULL, "the body is larger than %zu bytes",
                            s->p.max_body_bytes) != MHD_YES)
                return MHD_NO;                 /* cannot answer now: close the connection */
            return MHD_YES;
        }
        if (r->len + *upload_size + 1 > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;
            while (cap < r->len + *upload_size + 1) cap *= 2;
            char *b = realloc(r->body, cap);
            if (!b) return MHD_NO;
            r->body = b, r->cap = cap;
        }
        memcpy(r->body + r->len, upload, *upload_size);
        r->len += *upload_size;
        *upload_size = 0;
        return MHD_YES;
    }
    return do_generate(r, c, r->route == R_CHAT ? "/v1/chat/completions" : "/v1/completions");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    srv *s = cls;
    req *r = *con_cls;
    if (!r) return;
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, IDLE_TIMEOUT_S);   /* the next request */
    free(r->body);
    free(r);
    *con_cls = NULL;
    atomic_fetch_sub(&s->open_requests, 1);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    srv *s = cls;
    if (!s->p.log) return;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    size_t n = strlen(line);
    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    s->p.log(s->p.user, EDGELLM_LOG_DEBUG, line);
}

/* ---------------------------------------------------------------- run ---- */

static bool is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
    if (sa->sa_family == AF_INET6) return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)sa)->sin6_addr);
    return false;
}

static void wait_stop(int fd)
{
    while (!atomic_load(&g_stop_requested)) {
        struct pollfd pf = {.fd = fd, .events = POLLIN};
        if (poll(&pf, 1, 1000) > 0) {
            char b[64];
            while (read(fd, b, sizeof b) > 0) {}
        }
    }
}

edgellm_status edgellm_server_run(const edgellm_server_params *params, edgellm_error *err)
{
    srv *s = calloc(1, sizeof *s);
    if (!s) return edgellm_fail_nomem(err, "serve");
    s->p = edgellm_server_default_params();
    edgellm_status rc = edgellm_sized_in(&s->p, sizeof s->p, params, "edgellm_server_params", err);
    if (rc) {
        free(s);
        return rc;
    }
    edgellm_server_params *p = &s->p;
    if (!p->host) p->host = "127.0.0.1";
    if (!p->model_path || !*p->model_path) rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: no model path");
    else if (p->port < 0 || p->port > 65535) rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: port %d is out of range", p->port);
    else if (p->n_parallel < 1 || p->n_parallel > 64)
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: n_parallel %d must be in [1, 64]", p->n_parallel);
    else if (p->queue_size < 0 || p->prefill_batch < 0 || p->max_body_bytes == 0)
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: queue_size, prefill_batch and max_body_bytes must be positive");
    else if ((p->draft || p->spec.lookup > 0) && p->n_parallel != 1)
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: speculative decoding (a draft, lookup) needs a single slot "
                          "(-np 1), not %d", p->n_parallel);
    else if ((p->draft || p->spec.lookup > 0) && p->governor)
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: the governor acts between batched steps, which speculative "
                          "decoding (a draft, lookup) does not use: give one or the other");
    if (rc) {
        free(s);
        return rc;
    }
    if (atomic_flag_test_and_set(&g_running)) {
        free(s);
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "serve: a server already runs in this process");
    }
    s->key_len = p->api_key ? strlen(p->api_key) : 0;
    pthread_mutex_init(&s->mu, NULL);
    s->created = (long long)time(NULL);
    if (p->model_id && *p->model_id) {
        snprintf(s->model_id, sizeof s->model_id, "%s", p->model_id);
    } else {   /* the file name without folder and ".gguf" */
        const char *slash = strrchr(p->model_path, '/');
        snprintf(s->model_id, sizeof s->model_id, "%s", slash ? slash + 1 : p->model_path);
        const size_t n = strlen(s->model_id);
        if (n > 5 && !strcmp(s->model_id + n - 5, ".gguf")) s->model_id[n - 5] = 0;
    }

    /* the address */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai = NULL;
    char port_str[16];
    snprintf(port_str, sizeof port_str, "%d", p->port);
    int pipefd[2] = {-1, -1};
    int listen_fd = -1;
    edgellm_srv_engine *eng = NULL;
    const int gai = getaddrinfo(p->host, port_str, &hints, &ai);
    if (gai != 0 || !ai) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "serve: cannot resolve the address '%s': %s", p->host, gai_strerror(gai));
        goto out;
    }
    const bool v6 = ai->ai_family == AF_INET6;
    if (!is_loopback(ai->ai_addr) && !s->key_len)
        logf_(s, EDGELLM_LOG_WARN, "warning: listening on %s, which is not a loopback address, without an API key: "
              "anyone who can reach this machine can use the model (give --api-key or --api-key-file)", p->host);
    if (pipe(pipefd) != 0) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "serve: pipe: %s", strerror(errno));
        goto out;
    }
    fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    fcntl(pipefd[1], F_SETFL, O_NONBLOCK);
    fcntl(pipefd[0], F_SETFD, FD_CLOEXEC);
    fcntl(pipefd[1], F_SETFD, FD_CLOEXEC);
    atomic_store(&g_stop_requested, 0);
    atomic_store(&g_stop_fd, pipefd[1]);

    const unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ITC |
                           MHD_USE_ERROR_LOG | (v6 ? MHD_USE_IPv6 : 0);
    s->d = MHD_start_daemon(flags, (uint16_t)p->port, NULL, NULL, on_request, s,
                            MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)256,
                            MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_log, s,
                            MHD_OPTION_END);
    if (!s->d) {
        rc = edgellm_fail(err, EDGELLM_ERR_IO, "serve: cannot listen on %s port %d (in use, or not an address of "
                          "this machine)", p->host, p->port);
        goto out;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    const int port = di ? (int)di->port : p->port;
    logf_(s, EDGELLM_LOG_INFO, "listening on http://%s%s%s:%d (loading %s)", v6 ? "[" : "", p->host, v6 ? "]" : "",
          port, p->model_path);
    if (p->on_listen) p->on_listen(p->user, port);

    /* the model, one context with a sequence per slot */
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = p->n_threads;
    const double t_load = edgellm_time_ms();
    if ((rc = edgellm_model_load(p->model_path, &mp, &s->model, err))) goto out;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = p->n_ctx;
    cp.n_threads = p->n_threads;
    cp.kv_type = p->kv_type;
    cp.n_seq = p->n_parallel;
    if ((rc = edgellm_ctx_new(s->model, &cp, &s->ctx, err))) goto out;
    if (!edgellm_model_tokenizer(s->model)) {
        rc = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "serve: %s has no tokenizer edgellm reads", p->model_path);
        goto out;
    }
    s->n_ctx = edgellm_ctx_n_ctx(s->ctx);
    s->n_slots = edgellm_ctx_n_seq(s->ctx);
    s->n_vocab = edgellm_tokenizer_n_vocab(edgellm_model_tokenizer(s->model));
    if (p->chat_template) {
        s->tmpl = p->chat_template;
    } else {
        const int len = edgellm_model_chat_template(s->model, NULL, 0);
        if (len >= 0 && (s->tmpl_own = malloc((size_t)len + 1))) {
            edgellm_model_chat_template(s->model, s->tmpl_own, len + 1);
            s->tmpl = s->tmpl_own;
        } else {
            s->tmpl = edgellm_chat_template_builtin("chatml");
            logf_(s, EDGELLM_LOG_WARN, "warning: %s has no chat template; chats use the built-in chatml (give "
                  "--chat-template)", p->model_path);
        }
    }
    const bool spec = p->draft || p->spec.lookup > 0;
    if (p->draft) {
        edgellm_ctx_params dp = cp;
        dp.n_ctx = s->n_ctx;
        if ((rc = edgellm_ctx_new(p->draft, &dp, &s->dctx, err))) goto out;
    }
    if ((rc = edgellm_srv_engine_start(s->ctx, p->queue_size, p->prefill_batch, s->dctx, spec ? &p->spec : NULL, &eng,
                                       err)))
        goto out;
    if (p->governor) edgellm_srv_engine_govern(eng, p->governor, &s->ctx, &cp, edgellm_ctx_n_threads(s->ctx));
    pthread_mutex_lock(&s->mu);
    s->eng = eng;
    pthread_mutex_unlock(&s->mu);
    atomic_store(&s->ready, 1);
    logf_(s, EDGELLM_LOG_INFO, "ready in %.1f s: model '%s', %d slots, each with its own context of %d tokens (%lld KV "
          "cells in all, %s); prefill %d tokens per step; queue %d; timeout %g s%s", (edgellm_time_ms() - t_load) / 1e3,
          s->model_id, s->n_slots, s->n_ctx, (long long)s->n_slots * s->n_ctx, edgellm_type_name(p->kv_type),
          p->prefill_batch, p->queue_size, p->timeout_s, s->key_len ? "; API key required" : "");

    wait_stop(pipefd[0]);

    /* drain: no new connections, queued requests 503, running ones until drain_s */
    const int busy = edgellm_srv_engine_busy(s->eng);
    logf_(s, EDGELLM_LOG_INFO, "stopping: %d request%s in flight (up to %g s to finish)", busy, busy == 1 ? "" : "s",
          p->drain_s);
    atomic_store(&s->draining, 1);
    listen_fd = MHD_quiesce_daemon(s->d);
    const double t_drain = edgellm_time_ms();
    edgellm_srv_engine_drain(s->eng, t_drain + p->drain_s * 1000.0);
    while ((edgellm_srv_engine_busy(s->eng) > 0 || atomic_load(&s->open_requests) > 0) &&
           edgellm_time_ms() - t_drain < p->drain_s * 1000.0 + 5000.0) {
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    rc = EDGELLM_OK;
out:
    pthread_mutex_lock(&s->mu);
    eng = s->eng;
    s->eng = NULL;
    pthread_mutex_unlock(&s->mu);
    edgellm_srv_engine_free(eng);              /* anything still running ends (cancelled) */
    if (s->d) MHD_stop_daemon(s->d);
    if (listen_fd >= 0) close(listen_fd);
    atomic_store(&g_stop_fd, -1);
    if (pipefd[0] >= 0) close(pipefd[0]);
    if (pipefd[1] >= 0) close(pipefd[1]);
    if (ai) freeaddrinfo(ai);
    edgellm_ctx_free(s->dctx);
    edgellm_ctx_free(s->ctx);
    edgellm_model_free(s->model);
    if (rc == EDGELLM_OK) logf_(s, EDGELLM_LOG_INFO, "stopped");
    free(s->tmpl_own);
    pthread_mutex_destroy(&s->mu);
    free(s);
    atomic_flag_clear(&g_running);
    return rc;
}

#endif
