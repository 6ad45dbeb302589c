/*
 * fuzz_tokenizer.c — libFuzzer target: the encode path of real vocabularies on arbitrary
 * bytes (random text, invalid UTF-8, overlong forms, lone surrogates, special-token
 * look-alikes).
 *
 * Vocabularies (loaded once, from ../shared/data/vocab, llama.cpp's ggml-vocab-*.gguf test
 * files): llama-spm (SentencePiece with byte fallback), gpt-2, deepseek-llm,
 * deepseek-coder, falcon, starcoder, phi-3 — one per pre-tokenizer family edgellm has.
 * Input: byte 0 picks the vocabulary (mod count) and bit 7 add_special; the rest is the
 * text (libFuzzer -max_len bounds it).
 * Oracles:
 *   - edgellm_tokenize returns OK (text is never "malformed": every byte must encode);
 *   - every id is inside the vocabulary, and the count agrees with a size query;
 *   - decode(encode(text)) == text byte for byte — for byte-level BPE, text with each
 *     invalid UTF-8 byte as U+FFFD (edgellm_utf8_replace_invalid: llama.cpp reads them
 *     so) — when add_special is off and no user-defined or control token was produced
 *     (those decode differently by design), and, for SentencePiece, the text has no U+2581
 *     (which decodes to a space), and every byte of that text has a byte token in the
 *     vocabulary (falcon's vocabulary lacks 28 byte tokens, starcoder's 14; like
 *     llama.cpp, edgellm drops such a byte when no merge covers it).
 */
#include "fuzz_util.h"
#include "fuzz_inputs.h"
#include "tokenizer/tokenizer_internal.h"
#include "tokenizer/unicode.h"

static edgellm_tokenizer *toks[FUZZ_N_VOCABS];
static int n_loaded;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    for (int i = 0; i < FUZZ_N_VOCABS; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/data/vocab/%s", fuzz_shared_dir(), FUZZ_VOCABS[i]);
        edgellm_error err = {0};
        if (edgellm_tokenizer_load(path, &toks[n_loaded], &err) == EDGELLM_OK) n_loaded++;
        else fprintf(stderr, "fuzz_tokenizer: skipping %s\n", err.msg);
    }
    if (!n_loaded) { fprintf(stderr, "fuzz_tokenizer: no vocabulary found (set EDGELLM_SHARED)\n"); exit(1); }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const edgellm_tokenizer *t = toks[(data[0] & 0x7f) % n_loaded];
    int add_special = data[0] >> 7;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    edgellm_error err = {0};
    int need = 0;
    edgellm_status s = edgellm_tokenize(t, text, len, add_special, NULL, 0, &need, &err);
    FUZZ_ASSERT(s == EDGELLM_OK || (s == EDGELLM_ERR_MISUSE && need > 0), "size query: %s", err.msg);
    int32_t *ids = malloc(((size_t)need + 1) * sizeof *ids);
    int n = 0;
    s = edgellm_tokenize(t, text, len, add_special, ids, need, &n, &err);
    FUZZ_ASSERT(s == EDGELLM_OK, "tokenize: %s", err.msg);
    FUZZ_ASSERT(n == need, "count %d, size query said %d", n, need);
    bool special = false;
    for (int i = 0; i < n; i++) {
        FUZZ_ASSERT(ids[i] >= 0 && ids[i] < t->n_vocab, "id %d outside [0, %d)", ids[i], t->n_vocab);
        uint8_t ty = t->type[ids[i]];
        special |= ty == EDGELLM_TOKTYPE_USER_DEFINED || ty == EDGELLM_TOKTYPE_CONTROL;
        char piece[8];
        int pn = edgellm_token_to_piece(t, ids[i], piece, sizeof piece);
        FUZZ_ASSERT(pn >= 0, "piece of %d", ids[i]);
    }
    char *back = NULL;
    size_t blen = 0;
    s = edgellm_tokenizer_detokenize(t, ids, (size_t)n, &back, &blen, &err);
    FUZZ_ASSERT(s == EDGELLM_OK, "detokenize: %s", err.msg);
    bool spm_marker = t->kind == EDGELLM_TOK_SPM && memmem(text, len, "\xe2\x96\x81", 3) != NULL;
    char *clean = NULL;      /* byte-level BPE: what the text reads as */
    size_t clen = len;
    if (t->kind != EDGELLM_TOK_SPM) FUZZ_ASSERT(edgellm_utf8_replace_invalid(text, len, &clean, &clen), "oom");
    const char *want = clean ? clean : text;
    bool all_bytes = true;   /* a byte without a byte token is dropped (as llama.cpp does) */
    for (size_t i = 0; i < clen && all_bytes; i++) all_bytes = t->byte_token[(uint8_t)want[i]] >= 0;
    if (!add_special && !special && !spm_marker && all_bytes)
        FUZZ_ASSERT(blen == clen && !memcmp(back, want, clen), "round trip: %zu bytes in, %zu out (vocab %s)", clen,
                    blen, t->model_name);
    edgellm_free(clean);
    edgellm_free(back);
    free(ids);
    return 0;
}
