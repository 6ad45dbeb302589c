/* test_server.c — `edgellm serve` end to end over HTTP on 127.0.0.1 (curl and a raw-socket
 * client; the official `openai` npm client is tests/server/openai_client.mjs), and the
 * request reader and stop strings of src/tools/server_request.c directly.
 *
 * Model: stories260K (no chat template: --chat-template chatml). Cases: endpoints and their
 * shapes; greedy over HTTP equals `edgellm run` greedy, streamed equals not streamed;
 * stop strings (also across pieces), max_tokens, usage; continuous batching (requests
 * overlap, same tokens as alone); prefix reuse in a multi-turn chat (cached_tokens,
 * /metrics); a chat longer than the slot loses old turns (messages_dropped); a client that
 * disconnects frees its slot; the queue (429 + Retry-After); the timeout; the key (401,
 * constant-time compare, /health open); SIGTERM drains and exits 0. */
#if defined(EDGELLM_HAVE_CJSON) && defined(EDGELLM_HAVE_MICROHTTPD)   /* set by CMake when both are found */
#include "server_util.h"
#include "tools/server.h"

#define NEED_MODEL(var) NEED_SHARED(var, "models/stories260K/stories260K.gguf")

/* Greedy text of `edgellm run` for prompt, n tokens: its stdout less the echoed prompt and
 * the final newline. */
static char *run_greedy(const char *model, const char *prompt, int n)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -p '%s' -n %d --temp 0 -t 1 2>/dev/null", EDGELLM_CLI, model, prompt, n);
    FILE *f = popen(cmd, "r");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, r;
    char *out = malloc(cap);
    while ((r = fread(out + len, 1, cap - len - 1, f)) > 0) len += r;
    out[len] = 0;
    pclose(f);
    const size_t pl = strlen(prompt);
    if (len < pl + 1 || strncmp(out, prompt, pl) != 0) { free(out); return NULL; }
    memmove(out, out + pl, len - pl + 1);
    len -= pl;
    if (len && out[len - 1] == '\n') out[--len] = 0;
    return out;
}

/* POST body to path; the parsed JSON of a 200 answer (NULL otherwise; *status set). */
static cJSON *post_json(int port, const char *path, const char *body, int *status)
{
    srv_resp r;
    cJSON *o = NULL;
    *status = 0;
    if (srv_post(port, path, body, &r)) {
        *status = r.status;
        o = cJSON_Parse(r.body ? r.body : "");
    }
    srv_resp_free(&r);
    return o;
}

/* ---------------------------------------------------------------- direct ---- */

static void test_server_request_parse(void)
{
    edgellm_srv_request rq;
    edgellm_srv_error e;
    const char *ok = "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"s\"},{\"role\":\"user\",\"content\":"
                     "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},{\"role\":\"assistant\","
                     "\"content\":null}],\"max_tokens\":7,\"temperature\":0,\"top_k\":3,\"top_p\":0.5,\"min_p\":0.1,"
                     "\"seed\":42,\"repeat_penalty\":1.1,\"repeat_last_n\":-1,\"frequency_penalty\":0.5,"
                     "\"presence_penalty\":-0.5,\"stop\":[\"x\",\"\",\"yz\"],\"stream\":true,"
                     "\"stream_options\":{\"include_usage\":true},\"n\":1,\"unknown_field\":[1,2,3]}";
    CHECK(edgellm_srv_request_parse(ok, strlen(ok), EDGELLM_SRV_CHAT, &rq, &e));
    CHECK_EQ(rq.n_msgs, 3);
    CHECK(!strcmp(rq.msgs[1].content, "ab"));
    CHECK(!strcmp(rq.msgs[2].content, ""));
    CHECK_EQ(rq.n_predict, 7);
    CHECK_EQ(rq.sampling.top_k, 3);
    CHECK_EQ(rq.sampling.seed, 42);
    CHECK_EQ(rq.has_seed, 1);
    CHECK_EQ(rq.repeat_last_n_ctx, 1);
    CHECK_NEAR(rq.sampling.frequency_penalty, 0.5, 1e-6);
    CHECK_NEAR(rq.sampling.presence_penalty, -0.5, 1e-6);
    CHECK_EQ(rq.n_stop, 2);                   /* the empty one is dropped */
    CHECK(rq.stream && rq.include_usage);
    CHECK(!strcmp(rq.model, "m"));
    edgellm_srv_request_free(&rq);
    /* n_predict wins over max_tokens, as llama-server */
    const char *np = "{\"prompt\":\"p\",\"max_tokens\":3,\"n_predict\":5}";
    CHECK(edgellm_srv_request_parse(np, strlen(np), EDGELLM_SRV_COMPLETION, &rq, &e));
    CHECK_EQ(rq.n_predict, 5);
    edgellm_srv_request_free(&rq);
    /* token ids as a prompt; invalid UTF-8 replaced */
    const char *ids = "{\"prompt\":[1,2,3]}";
    CHECK(edgellm_srv_request_parse(ids, strlen(ids), EDGELLM_SRV_COMPLETION, &rq, &e));
    CHECK_EQ(rq.n_prompt_tokens, 3);
    edgellm_srv_request_free(&rq);
    const char *bad_utf8 = "{\"prompt\":\"a\xff\xc0z\"}";
    CHECK(edgellm_srv_request_parse(bad_utf8, strlen(bad_utf8), EDGELLM_SRV_COMPLETION, &rq, &e));
    CHECK(rq.prompt && !strcmp(rq.prompt, "a\xEF\xBF\xBD\xEF\xBF\xBDz"));
    edgellm_srv_request_free(&rq);

    /* refusals: each names its field */
    static const struct { edgellm_srv_kind kind; const char *body, *param; } bad[] = {
        {EDGELLM_SRV_CHAT, "", ""},
        {EDGELLM_SRV_CHAT, "[]", ""},
        {EDGELLM_SRV_CHAT, "{\"messages\":[]}", "messages"},
        {EDGELLM_SRV_CHAT, "{}", "messages"},
        {EDGELLM_SRV_CHAT, "{\"messages\":\"hi\"}", "messages"},
        {EDGELLM_SRV_CHAT, "{\"messages\":[1]}", "messages[0]"},
        {EDGELLM_SRV_CHAT, "{\"messages\":[{\"content\":\"x\"}]}", "messages[0]"},
        {EDGELLM_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", "messages[0].content"},
        {EDGELLM_SRV_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}", "messages[0].content"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"temperature\":\"hot\"}", "temperature"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"temperature\":-1}", "temperature"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"top_p\":2}", "top_p"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"top_k\":1.5}", "top_k"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"max_tokens\":-2}", "max_tokens"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"max_tokens\":1e300}", "max_tokens"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"stream\":1}", "stream"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"stop\":5}", "stop"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"stop\":[\"a\",1]}", "stop"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"n\":2}", "n"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"repeat_penalty\":0}", "repeat_penalty"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"model\":7}", "model"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":[\"a\",\"b\"]}", "prompt"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":[-1]}", "prompt"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":{}}", "prompt"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"echo\":true}", "echo"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"logprobs\":3}", "logprobs"},
        {EDGELLM_SRV_COMPLETION, "{\"prompt\":\"p\",\"stream_options\":1}", "stream_options"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const bool parsed = edgellm_srv_request_parse(bad[i].body, strlen(bad[i].body), bad[i].kind, &rq, &e);
        CHECK(!parsed);
        CHECK(e.http == 400);
        CHECK(e.msg[0] != 0);
        if (strcmp(e.param, bad[i].param) != 0) {
            fprintf(stderr, "   %s: param '%s', expected '%s' (%s)\n", bad[i].body, e.param, bad[i].param, e.msg);
            CHECK(0);
        }
        if (parsed) edgellm_srv_request_free(&rq);
    }
    /* deep nesting and a body with NUL bytes: refused, no crash */
    char *deep = malloc(200001);
    memset(deep, '[', 200000);
    deep[200000] = 0;
    CHECK(!edgellm_srv_request_parse(deep, 200000, EDGELLM_SRV_CHAT, &rq, &e));
    free(deep);
    CHECK(!edgellm_srv_request_parse("{\"a\":\0}", 7, EDGELLM_SRV_CHAT, &rq, &e));
    /* error JSON shape */
    edgellm_srv_fail(&e, 400, "invalid_request_error", "messages", "bad \"quote\"");
    char *js = edgellm_srv_error_json(&e);
    cJSON *o = cJSON_Parse(js);
    CHECK(o && srv_json_num(o, "error.code") == 400);
    CHECK(o && !strcmp(srv_json_str(o, "error.type"), "invalid_request_error"));
    CHECK(o && !strcmp(srv_json_str(o, "error.message"), "bad \"quote\""));
    CHECK(o && !strcmp(srv_json_str(o, "error.param"), "messages"));
    cJSON_Delete(o);
    free(js);
}

static void test_server_find_stop(void)
{
    char *stops[] = {"world", "wide", "!"};
    size_t safe = 0;
    CHECK_EQ(edgellm_srv_find_stop("hello world", 11, stops, 3, &safe), 6);
    CHECK_EQ(safe, 6);
    CHECK_EQ(edgellm_srv_find_stop("hello wo", 8, stops, 3, &safe), -1);   /* "wo" may begin "world" */
    CHECK_EQ(safe, 6);
    CHECK_EQ(edgellm_srv_find_stop("hello w", 7, stops, 3, &safe), -1);
    CHECK_EQ(safe, 6);
    CHECK_EQ(edgellm_srv_find_stop("hello wx", 8, stops, 3, &safe), -1);
    CHECK_EQ(safe, 8);
    CHECK_EQ(edgellm_srv_find_stop("a wide world", 12, stops, 3, &safe), 2);   /* the leftmost match */
    CHECK_EQ(safe, 2);
    CHECK_EQ(edgellm_srv_find_stop("", 0, stops, 3, &safe), -1);
    CHECK_EQ(safe, 0);
    char *none[] = {""};
    CHECK_EQ(edgellm_srv_find_stop("abc", 3, none, 1, &safe), -1);
    CHECK_EQ(safe, 3);
}

/* ---------------------------------------------------------------- endpoints ---- */

static void test_server_endpoints(void)
{
    NEED_MODEL(model);
    srv_proc s;
    const char *args[] = {"--chat-template", "chatml", "-c", "256", "-np", "2", NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    srv_resp r;
    /* health, models, metrics */
    CHECK(srv_http(s.port, "GET", "/health", NULL, NULL, &r) && r.status == 200 && strstr(r.body, "\"ok\""));
    srv_resp_free(&r);
    CHECK(srv_http(s.port, "GET", "/v1/models", NULL, NULL, &r) && r.status == 200);
    cJSON *o = cJSON_Parse(r.body ? r.body : "");
    CHECK(o && !strcmp(srv_json_str(o, "data.0.id"), "stories260K"));
    CHECK(o && srv_json_num(o, "data.0.meta.n_ctx") == 256);
    CHECK(o && srv_json_num(o, "data.0.meta.n_slots") == 2);
    cJSON_Delete(o);
    srv_resp_free(&r);
    char *log = srv_log(&s);
    CHECK(strstr(log, "2 slots, each with its own context of 256 tokens (512 KV cells in all") != NULL);
    free(log);
    /* 404, 405 */
    CHECK(srv_http(s.port, "GET", "/v2/nothing", NULL, NULL, &r) && r.status == 404 && strstr(r.body, "not_found_error"));
    srv_resp_free(&r);
    CHECK(srv_http(s.port, "GET", "/v1/chat/completions", NULL, NULL, &r) && r.status == 405);
    srv_resp_free(&r);

    /* greedy completion over HTTP equals `edgellm run` */
    char *want = run_greedy(model, "Once upon a time", 40);
    CHECK(want != NULL);
    int st = 0;
    o = post_json(s.port, "/v1/completions", "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":0}", &st);
    CHECK_EQ(st, 200);
    const char *got = o ? srv_json_str(o, "choices.0.text") : NULL;
    CHECK(got && want && !strcmp(got, want));
    if (got && want && strcmp(got, want)) fprintf(stderr, "   http: '%s'\n   run:  '%s'\n", got, want);
    CHECK(o && !strcmp(srv_json_str(o, "object"), "text_completion"));
    CHECK(o && !strcmp(srv_json_str(o, "model"), "stories260K"));
    CHECK(o && srv_json_num(o, "usage.completion_tokens") == 40);
    CHECK(o && srv_json_num(o, "usage.prompt_tokens") >= 2);
    CHECK(o && srv_json_num(o, "usage.total_tokens") ==
                   srv_json_num(o, "usage.prompt_tokens") + srv_json_num(o, "usage.completion_tokens"));
    CHECK(o && !strcmp(srv_json_str(o, "choices.0.finish_reason"), "length"));
    cJSON_Delete(o);

    /* the same streamed: the chunks join to the same text, then [DONE] */
    CHECK(srv_post(s.port, "/v1/completions", "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":0,"
                   "\"stream\":true,\"stream_options\":{\"include_usage\":true}}", &r));
    CHECK_EQ(r.status, 200);
    CHECK(r.head && strcasestr(r.head, "content-type: text/event-stream"));
    srv_sse sse;
    srv_sse_parse(r.body ? r.body : "", &sse);
    CHECK(want && !strcmp(sse.text, want));
    CHECK(sse.done);
    CHECK(!strcmp(sse.finish, "length"));
    CHECK(sse.has_usage && sse.completion_tokens == 40);
    free(sse.text);
    srv_resp_free(&r);

    /* max_tokens 0: nothing, finish length */
    o = post_json(s.port, "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":0}", &st);
    CHECK(st == 200 && o && !strcmp(srv_json_str(o, "choices.0.text"), "") &&
          srv_json_num(o, "usage.completion_tokens") == 0);
    cJSON_Delete(o);

    /* stop strings: cut before the first match, finish "stop"; streamed the same */
    if (want && strlen(want) > 30) {
        char stop[16];
        snprintf(stop, sizeof stop, "%.6s", want + 20);   /* six bytes inside the greedy text (ASCII) */
        const char *first = strstr(want, stop);
        char body[512];
        snprintf(body, sizeof body, "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":0,"
                 "\"stop\":[\"zzzz\",\"%s\"]}", stop);
        o = post_json(s.port, "/v1/completions", body, &st);
        got = o ? srv_json_str(o, "choices.0.text") : NULL;
        CHECK(got && strlen(got) == (size_t)(first - want) && !strncmp(got, want, strlen(got)));
        CHECK(o && !strcmp(srv_json_str(o, "choices.0.finish_reason"), "stop"));
        cJSON_Delete(o);
        snprintf(body, sizeof body, "{\"prompt\":\"Once upon a time\",\"max_tokens\":40,\"temperature\":0,"
                 "\"stop\":\"%s\",\"stream\":true}", stop);
        CHECK(srv_post(s.port, "/v1/completions", body, &r));
        srv_sse_parse(r.body ? r.body : "", &sse);
        CHECK(strlen(sse.text) == (size_t)(first - want) && !strncmp(sse.text, want, sse.len));
        CHECK(!strcmp(sse.finish, "stop") && sse.done);
        free(sse.text);
        srv_resp_free(&r);
    }
    free(want);

    /* chat, not streamed and streamed, greedy: the same text; roles and shapes */
    const char *chat = "{\"messages\":[{\"role\":\"system\",\"content\":\"You tell stories.\"},{\"role\":\"user\","
                       "\"content\":\"Tell me about a cat.\"}],\"max_tokens\":24,\"temperature\":0";
    char body[1024];
    snprintf(body, sizeof body, "%s}", chat);
    o = post_json(s.port, "/v1/chat/completions", body, &st);
    CHECK_EQ(st, 200);
    char *chat_text = o && srv_json_str(o, "choices.0.message.content") ? strdup(srv_json_str(o, "choices.0.message.content")) : NULL;
    CHECK(chat_text != NULL);
    CHECK(o && !strcmp(srv_json_str(o, "object"), "chat.completion"));
    CHECK(o && !strcmp(srv_json_str(o, "choices.0.message.role"), "assistant"));
    CHECK(o && srv_json_num(o, "messages_dropped") == 0);
    CHECK(o && srv_json_num(o, "usage.completion_tokens") <= 24);
    cJSON_Delete(o);
    snprintf(body, sizeof body, "%s,\"stream\":true}", chat);
    CHECK(srv_post(s.port, "/v1/chat/completions", body, &r));
    srv_sse_parse(r.body ? r.body : "", &sse);
    CHECK(chat_text && !strcmp(sse.text, chat_text));
    CHECK(sse.done && sse.finish[0] && !sse.has_usage);
    CHECK(r.body && strstr(r.body, "\"role\":\"assistant\"") && strstr(r.body, "chat.completion.chunk"));
    free(sse.text);
    srv_resp_free(&r);
    free(chat_text);

    /* the model's name: the id and the path are accepted, another is a 400 */
    o = post_json(s.port, "/v1/completions", "{\"model\":\"stories260K\",\"prompt\":\"a\",\"max_tokens\":1}", &st);
    CHECK_EQ(st, 200);
    cJSON_Delete(o);
    CHECK(srv_post(s.port, "/v1/completions", "{\"model\":\"gpt-4\",\"prompt\":\"a\",\"max_tokens\":1}", &r));
    CHECK(r.status == 400 && strstr(r.body, "\"param\":\"model\""));
    srv_resp_free(&r);
    /* curl: the README's request, with curl's default content type (no -H) too */
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "curl -s -f http://127.0.0.1:%d/v1/chat/completions -d "
             "'{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":8}'", s.port);
    FILE *f = popen(cmd, "r");
    char out[4096] = "";
    size_t n = f ? fread(out, 1, sizeof out - 1, f) : 0;
    out[n] = 0;
    const int curl_rc = f ? pclose(f) : -1;
    if (curl_rc == 0) CHECK(strstr(out, "\"chat.completion\"") != NULL);
    else fprintf(stderr, "   curl not available or failed (%d): %s\n", curl_rc, out);
    snprintf(cmd, sizeof cmd, "curl -s -N http://127.0.0.1:%d/v1/completions -H 'Content-Type: application/json' -d "
             "'{\"prompt\":\"Once\",\"max_tokens\":8,\"stream\":true}'", s.port);
    if ((f = popen(cmd, "r"))) {
        n = fread(out, 1, sizeof out - 1, f);
        out[n] = 0;
        if (pclose(f) == 0) CHECK(strstr(out, "data: [DONE]") != NULL);
    }
    CHECK_EQ(srv_stop(&s, 30000), 0);
}

/* Requests overlap in the slots (one forward pass for all) and give the tokens they give
 * alone: greedy texts equal, under 4 concurrent clients on 2 slots. */
typedef struct { int port; const char *body; char *text; int status; } par_job;

static void *par_run(void *arg)
{
    par_job *j = arg;
    j->text = NULL;
    cJSON *o = post_json(j->port, "/v1/completions", j->body, &j->status);
    if (o && srv_json_str(o, "choices.0.text")) j->text = strdup(srv_json_str(o, "choices.0.text"));
    cJSON_Delete(o);
    return NULL;
}

static void test_server_batching(void)
{
    NEED_MODEL(model);
    srv_proc s;
    const char *args[] = {"-c", "512", "-np", "2", NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    static const char *bodies[4] = {
        "{\"prompt\":\"Once upon a time\",\"max_tokens\":100,\"temperature\":0}",
        "{\"prompt\":\"The cat\",\"max_tokens\":100,\"temperature\":0}",
        "{\"prompt\":\"Lily and Ben\",\"max_tokens\":100,\"temperature\":0.9,\"seed\":7}",
        "{\"prompt\":\"One day\",\"max_tokens\":100,\"temperature\":0}",
    };
    char *alone[4];
    for (int i = 0; i < 4; i++) {
        par_job j = {s.port, bodies[i], NULL, 0};
        par_run(&j);
        CHECK_EQ(j.status, 200);
        alone[i] = j.text;
    }
    par_job jobs[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        jobs[i] = (par_job){s.port, bodies[i], NULL, 0};
        pthread_create(&th[i], NULL, par_run, &jobs[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < 4; i++) {
        CHECK_EQ(jobs[i].status, 200);
        CHECK(alone[i] && jobs[i].text && !strcmp(alone[i], jobs[i].text));
        if (alone[i] && jobs[i].text && strcmp(alone[i], jobs[i].text))
            fprintf(stderr, "   request %d alone:    \"%s\"\n   request %d together: \"%s\"\n", i, alone[i], i, jobs[i].text);
        free(alone[i]);
        free(jobs[i].text);
    }
    CHECK(srv_metric(s.port, "edgellm_requests_total{status=\"200\"}", NULL) >= 8);   /* and /health */
    CHECK(srv_metric(s.port, "edgellm_generated_tokens_total", NULL) >= 100);
    CHECK(srv_metric(s.port, "edgellm_slots", NULL) == 2);
    CHECK(srv_metric(s.port, "edgellm_kv_cache_cells", NULL) == 1024);
    CHECK(srv_metric(s.port, "edgellm_kv_cache_used_cells", NULL) > 0);
    CHECK(srv_metric(s.port, "edgellm_queue_length", NULL) == 0);
    CHECK(srv_metric(s.port, "edgellm_slots_busy", NULL) == 0);
    CHECK_EQ(srv_stop(&s, 30000), 0);
}

/* A multi-turn chat reuses the history its slot holds (cached_tokens), counted in /metrics;
 * a chat longer than the slot loses its oldest turns after the system message. */
static void test_server_prefix_and_truncation(void)
{
    NEED_MODEL(model);
    srv_proc s;
    const char *args[] = {"--chat-template", "chatml", "-c", "256", "-np", "2", NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    int st = 0;
    cJSON *o = post_json(s.port, "/v1/chat/completions",
                         "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":"
                         "\"Hello there\"}],\"max_tokens\":8,\"temperature\":0}", &st);
    CHECK_EQ(st, 200);
    const int p1 = o ? (int)srv_json_num(o, "usage.prompt_tokens") : 0;
    char answer[256] = "";
    if (o && srv_json_str(o, "choices.0.message.content"))
        snprintf(answer, sizeof answer, "%s", srv_json_str(o, "choices.0.message.content"));
    cJSON_Delete(o);
    /* the next turn: the history is the previous prompt and answer */
    cJSON *req = cJSON_Parse("{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\","
                             "\"content\":\"Hello there\"}],\"max_tokens\":8,\"temperature\":0}");
    cJSON *msgs = cJSON_GetObjectItem(req, "messages"), *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON_AddStringToObject(m, "content", answer);
    cJSON_AddItemToArray(msgs, m);
    m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "user");
    cJSON_AddStringToObject(m, "content", "And then?");
    cJSON_AddItemToArray(msgs, m);
    char *body = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    o = post_json(s.port, "/v1/chat/completions", body, &st);
    free(body);
    CHECK_EQ(st, 200);
    const int cached = o ? (int)srv_json_num(o, "usage.prompt_tokens_details.cached_tokens") : 0;
    fprintf(stderr, "   turn 1: %d prompt tokens; turn 2: %d prompt tokens, %d cached\n", p1,
            o ? (int)srv_json_num(o, "usage.prompt_tokens") : 0, cached);
    CHECK(cached >= p1 - 1);                   /* the whole first prompt, at least */
    cJSON_Delete(o);
    CHECK(srv_metric(s.port, "edgellm_prefix_cache_hits_total", NULL) >= 1);
    CHECK(srv_metric(s.port, "edgellm_prompt_tokens_cached_total", NULL) >= p1 - 1);

    /* too long for 256 cells: old turns dropped, the system message and last turn kept */
    cJSON *big = cJSON_CreateObject();
    cJSON_AddNumberToObject(big, "max_tokens", 8);
    msgs = cJSON_AddArrayToObject(big, "messages");
    m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", "system");
    cJSON_AddStringToObject(m, "content", "Sys.");
    cJSON_AddItemToArray(msgs, m);
    for (int i = 0; i < 40; i++) {
        m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "role", i % 2 ? "assistant" : "user");
        cJSON_AddStringToObject(m, "content", i % 2 ? "An answer of some length here." : "A question of some length?");
        cJSON_AddItemToArray(msgs, m);
    }
    body = cJSON_PrintUnformatted(big);
    o = post_json(s.port, "/v1/chat/completions", body, &st);
    free(body);
    CHECK_EQ(st, 200);
    const int dropped = o ? (int)srv_json_num(o, "messages_dropped") : -1;
    fprintf(stderr, "   41 messages into 256 cells: %d dropped, %d prompt tokens\n", dropped,
            o ? (int)srv_json_num(o, "usage.prompt_tokens") : 0);
    CHECK(dropped > 0 && dropped % 2 == 0);
    CHECK(o && srv_json_num(o, "usage.prompt_tokens") <= 256 - 8);
    cJSON_Delete(o);
    /* streamed: the chunks say it too */
    cJSON_AddTrueToObject(big, "stream");
    body = cJSON_PrintUnformatted(big);
    srv_resp r;
    CHECK(srv_post(s.port, "/v1/chat/completions", body, &r));
    free(body);
    srv_sse sse;
    srv_sse_parse(r.body ? r.body : "", &sse);
    CHECK(sse.done && sse.messages_dropped == dropped);
    free(sse.text);
    srv_resp_free(&r);
    cJSON_Delete(big);
    /* the last turn alone does not fit: 400 exceed_context_size_error */
    char *huge = malloc(4000);
    memset(huge, 'x', 3000);
    huge[3000] = 0;
    body = malloc(4200);
    snprintf(body, 4200, "{\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}", huge);
    CHECK(srv_post(s.port, "/v1/chat/completions", body, &r));
    CHECK(r.status == 400 && strstr(r.body, "exceed_context_size_error"));
    srv_resp_free(&r);
    snprintf(body, 4200, "{\"prompt\":\"%s\"}", huge);
    CHECK(srv_post(s.port, "/v1/completions", body, &r));
    CHECK(r.status == 400 && strstr(r.body, "exceed_context_size_error"));
    srv_resp_free(&r);
    free(body);
    free(huge);
    CHECK_EQ(srv_stop(&s, 30000), 0);
}

/* Wait for a streamed request's first bytes of data on fd (true when some arrived). */
static bool wait_first_chunk(int fd)
{
    char buf[4096];
    const double t0 = srv_now_ms();
    size_t n = 0;
    while (srv_now_ms() - t0 < 30000) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 1000) <= 0) continue;
        ssize_t r = recv(fd, buf + n, sizeof buf - 1 - n, 0);
        if (r <= 0) return false;
        n += (size_t)r;
        buf[n] = 0;
        if (strstr(buf, "data: ")) return true;
        if (n >= sizeof buf - 1) n = 0;
    }
    return false;
}

static int open_stream(int port, const char *body)
{
    int fd = srv_connect(port);
    if (fd < 0) return -1;
    char req[2048];
    int n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
    srv_send_all(fd, req, (size_t)n);
    return fd;
}

/* A client that goes away cancels its generation and frees its slot (one slot: the next
 * request runs at once); the queue is bounded (429 with Retry-After); the timeout stops a
 * generation ("length", timed_out). */
static void test_server_cancel_queue_timeout(void)
{
    NEED_MODEL(model);
    srv_proc s;
    const char *args[] = {"-c", "2048", "-np", "1", "--queue", "1", NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    const char *lng = "{\"prompt\":\"Once upon a time\",\"max_tokens\":-1,\"stream\":true,\"temperature\":0}";
    /* streamed: close after the first chunk */
    int fd = open_stream(s.port, lng);
    CHECK(wait_first_chunk(fd));
    close(fd);
    /* not streamed: close right after sending */
    fd = srv_connect(s.port);
    const char *nb = "{\"prompt\":\"Once upon a time\",\"max_tokens\":-1,\"temperature\":0}";
    char req[1024];
    int n = snprintf(req, sizeof req, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n%s",
                     strlen(nb), nb);
    srv_send_all(fd, req, (size_t)n);
    srv_sleep_ms(50);
    close(fd);
    /* the slot is free again: a short request is answered */
    int st = 0;
    const double t0 = srv_now_ms();
    cJSON *o = post_json(s.port, "/v1/completions", "{\"prompt\":\"Hi\",\"max_tokens\":4}", &st);
    CHECK_EQ(st, 200);
    cJSON_Delete(o);
    fprintf(stderr, "   after two disconnects, a request took %.0f ms\n", srv_now_ms() - t0);
    CHECK(srv_metric(s.port, "edgellm_requests_cancelled_total", NULL) == 2);
    char *log = srv_log(&s);
    const char *l1 = strstr(log, "POST /v1/completions 200: prompt"), *l2 = strstr(log, "POST /v1/completions 499");
    CHECK(l1 != NULL && l2 != NULL);
    /* the cancelled ones stopped well before the context's end */
    for (const char *p = log; (p = strstr(p, "generated")); p++) {
        const char *q = p;
        while (q > log && q[-1] != ' ') q--;
        while (q > log && q[-1] == ' ') q--;
        while (q > log && q[-1] != ' ') q--;
        CHECK(atoi(q) < 2000);
    }
    free(log);

    /* queue: one running, one waiting, the third is refused */
    int a = open_stream(s.port, lng);
    CHECK(wait_first_chunk(a));
    int b = open_stream(s.port, lng);
    srv_sleep_ms(200);
    srv_resp r;
    CHECK(srv_post(s.port, "/v1/completions", "{\"prompt\":\"Hi\",\"max_tokens\":4}", &r));
    CHECK_EQ(r.status, 429);
    CHECK(r.head && strcasestr(r.head, "Retry-After: 1"));
    CHECK(r.body && strstr(r.body, "rate_limit_error"));
    srv_resp_free(&r);
    close(a);
    close(b);
    srv_sleep_ms(300);
    CHECK(srv_metric(s.port, "edgellm_requests_total{status=\"429\"}", NULL) == 1);
    CHECK_EQ(srv_stop(&s, 30000), 0);

    /* timeout: a generation past --timeout ends with what it has */
    const char *args2[] = {"-c", "2048", "-np", "1", "--timeout", "0.2", NULL};
    if (!srv_start(&s, model, args2)) { CHECK(0); srv_stop(&s, 5000); return; }
    o = post_json(s.port, "/v1/completions", "{\"prompt\":\"Once upon a time\",\"max_tokens\":-1,\"temperature\":0}", &st);
    CHECK_EQ(st, 200);
    CHECK(o && !strcmp(srv_json_str(o, "choices.0.finish_reason"), "length"));
    CHECK(o && cJSON_IsTrue(cJSON_GetObjectItem(o, "timed_out")));
    CHECK(o && srv_json_num(o, "usage.completion_tokens") < 2000);
    cJSON_Delete(o);
    CHECK(srv_metric(s.port, "edgellm_requests_timed_out_total", NULL) == 1);
    CHECK_EQ(srv_stop(&s, 30000), 0);
}

/* The key: every endpoint but /health needs it (Bearer or X-Api-Key); a wrong one of any
 * length, none, or another scheme is 401. */
static void test_server_api_key(void)
{
    NEED_MODEL(model);
    char keyfile[400];
    snprintf(keyfile, sizeof keyfile, "%s/key.txt", test_tmpdir());
    write_file(keyfile, "s3cret-KEY\n", 11);
    srv_proc s;
    const char *args[] = {"--api-key-file", keyfile, NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    srv_resp r;
    CHECK(srv_http(s.port, "GET", "/health", NULL, NULL, &r) && r.status == 200);
    srv_resp_free(&r);
    static const char *bad[] = {NULL, "Authorization: Bearer s3cret-KE\r\n", "Authorization: Bearer s3cret-KEYY\r\n",
                                "Authorization: Bearer S3CRET-KEY\r\n", "Authorization: Basic s3cret-KEY\r\n",
                                "Authorization: Bearer \r\n", "X-Api-Key: nope\r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(srv_http(s.port, "GET", "/v1/models", NULL, bad[i], &r) && r.status == 401);
        CHECK(r.body && strstr(r.body, "authentication_error"));
        srv_resp_free(&r);
        CHECK(srv_http(s.port, "POST", "/v1/completions", "{\"prompt\":\"a\",\"max_tokens\":1}", bad[i], &r));
        CHECK_EQ(r.status, 401);
        srv_resp_free(&r);
    }
    CHECK(srv_http(s.port, "GET", "/metrics", NULL, NULL, &r) && r.status == 401);
    srv_resp_free(&r);
    CHECK(srv_http(s.port, "GET", "/v1/models", NULL, "Authorization: Bearer s3cret-KEY\r\n", &r) && r.status == 200);
    srv_resp_free(&r);
    CHECK(srv_http(s.port, "GET", "/v1/models", NULL, "X-Api-Key: s3cret-KEY\r\n", &r) && r.status == 200);
    srv_resp_free(&r);
    CHECK(srv_http(s.port, "POST", "/v1/completions", "{\"prompt\":\"a\",\"max_tokens\":2}",
                   "Authorization: Bearer s3cret-KEY\r\n", &r) && r.status == 200);
    srv_resp_free(&r);
    CHECK(srv_metric(s.port, "edgellm_requests_total{status=\"401\"}", "Authorization: Bearer s3cret-KEY\r\n") == 15);
    char *log = srv_log(&s);
    CHECK(strstr(log, "API key required") != NULL);
    CHECK(strstr(log, "s3cret") == NULL);      /* never printed */
    free(log);
    CHECK_EQ(srv_stop(&s, 30000), 0);
}

/* SIGTERM: a running stream finishes (drain), new connections are refused, exit 0. */
static void test_server_drain(void)
{
    NEED_MODEL(model);
    srv_proc s;
    const char *args[] = {"-c", "2048", "-np", "1", NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    int fd = open_stream(s.port, "{\"prompt\":\"Once upon a time\",\"max_tokens\":1500,\"stream\":true,\"temperature\":0}");
    CHECK(wait_first_chunk(fd));
    kill(s.pid, SIGTERM);
    char *raw = NULL;
    const long n = srv_read_all(fd, &raw, 30000);
    close(fd);
    CHECK(n > 0 && strstr(raw, "data: [DONE]") && strstr(raw, "\"finish_reason\":\"length\""));
    free(raw);
    srv_sleep_ms(100);
    int st = 0;
    const double t0 = srv_now_ms();
    while (waitpid(s.pid, &st, WNOHANG) == 0 && srv_now_ms() - t0 < 30000) srv_sleep_ms(10);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int i = 0; i < SRV_MAX_PROCS; i++)
        if (srv_pids[i] == s.pid) srv_pids[i] = 0;
    char *log = srv_log(&s);
    CHECK(strstr(log, "stopping: 1 request in flight") != NULL && strstr(log, "stopped") != NULL);
    free(log);
}

/* The temperature of a scripted thermal zone under root (written whole, then renamed in). */
static void gov_set_temp(const char *root, double c)
{
    char dir[512], path[600], tmp[600], text[32];
    snprintf(dir, sizeof dir, "%s/class/thermal/thermal_zone0", root);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0) return;
    snprintf(path, sizeof path, "%s/type", dir);
    write_file(path, "cpu-thermal\n", 12);
    snprintf(tmp, sizeof tmp, "%s/temp.new", dir);
    snprintf(path, sizeof path, "%s/temp", dir);
    const int n = snprintf(text, sizeof text, "%d\n", (int)(c * 1000));
    write_file(tmp, text, (size_t)n);
    rename(tmp, path);
}

/* Wait (at most 5 s) until /metrics shows metric == v. */
static bool gov_wait_metric(int port, const char *metric, double v)
{
    for (double t0 = srv_now_ms(); srv_now_ms() - t0 < 5000; srv_sleep_ms(20))
        if (srv_metric(port, metric, NULL) == v) return true;
    return false;
}

/* The governor in serve, on a scripted sensor tree: levels in /metrics and the log, the
 * thread count re-made at the next request, the tok/s cap over HTTP, 503 + Retry-After
 * while paused, a running stream held while paused and resumed after. */
static void test_server_governor(void)
{
    NEED_MODEL(model);
    char root[400], pol[400];
    snprintf(root, sizeof root, "%s/gov_sysfs", test_tmpdir());
    snprintf(pol, sizeof pol, "%s/gov_policy.json", test_tmpdir());
    gov_set_temp(root, 30);
    const char *js = "{\"enter_c\": [40, 50, 60], \"hysteresis_c\": 2, \"threads\": [0, 1, 1], "
                     "\"max_tok_s\": [20, 20, 20], \"pause_from\": \"critical\", \"poll_s\": 0.05, \"pause_max_s\": 60}";
    CHECK_EQ(write_file(pol, js, strlen(js)), 0);
    srv_proc s;
    const char *args[] = {"-c", "512", "-np", "2", "-t", "2", "--sysfs-root", root, "--gov-policy", pol, NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    CHECK(gov_wait_metric(s.port, "edgellm_governor_level", 0));
    CHECK(srv_metric(s.port, "edgellm_governor_threads", NULL) == 2);
    CHECK(srv_metric(s.port, "edgellm_governor_paused", NULL) == 0);
    int st = 0;
    cJSON *o = post_json(s.port, "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":4,\"temperature\":0}", &st);
    CHECK_EQ(st, 200);
    cJSON_Delete(o);
    /* hot: one thread from the next request on, at most 20 tok/s over all slots */
    gov_set_temp(root, 55);
    CHECK(gov_wait_metric(s.port, "edgellm_governor_level", 2));
    const double t0 = srv_now_ms();
    o = post_json(s.port, "/v1/completions",
                  "{\"prompt\":\"Once upon a time\",\"max_tokens\":30,\"temperature\":0}", &st);
    const double ms = srv_now_ms() - t0;
    CHECK_EQ(st, 200);
    const int n_gen = o ? (int)srv_json_num(o, "usage.completion_tokens") : 0;
    cJSON_Delete(o);
    fprintf(stderr, "   hot, 20 tok/s cap: %d tokens in %.0f ms\n", n_gen, ms);
    CHECK(n_gen >= 10 && ms >= (n_gen - 1) * 1000.0 / 20 * 0.95);
    CHECK(srv_metric(s.port, "edgellm_governor_threads", NULL) == 1);
    CHECK(srv_metric(s.port, "edgellm_governor_contexts_remade_total", NULL) == 1);
    CHECK(srv_metric(s.port, "edgellm_governor_held_seconds_total", NULL) > 0);
    /* critical: new requests get 503 with Retry-After */
    gov_set_temp(root, 65);
    CHECK(gov_wait_metric(s.port, "edgellm_governor_paused", 1));
    srv_resp r;
    CHECK(srv_post(s.port, "/v1/completions", "{\"prompt\":\"Once\",\"max_tokens\":4}", &r) && r.status == 503);
    CHECK(r.head && strstr(r.head, "Retry-After: 5") && r.body && strstr(r.body, "governor pauses new requests"));
    srv_resp_free(&r);
    CHECK(srv_metric(s.port, "edgellm_governor_refused_total", NULL) == 1);
    CHECK(srv_metric(s.port, "edgellm_governor_level", NULL) == 3);
    /* a running stream is held while paused and ends once the level drops */
    gov_set_temp(root, 45);
    CHECK(gov_wait_metric(s.port, "edgellm_governor_level", 1));
    int fd = open_stream(s.port, "{\"prompt\":\"Once upon a time\",\"max_tokens\":60,\"stream\":true,\"temperature\":0}");
    CHECK(wait_first_chunk(fd));
    gov_set_temp(root, 65);
    CHECK(gov_wait_metric(s.port, "edgellm_governor_paused", 1));
    srv_sleep_ms(300);   /* a step in flight ends */
    const double g1 = srv_metric(s.port, "edgellm_generated_tokens_total", NULL);
    srv_sleep_ms(1000);
    const double g2 = srv_metric(s.port, "edgellm_generated_tokens_total", NULL);
    fprintf(stderr, "   paused: %.0f -> %.0f tokens over 1 s\n", g1, g2);
    CHECK(g2 == g1);
    gov_set_temp(root, 30);
    char raw[1 << 16];   /* the rest of the stream, until its [DONE] (the connection stays open) */
    size_t n = 0;
    for (double t1 = srv_now_ms(); srv_now_ms() - t1 < 30000 && n + 1 < sizeof raw;) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 500) <= 0) continue;
        const ssize_t k = recv(fd, raw + n, sizeof raw - 1 - n, 0);
        if (k <= 0) break;
        n += (size_t)k;
        raw[n] = 0;
        if (strstr(raw, "data: [DONE]")) break;
    }
    raw[n] = 0;
    close(fd);
    CHECK(strstr(raw, "data: [DONE]") && strstr(raw, "\"finish_reason\":\"length\""));
    CHECK(gov_wait_metric(s.port, "edgellm_governor_level", 0));
    CHECK(srv_metric(s.port, "edgellm_governor_level_changes_total", NULL) >= 5);
    srv_stop(&s, 10000);
    char *log = srv_log(&s);
    CHECK(strstr(log, "edgellm serve: governor: nominal -> hot") && strstr(log, "hot -> critical") &&
          strstr(log, "-> nominal"));
    free(log);
}

/* --draft / --lookup (one slot): greedy text as `edgellm run`'s, /metrics counts the drafts
 * (a fixed draft length: the adaptive one follows timings, which load changes); more slots
 * are refused. */
static void test_server_speculative(void)
{
    NEED_MODEL(model);
    srv_proc s;
    const char *args[] = {"-c", "512", "--draft", "self:q8_0", "--lookup", "2", "--draft-fixed", "--draft-max", "4", NULL};
    if (!srv_start(&s, model, args)) { CHECK(0); srv_stop(&s, 5000); return; }
    char *want = run_greedy(model, "Once upon a time", 60);
    int st = 0;
    cJSON *o = post_json(s.port, "/v1/completions",
                         "{\"prompt\":\"Once upon a time\",\"max_tokens\":60,\"temperature\":0}", &st);
    CHECK_EQ(st, 200);
    const char *got = o ? srv_json_str(o, "choices.0.text") : NULL;
    CHECK(want && got && !strcmp(want, got));
    cJSON_Delete(o);
    free(want);
    const double drafted = srv_metric(s.port, "edgellm_spec_drafted_tokens_total", NULL);
    const double accepted = srv_metric(s.port, "edgellm_spec_accepted_tokens_total", NULL);
    CHECK(drafted > 0 && accepted > 0 && accepted <= drafted);
    CHECK(fabs(srv_metric(s.port, "edgellm_spec_acceptance_ratio", NULL) - accepted / drafted) < 1e-3);
    CHECK(srv_metric(s.port, "edgellm_spec_accepted_per_draft", NULL) > 0);
    const double ppt = srv_metric(s.port, "edgellm_spec_target_passes_per_token", NULL);
    CHECK(ppt > 0 && ppt < 1);
    CHECK(srv_metric(s.port, "edgellm_spec_speedup", NULL) >= 0);   /* 0 when no plain pass ran */
    CHECK(srv_metric(s.port, "edgellm_generated_tokens_total", NULL) == 60);
    CHECK_EQ(srv_stop(&s, 30000), 0);
    const char *two[] = {"--lookup", "2", "-np", "2", NULL};
    CHECK(!srv_start(&s, model, two));
    srv_stop(&s, 5000);
    const char *gov[] = {"--lookup", "2", "--governor", NULL};   /* the governor steps batches, not these */
    CHECK(!srv_start(&s, model, gov));
    srv_stop(&s, 5000);
}

int main(void)
{
    RUN(test_server_request_parse);
    RUN(test_server_find_stop);
    RUN(test_server_endpoints);
    RUN(test_server_batching);
    RUN(test_server_prefix_and_truncation);
    RUN(test_server_cancel_queue_timeout);
    RUN(test_server_api_key);
    RUN(test_server_drain);
    RUN(test_server_governor);
    RUN(test_server_speculative);
    return test_summary();
}
#else
#include <stdio.h>
int main(void)
{
    fprintf(stderr, "SKIP: edgellm serve needs libmicrohttpd and cJSON (apt-get install libmicrohttpd-dev libcjson-dev)\n");
    return 77;
}
#endif
