/*
 * gen.c — the generation engine (contract in gen.h): streams, the step that advances them
 * together, and the UTF-8 framing of their pieces.
 *
 * Per stream, from edgellm_gen_begin:
 *   tokenize the prompt (BOS per the vocabulary when add_bos and the sequence starts empty)
 *       an empty token list in an empty sequence becomes [BOS]; a vocabulary without BOS
 *       then has nothing to condition on: EDGELLM_ERR_MISUSE
 *   place it (prefix reuse or append) and refuse what does not fit (EDGELLM_ERR_CTX_FULL)
 * Per step (edgellm_gen_step), for the streams whose logits are ready:
 *       n_generated == n_predict        -> stop N_PREDICT
 *       sample from the sequence's logits, record it in the penalty history
 *       EOS or another end-of-generation token (edgellm_token_is_eog)
 *                                       -> stop EOS (not passed to the callback, not counted)
 *       callback(token, piece)          -> non-zero: stop CALLBACK (the token counts)
 *       n_generated == n_predict        -> stop N_PREDICT
 *       the sequence is full (n_ctx)    -> stop CTX_FULL (clean: the token was emitted,
 *                                          there is just no room to process it)
 *       otherwise the token goes into the next step's batch
 * The last generated token is only decoded when another one will follow, so n_predict N
 * costs one prefill and N-1 single-token passes.
 *
 * Pieces: edgellm_token_to_piece() of the token, with one SentencePiece rule applied: the
 * first piece of a generation whose prompt text is empty (the sequence is just BOS) loses
 * one leading space (SentencePiece drops its "dummy prefix" space when decoding the start
 * of a text; llama2.c strips the space of a piece that follows BOS). Only for "llama"
 * (SentencePiece) vocabularies. Then UTF-8 framing: bytes of a character that continues
 * in the next token are held back; a byte that cannot begin or continue a well-formed
 * character (Unicode 15.0 §3.9, Table 3-7) becomes U+FFFD; bytes still held when the
 * stream ends are passed, as U+FFFD, in a last callback with token -1.
 *
 * Timing: prefill_ms runs from begin to the first logits (TTFT); decode_ms sums the steps
 * a stream spent decoding plus its sampling (callback time is excluded).
 */
#include "gen.h"
#include "../common/common.h"
#include "../tokenizer/unicode.h"
#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- UTF-8 framing ---- */

/* Whether s[0..n) (1 <= n <= 3) begins a well-formed UTF-8 character that needs more
 * bytes than n (the table of Unicode §3.9: second-byte ranges per lead byte). */
static bool utf8_unfinished(const unsigned char *s, size_t n)
{
    const unsigned char b0 = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (b0 >= 0xC2 && b0 <= 0xDF) need = 2;
    else if (b0 >= 0xE0 && b0 <= 0xEF) need = 3, lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
    else if (b0 >= 0xF0 && b0 <= 0xF4) need = 4, lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
    else return false;
    if (n >= need) return false;
    if (n >= 2 && (s[1] < lo || s[1] > hi)) return false;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return false;
    return true;
}

/* Frame pend + in[0..len): the whole characters go to out (U+FFFD for bad bytes; out has
 * room for 3 bytes per input byte), an unfinished tail (at most 3 bytes) stays in pend.
 * Returns the bytes written. */
size_t edgellm_utf8_frame(char *pend, int *n_pend, const char *in, size_t len, char *out)
{
    char buf[3 + 256];
    size_t o = 0;
    for (size_t off = 0; off < len || *n_pend;) {
        /* work on pend + the next chunk of input */
        size_t take = EDGELLM_MIN(len - off, sizeof buf - (size_t)*n_pend);
        memcpy(buf, pend, (size_t)*n_pend);
        memcpy(buf + *n_pend, in + off, take);
        size_t n = (size_t)*n_pend + take, i = 0;
        off += take;
        *n_pend = 0;
        while (i < n) {
            size_t nb;
            const uint32_t cp = edgellm_utf8_decode(buf + i, n - i, &nb);
            if (cp != EDGELLM_UNICODE_INVALID) {
                memcpy(out + o, buf + i, nb);
                o += nb;
                i += nb;
            } else if (n - i <= 3 && utf8_unfinished((const unsigned char *)buf + i, n - i)) {
                if (off < len) break;                    /* more input follows: frame again */
                memcpy(pend, buf + i, n - i);            /* the end of the input: hold back */
                *n_pend = (int)(n - i);
                i = n;
            } else {
                memcpy(out + o, "\xEF\xBF\xBD", 3);      /* U+FFFD */
                o += 3;
                i++;
            }
        }
        if (i < n) {                                     /* carried into the next chunk */
            memcpy(pend, buf + i, n - i);
            *n_pend = (int)(n - i);
        }
        if (off >= len) break;
    }
    return o;
}

/* ---------------------------------------------------------------- streams ---- */

static edgellm_status gen_fail(edgellm_gen *g, edgellm_status rc)
{
    g->rc = rc;
    g->state = GEN_DONE;
    return rc;
}

/* Tokenize text (len bytes) into a fresh array (*out, edgellm_free). */
static edgellm_status tokenize_text(const edgellm_tokenizer *tok, const char *text, int add_bos, int32_t **out,
                                    int *n_out, edgellm_error *err)
{
    size_t len = strlen(text);
    if (len > (size_t)(1 << 30)) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: prompt of %zu bytes is too long", len);
    int cap = (int)len + 8;   /* SentencePiece and BPE give at most one token per byte, + BOS */
    int32_t *ids = edgellm_malloc((size_t)cap * sizeof *ids);
    if (!ids) return edgellm_fail_nomem(err, "generate: prompt tokens");
    int n = 0;
    edgellm_status rc = edgellm_tokenize(tok, text, len, add_bos, ids, cap, &n, err);
    if (rc == EDGELLM_ERR_MISUSE && n > cap) {   /* a tokenizer that needs more room */
        edgellm_free(ids);
        cap = n;
        ids = edgellm_malloc((size_t)cap * sizeof *ids);
        if (!ids) return edgellm_fail_nomem(err, "generate: prompt tokens");
        rc = edgellm_tokenize(tok, text, len, add_bos, ids, cap, &n, err);
    }
    if (rc != EDGELLM_OK) { edgellm_free(ids); return rc; }
    *out = ids;
    *n_out = n;
    return EDGELLM_OK;
}

edgellm_status edgellm_gen_begin(edgellm_gen *g, edgellm_ctx *c, int index, const char *prompt,
                                 const edgellm_generate_params *params)
{
    char *piece = g->piece;                         /* g is zeroed or a stream that ended */
    const int piece_cap = g->piece_cap;
    edgellm_sampler_free(g->smp);
    edgellm_free(g->todo);
    memset(g, 0, sizeof *g);
    g->piece = piece, g->piece_cap = piece_cap;            /* kept across prompts */
    g->index = index;
    g->st.size = sizeof g->st;
    g->st.stop = EDGELLM_STOP_N_PREDICT;
    g->t_start = edgellm_time_ms();
    g->p = edgellm_generate_default_params();
    edgellm_error *err = &g->err;
    edgellm_status rc = edgellm_sized_in(&g->p, sizeof g->p, params, "edgellm_generate_params", err);
    if (rc) return gen_fail(g, rc);
    const edgellm_generate_params *p = &g->p;
    g->seq = p->seq;
    if (p->seq < 0 || p->seq >= c->n_seq)
        return gen_fail(g, edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: sequence %d does not exist (the context has "
                                        "%d: 0..%d)", p->seq, c->n_seq, c->n_seq - 1));
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(c->model);
    if (!tok) return gen_fail(g, edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: the model has no tokenizer"));
    if (!prompt && p->n_prompt_tokens > 0 && !p->prompt_tokens)
        return gen_fail(g, edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: prompt_tokens is NULL"));
    edgellm_seq_state *q = &c->seqs[p->seq];
    const int32_t bos = edgellm_token_bos(tok);
    const int n_vocab = c->model->hp.n_vocab;

    /* the prompt's tokens; BOS only where the sequence will start */
    const bool starts_empty = !p->append || q->n == 0;
    int32_t *ids = NULL;
    int n = 0;
    if (prompt) {
        if ((rc = tokenize_text(tok, prompt, starts_empty && p->add_bos, &ids, &n, err))) return gen_fail(g, rc);
    } else {
        if (p->n_prompt_tokens < 0 || p->n_prompt_tokens > (1 << 30))
            return gen_fail(g, edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: n_prompt_tokens %d is out of range",
                                            p->n_prompt_tokens));
        if (!(ids = edgellm_malloc(((size_t)p->n_prompt_tokens + 1) * sizeof *ids)))
            return gen_fail(g, edgellm_fail_nomem(err, "generate: prompt tokens"));
        if (p->n_prompt_tokens) memcpy(ids, p->prompt_tokens, (size_t)p->n_prompt_tokens * sizeof *ids);
        n = p->n_prompt_tokens;
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= n_vocab) {
                rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: prompt token %d at index %d is out of range "
                                  "[0, %d)", (int)ids[i], i, n_vocab);
                edgellm_free(ids);
                return gen_fail(g, rc);
            }
    }
    if (n == 0 && starts_empty) {
        if (bos < 0) {
            edgellm_free(ids);
            return gen_fail(g, edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: empty prompt and the vocabulary has no "
                                            "BOS token: nothing to condition on"));
        }
        ids[0] = bos;
        n = 1;
    }
    g->st.n_prompt = n;

    /* place it: keep the cached prefix (append 0) or go after the sequence (append 1) */
    int keep;
    if (!p->append) {
        keep = 0;
        while (keep < n && keep < q->n && q->tok[keep] == ids[keep] && q->pos[keep] == keep) keep++;
        if (keep == n) keep--;                       /* the last prompt token must give logits */
    } else {
        keep = q->n;
        if (q->pending >= 0 && q->n > 0) {          /* the last generated token goes in first */
            memmove(ids + 1, ids, (size_t)n * sizeof *ids);
            ids[0] = q->pending;
            n++;
        } else if (n == 0 && !q->has_logits) {      /* nothing new and no logits: run the last again */
            ids[0] = q->tok[--keep];
            n = 1;
        }
    }
    const int total = keep + (p->append ? n : n - keep);
    if (total > c->n_ctx) {
        edgellm_free(ids);
        if (!p->append)
            return gen_fail(g, edgellm_fail(err, EDGELLM_ERR_CTX_FULL, "generate: the prompt has %d tokens but the "
                                            "context holds only %d (raise n_ctx or shorten the prompt)", n, c->n_ctx));
        return gen_fail(g, edgellm_fail(err, EDGELLM_ERR_CTX_FULL, "generate: sequence %d holds %d tokens; %d more do "
                                        "not fit n_ctx %d (start a new sequence or drop old turns)", p->seq, keep, n,
                                        c->n_ctx));
    }
    if (!p->append) g->st.n_cached = keep;
    if (q->n != keep) {
        q->n = keep;
        q->has_logits = false;
    }
    q->pending = -1;
    if ((rc = edgellm_sampler_new(&p->sampling, n_vocab, &g->smp, err))) {
        edgellm_free(ids);
        return gen_fail(g, rc);
    }
    for (int i = 0; i < keep; i++) edgellm_sampler_accept(g->smp, q->tok[i]);
    const int first = p->append ? 0 : keep;          /* prompt tokens not in the cache */
    for (int i = first; i < n; i++) edgellm_sampler_accept(g->smp, ids[i]);
    /* the first piece after a bare BOS drops SentencePiece's dummy-prefix space */
    g->strip_space = !strcmp(edgellm_tokenizer_model(tok), "llama") && prompt && !prompt[0] && total == 1 && bos >= 0 &&
                     (first < n ? ids[first] : q->tok[0]) == bos;
    g->todo = ids;
    g->n_todo = n;
    g->todo_done = first;
    g->state = GEN_PREFILL;
    return EDGELLM_OK;
}

void edgellm_gen_end(edgellm_gen *g)
{
    if (!g) return;
    edgellm_sampler_free(g->smp);
    edgellm_free(g->todo);
    edgellm_free(g->piece);
    g->smp = NULL, g->todo = NULL, g->piece = NULL, g->piece_cap = 0;
}

/* The stream ends: free the prompt, flush held-back bytes (not after the callback asked to
 * stop), record the stop reason. pending: the token emitted last and not decoded (-1:
 * none), which the sequence keeps aside for an appended prompt. */
static void gen_finish(edgellm_ctx *c, edgellm_gen *g, edgellm_stop_reason why, int32_t pending,
                       edgellm_gen_piece_fn cb, void *user)
{
    c->seqs[g->seq].pending = pending;
    g->st.stop = why;
    g->state = GEN_DONE;
    edgellm_free(g->todo);
    g->todo = NULL;
    if (g->n_pend && why != EDGELLM_STOP_CALLBACK && cb) {
        char out[12];
        size_t o = 0;
        for (int i = 0; i < g->n_pend; i++) memcpy(out + o, "\xEF\xBF\xBD", 3), o += 3;   /* incomplete: U+FFFD each */
        (void)cb(user, g->index, -1, out, o);
    }
    g->n_pend = 0;
}

void edgellm_gen_cancel(edgellm_ctx *c, edgellm_gen *g)
{
    if (g->state != GEN_PREFILL && g->state != GEN_DECODE) return;
    gen_finish(c, g, EDGELLM_STOP_ABORT, g->state == GEN_DECODE ? g->next : -1, NULL, NULL);
}

/* The stream's sequence has fresh logits: sample and emit (see the top of this file). */
static edgellm_status gen_sample(edgellm_ctx *c, edgellm_gen *g, edgellm_gen_piece_fn cb, void *user)
{
    const edgellm_generate_params *p = &g->p;
    if (p->n_predict >= 0 && g->st.n_generated >= p->n_predict) {
        gen_finish(c, g, EDGELLM_STOP_N_PREDICT, -1, cb, user);
        return EDGELLM_OK;
    }
    const double ts = edgellm_time_ms();
    int32_t t = -1;
    edgellm_status rc = edgellm_sampler_sample(g->smp, c->seqs[g->seq].logits, &t, &g->err);
    g->st.decode_ms += edgellm_time_ms() - ts;
    if (rc) return gen_fail(g, rc);
    edgellm_sampler_accept(g->smp, t);
    return edgellm_gen_emit(c, g, t, cb, user);
}

edgellm_status edgellm_gen_emit(edgellm_ctx *c, edgellm_gen *g, int32_t t, edgellm_gen_piece_fn cb, void *user)
{
    const edgellm_generate_params *p = &g->p;
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(c->model);
    if (edgellm_token_is_eog(tok, t)) {
        gen_finish(c, g, EDGELLM_STOP_EOS, -1, cb, user);
        return EDGELLM_OK;
    }
    int len = edgellm_token_to_piece(tok, t, g->piece, g->piece_cap);
    if (len < 0)
        return gen_fail(g, edgellm_fail(&g->err, EDGELLM_ERR_MISUSE, "generate: sampled token %d is outside the "
                                        "vocabulary", (int)t));
    /* room for the raw piece and, after it, its framing (3 bytes per byte, held bytes too) */
    const size_t need = (size_t)len + 3 * ((size_t)len + 4);
    if (need > (size_t)g->piece_cap) {
        char *bigger = edgellm_realloc(g->piece, need);
        if (!bigger) return gen_fail(g, edgellm_fail_nomem(&g->err, "generate: token piece"));
        g->piece = bigger;
        g->piece_cap = (int)need;
        len = edgellm_token_to_piece(tok, t, g->piece, g->piece_cap);
    }
    const char *text = g->piece;
    if (g->strip_space && len > 0 && text[0] == ' ') text++, len--;
    g->strip_space = false;
    char *framed = g->piece + (size_t)(text - g->piece) + (size_t)len;
    const size_t n_out = edgellm_utf8_frame(g->pend, &g->n_pend, text, (size_t)len, framed);
    g->st.n_generated++;
    if (cb && cb(user, g->index, t, framed, n_out) != 0) {
        gen_finish(c, g, EDGELLM_STOP_CALLBACK, t, cb, user);
        return EDGELLM_OK;
    }
    if (p->n_predict >= 0 && g->st.n_generated >= p->n_predict) {
        gen_finish(c, g, EDGELLM_STOP_N_PREDICT, t, cb, user);
        return EDGELLM_OK;
    }
    if (c->seqs[g->seq].n >= c->n_ctx) {
        gen_finish(c, g, EDGELLM_STOP_CTX_FULL, t, cb, user);
        return EDGELLM_OK;
    }
    g->next = t;
    g->state = GEN_DECODE;
    return EDGELLM_OK;
}

/* ---------------------------------------------------------------- scheduler ---- */

edgellm_status edgellm_gen_step(edgellm_ctx *c, edgellm_gen *gens, int n, int prefill_budget, edgellm_gen_piece_fn cb,
                                void *user, int *n_active, edgellm_error *err)
{
    *n_active = 0;
    /* the batch: every decoding stream's next token, then prompt tokens within the budget */
    int cap = 0, running = 0;
    for (int i = 0; i < n; i++) {
        running += gens[i].state == GEN_DECODE || gens[i].state == GEN_PREFILL;
        if (gens[i].state == GEN_DECODE) cap++;
        if (gens[i].state == GEN_PREFILL) cap += gens[i].n_todo - gens[i].todo_done;
    }
    if (prefill_budget > 0) cap = EDGELLM_MIN(cap, n + prefill_budget);
    if (running == 0) return EDGELLM_OK;
    int32_t *toks = edgellm_malloc((size_t)cap * sizeof *toks + 1), *seqs = edgellm_malloc((size_t)cap * sizeof *seqs + 1);
    bool *ready = edgellm_calloc((size_t)n, sizeof *ready);   /* logits after this step */
    edgellm_status rc = EDGELLM_OK;
    if (!toks || !seqs || !ready) {
        rc = edgellm_fail_nomem(err, "generate: batch");
        goto done;
    }
    int m = 0, budget = prefill_budget > 0 ? prefill_budget : cap;
    for (int i = 0; i < n; i++)
        if (gens[i].state == GEN_DECODE) {
            toks[m] = gens[i].next, seqs[m++] = gens[i].seq;
            ready[i] = true;
        }
    for (int i = 0; i < n; i++) {
        edgellm_gen *g = &gens[i];
        if (g->state != GEN_PREFILL) continue;
        const int k = EDGELLM_MIN(budget, g->n_todo - g->todo_done);
        for (int j = 0; j < k; j++) toks[m] = g->todo[g->todo_done + j], seqs[m++] = g->seq;
        g->todo_done += k;
        budget -= k;
        ready[i] = g->todo_done == g->n_todo;
    }
    const double t0 = edgellm_time_ms();
    if (m > 0) {
        const edgellm_batch b = {.size = sizeof b, .n_tokens = m, .tokens = toks, .seq = seqs};
        rc = edgellm_decode_batch_internal(c, &b, err);
    } else if (atomic_load(&c->abort)) {   /* only sampling left: an abort still stops it */
        rc = edgellm_fail(err, EDGELLM_ERR_CANCELLED, "%s: aborted", c->model->path);
    }
    const double dt = edgellm_time_ms() - t0;
    if (rc) {
        for (int i = 0; i < n; i++)
            if (gens[i].state == GEN_PREFILL || gens[i].state == GEN_DECODE) {
                gens[i].err = *err;
                gens[i].rc = rc;
                gen_finish(c, &gens[i], rc == EDGELLM_ERR_CANCELLED ? EDGELLM_STOP_ABORT : gens[i].st.stop,
                           gens[i].state == GEN_DECODE ? gens[i].next : -1, cb, user);
            }
        goto done;
    }
    for (int i = 0; i < n; i++) {
        edgellm_gen *g = &gens[i];
        if (g->state == GEN_DECODE) g->st.decode_ms += dt;
        if (!ready[i]) continue;
        if (g->state == GEN_PREFILL) {
            g->t_first = edgellm_time_ms();
            g->st.prefill_ms = g->t_first - g->t_start;
        }
        if ((rc = gen_sample(c, g, cb, user))) {
            *err = g->err;
            goto done;
        }
    }
done:
    for (int i = 0; i < n; i++) *n_active += gens[i].state == GEN_PREFILL || gens[i].state == GEN_DECODE;
    edgellm_free(toks);
    edgellm_free(seqs);
    edgellm_free(ready);
    return rc;
}

edgellm_status edgellm_gen_run(edgellm_ctx *c, edgellm_gen *gens, int n, int prefill_budget, edgellm_gen_piece_fn cb,
                               edgellm_gen_refill_fn refill, void *user, edgellm_error *err)
{
    for (;;) {
        int active = 0;
        edgellm_status rc = edgellm_gen_step(c, gens, n, prefill_budget, cb, user, &active, err);
        if (rc) {
            for (int i = 0; i < n; i++)   /* stop the others */
                if (gens[i].state == GEN_PREFILL || gens[i].state == GEN_DECODE)
                    gen_finish(c, &gens[i], gens[i].st.stop, gens[i].state == GEN_DECODE ? gens[i].next : -1, NULL, NULL);
            return rc;
        }
        for (int i = 0; i < n; i++) {          /* each finished stream once: collect, refill */
            if (gens[i].state != GEN_DONE) continue;
            if (refill && refill(user, &gens[i])) {
                if (gens[i].rc) {
                    *err = gens[i].err;
                    return gens[i].rc;
                }
                active++;
            }
            if (gens[i].state == GEN_DONE) gens[i].state = GEN_IDLE;
        }
        if (active == 0) return EDGELLM_OK;
    }
}
