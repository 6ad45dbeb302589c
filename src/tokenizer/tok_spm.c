/*
 * tok_spm.c — SentencePiece-style BPE ("llama" vocabularies: LLaMA/Llama-2, Phi-3,
 * Baichuan, llama2.c's tokenizer.bin converted to GGUF).
 *
 * Algorithm (SentencePiece's BPE model, bpe_model.cc in google/sentencepiece, as used by
 * llama.cpp for tokenizer.ggml.model = "llama"; this is our own implementation):
 *
 *   1. Normalise: every ' ' becomes "▁" (U+2581, bytes E2 96 81) and, when the caller
 *      asks (add_dummy_prefix), one "▁" is put in front.
 *        "Hello world" -> "▁Hello▁world"
 *   2. Start from one symbol per UTF-8 character (a byte that is not valid UTF-8 is a
 *      symbol of its own).
 *   3. Repeatedly merge the adjacent pair whose concatenation is a vocabulary token with
 *      the highest score (tokenizer.ggml.scores); on equal scores the leftmost pair wins.
 *      Pairs wait in a min-heap of 64-bit keys (score order inverted << 32 | left);
 *      merging updates a doubly linked list of symbols and pushes the two new neighbour
 *      pairs, so the whole pass is
 *      O(n log n) in the text length. Heap entries made stale by an earlier merge are
 *      recognised when popped and skipped. Words are merged one at a time when the
 *      vocabulary allows it (see spm_word_cuts), which keeps the heap small.
 *   4. Each final symbol is its token; a symbol that is not in the vocabulary (a
 *      character the vocabulary lacks) becomes one "<0xXX>" byte token per UTF-8 byte
 *      (byte fallback), or the unknown token when the vocabulary has no byte tokens.
 *
 * Example with the stories260K vocabulary: "Once upon" -> "▁Once▁upon" ->
 * ... -> ["▁Once", "▁upon"] -> ids 403 407.
 */
#include "tokenizer_internal.h"
#include "unicode.h"

typedef struct {
    uint32_t start, len;      /* bytes of the normalised buffer; len 0 = merged away */
    int32_t prev, next;       /* neighbours in the list, -1 at the ends               */
} spm_symbol;

/* Order-preserving map of a float score to uint32 (IEEE-754 bits, negatives flipped;
 * -0 counts as +0 so that equal scores tie). Scores are never NaN (checked at load). */
static uint32_t score_order(float f)
{
    uint32_t u;
    if (f == 0.0f) f = 0.0f;
    memcpy(&u, &f, 4);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* Token id of the pair starting at symbol `left` (left + its next), or -1. */
static int32_t pair_token(const edgellm_tokenizer *t, const char *buf, const spm_symbol *sym, int32_t left)
{
    if (left < 0 || sym[left].next < 0) return -1;
    return edgellm_tok_lookup(t, buf + sym[left].start, sym[left].len + sym[sym[left].next].len);
}

/* Queue the pair starting at `left` if it is a token. Min-heap key: high half = the
 * score's order inverted (best score first), low half = left (leftmost first). */
static bool queue_pair(const edgellm_tokenizer *t, const char *buf, const spm_symbol *sym, int32_t left,
                       edgellm_tok_heap *h, bool heapify_later)
{
    int32_t id = pair_token(t, buf, sym, left);
    if (id < 0) return true;
    uint64_t key = ((uint64_t)~score_order(t->scores[id]) << 32) | (uint32_t)left;
    return heapify_later ? edgellm_tok_heap_append(h, key) : edgellm_tok_heap_push(h, key);
}

/* Append the ids of one final symbol: its token, or byte fallback. */
static bool emit_symbol(const edgellm_tokenizer *t, const char *s, uint32_t len, edgellm_tok_vec *out)
{
    int32_t id = edgellm_tok_lookup(t, s, len);
    if (id >= 0) return edgellm_tok_vec_push(out, id);
    bool unk_done = false;                    /* without byte tokens: one <unk> per symbol */
    for (uint32_t i = 0; i < len; i++) {
        int32_t b = t->byte_token[(unsigned char)s[i]];
        if (b >= 0) {
            if (!edgellm_tok_vec_push(out, b)) return false;
        } else if (t->unk >= 0 && !unk_done) {
            if (!edgellm_tok_vec_push(out, t->unk)) return false;
            unk_done = true;
        }
    }
    return true;
}

/* Merge and emit the symbols of buf[0..n) (n >= 1); sym and h are scratch space.
 * Heap entries are not removed when a merge changes their pair: on pop, an entry is
 * applied only if the pair now at its left symbol is a token with the entry's score; a
 * different pair with an equal score at the same place has an identical key, so applying
 * it then is exactly what the eager algorithm would do. */
static bool encode_chunk(const edgellm_tokenizer *t, const char *buf, size_t n, spm_symbol *sym,
                         edgellm_tok_heap *h, edgellm_tok_vec *out)
{
    int32_t n_sym = 0;
    for (size_t i = 0; i < n;) {
        size_t clen;
        (void)edgellm_utf8_decode(buf + i, n - i, &clen);
        sym[n_sym] = (spm_symbol){ (uint32_t)i, (uint32_t)clen, n_sym - 1, n_sym + 1 };
        n_sym++;
        i += clen;
    }
    sym[n_sym - 1].next = -1;

    h->n = 0;
    for (int32_t i = 0; i + 1 < n_sym; i++)
        if (!queue_pair(t, buf, sym, i, h, true)) return false;
    edgellm_tok_heap_build(h);
    while (h->n) {
        uint64_t key = edgellm_tok_heap_pop(h);
        int32_t left = (int32_t)(uint32_t)key;
        if (sym[left].len == 0) continue;                          /* merged away */
        int32_t id = pair_token(t, buf, sym, left);
        if (id < 0 || ~score_order(t->scores[id]) != (uint32_t)(key >> 32)) continue;   /* stale */
        spm_symbol *l = &sym[left], *r = &sym[l->next];
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) sym[r->next].prev = left;
        if (!queue_pair(t, buf, sym, l->prev, h, false) || !queue_pair(t, buf, sym, left, h, false)) return false;
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next)
        if (!emit_symbol(t, buf + sym[i].start, sym[i].len, out)) return false;
    return true;
}

static bool is_mark(const char *p) { return p[0] == (char)0xE2 && p[1] == (char)0x96 && p[2] == (char)0x81; }

edgellm_status edgellm_tok_spm_encode(const edgellm_tokenizer *t, const char *text, size_t len,
                                      bool add_prefix, edgellm_tok_vec *out)
{
    static const char SPACE_MARK[3] = { (char)0xE2, (char)0x96, (char)0x81 };   /* U+2581 */
    edgellm_status rc = EDGELLM_OK;
    char *buf = NULL;
    spm_symbol *sym = NULL;
    edgellm_tok_heap heap = { 0 };

    /* 1. normalise (the caller keeps len <= INT32_MAX / 4, so sizes fit in uint32) */
    size_t cap = 3 + 3 * len, n = 0;
    buf = edgellm_malloc(cap ? cap : 1);
    if (!buf) goto nomem;
    if (add_prefix) { memcpy(buf, SPACE_MARK, 3); n = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(buf + n, SPACE_MARK, 3); n += 3; }
        else buf[n++] = text[i];
    }
    if (n == 0) goto done;
    sym = edgellm_malloc(n * sizeof *sym);
    if (!sym) goto nomem;

    /* 2-4, chunk by chunk: when no token has a "▁" right after another character
     * (t->spm_word_cuts), no merge can cross the point before a "▁" that follows a
     * non-"▁", so the text is cut there and each word is merged on its own: the same
     * result, with a small heap that stays in cache. */
    size_t start = 0;
    if (t->spm_word_cuts) {
        for (size_t i = 3; i + 3 <= n; i++) {
            if (!is_mark(buf + i) || is_mark(buf + i - 3)) continue;
            if (!encode_chunk(t, buf + start, i - start, sym, &heap, out)) goto nomem;
            start = i;
            i += 2;
        }
    }
    if (!encode_chunk(t, buf + start, n - start, sym, &heap, out)) goto nomem;
    goto done;
nomem:
    rc = edgellm_fail_nomem(NULL, "tokenizer");
done:
    edgellm_tok_heap_free(&heap);
    edgellm_free(sym);
    edgellm_free(buf);
    return rc;
}
