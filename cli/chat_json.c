/*
 * chat_json.c — conversations as JSON for `edgellm template` and `edgellm chat` (/save,
 * /load): the OpenAI chat `messages` array, [{"role": "user", "content": "..."}, ...].
 * "content" may be a string, null (empty) or an array of parts of which the {"type": "text",
 * "text": "..."} ones are joined (the OpenAI content-parts form); other keys are ignored.
 * Input is untrusted: every problem is "FILE: message N: what" and nothing is kept.
 */
#include "chat_json.h"
#include "commands.h"
#include <stdlib.h>
#include <string.h>
#ifdef EDGELLM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

void cli_chat_free(cli_chat *c)
{
    for (int i = 0; c && i < c->n; i++) {
        free((char *)c->msgs[i].role);
        free((char *)c->msgs[i].content);
    }
    if (c) free(c->msgs);
    if (c) memset(c, 0, sizeof *c);
}

bool cli_chat_push(cli_chat *c, const char *role, const char *content)
{
    if (c->n == c->cap) {
        const int cap = c->cap ? 2 * c->cap : 16;
        edgellm_chat_message *m = realloc(c->msgs, (size_t)cap * sizeof *m);
        if (!m) return false;
        c->msgs = m;
        c->cap = cap;
    }
    char *r = strdup(role), *t = strdup(content);
    if (!r || !t) { free(r); free(t); return false; }
    c->msgs[c->n].role = r;
    c->msgs[c->n++].content = t;
    return true;
}

void cli_chat_remove(cli_chat *c, int from, int n)
{
    for (int i = from; i < from + n; i++) {
        free((char *)c->msgs[i].role);
        free((char *)c->msgs[i].content);
    }
    memmove(c->msgs + from, c->msgs + from + n, (size_t)(c->n - from - n) * sizeof *c->msgs);
    c->n -= n;
}

#ifdef EDGELLM_HAVE_CJSON
/* The text of a "content" value into a fresh string, or NULL with msg set. */
static char *content_text(const cJSON *v, char *msg, size_t msg_size)
{
    if (!v || cJSON_IsNull(v)) return strdup("");
    if (cJSON_IsString(v)) return strdup(v->valuestring);
    if (!cJSON_IsArray(v)) {
        snprintf(msg, msg_size, "\"content\" must be a string, null or an array of parts");
        return NULL;
    }
    size_t len = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, v) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(part, "type"), *tx = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "text")) {
            if (!cJSON_IsString(tx)) {
                snprintf(msg, msg_size, "a text part's \"text\" must be a string");
                return NULL;
            }
            len += strlen(tx->valuestring);
        }
    }
    char *out = malloc(len + 1), *p = out;
    if (!out) return NULL;
    cJSON_ArrayForEach(part, v) {
        const cJSON *ty = cJSON_GetObjectItemCaseSensitive(part, "type"), *tx = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (cJSON_IsString(ty) && !strcmp(ty->valuestring, "text")) {
            const size_t n = strlen(tx->valuestring);
            memcpy(p, tx->valuestring, n);
            p += n;
        }
    }
    *p = 0;
    return out;
}
#endif

bool cli_chat_parse(const char *json, size_t len, const char *name, cli_chat *out, edgellm_error *err)
{
    memset(out, 0, sizeof *out);
#ifndef EDGELLM_HAVE_CJSON
    (void)json, (void)len;
    snprintf(err->msg, sizeof err->msg, "%s: reading conversations needs cJSON (libcjson-dev), absent at build time", name);
    return false;
#else
    if (strlen(json) != len) {
        snprintf(err->msg, sizeof err->msg, "%s: contains a NUL byte, not JSON text", name);
        return false;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    if (!root) {
        snprintf(err->msg, sizeof err->msg, "%s: not valid JSON (near byte %ld)", name,
                 end ? (long)(end - json) : 0L);
        return false;
    }
    bool ok = false;
    const cJSON *arr = root;
    if (cJSON_IsObject(root)) arr = cJSON_GetObjectItemCaseSensitive(root, "messages");   /* a whole request */
    if (!cJSON_IsArray(arr)) {
        snprintf(err->msg, sizeof err->msg, "%s: expected an array of messages ({\"role\": ..., \"content\": ...})", name);
        goto done;
    }
    int i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, arr) {
        char why[160] = "";
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsObject(m)) snprintf(why, sizeof why, "not an object");
        else if (!cJSON_IsString(role) || !role->valuestring[0]) snprintf(why, sizeof why, "\"role\" must be a non-empty string");
        char *content = why[0] ? NULL : content_text(cJSON_GetObjectItemCaseSensitive(m, "content"), why, sizeof why);
        if (!content || !cli_chat_push(out, role->valuestring, content)) {
            snprintf(err->msg, sizeof err->msg, "%s: message %d: %s", name, i, why[0] ? why : "out of memory");
            free(content);
            goto done;
        }
        free(content);
        i++;
    }
    if (out->n == 0) {
        snprintf(err->msg, sizeof err->msg, "%s: the conversation has no messages", name);
        goto done;
    }
    ok = true;
done:
    cJSON_Delete(root);
    if (!ok) cli_chat_free(out);
    return ok;
#endif
}

bool cli_chat_read(const char *path, cli_chat *out, edgellm_error *err)
{
    size_t len = 0;
    char *text = cli_read_text(path, &len, err);
    if (!text) return false;
    const bool ok = cli_chat_parse(text, len, path, out, err);
    free(text);
    return ok;
}

void cli_chat_write(FILE *f, const cli_chat *c)
{
    fputs("[\n", f);
    for (int i = 0; i < c->n; i++) {
        fputs("  {\"role\": ", f);
        cli_json_str(f, c->msgs[i].role);
        fputs(", \"content\": ", f);
        cli_json_str(f, c->msgs[i].content);
        fputs(i + 1 < c->n ? "},\n" : "}\n", f);
    }
    fputs("]\n", f);
}
