/*
 * server_request.c — the OpenAI API's JSON for `edgellm serve` (contract in server.h):
 * request bodies read and checked, stop strings, response, chunk and error objects.
 *
 * Field mapping follows llama.cpp's server (ngxson/llama.cpp:tools/server/server-schema.cpp,
 * make_llama_cmpl_schema; tools/server/server-common.cpp, the OpenAI-compatible parsing):
 *   max_tokens, max_completion_tokens, n_predict -> tokens to generate (-1: no limit; when
 *       several are given n_predict wins, then max_completion_tokens)
 *   temperature, top_k, top_p, min_p, seed (negative: drawn), repeat_penalty,
 *   repeat_last_n (-1: the slot's context), frequency_penalty, presence_penalty -> the
 *       sampler's fields of the same meaning (llama-server: penalty_repeat, penalty_last_n,
 *       penalty_freq, penalty_present); defaults as llama-server's (common/common.h:
 *       temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, penalties off, last_n 64)
 *   stop: a string or an array of strings
 * Responses follow tools/server/server-task.cpp (to_json_oaicompat, _chat, _chat_stream,
 * usage_json_oaicompat: usage {prompt_tokens, completion_tokens, total_tokens,
 * prompt_tokens_details {cached_tokens}}; finish_reason "stop" at an end-of-generation
 * token or a stop string, else "length"); errors as tools/server/server-common.cpp
 * (format_error_response: {"code", "message", "type"}) inside {"error": ...}.
 *
 * Without cJSON (Debian libcjson-dev) every request is refused (500) and the builders
 * return NULL; edgellm_server_run refuses to start in that case.
 */
#include "server.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef EDGELLM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

bool edgellm_srv_fail(edgellm_srv_error *e, int http, const char *type, const char *param, const char *fmt, ...)
{
    e->http = http;
    e->type = type;
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return false;
}

void edgellm_srv_request_free(edgellm_srv_request *r)
{
    if (!r) return;
    edgellm_free(r->model);
    for (int i = 0; i < r->n_stop; i++) edgellm_free(r->stop[i]);
    for (int i = 0; i < r->n_msgs; i++) {
        edgellm_free((char *)r->msgs[i].role);
        edgellm_free((char *)r->msgs[i].content);
    }
    edgellm_free(r->msgs);
    edgellm_free(r->prompt);
    edgellm_free(r->prompt_tokens);
    memset(r, 0, sizeof *r);
}

/* s[0..len) as well-formed UTF-8 (U+FFFD for each bad byte), owned; NULL: out of memory. */
static char *utf8_copy(const char *s, size_t len)
{
    const size_t need = edgellm_utf8_sanitize(s, len, NULL, 0);
    char *out = edgellm_malloc(need + 1);
    if (out) edgellm_utf8_sanitize(s, len, out, need + 1);
    return out;
}

long edgellm_srv_find_stop(const char *text, size_t len, char *const *stop, int n_stop, size_t *safe)
{
    long first = -1;
    size_t hold = 0;
    for (int i = 0; i < n_stop; i++) {
        const size_t n = strlen(stop[i]);
        if (n == 0) continue;
        if (len >= n) {   /* the leftmost full match */
            const char *hit = memmem(text, len, stop[i], n);
            if (hit && (first < 0 || hit - text < first)) first = (long)(hit - text);
        }
        /* the longest suffix of text that is a proper prefix of stop[i] */
        for (size_t k = EDGELLM_MIN(n - 1, len); k > hold; k--)
            if (!memcmp(text + len - k, stop[i], k)) {
                hold = k;
                break;
            }
    }
    if (safe) *safe = first >= 0 ? (size_t)first : len - hold;
    return first;
}

#ifdef EDGELLM_HAVE_CJSON

/* ---------------------------------------------------------------- reading ---- */

static const char *const EINVAL_T = "invalid_request_error";

/* An optional number: absent or null leaves *out; else finite in [lo, hi]. */
static bool get_number(const cJSON *o, const char *name, double lo, double hi, double *out, edgellm_srv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return edgellm_srv_fail(e, 400, EINVAL_T, name, "'%s' must be a number", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return edgellm_srv_fail(e, 400, EINVAL_T, name, "'%s' is %g; it must be in [%g, %g]", name, v->valuedouble,
                                lo, hi);
    *out = v->valuedouble;
    return true;
}

/* An optional integer in [lo, hi]; *given (may be NULL) set when present. */
static bool get_int(const cJSON *o, const char *name, double lo, double hi, long long *out, int *given,
                    edgellm_srv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble != floor(v->valuedouble))
        return edgellm_srv_fail(e, 400, EINVAL_T, name, "'%s' must be an integer", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return edgellm_srv_fail(e, 400, EINVAL_T, name, "'%s' is %.17g; it must be in [%.17g, %.17g]", name,
                                v->valuedouble, lo, hi);
    *out = (long long)v->valuedouble;
    if (given) *given = 1;
    return true;
}

static bool get_bool(const cJSON *o, const char *name, int *out, edgellm_srv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    if (!v || cJSON_IsNull(v)) return true;
    if (!cJSON_IsBool(v)) return edgellm_srv_fail(e, 400, EINVAL_T, name, "'%s' must be true or false", name);
    *out = cJSON_IsTrue(v);
    return true;
}

static bool nomem(edgellm_srv_error *e)
{
    return edgellm_srv_fail(e, 500, "server_error", NULL, "out of memory reading the request");
}

/* A string value as owned UTF-8. */
static bool take_string(const cJSON *v, const char *name, char **out, edgellm_srv_error *e)
{
    const char *s = cJSON_GetStringValue(v);
    if (!s) return edgellm_srv_fail(e, 400, EINVAL_T, name, "'%s' must be a string", name);
    if (!(*out = utf8_copy(s, strlen(s)))) return nomem(e);
    return true;
}

static bool read_stop(const cJSON *o, edgellm_srv_request *r, edgellm_srv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if (!v || cJSON_IsNull(v)) return true;
    const cJSON *one[1] = {v};
    const int n = cJSON_IsString(v) ? 1 : cJSON_IsArray(v) ? cJSON_GetArraySize(v) : -1;
    if (n < 0) return edgellm_srv_fail(e, 400, EINVAL_T, "stop", "'stop' must be a string or an array of strings");
    if (n > EDGELLM_SRV_MAX_STOP)
        return edgellm_srv_fail(e, 400, EINVAL_T, "stop", "'stop' has %d strings; at most %d", n, EDGELLM_SRV_MAX_STOP);
    const cJSON *it = cJSON_IsString(v) ? one[0] : v->child;
    for (int i = 0; i < n && it; i++, it = it->next) {
        const char *s = cJSON_GetStringValue(it);
        if (!s) return edgellm_srv_fail(e, 400, EINVAL_T, "stop", "'stop' must be a string or an array of strings");
        if (strlen(s) > EDGELLM_SRV_MAX_STOP_BYTES)
            return edgellm_srv_fail(e, 400, EINVAL_T, "stop", "a stop string has %zu bytes; at most %d", strlen(s),
                                    EDGELLM_SRV_MAX_STOP_BYTES);
        if (!*s) continue;                                   /* an empty stop string matches nothing */
        if (!(r->stop[r->n_stop] = utf8_copy(s, strlen(s)))) return nomem(e);
        r->n_stop++;
        if (cJSON_IsString(v)) break;
    }
    return true;
}

/* A message's content: a string, null (""), or an array of {"type": "text", "text": ...}
 * parts joined. */
static bool read_content(const cJSON *v, int index, char **out, edgellm_srv_error *e)
{
    char param[64];
    snprintf(param, sizeof param, "messages[%d].content", index);
    if (!v || cJSON_IsNull(v)) {
        *out = edgellm_strdup("");
        return *out ? true : nomem(e);
    }
    if (cJSON_IsString(v)) return take_string(v, param, out, e);
    if (!cJSON_IsArray(v))
        return edgellm_srv_fail(e, 400, EINVAL_T, param, "'%s' must be a string, null or an array of text parts", param);
    size_t total = 0;
    for (const cJSON *p = v->child; p; p = p->next) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(p, "type");
        const char *ts = cJSON_GetStringValue(type);
        if (!cJSON_IsObject(p) || !ts)
            return edgellm_srv_fail(e, 400, EINVAL_T, param, "'%s' parts must be objects with a string 'type'", param);
        if (strcmp(ts, "text") != 0)
            return edgellm_srv_fail(e, 400, EINVAL_T, param, "'%s': content parts of type '%.64s' are not supported "
                                    "(text only)", param, ts);
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "text"));
        if (!text) return edgellm_srv_fail(e, 400, EINVAL_T, param, "'%s': a text part needs a string 'text'", param);
        total += strlen(text);
    }
    char *joined = edgellm_malloc(total + 1), *w = joined;
    if (!joined) return nomem(e);
    for (const cJSON *p = v->child; p; p = p->next) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "text"));
        const size_t n = strlen(text);
        memcpy(w, text, n);
        w += n;
    }
    *w = 0;
    *out = utf8_copy(joined, total);
    edgellm_free(joined);
    return *out ? true : nomem(e);
}

static bool read_messages(const cJSON *o, edgellm_srv_request *r, edgellm_srv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "messages");
    if (!v) return edgellm_srv_fail(e, 400, EINVAL_T, "messages", "'messages' is required");
    if (!cJSON_IsArray(v)) return edgellm_srv_fail(e, 400, EINVAL_T, "messages", "'messages' must be an array");
    const int n = cJSON_GetArraySize(v);
    if (n == 0) return edgellm_srv_fail(e, 400, EINVAL_T, "messages", "'messages' is empty");
    if (n > EDGELLM_SRV_MAX_MESSAGES)
        return edgellm_srv_fail(e, 400, EINVAL_T, "messages", "'messages' has %d messages; at most %d", n,
                                EDGELLM_SRV_MAX_MESSAGES);
    if (!(r->msgs = edgellm_calloc((size_t)n, sizeof *r->msgs))) return nomem(e);
    int i = 0;
    for (const cJSON *m = v->child; m; m = m->next, i++) {
        char param[64];
        snprintf(param, sizeof param, "messages[%d]", i);
        if (!cJSON_IsObject(m)) return edgellm_srv_fail(e, 400, EINVAL_T, param, "'%s' must be an object", param);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role) || !role->valuestring[0])
            return edgellm_srv_fail(e, 400, EINVAL_T, param, "'%s' needs a non-empty string 'role'", param);
        char *rs = NULL, *cs = NULL;
        if (!take_string(role, param, &rs, e)) return false;
        r->msgs[i].role = rs;
        r->n_msgs = i + 1;                 /* owned from here on */
        if (!read_content(cJSON_GetObjectItemCaseSensitive(m, "content"), i, &cs, e)) return false;
        r->msgs[i].content = cs;
    }
    return true;
}

static bool read_prompt(const cJSON *o, edgellm_srv_request *r, edgellm_srv_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    if (!v) return edgellm_srv_fail(e, 400, EINVAL_T, "prompt", "'prompt' is required");
    if (cJSON_IsString(v)) return take_string(v, "prompt", &r->prompt, e);
    if (!cJSON_IsArray(v))
        return edgellm_srv_fail(e, 400, EINVAL_T, "prompt", "'prompt' must be a string, an array of one string or an "
                                "array of token ids");
    const int n = cJSON_GetArraySize(v);
    if (n == 0) return edgellm_srv_fail(e, 400, EINVAL_T, "prompt", "'prompt' is an empty array");
    if (cJSON_IsString(v->child)) {
        if (n != 1)
            return edgellm_srv_fail(e, 400, EINVAL_T, "prompt", "'prompt' has %d prompts; this server takes one per "
                                    "request", n);
        return take_string(v->child, "prompt", &r->prompt, e);
    }
    if (!(r->prompt_tokens = edgellm_malloc((size_t)n * sizeof *r->prompt_tokens))) return nomem(e);
    int i = 0;
    for (const cJSON *t = v->child; t; t = t->next, i++) {
        if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
            t->valuedouble > 2147483647.0)
            return edgellm_srv_fail(e, 400, EINVAL_T, "prompt", "'prompt' must be a string, an array of one string or "
                                    "an array of token ids (non-negative integers)");
        r->prompt_tokens[i] = (int32_t)t->valuedouble;
    }
    r->n_prompt_tokens = n;
    return true;
}

bool edgellm_srv_request_parse(const char *body, size_t len, edgellm_srv_kind kind, edgellm_srv_request *out,
                               edgellm_srv_error *e)
{
    memset(out, 0, sizeof *out);
    memset(e, 0, sizeof *e);
    edgellm_srv_request r = {0};
    r.kind = kind;
    r.n_predict = -1;
    r.sampling = edgellm_sampler_default_params();   /* llama-server's defaults (common/common.h) */
    cJSON *o = body ? cJSON_ParseWithLength(body, len) : NULL;
    if (!o) {
        const char *at = cJSON_GetErrorPtr();
        long off = at && body && at >= body && at <= body + len ? (long)(at - body) : -1;
        if (off >= 0) return edgellm_srv_fail(e, 400, EINVAL_T, NULL, "the body is not valid JSON (at byte %ld)", off);
        return edgellm_srv_fail(e, 400, EINVAL_T, NULL, "the body is not valid JSON");
    }
    bool ok = false;
    if (!cJSON_IsObject(o)) {
        edgellm_srv_fail(e, 400, EINVAL_T, NULL, "the body must be a JSON object");
        goto done;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    if (model && !cJSON_IsNull(model) && !take_string(model, "model", &r.model, e)) goto done;
    if (!get_bool(o, "stream", &r.stream, e)) goto done;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(o, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so)) {
            edgellm_srv_fail(e, 400, EINVAL_T, "stream_options", "'stream_options' must be an object");
            goto done;
        }
        if (!get_bool(so, "include_usage", &r.include_usage, e)) goto done;
    }
    long long n = -1;
    /* the aliases in llama-server's order of precedence: n_predict over the others */
    if (!get_int(o, "max_tokens", -1, 2147483647.0, &n, NULL, e)) goto done;
    if (!get_int(o, "max_completion_tokens", -1, 2147483647.0, &n, NULL, e)) goto done;
    if (!get_int(o, "n_predict", -1, 2147483647.0, &n, NULL, e)) goto done;
    r.n_predict = (int)n;
    double d;
    edgellm_sampler_params *sp = &r.sampling;
    d = sp->temperature;
    if (!get_number(o, "temperature", 0, 1e30, &d, e)) goto done;
    sp->temperature = (float)d;
    d = sp->top_p;
    if (!get_number(o, "top_p", 0, 1, &d, e)) goto done;
    sp->top_p = d > 0 ? (float)d : 1e-9f;            /* 0: only the most likely token */
    d = sp->min_p;
    if (!get_number(o, "min_p", 0, 1, &d, e)) goto done;
    sp->min_p = (float)d;
    n = sp->top_k;
    if (!get_int(o, "top_k", 0, 2147483647.0, &n, NULL, e)) goto done;
    sp->top_k = (int)n;
    d = sp->repeat_penalty;
    if (!get_number(o, "repeat_penalty", 0, 1e30, &d, e)) goto done;
    if (!(d > 0)) {
        edgellm_srv_fail(e, 400, EINVAL_T, "repeat_penalty", "'repeat_penalty' must be positive (1: off)");
        goto done;
    }
    sp->repeat_penalty = (float)d;
    n = sp->repeat_last_n;
    if (!get_int(o, "repeat_last_n", -1, 1 << 24, &n, NULL, e)) goto done;
    if (n == -1) r.repeat_last_n_ctx = 1;
    else sp->repeat_last_n = (int)n;
    d = 0;
    if (!get_number(o, "frequency_penalty", -1e6, 1e6, &d, e)) goto done;
    sp->frequency_penalty = (float)d;
    d = 0;
    if (!get_number(o, "presence_penalty", -1e6, 1e6, &d, e)) goto done;
    sp->presence_penalty = (float)d;
    long long seed = -1;
    if (!get_int(o, "seed", -9007199254740992.0, 9007199254740992.0, &seed, NULL, e)) goto done;
    if (seed >= 0) {
        sp->seed = (uint64_t)seed;
        r.has_seed = 1;
    }
    long long one = 1;
    if (!get_int(o, "n", 1, 1, &one, NULL, e) || !get_int(o, "best_of", 1, 1, &one, NULL, e)) {
        snprintf(e->msg, sizeof e->msg, "'%s' must be 1: one choice per request", e->param);
        goto done;
    }
    const cJSON *lp = cJSON_GetObjectItemCaseSensitive(o, "logprobs");
    if (lp && !cJSON_IsNull(lp) && !cJSON_IsFalse(lp) && !(cJSON_IsNumber(lp) && lp->valuedouble == 0)) {
        edgellm_srv_fail(e, 400, "not_supported_error", "logprobs", "'logprobs' is not supported");
        goto done;
    }
    if (!read_stop(o, &r, e)) goto done;
    if (kind == EDGELLM_SRV_CHAT) {
        if (!read_messages(o, &r, e)) goto done;
    } else {
        int echo = 0;
        if (!get_bool(o, "echo", &echo, e)) goto done;
        if (echo) {
            edgellm_srv_fail(e, 400, "not_supported_error", "echo", "'echo' is not supported");
            goto done;
        }
        if (!read_prompt(o, &r, e)) goto done;
    }
    ok = true;
done:
    cJSON_Delete(o);
    if (!ok) {
        edgellm_srv_request_free(&r);
        return false;
    }
    *out = r;
    return true;
}

/* ---------------------------------------------------------------- writing ---- */

static char *print(cJSON *o)
{
    char *s = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    return s;
}

/* A string of len bytes; NUL bytes (a byte token can decode to one) are left out, since
 * cJSON strings end at the first. */
static cJSON *str_n(const char *s, size_t len)
{
    char *tmp = malloc(len + 1);
    if (!tmp) return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        if (s[i]) tmp[n++] = s[i];
    tmp[n] = 0;
    cJSON *v = cJSON_CreateString(tmp);
    free(tmp);
    return v;
}

char *edgellm_srv_error_json(const edgellm_srv_error *e)
{
    cJSON *o = cJSON_CreateObject(), *in = cJSON_AddObjectToObject(o, "error");
    cJSON_AddNumberToObject(in, "code", e->http);
    cJSON_AddStringToObject(in, "message", e->msg);
    if (e->param[0]) cJSON_AddStringToObject(in, "param", e->param);
    else cJSON_AddNullToObject(in, "param");
    cJSON_AddStringToObject(in, "type", e->type ? e->type : "server_error");
    return print(o);
}

static void add_usage(cJSON *o, const edgellm_srv_info *in)
{
    cJSON *u = cJSON_AddObjectToObject(o, "usage");
    cJSON_AddNumberToObject(u, "completion_tokens", in->n_generated);
    cJSON_AddNumberToObject(u, "prompt_tokens", in->n_prompt);
    cJSON_AddNumberToObject(u, "total_tokens", in->n_prompt + in->n_generated);
    cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(d, "cached_tokens", in->n_cached);
}

static cJSON *head(edgellm_srv_kind kind, const edgellm_srv_info *in, const char *object)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", in->id);
    cJSON_AddStringToObject(o, "object", object);
    cJSON_AddNumberToObject(o, "created", (double)in->created);
    cJSON_AddStringToObject(o, "model", in->model);
    cJSON_AddStringToObject(o, "system_fingerprint", "edgellm-" EDGELLM_VERSION);
    if (kind == EDGELLM_SRV_CHAT) cJSON_AddNumberToObject(o, "messages_dropped", in->n_dropped);
    return o;
}

char *edgellm_srv_final_json(edgellm_srv_kind kind, const edgellm_srv_info *in, const char *text, size_t len,
                             const char *finish_reason)
{
    cJSON *o = head(kind, in, kind == EDGELLM_SRV_CHAT ? "chat.completion" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices"), *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", 0);
    if (kind == EDGELLM_SRV_CHAT) {
        cJSON *m = cJSON_AddObjectToObject(c, "message");
        cJSON_AddStringToObject(m, "role", "assistant");
        cJSON_AddItemToObject(m, "content", str_n(text, len));
    } else {
        cJSON_AddItemToObject(c, "text", str_n(text, len));
    }
    cJSON_AddNullToObject(c, "logprobs");
    cJSON_AddStringToObject(c, "finish_reason", finish_reason);
    add_usage(o, in);
    if (in->timed_out) cJSON_AddTrueToObject(o, "timed_out");
    return print(o);
}

char *edgellm_srv_chunk_json(edgellm_srv_kind kind, const edgellm_srv_info *in, const char *text, size_t len,
                             int first, const char *finish_reason, int usage)
{
    cJSON *o = head(kind, in, kind == EDGELLM_SRV_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON *choices = cJSON_AddArrayToObject(o, "choices");
    if (usage) {
        add_usage(o, in);
        return print(o);
    }
    cJSON *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", 0);
    if (kind == EDGELLM_SRV_CHAT) {
        cJSON *d = cJSON_AddObjectToObject(c, "delta");
        if (first) cJSON_AddStringToObject(d, "role", "assistant");
        if (len || first) cJSON_AddItemToObject(d, "content", str_n(text, len));
    } else {
        cJSON_AddItemToObject(c, "text", str_n(text, len));
        cJSON_AddNullToObject(c, "logprobs");
    }
    if (finish_reason) cJSON_AddStringToObject(c, "finish_reason", finish_reason);
    else cJSON_AddNullToObject(c, "finish_reason");
    if (finish_reason && in->timed_out) cJSON_AddTrueToObject(o, "timed_out");
    return print(o);
}

char *edgellm_srv_models_json(const char *id, long long created, int n_ctx_slot, int n_slots, const edgellm_model *m)
{
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(o, "data"), *d = cJSON_CreateObject();
    cJSON_AddItemToArray(data, d);
    cJSON_AddStringToObject(d, "id", id);
    cJSON_AddStringToObject(d, "object", "model");
    cJSON_AddNumberToObject(d, "created", (double)created);
    cJSON_AddStringToObject(d, "owned_by", "edgellm");
    cJSON *meta = cJSON_AddObjectToObject(d, "meta");
    cJSON_AddStringToObject(meta, "arch", info.arch);
    cJSON_AddNumberToObject(meta, "n_ctx", n_ctx_slot);
    cJSON_AddNumberToObject(meta, "n_slots", n_slots);
    cJSON_AddNumberToObject(meta, "n_ctx_train", info.n_ctx_train);
    cJSON_AddNumberToObject(meta, "n_vocab", info.n_vocab);
    cJSON_AddNumberToObject(meta, "n_params", (double)info.n_params);
    cJSON_AddNumberToObject(meta, "size", (double)info.weight_bytes);
    return print(o);
}

#else /* no cJSON */

bool edgellm_srv_request_parse(const char *body, size_t len, edgellm_srv_kind kind, edgellm_srv_request *out,
                               edgellm_srv_error *e)
{
    (void)body, (void)len, (void)kind;
    memset(out, 0, sizeof *out);
    return edgellm_srv_fail(e, 500, "server_error", NULL, "edgellm was built without cJSON");
}
char *edgellm_srv_error_json(const edgellm_srv_error *e) { (void)e; return NULL; }
char *edgellm_srv_final_json(edgellm_srv_kind kind, const edgellm_srv_info *in, const char *text, size_t len,
                             const char *finish_reason)
{
    (void)kind, (void)in, (void)text, (void)len, (void)finish_reason;
    return NULL;
}
char *edgellm_srv_chunk_json(edgellm_srv_kind kind, const edgellm_srv_info *in, const char *text, size_t len,
                             int first, const char *finish_reason, int usage)
{
    (void)kind, (void)in, (void)text, (void)len, (void)first, (void)finish_reason, (void)usage;
    return NULL;
}
char *edgellm_srv_models_json(const char *id, long long created, int n_ctx_slot, int n_slots, const edgellm_model *m)
{
    (void)id, (void)created, (void)n_ctx_slot, (void)n_slots, (void)m;
    return NULL;
}

#endif
