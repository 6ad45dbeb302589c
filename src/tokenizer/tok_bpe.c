/*
 * tok_bpe.c — byte-level BPE ("gpt2" vocabularies: GPT-2, GPT-NeoX/MPT, Falcon, StarCoder,
 * Refact, DeepSeek, Llama 3, Qwen2...).
 *
 * Spec: Radford et al., "Language Models are Unsupervised Multitask Learners" (2019) §2.2,
 * and OpenAI's gpt-2 src/encoder.py (bytes_to_unicode, bpe); our own implementation.
 *
 *  1. Pre-tokenize the text into words (tok_pretok.c, chosen by tokenizer.ggml.pre).
 *  2. Map every byte of a word to a printable character (the byte-level alphabet):
 *       bytes 0x21..0x7E, 0xA1..0xAC, 0xAE..0xFF  -> the code point of the same value
 *       the other 68 bytes, in increasing order    -> U+0100, U+0101, ... U+0143
 *     so ' ' (0x20) -> 'Ġ' (U+0120), '\n' (0x0A) -> 'Ċ' (U+010A). Vocabulary strings are
 *     written in this alphabet.
 *  3. Start from one symbol per byte and repeatedly apply the merge with the lowest rank
 *     (its line number in tokenizer.ggml.merges, "Ġ t" = rank 0 in GPT-2) among adjacent
 *     pairs, leftmost first on equal ranks, until no pair has a merge. A min-heap of
 *     candidate pairs over a linked list of symbols makes this O(m log m) per word of m
 *     bytes, so even one huge word (1 MB without a blank) stays fast. A heap entry is one
 *     64-bit key (rank << 32 | left index), checked for staleness when popped.
 *  4. Each final symbol is a token id (merges are loaded as (left id, right id) ->
 *     (rank, merged id), so symbols carry ids, never strings).
 *
 * Example (GPT-2): " world" -> bytes mapped "Ġworld" -> ... -> ["Ġworld"] -> 995.
 *
 * Merges whose parts or result are not in the vocabulary are dropped at load time (they
 * could never fire on ids); Hugging Face tokenizers rejects such files, llama.cpp keeps them.
 */
#include "tokenizer_internal.h"
#include "unicode.h"

/* ---- the byte-level alphabet ---- */

static bool byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t edgellm_tok_byte_to_cp(uint8_t b)
{
    if (byte_is_printable(b)) return b;
    if (b <= 0x20) return 0x100 + b;                    /* 33 bytes: U+0100..U+0120 */
    if (b >= 0x7F && b <= 0xA0) return 0x121 + (b - 0x7F);   /* 34 bytes: U+0121..U+0142 */
    return 0x143;                                       /* 0xAD                     */
}

int edgellm_tok_cp_to_byte(uint32_t cp)
{
    if (cp < 0x100) return byte_is_printable(cp) ? (int)cp : -1;
    if (cp <= 0x120) return (int)(cp - 0x100);
    if (cp <= 0x142) return (int)(cp - 0x121 + 0x7F);
    if (cp == 0x143) return 0xAD;
    return -1;
}

/* ---- loading ---- */

edgellm_status edgellm_tok_bpe_load(edgellm_tokenizer *t, const edgellm_gguf *g, edgellm_error *err)
{
    const char *path = edgellm_gguf_path(g);
    for (int b = 0; b < 256; b++) {
        char u[4];
        int n = edgellm_utf8_encode(edgellm_tok_byte_to_cp((uint8_t)b), u);
        t->byte_token[b] = edgellm_tok_lookup(t, u, (size_t)n);
    }

    edgellm_gguf_vtype et;
    uint64_t n_merges = 0;
    if (!edgellm_gguf_arr_info(g, "tokenizer.ggml.merges", &et, &n_merges))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tokenizer.ggml.merges is missing (needed by a gpt2 tokenizer)",
                            path);
    if (et != EDGELLM_GGUF_STRING)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tokenizer.ggml.merges is an array of %s, not of strings",
                            path, edgellm_gguf_vtype_name(et));
    if (n_merges > INT32_MAX)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tokenizer.ggml.merges has %llu entries", path,
                            (unsigned long long)n_merges);
    if (!edgellm_tok_u64map_init(&t->merges, (size_t)n_merges)) return edgellm_fail_nomem(err, path);

    char *scratch = NULL;
    size_t scratch_cap = 0;
    edgellm_status rc = EDGELLM_OK;
    for (uint64_t j = 0; j < n_merges; j++) {
        edgellm_str s;
        if (!edgellm_gguf_arr_str(g, "tokenizer.ggml.merges", j, &s)) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tokenizer.ggml.merges[%llu] is unreadable", path,
                              (unsigned long long)j);
            break;
        }
        /* "left right": split at the first ' ' after the first byte (a part may start with ' ') */
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', (size_t)s.len - 1) : NULL;
        if (!sp) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tokenizer.ggml.merges[%llu] has no space separating two parts",
                              path, (unsigned long long)j);
            break;
        }
        size_t ln = (size_t)(sp - s.ptr), rn = (size_t)s.len - ln - 1;
        int32_t l = edgellm_tok_lookup(t, s.ptr, ln), r = edgellm_tok_lookup(t, sp + 1, rn);
        if (l < 0 || r < 0) continue;
        if (ln + rn > scratch_cap) {
            char *ns = edgellm_realloc(scratch, ln + rn);
            if (!ns) { rc = edgellm_fail_nomem(err, path); break; }
            scratch = ns;
            scratch_cap = ln + rn;
        }
        memcpy(scratch, s.ptr, ln);
        memcpy(scratch + ln, sp + 1, rn);
        int32_t m = edgellm_tok_lookup(t, scratch, ln + rn);
        if (m < 0) continue;
        if (!edgellm_tok_u64map_put(&t->merges, ((uint64_t)(uint32_t)l << 32) | (uint32_t)r, (int32_t)j, m, true)) {
            rc = edgellm_fail_nomem(err, path);
            break;
        }
    }
    edgellm_free(scratch);
    return rc;
}

/* ---- merging one word ---- */

typedef struct {
    int32_t id;               /* token id; -1: byte missing from the vocabulary */
    int32_t prev, next;       /* -1 at the ends; a merged-away symbol is unlinked */
} bpe_symbol;

/* Rank and merged id of the pair (left, left->next), or false when it has no merge. */
static bool pair_merge(const edgellm_tokenizer *t, const bpe_symbol *sym, int32_t left, int32_t *rank,
                       int32_t *merged)
{
    if (left < 0) return false;
    int32_t right = sym[left].next;
    if (right < 0 || sym[left].id < 0 || sym[right].id < 0) return false;
    uint64_t key = ((uint64_t)(uint32_t)sym[left].id << 32) | (uint32_t)sym[right].id;
    return edgellm_tok_u64map_get(&t->merges, key, rank, merged);
}

/* Queue the pair starting at symbol `left`: heap key = rank << 32 | left. */
static bool queue_pair(const edgellm_tokenizer *t, const bpe_symbol *sym, int32_t left, edgellm_tok_heap *h,
                       bool heapify_later)
{
    int32_t rank, merged;
    if (!pair_merge(t, sym, left, &rank, &merged)) return true;
    uint64_t key = ((uint64_t)(uint32_t)rank << 32) | (uint32_t)left;
    return heapify_later ? edgellm_tok_heap_append(h, key) : edgellm_tok_heap_push(h, key);
}

/* Encode one pre-token word w[0..n) (n >= 1); sym has room for n symbols.
 * Heap entries are not removed when a merge changes their pair: on pop, an entry is
 * applied only if the pair now at its left symbol still has the entry's rank (ranks are
 * unique per pair, so that is the same pair); otherwise it is stale and dropped. */
static bool encode_word(const edgellm_tokenizer *t, const unsigned char *w, size_t n, bpe_symbol *sym,
                        edgellm_tok_heap *h, edgellm_tok_vec *out)
{
    if (t->pre == EDGELLM_PRETOK_LLAMA3 && n <= 256) {
        /* Llama 3 ignores merges when the whole word is a token (its tokenizer.json sets
         * "ignore_merges"): look the mapped word up first. */
        char mapped[512];
        size_t m = 0;
        for (size_t i = 0; i < n; i++) m += (size_t)edgellm_utf8_encode(edgellm_tok_byte_to_cp(w[i]), mapped + m);
        int32_t id = edgellm_tok_lookup(t, mapped, m);
        if (id >= 0) return edgellm_tok_vec_push(out, id);
    }
    for (size_t i = 0; i < n; i++)
        sym[i] = (bpe_symbol){ t->byte_token[w[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1 };
    h->n = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (!queue_pair(t, sym, (int32_t)i, h, true)) return false;
    edgellm_tok_heap_build(h);
    while (h->n) {
        uint64_t key = edgellm_tok_heap_pop(h);
        int32_t left = (int32_t)(uint32_t)key, rank, merged;
        if (sym[left].prev == -2) continue;                             /* merged away */
        if (!pair_merge(t, sym, left, &rank, &merged) || (uint32_t)rank != (uint32_t)(key >> 32)) continue;
        bpe_symbol *l = &sym[left];
        int32_t right = l->next;
        l->id = merged;
        l->next = sym[right].next;
        if (l->next >= 0) sym[l->next].prev = left;
        sym[right].prev = -2;
        if (!queue_pair(t, sym, l->prev, h, false) || !queue_pair(t, sym, left, h, false)) return false;
    }
    /* A byte whose character the vocabulary lacks is dropped, as llama.cpp does (the
     * "unknown" id of these vocabs is often <|endoftext|>, which must not appear mid-text).
     * GPT-NeoX and Falcon have none for C0, C1, F5..FF, bytes that never occur in valid
     * UTF-8, and invalid bytes were made U+FFFD above: with them it does not happen. */
    for (int32_t i = 0; i >= 0; i = sym[i].next)
        if (sym[i].id >= 0 && !edgellm_tok_vec_push(out, sym[i].id)) return false;
    return true;
}

edgellm_status edgellm_tok_bpe_encode(const edgellm_tokenizer *t, const char *text, size_t len,
                                      edgellm_tok_vec *out)
{
    /* Bytes outside well-formed UTF-8 are read as U+FFFD, as llama.cpp's
     * unicode_cpts_from_utf8 does before its pre-tokenizer regexes (PR #11729); every
     * byte-level vocab has the bytes EF BF BD, while some lack the raw byte's character
     * (C0, C1, F5..FF). Decoding then gives U+FFFD for such a byte. llama.cpp's decoder is
     * looser (overlong forms, surrogates and F5..F7 leads decode there): for those the ids
     * differ; here they are invalid, as Unicode's table 3-7 says. */
    char *clean = NULL;
    if (!edgellm_utf8_replace_invalid(text, len, &clean, &len)) return edgellm_fail_nomem(NULL, "tokenizer");
    if (clean) text = clean;
    size_t *cuts = NULL, n_cuts = 0, longest = 0;
    edgellm_status rc = edgellm_pretokenize(t->pre, text, len, &cuts, &n_cuts);
    if (rc != EDGELLM_OK) {
        edgellm_free(clean);
        return rc;
    }
    bpe_symbol *sym = NULL;
    edgellm_tok_heap heap = { 0 };
    for (size_t i = 0; i + 1 < n_cuts; i++) longest = EDGELLM_MAX(longest, cuts[i + 1] - cuts[i]);
    if (longest) {
        sym = edgellm_malloc(longest * sizeof *sym);
        if (!sym) goto nomem;
    }
    for (size_t i = 0; i + 1 < n_cuts; i++)
        if (!encode_word(t, (const unsigned char *)text + cuts[i], cuts[i + 1] - cuts[i], sym, &heap, out))
            goto nomem;
    goto done;
nomem:
    rc = edgellm_fail_nomem(NULL, "tokenizer");
done:
    edgellm_tok_heap_free(&heap);
    edgellm_free(sym);
    edgellm_free(cuts);
    edgellm_free(clean);
    return rc;
}
