/*
 * fuzz_server_request.c — libFuzzer target: the request reader of `edgellm serve`
 * (src/tools/server_request.c) on arbitrary bodies, and the JSON it answers with.
 *
 * Input: byte 0 picks the endpoint (bit 0: chat or completion); the rest is the body.
 * Oracles:
 *   - a refusal is an HTTP 400 (500 only for memory) with a type and a message, and its
 *     error object is valid JSON;
 *   - an accepted request holds well-formed UTF-8 only (roles, contents, prompt, stop
 *     strings, model), 1..EDGELLM_SRV_MAX_MESSAGES messages, at most EDGELLM_SRV_MAX_STOP
 *     non-empty stop strings, token ids >= 0, n_predict >= -1, and sampling parameters the
 *     sampler accepts (edgellm_sampler_new);
 *   - the answer built from it (final and chunk objects, with a content or prompt as the
 *     generated text) is valid JSON that gives that text back;
 *   - stop strings over that text: a match is the leftmost occurrence, the safe length
 *     never passes it nor the text's end.
 */
#include "fuzz_util.h"
#include "tools/server.h"
#include <cjson/cJSON.h>

static bool utf8_ok(const char *s)
{
    const size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        const int k = edgellm_utf8_char_len(s + i, n - i);
        if (k <= 0) return false;
        i += (size_t)k;
    }
    return true;
}

/* text (no NUL bytes: cJSON strings end at one) comes back from JSON o at path */
static void check_roundtrip(char *json, const char *text, bool chat, bool chunk)
{
    FUZZ_ASSERT(json != NULL, "response JSON not built");
    cJSON *o = cJSON_Parse(json);
    FUZZ_ASSERT(o != NULL, "response is not valid JSON: %.200s", json);
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(o, "choices"), 0);
    const cJSON *v = chat ? cJSON_GetObjectItem(cJSON_GetObjectItem(c, chunk ? "delta" : "message"), "content")
                          : cJSON_GetObjectItem(c, "text");
    const char *got = cJSON_GetStringValue(v);
    FUZZ_ASSERT(got && !strcmp(got, text), "text does not come back: '%.100s' vs '%.100s'", got ? got : "(null)", text);
    cJSON_Delete(o);
    free(json);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const edgellm_srv_kind kind = data[0] & 1 ? EDGELLM_SRV_CHAT : EDGELLM_SRV_COMPLETION;
    const char *body = (const char *)data + 1;
    const size_t len = size - 1;
    edgellm_srv_request rq;
    edgellm_srv_error e;
    if (!edgellm_srv_request_parse(body, len, kind, &rq, &e)) {
        FUZZ_ASSERT(e.http == 400 || e.http == 500, "status %d", e.http);
        FUZZ_ASSERT(e.type && e.msg[0], "refusal without a type or message");
        char *js = edgellm_srv_error_json(&e);
        cJSON *o = js ? cJSON_Parse(js) : NULL;
        FUZZ_ASSERT(o != NULL, "error object is not valid JSON: %s", js ? js : "(null)");
        cJSON_Delete(o);
        free(js);
        return 0;
    }
    FUZZ_ASSERT(rq.n_predict >= -1, "n_predict %d", rq.n_predict);
    FUZZ_ASSERT(rq.n_stop >= 0 && rq.n_stop <= EDGELLM_SRV_MAX_STOP, "n_stop %d", rq.n_stop);
    for (int i = 0; i < rq.n_stop; i++) FUZZ_ASSERT(rq.stop[i][0] && utf8_ok(rq.stop[i]), "stop string %d", i);
    FUZZ_ASSERT(!rq.model || utf8_ok(rq.model), "model not UTF-8");
    edgellm_sampler *smp = NULL;
    edgellm_error err = {0};
    FUZZ_ASSERT(edgellm_sampler_new(&rq.sampling, 16, &smp, &err) == EDGELLM_OK, "sampler refuses: %s", err.msg);
    edgellm_sampler_free(smp);
    const char *text = "";
    if (kind == EDGELLM_SRV_CHAT) {
        FUZZ_ASSERT(rq.n_msgs >= 1 && rq.n_msgs <= EDGELLM_SRV_MAX_MESSAGES, "n_msgs %d", rq.n_msgs);
        for (int i = 0; i < rq.n_msgs; i++)
            FUZZ_ASSERT(rq.msgs[i].role[0] && utf8_ok(rq.msgs[i].role) && utf8_ok(rq.msgs[i].content), "message %d", i);
        text = rq.msgs[rq.n_msgs - 1].content;
    } else if (rq.prompt) {
        FUZZ_ASSERT(utf8_ok(rq.prompt), "prompt not UTF-8");
        text = rq.prompt;
    } else {
        FUZZ_ASSERT(rq.n_prompt_tokens > 0 && rq.prompt_tokens, "no prompt");
        for (int i = 0; i < rq.n_prompt_tokens; i++) FUZZ_ASSERT(rq.prompt_tokens[i] >= 0, "token id %d", i);
    }
    /* the answer carries the text back */
    edgellm_srv_info in = {.id = "cmpl-fuzz", .model = rq.model ? rq.model : "m", .created = 1, .n_prompt = 3,
                           .n_generated = 2, .n_dropped = 1};
    const bool chat = kind == EDGELLM_SRV_CHAT;
    check_roundtrip(edgellm_srv_final_json(kind, &in, text, strlen(text), "stop"), text, chat, false);
    check_roundtrip(edgellm_srv_chunk_json(kind, &in, text, strlen(text), 1, NULL, 0), text, chat, true);
    /* stop strings over it */
    size_t safe = 0;
    const size_t tl = strlen(text);
    const long at = edgellm_srv_find_stop(text, tl, rq.stop, rq.n_stop, &safe);
    FUZZ_ASSERT(safe <= tl, "safe %zu > %zu", safe, tl);
    if (at >= 0) {
        FUZZ_ASSERT((size_t)at == safe, "safe %zu, match at %ld", safe, at);
        for (int i = 0; i < rq.n_stop; i++) {
            const char *hit = memmem(text, tl, rq.stop[i], strlen(rq.stop[i]));
            FUZZ_ASSERT(!hit || hit - text >= at, "an earlier match of stop %d", i);
        }
    } else {
        for (int i = 0; i < rq.n_stop; i++) FUZZ_ASSERT(!memmem(text, tl, rq.stop[i], strlen(rq.stop[i])), "missed");
    }
    edgellm_srv_request_free(&rq);
    return 0;
}
