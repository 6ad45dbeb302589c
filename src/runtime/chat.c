/*
 * chat.c — a conversation made ready for the model (edgellm_chat_tokenize, include/
 * edgellm.h): rendered with a chat template (chat_template.c), tokenized with the model's
 * tokenizer so that the template's own special tokens are parsed and the messages' text
 * never is (tokenizer.h, edgellm_tokenize_protected), and fitted to the context.
 *
 * When the conversation does not fit, the oldest turns after a leading system message are
 * dropped, one whole turn (a user message and the replies up to the next user message) at
 * a time, and the rest is rendered again: the system prompt stays first, so a sequence that
 * holds it keeps it cached (edgellm_generate's prefix reuse). The last turn is never
 * dropped: when the system message and the last turn alone do not fit, the call fails.
 */
#include "../common/common.h"
#include "../model/model.h"
#include "../tokenizer/tokenizer.h"
#include <string.h>

/* Render msgs[n] and tokenize; *n_out tokens into out[max] (the count even when more). */
static edgellm_status render_tokenize(const edgellm_tokenizer *tok, const char *tmpl, const char *name,
                                      const edgellm_chat_message *msgs, int n, const edgellm_chat_params *p,
                                      int32_t *out, int max, int *n_out, edgellm_error *err)
{
    edgellm_chat_text *txt = NULL;
    edgellm_status rc = edgellm_chat_template_render(tmpl, name, msgs, n, p, &txt, err);
    if (rc) return rc;
    size_t len = 0;
    const char *s = edgellm_chat_text_str(txt, &len);
    const int n_spans = edgellm_chat_text_n_spans(txt);
    size_t (*spans)[2] = edgellm_malloc(((size_t)n_spans + 1) * sizeof *spans);
    if (!spans) {
        edgellm_chat_text_free(txt);
        return edgellm_fail_nomem(err, "chat");
    }
    for (int i = 0; i < n_spans; i++) edgellm_chat_text_span(txt, i, &spans[i][0], &spans[i][1]);
    int needed = 0;
    rc = edgellm_tokenize_protected(tok, s, len, EDGELLM_TOKENIZE_SPECIAL, (const size_t (*)[2])spans,
                                    (size_t)n_spans, out, max, &needed, err);
    *n_out = needed;
    if (rc == EDGELLM_ERR_MISUSE && needed > max) rc = EDGELLM_ERR_CTX_FULL;   /* the caller decides */
    edgellm_free(spans);
    edgellm_chat_text_free(txt);
    return rc;
}

/* Index of the first message of the turn after the one starting at i (n when none). */
static int next_turn(const edgellm_chat_message *msgs, int n, int i)
{
    for (i++; i < n; i++)
        if (msgs[i].role && !strcmp(msgs[i].role, "user")) return i;
    return n;
}

edgellm_status edgellm_chat_tokenize(const edgellm_model *m, const char *template_text,
                                     const edgellm_chat_message *msgs, int n_msgs, const edgellm_chat_params *params,
                                     int32_t *out, int max_tokens, int *n_tokens, int *n_dropped, edgellm_error *err)
{
    if (n_tokens) *n_tokens = 0;
    if (n_dropped) *n_dropped = 0;
    if (!m || !msgs || n_msgs <= 0 || !out || max_tokens <= 0 || !n_tokens)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "chat_tokenize: NULL model, messages or output, or n_msgs %d / "
                            "max_tokens %d <= 0", n_msgs, max_tokens);
    const edgellm_tokenizer *tok = edgellm_model_text_tokenizer(m, err);
    if (!tok) return EDGELLM_ERR_UNSUPPORTED;
    char name[600];
    char *own = NULL;
    if (!template_text) {                                  /* the model's own */
        const int len = edgellm_model_chat_template(m, NULL, 0);
        if (len < 0)
            return edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "%s: the model has no chat template "
                                "(tokenizer.chat_template): give one, e.g. the built-in \"chatml\"", m->path);
        if (!(own = edgellm_malloc((size_t)len + 1))) return edgellm_fail_nomem(err, m->path);
        edgellm_model_chat_template(m, own, len + 1);
        template_text = own;
        snprintf(name, sizeof name, "%s (tokenizer.chat_template)", m->path);
    } else {
        snprintf(name, sizeof name, "chat template");
    }
    /* bos_token / eos_token: the caller's, else the vocabulary's texts */
    edgellm_chat_params p = edgellm_chat_default_params();
    edgellm_status rc = edgellm_sized_in(&p, sizeof p, params, "edgellm_chat_params", err);
    if (rc) goto done;
    const int32_t bos = edgellm_token_bos(tok), eos = edgellm_token_eos(tok);
    if (!p.bos_token) p.bos_token = bos >= 0 ? edgellm_token_text(tok, bos) : "";
    if (!p.eos_token) p.eos_token = eos >= 0 ? edgellm_token_text(tok, eos) : "";

    const bool has_system = msgs[0].role && !strcmp(msgs[0].role, "system");
    const int first = has_system ? 1 : 0;                 /* the first message that may go */
    edgellm_chat_message *kept = edgellm_malloc((size_t)n_msgs * sizeof *kept);
    if (!kept) { rc = edgellm_fail_nomem(err, "chat"); goto done; }
    int drop_to = first;                                    /* messages [first, drop_to) are dropped */
    for (;;) {
        int n = 0;
        for (int i = 0; i < first; i++) kept[n++] = msgs[i];
        for (int i = drop_to; i < n_msgs; i++) kept[n++] = msgs[i];
        int count = 0;
        rc = render_tokenize(tok, template_text, name, kept, n, &p, out, max_tokens, &count, err);
        if (rc != EDGELLM_ERR_CTX_FULL) {
            if (rc == EDGELLM_OK) {
                *n_tokens = count;
                if (n_dropped) *n_dropped = drop_to - first;
            }
            break;
        }
        /* too long: drop the oldest turn, unless only the last one is left */
        int last_turn = first;
        for (int i = first; i < n_msgs; i = next_turn(msgs, n_msgs, i)) last_turn = i;
        const int next = next_turn(msgs, n_msgs, drop_to);
        if (drop_to >= last_turn || next > last_turn) {
            rc = edgellm_fail(err, EDGELLM_ERR_CTX_FULL, "chat: the conversation needs %d tokens even with only %sits "
                              "last turn, more than the %d available (raise n_ctx, shorten the message or lower "
                              "n_predict)", count, has_system ? "the system message and " : "", max_tokens);
            break;
        }
        drop_to = next;
    }
    edgellm_free(kept);
done:
    edgellm_free(own);
    return rc;
}
