/*
 * server.h — the parts of `edgellm serve` (edgellm_server_run, include/edgellm_tools.h):
 *
 *   server_request.c  OpenAI request bodies read and checked (cJSON), stop strings, the
 *                     response and error JSON; no HTTP, so the fuzz target and the tests
 *                     call it directly
 *   server_engine.c   the engine thread: one context with a sequence per slot, requests
 *                     taken from a bounded queue into free slots (the one whose cache shares
 *                     the longest prefix with the prompt), all slots advanced together one
 *                     forward pass per step (gen.h), pieces handed to the request; metrics
 *   server_http.c     libmicrohttpd: routes, the key, body limits, responses and Server-Sent
 *                     Events, disconnects, start and drain
 *
 * A request is a task shared by its connection's thread and the engine thread, counted by
 * references; its output (text, counts, finish) is guarded by its mutex and announced on
 * its condition variable.
 */
#ifndef EDGELLM_TOOLS_SERVER_H
#define EDGELLM_TOOLS_SERVER_H

#include "../common/common.h"
#include "edgellm_tools.h"
#include <pthread.h>
#include <stdatomic.h>

/* ---------------------------------------------------------------- requests ---- */

typedef enum { EDGELLM_SRV_CHAT = 0, EDGELLM_SRV_COMPLETION = 1 } edgellm_srv_kind;

#define EDGELLM_SRV_MAX_STOP 16          /* stop strings per request                    */
#define EDGELLM_SRV_MAX_STOP_BYTES 512   /* bytes of one stop string                    */
#define EDGELLM_SRV_MAX_MESSAGES 4096    /* messages of one chat                        */

/* An error for the client: HTTP status, OpenAI error type ("invalid_request_error"...),
 * the request field at fault ("" when none) and a message. */
typedef struct {
    int http;
    const char *type;
    char param[64];
    char msg[320];
} edgellm_srv_error;

/* A request body, read and checked. Strings are owned, NUL-terminated, well-formed UTF-8
 * (bytes that are not: U+FFFD each, as the tokenizers read text). */
typedef struct {
    edgellm_srv_kind kind;
    char *model;                       /* NULL: not given                                */
    int stream, include_usage;         /* stream; stream_options.include_usage           */
    int n_predict;                     /* max_tokens / max_completion_tokens / n_predict; -1: none */
    edgellm_sampler_params sampling;   /* llama-server's defaults for what is not given   */
    int has_seed;                      /* 0: the seed is to be drawn                      */
    int repeat_last_n_ctx;             /* repeat_last_n -1: the slot's context            */
    char *stop[EDGELLM_SRV_MAX_STOP];
    int n_stop;
    edgellm_chat_message *msgs;        /* chat: [n_msgs], role and content owned         */
    int n_msgs;
    char *prompt;                      /* completion: the text, or NULL with prompt_tokens */
    int32_t *prompt_tokens;            /* completion: token ids ([n_prompt_tokens])      */
    int n_prompt_tokens;
} edgellm_srv_request;

/* Read body[0..len) (JSON, any bytes) as a request of `kind`. On success *out owns its
 * strings (free with edgellm_srv_request_free) and true is returned; otherwise false, *e
 * says why (400, invalid_request_error) and *out holds nothing. Checks (each names the
 * field): a JSON object; field types (numbers finite, integers integral and in range);
 * ranges as llama-server (tools/server/server-schema.cpp): temperature >= 0, top_p and
 * min_p in [0, 1], top_k >= 0, repeat_last_n >= -1, max_tokens >= -1, repeat_penalty > 0;
 * stop a string or an array of at most EDGELLM_SRV_MAX_STOP strings; n / best_of 1;
 * chat: messages a non-empty array of at most EDGELLM_SRV_MAX_MESSAGES objects with a
 * string role and a content that is a string, null, or an array of text parts;
 * completion: prompt a string, an array of one string, or an array of token ids.
 * Thread-safe. */
bool edgellm_srv_request_parse(const char *body, size_t len, edgellm_srv_kind kind, edgellm_srv_request *out,
                               edgellm_srv_error *e);
void edgellm_srv_request_free(edgellm_srv_request *r);   /* NULL-safe; *r zeroed */

/* Fill *e (returns false, for `return edgellm_srv_fail(...)`). */
bool edgellm_srv_fail(edgellm_srv_error *e, int http, const char *type, const char *param, const char *fmt, ...)
    EDGELLM_PRINTF(5, 6);

/* Stop strings over generated text[0..len): the offset of the first (leftmost) full match
 * of any of stop[n_stop] (-1: none), and in *safe the bytes of text that can be shown now:
 * len less its longest suffix that begins some stop string (held back until the next
 * piece decides). Empty stop strings never match. */
long edgellm_srv_find_stop(const char *text, size_t len, char *const *stop, int n_stop, size_t *safe);

/* ---- response JSON (cJSON, printed unformatted; malloc'd, free with free()) ---- */

/* What a finished (or streaming) request reports. */
typedef struct {
    const char *id;                    /* "chatcmpl-..." / "cmpl-..."                    */
    const char *model;
    long long created;                 /* Unix seconds                                   */
    int n_prompt, n_cached, n_generated;
    int n_dropped;                     /* chat: messages dropped to fit the context      */
    int timed_out;
} edgellm_srv_info;

/* {"error": {"code", "message", "param", "type"}} as llama-server and OpenAI send it. */
char *edgellm_srv_error_json(const edgellm_srv_error *e);
/* The non-streaming answer: chat.completion or text_completion with usage. */
char *edgellm_srv_final_json(edgellm_srv_kind kind, const edgellm_srv_info *in, const char *text, size_t len,
                             const char *finish_reason);
/* One Server-Sent Events chunk object: text[0..len) as the delta (chat: role too when
 * `first`), finish_reason NULL until the last; usage only in the trailing usage chunk
 * (usage 1: empty choices, as OpenAI's include_usage). */
char *edgellm_srv_chunk_json(edgellm_srv_kind kind, const edgellm_srv_info *in, const char *text, size_t len,
                             int first, const char *finish_reason, int usage);
/* GET /v1/models: the one model, with its slot context and counts. */
char *edgellm_srv_models_json(const char *id, long long created, int n_ctx_slot, int n_slots, const edgellm_model *m);

/* ---------------------------------------------------------------- tasks ---- */

typedef enum { EDGELLM_SRV_QUEUED = 0, EDGELLM_SRV_RUNNING, EDGELLM_SRV_DONE } edgellm_srv_task_state;

typedef struct edgellm_srv_task {
    /* set before submission, read-only after */
    edgellm_srv_kind kind;
    int32_t *tokens;                   /* the prompt's tokens (slot choice; the prompt when text is NULL) */
    int n_tokens;
    char *text;                        /* completion: the prompt text, tokenized as edgellm run does */
    edgellm_generate_params gp;
    char **stop;                       /* [n_stop], owned                                */
    int n_stop;
    double t_arrival, deadline;        /* ms (edgellm_time_ms); deadline 0: none         */
    atomic_int cancel;                 /* set by the connection: the client went away    */

    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                          /* under mu: the connection and the engine        */
    edgellm_srv_task_state state;
    char *out;                         /* generated text, stop string cut off [out_len]  */
    size_t out_len, out_cap, out_safe; /* out_safe: bytes that may be sent               */
    int stopped_by_word, timed_out;
    int n_prompt, n_cached, n_generated;
    const char *finish;                /* "stop" / "length" once done                    */
    edgellm_srv_error err;             /* err.http != 0: failed                          */
    double t_first;                    /* ms of the first piece (0: none yet)            */
    uint64_t seq_no;                   /* arrival order (ids)                            */
} edgellm_srv_task;

/* A task with one reference (the caller's); NULL when memory runs out. */
edgellm_srv_task *edgellm_srv_task_new(void);
/* Drop a reference; the last frees it. NULL-safe. */
void edgellm_srv_task_release(edgellm_srv_task *t);

/* ---------------------------------------------------------------- engine ---- */

typedef struct edgellm_srv_engine edgellm_srv_engine;

/* Counters for /metrics (a snapshot). */
typedef struct {
    uint64_t prompt_tokens, cached_tokens, generated_tokens, prefix_hits, requests_done;
    uint64_t cancelled, timed_out;
    double tokens_per_second;          /* generated over the last 10 s                   */
    int queue_len, slots_busy, n_slots;
    int64_t kv_cells_used, kv_cells;
    int gov_level, gov_paused, gov_threads;   /* governor (-1 level: none); its level, pause, threads */
    double gov_temp_c, gov_max_tok_s, gov_slept_s;   /* last temperature (NAN unknown), cap, paced/paused s */
    uint64_t gov_changes, gov_refused, gov_ctx_remade;   /* level changes, 503s, contexts re-made */
    /* speculative decoding (edgellm_spec_stats summed over the requests; plain_ms: their
     * tokens at the runs' measured one-token pass time, decode_ms: the time they took) */
    uint64_t spec_drafted, spec_accepted, spec_passes, spec_draft_passes, spec_tokens;
    double spec_decode_ms, spec_plain_ms;
} edgellm_srv_stats;

/* Start the engine thread on c (n_seq slots of n_ctx cells each; the engine uses c
 * alone from now on). prefill_batch: prompt tokens per step over all slots (<= 0: 256).
 * sp (NULL: none) with draft (NULL: lookup only) and a single slot: every request runs
 * edgellm_generate_speculative whole in the engine thread, the cancel checks in its token
 * callback; both contexts are the engine's from now on. */
edgellm_status edgellm_srv_engine_start(edgellm_ctx *c, int queue_size, int prefill_batch, edgellm_ctx *draft,
                                        const edgellm_spec_params *sp, edgellm_srv_engine **out, edgellm_error *err);
/* Let governor g (borrowed; polled by the engine thread only) act between steps: a paused
 * level holds the running streams between tokens (at most the policy's pause_max_s per gap)
 * and keeps queued requests waiting (edgellm_srv_engine_paused tells the HTTP side to refuse
 * new ones); the level's tok/s cap spaces steps so that all slots together generate no
 * faster; a level with another thread count stops taking requests into slots until the
 * running ones finish, then re-makes the context (*owner, the context the engine was started
 * on, is updated; the slots' prefix caches are lost) with cp and that many threads. While
 * idle the engine polls every 250 ms so that the level (and /metrics) follow the sensors.
 * app_threads: the threads asked for. Call before the first submit. */
void edgellm_srv_engine_govern(edgellm_srv_engine *e, edgellm_governor *g, edgellm_ctx **owner,
                               const edgellm_ctx_params *cp, int app_threads);
/* 1 while the governor's level pauses (new requests are to be refused: 503), else 0; counts
 * a refusal when count is set. Any thread. */
int edgellm_srv_engine_paused(edgellm_srv_engine *e, int count);
/* Hand t to the engine (it takes a reference): 0, or the HTTP status when it cannot: 429
 * (the queue is full), 503 (draining). */
int edgellm_srv_engine_submit(edgellm_srv_engine *e, edgellm_srv_task *t);
/* Stop taking requests: queued ones fail (503); running ones may finish until
 * drain_deadline (ms, edgellm_time_ms), then they are cancelled. */
void edgellm_srv_engine_drain(edgellm_srv_engine *e, double drain_deadline);
/* Tasks queued or running. */
int edgellm_srv_engine_busy(edgellm_srv_engine *e);
void edgellm_srv_engine_stats(edgellm_srv_engine *e, edgellm_srv_stats *out);
/* Stop the thread (cancelling what runs), join it, free. NULL-safe. The context stays the
 * caller's. */
void edgellm_srv_engine_free(edgellm_srv_engine *e);

#endif
