/*
 * generate.c — the generation loop: prompt in, a stream of tokens out.
 *
 * Contract: include/edgellm.h, "Generation loop". One call:
 *
 *   reset the context
 *   tokenize the prompt (BOS per the vocabulary when add_bos)
 *       an empty token list (empty prompt, or --no-bos with an empty prompt) becomes [BOS];
 *       a vocabulary without BOS then has nothing to condition on: EDGELLM_ERR_MISUSE
 *   refuse a prompt longer than n_ctx (EDGELLM_ERR_CTX_FULL, before any compute)
 *   prefill all prompt tokens in ONE edgellm_decode call        -> stats.prefill_ms
 *   loop:                                                       -> stats.decode_ms
 *       n_generated == n_predict        -> stop N_PREDICT
 *       sample from the last logits, record it in the penalty history
 *       EOS                             -> stop EOS (not passed to the callback, not counted)
 *       callback(token, piece)          -> non-zero: stop CALLBACK (the token counts)
 *       the cache is full (n_past == n_ctx) -> stop CTX_FULL (clean: the token was emitted,
 *                                          there is just no room to process it)
 *       decode the token at position n_past
 *
 * The last generated token is only decoded when another one will follow, so -n N costs
 * one prefill and N-1 single-token passes.
 *
 * Pieces: each callback receives edgellm_token_to_piece() of the token, with one
 * SentencePiece rule applied: the first piece of a generation whose prompt text is empty
 * (the sequence is just BOS) loses one leading space. SentencePiece prepends a "dummy
 * prefix" space when encoding and drops it when decoding the start of a text; llama2.c
 * does the same by stripping the space of a piece that follows BOS. This applies only to
 * "llama" (SentencePiece) vocabularies. With a non-empty prompt the caller prints its own
 * prompt text and every piece is passed unchanged.
 *
 * Timing: prefill_ms is the wall time of the prompt's edgellm_decode call; decode_ms sums
 * sampling plus single-token edgellm_decode calls (callback time is excluded).
 */
#include "common/common.h"
#include <stdio.h>
#include <string.h>

edgellm_generate_params edgellm_generate_default_params(void)
{
    edgellm_generate_params p = {.size = sizeof p};
    p.n_predict = 128;
    p.add_bos = 1;
    p.sampling = edgellm_sampler_default_params();
    return p;
}

/* Tokenize text into a fresh array (*out, caller frees with edgellm_free). */
static edgellm_status tokenize_prompt(const edgellm_tokenizer *tok, const char *text, int add_bos, int32_t **out,
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

edgellm_status edgellm_generate(edgellm_ctx *c, const char *prompt, const edgellm_generate_params *p,
                                edgellm_token_callback cb, void *user, edgellm_generate_stats *stats,
                                edgellm_error *err)
{
    edgellm_generate_stats st = {0};
    edgellm_generate_params dp = edgellm_generate_default_params();
    edgellm_status rc = EDGELLM_OK;
    edgellm_sampler *smp = NULL;
    int32_t *ids = NULL;
    char piece_small[256];
    char *piece = piece_small;
    int piece_cap = (int)sizeof piece_small;

    st.size = sizeof st;
    st.stop = EDGELLM_STOP_N_PREDICT;
    if (stats && !edgellm_sized_out(stats, &st, sizeof st))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: stats.size is 0: set it to sizeof(edgellm_generate_stats)");
    if (!c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: context is NULL");
    if ((rc = edgellm_sized_in(&dp, sizeof dp, p, "edgellm_generate_params", err))) return rc;
    p = &dp;
    if (!prompt) prompt = "";

    const edgellm_model *m = edgellm_ctx_model(c);
    const edgellm_tokenizer *tok = edgellm_model_tokenizer(m);
    if (!tok) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: the model has no tokenizer");
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    const int n_ctx = edgellm_ctx_n_ctx(c);
    const int32_t bos = edgellm_token_bos(tok), eos = edgellm_token_eos(tok);
    const bool spm = strcmp(edgellm_tokenizer_model(tok), "llama") == 0;

    edgellm_ctx_reset(c);

    int n_prompt = 0;
    if ((rc = tokenize_prompt(tok, prompt, p->add_bos, &ids, &n_prompt, err)) != EDGELLM_OK) goto done;
    if (n_prompt == 0) {
        if (bos < 0) {
            rc = edgellm_fail(err, EDGELLM_ERR_MISUSE,
                              "generate: empty prompt and the vocabulary has no BOS token: nothing to condition on");
            goto done;
        }
        ids[0] = bos;
        n_prompt = 1;
    }
    st.n_prompt = n_prompt;
    if (n_prompt > n_ctx) {
        rc = edgellm_fail(err, EDGELLM_ERR_CTX_FULL,
                          "generate: the prompt has %d tokens but the context holds only %d (raise n_ctx or shorten the prompt)",
                          n_prompt, n_ctx);
        goto done;
    }
    if ((rc = edgellm_sampler_new(&p->sampling, info.n_vocab, &smp, err)) != EDGELLM_OK) goto done;
    for (int i = 0; i < n_prompt; i++) edgellm_sampler_accept(smp, ids[i]);

    double t0 = edgellm_time_ms();
    if ((rc = edgellm_decode(c, ids, n_prompt, NULL, err)) != EDGELLM_OK) goto done;
    st.prefill_ms = edgellm_time_ms() - t0;

    /* the first piece after a bare BOS drops SentencePiece's dummy-prefix space */
    bool strip_space = spm && prompt[0] == 0 && n_prompt == 1 && ids[0] == bos;

    for (;;) {
        if (p->n_predict >= 0 && st.n_generated >= p->n_predict) { st.stop = EDGELLM_STOP_N_PREDICT; break; }
        double ts = edgellm_time_ms();
        int32_t t = -1;
        rc = edgellm_sampler_sample(smp, edgellm_ctx_logits(c), &t, err);
        st.decode_ms += edgellm_time_ms() - ts;
        if (rc != EDGELLM_OK) goto done;
        edgellm_sampler_accept(smp, t);
        if (t == eos) { st.stop = EDGELLM_STOP_EOS; break; }

        int len = edgellm_token_to_piece(tok, t, piece, piece_cap);
        if (len > piece_cap) {
            char *bigger = edgellm_malloc((size_t)len);
            if (!bigger) { rc = edgellm_fail_nomem(err, "generate: token piece"); goto done; }
            if (piece != piece_small) edgellm_free(piece);
            piece = bigger;
            piece_cap = len;
            len = edgellm_token_to_piece(tok, t, piece, piece_cap);
        }
        if (len < 0) {
            rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "generate: sampled token %d is outside the vocabulary", (int)t);
            goto done;
        }
        const char *text = piece;
        if (strip_space && len > 0 && text[0] == ' ') { text++; len--; }
        strip_space = false;
        st.n_generated++;
        if (cb && cb(t, text, (size_t)len, user) != 0) { st.stop = EDGELLM_STOP_CALLBACK; break; }

        if (p->n_predict >= 0 && st.n_generated >= p->n_predict) { st.stop = EDGELLM_STOP_N_PREDICT; break; }
        if (edgellm_ctx_n_past(c) >= n_ctx) { st.stop = EDGELLM_STOP_CTX_FULL; break; }
        ts = edgellm_time_ms();
        rc = edgellm_decode(c, &t, 1, NULL, err);
        st.decode_ms += edgellm_time_ms() - ts;
        if (rc != EDGELLM_OK) goto done;
    }

done:
    if (stats) edgellm_sized_out(stats, &st, sizeof st);
    if (piece != piece_small) edgellm_free(piece);
    edgellm_sampler_free(smp);
    edgellm_free(ids);
    return rc;
}
