/*
 * run_batch.c — `edgellm run --batch-file PROMPTS.jsonl [-b N] [-o OUT.jsonl]`: offline batch
 * generation. Up to N prompts decode together, one token each per forward pass, and a
 * finished one is replaced by the next prompt at once (continuous batching,
 * edgellm_generate_batch_each); each prompt gives the tokens it gives alone with the same
 * seed and options.
 *
 * Input (JSON Lines, UTF-8; untrusted, parsed with cJSON): one object per line,
 *   {"prompt": "Once upon a time", "n_predict": 64, "id": "a1"}
 * "prompt" (a string) is required; "n_predict" or its alias "max_tokens" (an integer in
 * [0, 2147483647]; default: run's -n) and "id" (any JSON value, echoed back as it is) are
 * optional; other keys are ignored; blank lines are skipped; a string may not hold \u0000. Every line is checked, and
 * every prompt tokenized and held against n_ctx, before any compute: a bad line is reported
 * as "FILE:LINE: problem" and nothing is written.
 *
 * Output: one JSON object per prompt, in input order, once all are done (written through
 * edgellm_output_open: a file appears whole or not at all):
 *   {"index": 0, "id": "a1", "prompt": "...", "text": "...", "n_prompt": 6, "n_generated": 64,
 *    "stop": "length", "ttft_ms": 41.2, "tok_s": 18.5}
 * index: the prompt's place among the file's prompts (0-based); id only when the line has
 * one; n_prompt: prompt tokens with BOS; stop: eos, length (n_predict reached), ctx_full,
 * callback or abort; ttft_ms: from the prompt taking its sequence to its first token's
 * logits; tok_s: its generated tokens / the time its sequence spent decoding (shared with
 * the other sequences of each pass).
 * stderr: the seed, a progress line on a terminal, and a summary (prompts, generated
 * tokens, aggregate tok/s = all generated tokens / wall time of the generation, wall time).
 */
#include "run_batch.h"
#include "commands.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef EDGELLM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

#define CMD "run"

typedef struct {
    char *prompt;
    char *id_json;       /* the "id" value as JSON text, or NULL                 */
    long line;
    int n_predict;
    int n_prompt;        /* tokens, with BOS                                     */
    char *text;          /* generated                                            */
    size_t len, cap;
} batch_item;

typedef struct {
    batch_item *items;
    int n;
} batch_set;

static void set_free(batch_set *s)
{
    for (int i = 0; i < s->n; i++) {
        free(s->items[i].prompt);
        free(s->items[i].id_json);
        free(s->items[i].text);
    }
    free(s->items);
    s->items = NULL;
    s->n = 0;
}

static const char *stop_key(edgellm_stop_reason r)
{
    switch (r) {
    case EDGELLM_STOP_EOS: return "eos";
    case EDGELLM_STOP_N_PREDICT: return "length";
    case EDGELLM_STOP_CTX_FULL: return "ctx_full";
    case EDGELLM_STOP_CALLBACK: return "callback";
    case EDGELLM_STOP_ABORT: return "abort";
    }
    return "unknown";
}

#ifdef EDGELLM_HAVE_CJSON
/* Whether JSON text holds the escape \u0000 (a NUL inside a string, which a C string would
 * silently cut short): a backslash-u-0000 preceded by an even number of backslashes. */
static bool has_escaped_nul(const char *s)
{
    for (const char *p = strstr(s, "\\u0000"); p; p = strstr(p + 1, "\\u0000")) {
        int n = 0;
        for (const char *q = p; q > s && q[-1] == '\\'; q--) n++;
        if (n % 2 == 0) return true;
    }
    return false;
}

/* n_predict / max_tokens of a line: 0 and *out set, or 1 with msg written. */
static int line_n_predict(const cJSON *o, int dflt, int *out, char *msg, size_t size)
{
    static const char *const keys[] = {"n_predict", "max_tokens"};
    const cJSON *v[2];
    *out = dflt;
    for (int k = 0; k < 2; k++) {
        v[k] = cJSON_GetObjectItemCaseSensitive(o, keys[k]);
        if (!v[k]) continue;
        const double d = cJSON_IsNumber(v[k]) ? v[k]->valuedouble : NAN;
        if (!(d >= 0 && d <= (double)INT_MAX && d == floor(d))) {
            snprintf(msg, size, "\"%s\" must be an integer in [0, %d]", keys[k], INT_MAX);
            return 1;
        }
        *out = (int)d;
    }
    if (v[0] && v[1] && v[0]->valuedouble != v[1]->valuedouble) {
        snprintf(msg, size, "\"n_predict\" and \"max_tokens\" disagree (%.0f vs %.0f): give one", v[0]->valuedouble,
                 v[1]->valuedouble);
        return 1;
    }
    return 0;
}
#endif

/* Parse the file into s; 0, or 1 after printing the error. */
static int read_batch_file(const char *path, int n_predict, batch_set *s)
{
    memset(s, 0, sizeof *s);
#ifndef EDGELLM_HAVE_CJSON
    (void)n_predict;
    fprintf(stderr, "edgellm " CMD ": %s: this build cannot read JSON (install libcjson-dev and reconfigure)\n", path);
    return 1;
#else
    edgellm_error err = {0};
    size_t text_len = 0;
    char *text = cli_read_text(path, &text_len, &err);   /* bounded: CLI_MAX_TEXT_BYTES */
    if (!text) { cli_print_error(CMD, &err); return 1; }
    int cap = 0, rc = 0;
    long lineno = 0;
    char msg[256];
    for (char *next = text; rc == 0 && next < text + text_len;) {
        char *line = next, *nl = memchr(line, '\n', (size_t)(text + text_len - line));
        const size_t len = nl ? (size_t)(nl - line) : (size_t)(text + text_len - line);
        next = line + len + 1;
        line[len] = 0;
        lineno++;
        msg[0] = 0;
        if (len != strlen(line)) {
            snprintf(msg, sizeof msg, "contains a NUL byte");
        } else {
            const char *p = line;
            while (*p == ' ' || *p == '\t' || *p == '\r') p++;
            if (!*p) continue;   /* blank line */
            const char *end = NULL;
            cJSON *o = has_escaped_nul(line) ? NULL : cJSON_ParseWithOpts(line, &end, 1);
            if (!o && has_escaped_nul(line)) {
                snprintf(msg, sizeof msg, "a string holds \\u0000 (a NUL character)");
            } else if (!o) {
                const char *at = cJSON_GetErrorPtr();
                snprintf(msg, sizeof msg, "not valid JSON (column %ld)",
                         at && at >= line && at <= line + len ? (long)(at - line) + 1 : 0L);
            } else if (!cJSON_IsObject(o)) {
                snprintf(msg, sizeof msg, "a line must be a JSON object with a \"prompt\" string");
            } else {
                const cJSON *pr = cJSON_GetObjectItemCaseSensitive(o, "prompt");
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
                int np = 0;
                if (!pr) snprintf(msg, sizeof msg, "no \"prompt\" (a line is {\"prompt\": \"...\"})");
                else if (!cJSON_IsString(pr) || !pr->valuestring) snprintf(msg, sizeof msg, "\"prompt\" must be a string");
                else if (line_n_predict(o, n_predict, &np, msg, sizeof msg) == 0) {
                    if (s->n == cap) {
                        const int nc = cap ? 2 * cap : 64;
                        batch_item *ni = realloc(s->items, (size_t)nc * sizeof *ni);
                        if (!ni) snprintf(msg, sizeof msg, "out of memory");
                        else s->items = ni, cap = nc;
                    }
                    if (!msg[0]) {
                        batch_item *it = &s->items[s->n++];
                        memset(it, 0, sizeof *it);
                        it->line = lineno;
                        it->n_predict = np;
                        it->prompt = strdup(pr->valuestring);
                        it->id_json = id ? cJSON_PrintUnformatted(id) : NULL;
                        if (!it->prompt || (id && !it->id_json)) snprintf(msg, sizeof msg, "out of memory");
                    }
                }
            }
            cJSON_Delete(o);
        }
        if (msg[0]) {
            fprintf(stderr, "edgellm " CMD ": %s:%ld: %s\n", path, lineno, msg);
            rc = 1;
        }
    }
    free(text);
    if (rc == 0 && s->n == 0) {
        fprintf(stderr, "edgellm " CMD ": %s: no prompts (one JSON object per line: {\"prompt\": \"...\"})\n", path);
        rc = 1;
    }
    if (rc) set_free(s);
    return rc;
#endif
}

/* ------------------------------------------------------------- generation ---- */

typedef struct {
    batch_set *s;
    int n_seq, max_started, done_lower;
    long long generated;
    double t0;
    bool oom, bar;
    cli_bar b;
} collector;

static int on_piece(int index, int32_t token, const char *piece, size_t len, void *user)
{
    (void)token;
    collector *c = user;
    batch_item *it = &c->s->items[index];
    if (it->len + len + 1 > it->cap) {
        size_t nc = it->cap ? it->cap : 256;
        while (nc < it->len + len + 1) nc *= 2;
        char *t = realloc(it->text, nc);
        if (!t) { c->oom = true; return 1; }
        it->text = t, it->cap = nc;
    }
    memcpy(it->text + it->len, piece, len);
    it->len += len;
    it->text[it->len] = 0;
    if (token >= 0) c->generated++;
    /* prompts take sequences in order: once prompt k runs, at most n_seq of prompts
     * 0..k run, so at least k - n_seq + 1 of them are done */
    if (index > c->max_started) {
        c->max_started = index;
        c->done_lower = CLI_MAX(c->done_lower, index - c->n_seq + 1);
    }
    if (c->bar) {
        char what[64];
        const double s = (cli_time_ms() - c->t0) / 1000.0;
        snprintf(what, sizeof what, "%d/%d prompts, %.1f tok/s", c->done_lower, c->s->n,
                 s > 0 ? (double)c->generated / s : 0.0);
        cli_draw_bar(&c->b, CLI_MIN(0.999, (double)c->done_lower / c->s->n), what);
    }
    return 0;
}

/* One output line. */
static void write_item(FILE *f, int index, const batch_item *it, const edgellm_generate_stats *st)
{
    fprintf(f, "{\"index\": %d, ", index);
    if (it->id_json) fprintf(f, "\"id\": %s, ", it->id_json);
    fputs("\"prompt\": ", f);
    cli_json_str(f, it->prompt);
    fputs(", \"text\": ", f);
    cli_json_str(f, it->text ? it->text : "");
    const double tok_s = st->decode_ms > 0 ? st->n_generated * 1000.0 / st->decode_ms : 0.0;
    fprintf(f, ", \"n_prompt\": %d, \"n_generated\": %d, \"stop\": \"%s\", \"ttft_ms\": %.3f, \"tok_s\": %.3f}\n",
            st->n_prompt, st->n_generated, stop_key(st->stop), st->prefill_ms, tok_s);
}

int cli_run_batch(const cli_run_batch_opts *o)
{
    const char *out_path = o->out_path && *o->out_path ? o->out_path : "-";
    if (strcmp(out_path, "-")) {   /* an output that cannot be written: say so before the work */
        const int e = edgellm_output_check(out_path);
        if (e) { fprintf(stderr, "edgellm " CMD ": %s: cannot write it: %s\n", out_path, strerror(e)); return 1; }
        if (edgellm_path_same_file(out_path, o->batch_file)) {
            fprintf(stderr, "edgellm " CMD ": -o %s is the batch file itself\n", out_path);
            return 1;
        }
    }
    edgellm_generate_params gp = o->gp;
    batch_set set;
    if (read_batch_file(o->batch_file, gp.n_predict, &set)) return 1;

    int rc = 1;
    edgellm_error err = {0};
    edgellm_model *model = NULL;
    edgellm_ctx *ctx = NULL;
    edgellm_generate_params *params = NULL;
    const edgellm_generate_params **pp = NULL;
    const char **prompts = NULL;
    edgellm_generate_stats *stats = NULL;
    int32_t *ids = NULL;
    const double t_load = cli_time_ms();
    if (edgellm_model_load(o->model_path, &o->mp, &model, &err) != EDGELLM_OK) { cli_print_error(CMD, &err); goto done; }
    const double load_ms = cli_time_ms() - t_load;
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(model, &err);
    if (!tok) { cli_print_error(CMD, &err); goto done; }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(model, &info);

    /* every prompt's tokens (as the generation will count them), held against n_ctx */
    long long need = 1;
    int max_prompt = 0, max_line = 0;
    size_t ids_cap = 0;
    for (int i = 0; i < set.n; i++) {
        batch_item *it = &set.items[i];
        const size_t plen = strlen(it->prompt);
        if (plen + 16 > ids_cap) {
            free(ids);
            ids_cap = plen + 16;
            if (plen > (size_t)INT_MAX - 16 || !(ids = malloc(ids_cap * sizeof *ids))) {
                fprintf(stderr, "edgellm " CMD ": %s:%ld: out of memory for the prompt's tokens\n", o->batch_file,
                        it->line);
                goto done;
            }
        }
        int n_tok = 0;
        edgellm_status ts = edgellm_tokenize(tok, it->prompt, plen, gp.add_bos, ids, (int)ids_cap, &n_tok, &err);
        if (ts == EDGELLM_ERR_MISUSE && n_tok > (int)ids_cap) {   /* a tokenizer that needs more room */
            int32_t *more = realloc(ids, (size_t)n_tok * sizeof *ids);
            if (more) {
                ids = more;
                ids_cap = (size_t)n_tok;
                ts = edgellm_tokenize(tok, it->prompt, plen, gp.add_bos, ids, (int)ids_cap, &n_tok, &err);
            }
        }
        if (ts != EDGELLM_OK) {
            fprintf(stderr, "edgellm " CMD ": %s:%ld: %s\n", o->batch_file, it->line, err.msg);
            goto done;
        }
        it->n_prompt = n_tok > 0 ? n_tok : 1;   /* an empty prompt starts from BOS */
        if (it->n_prompt > max_prompt) max_prompt = it->n_prompt, max_line = (int)it->line;
        need = CLI_MAX(need, (long long)it->n_prompt + it->n_predict);
    }
    edgellm_ctx_params cp = o->cp;
    const int cap = info.n_ctx_train > 0 ? CLI_MIN(info.n_ctx_train, 4096) : 4096;
    if (cp.n_ctx <= 0) cp.n_ctx = (int)CLI_MIN(need, (long long)CLI_MAX(cap, max_prompt));
    if (max_prompt > cp.n_ctx) {
        fprintf(stderr, "edgellm " CMD ": %s:%d: the prompt is %d tokens but a sequence holds only %d (n_ctx per "
                        "sequence); raise -c or shorten the prompt\n", o->batch_file, max_line, max_prompt, cp.n_ctx);
        goto done;
    }
    if (info.n_ctx_train > 0 && cp.n_ctx > info.n_ctx_train)
        fprintf(stderr, "edgellm " CMD ": warning: n_ctx %d exceeds the model's trained context length %d; quality may "
                        "degrade past it\n", cp.n_ctx, info.n_ctx_train);
    cp.n_seq = CLI_MIN(o->n_batch, set.n);
    if (edgellm_ctx_new(model, &cp, &ctx, &err) != EDGELLM_OK) { cli_print_error(CMD, &err); goto done; }

    params = calloc((size_t)set.n, sizeof *params);
    pp = calloc((size_t)set.n, sizeof *pp);
    prompts = calloc((size_t)set.n, sizeof *prompts);
    stats = calloc((size_t)set.n, sizeof *stats);
    if (!params || !pp || !prompts || !stats) { fprintf(stderr, "edgellm " CMD ": out of memory\n"); goto done; }
    for (int i = 0; i < set.n; i++) {
        params[i] = gp;
        params[i].n_predict = set.items[i].n_predict;
        pp[i] = &params[i];
        prompts[i] = set.items[i].prompt;
        stats[i].size = sizeof stats[i];
    }
    if (gp.sampling.temperature > 0)
        fprintf(stderr, "seed: %llu%s\n", (unsigned long long)gp.sampling.seed, o->have_seed ? "" : " (every prompt)");
    else fprintf(stderr, "sampling: greedy (--temp 0)\n");
    fprintf(stderr, "load: %.1f ms (%s); %d prompt%s, %d sequence%s at a time, n_ctx %d per sequence\n", load_ms,
            o->model_path, set.n, set.n == 1 ? "" : "s", cp.n_seq, cp.n_seq == 1 ? "" : "s", edgellm_ctx_n_ctx(ctx));

    collector col = {.s = &set, .n_seq = cp.n_seq, .max_started = -1, .bar = isatty(fileno(stderr)),
                     .b = {.last_pct = -1}};
    col.t0 = cli_time_ms();
    edgellm_status s = edgellm_generate_batch_each(ctx, prompts, pp, set.n, on_piece, &col, stats, &err);
    const double wall_ms = cli_time_ms() - col.t0;
    if (col.bar) cli_draw_bar(&col.b, 1.0, NULL);
    if (s == EDGELLM_OK && col.oom) { fprintf(stderr, "edgellm " CMD ": out of memory for the generated text\n"); goto done; }
    if (s != EDGELLM_OK) {
        const char *msg = err.msg[0] ? err.msg : "generation failed";
        if (!strncmp(msg, o->model_path, strlen(o->model_path))) fprintf(stderr, "edgellm " CMD ": %s\n", msg);
        else fprintf(stderr, "edgellm " CMD ": %s: %s\n", o->model_path, msg);
        goto done;
    }

    edgellm_output *of = NULL;
    if (edgellm_output_open(out_path, "w", &of, &err) != EDGELLM_OK) { cli_print_error(CMD, &err); goto done; }
    long long generated = 0, prompt_tokens = 0;
    for (int i = 0; i < set.n; i++) {
        write_item(edgellm_output_stream(of), i, &set.items[i], &stats[i]);
        generated += stats[i].n_generated;
        prompt_tokens += stats[i].n_prompt;
    }
    if (edgellm_output_commit(of, &err) != EDGELLM_OK) { cli_print_error(CMD, &err); goto done; }
    fprintf(stderr, "batch: %d prompt%s (%lld prompt tokens), %lld tokens generated in %.2f s: %.1f tok/s aggregate\n",
            set.n, set.n == 1 ? "" : "s", prompt_tokens, generated, wall_ms / 1000.0,
            wall_ms > 0 ? (double)generated * 1000.0 / wall_ms : 0.0);
    rc = 0;
done:
    free(ids);
    free(params);
    free(pp);
    free(prompts);
    free(stats);
    edgellm_ctx_free(ctx);
    edgellm_model_free(model);
    set_free(&set);
    return rc;
}
