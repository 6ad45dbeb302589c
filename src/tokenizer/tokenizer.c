/*
 * tokenizer.c — the tokenizer object: built from the tokenizer.ggml.* metadata of a GGUF
 * file, it turns text into token ids and ids back into bytes.
 *
 * Metadata read (llama.cpp's GGUF convention, ggml-org/ggml docs/gguf.md "Tokenizer"):
 *
 *   key                               type          use
 *   tokenizer.ggml.model              string        "llama" (SentencePiece BPE, tok_spm.c)
 *                                                   or "gpt2" (byte-level BPE, tok_bpe.c);
 *                                                   anything else: EDGELLM_ERR_UNSUPPORTED
 *   tokenizer.ggml.pre                string        gpt2 only: pre-tokenizer (tok_pretok.c);
 *                                                   absent = "default"
 *   tokenizer.ggml.tokens             [string]      n_vocab texts (required)
 *   tokenizer.ggml.scores             [f32]         n_vocab SPM merge scores (absent: 0)
 *   tokenizer.ggml.token_type         [i32]         n_vocab: 1 normal, 2 unknown, 3 control,
 *                                                   4 user-defined, 5 unused, 6 byte
 *   tokenizer.ggml.merges             [string]      gpt2: "left right", best rank first
 *   tokenizer.ggml.bos/eos/unknown_token_id  int    -1 or 0xFFFFFFFF: none
 *   tokenizer.ggml.add_bos_token      bool          default: true for llama, false for gpt2
 *   tokenizer.ggml.add_eos_token      bool          default: false
 *   tokenizer.ggml.add_space_prefix   bool          llama: SentencePiece's add_dummy_prefix,
 *                                                   default true
 *
 * Everything is copied: the tokenizer does not borrow from the GGUF handle.
 *
 * Encoding (edgellm_tokenize):
 *   1. BOS when asked and the vocabulary wants it.
 *   2. Special tokens are found in the raw text, leftmost-longest (what Hugging Face's
 *      added-vocabulary matcher does), with a byte trie; they become their ids directly.
 *      User-defined tokens (type 4, e.g. MPT's runs of spaces, DeepSeek's "<|User|>") are
 *      always matched. Control and unknown tokens ("<s>", "</s>", "<|im_end|>", ...; see
 *      EDGELLM_TOKATTR_*) only with EDGELLM_TOKENIZE_SPECIAL, and never inside a protected
 *      span (a chat message's content): typed into a prompt they are ordinary characters,
 *      so user text cannot inject them. This is llama.cpp's parse_special rule
 *      (llama_vocab::impl::tokenizer_st_partition), including its overrides of stored types.
 *   3. Every stretch of text between them goes to the model's encoder. SentencePiece gets
 *      the dummy prefix "▁" on a stretch that starts the text or follows a user-defined
 *      token (llama.cpp's rule).
 *   4. EOS when asked and the vocabulary wants it.
 *
 * Decoding (edgellm_token_to_piece): control and unused tokens -> ""; byte tokens
 * "<0xXX>" -> that byte; user-defined and unknown tokens -> their text as stored; normal
 * tokens -> SPM: "▁" becomes " "; gpt2: every character of the byte-level alphabet becomes
 * its byte. edgellm_tokenizer_detokenize joins a sequence and, for SPM, drops the one space
 * the dummy prefix put in front of the first token.
 */
#include "tokenizer_internal.h"
#include "unicode.h"

#include <math.h>
#include <stdio.h>

/* Longest text accepted by edgellm_tokenize: keeps every internal size inside int32/uint32
 * (SPM's normalisation triples spaces). */
#define EDGELLM_TOK_MAX_TEXT ((size_t)INT32_MAX / 4)

void edgellm_tokenizer_free(edgellm_tokenizer *t)
{
    if (!t) return;
    edgellm_free(t->pool);
    edgellm_free(t->text_off);
    edgellm_free(t->text_len);
    edgellm_free(t->scores);
    edgellm_free(t->type);
    edgellm_free(t->attr);
    edgellm_tok_strmap_free(&t->vocab);
    edgellm_tok_u64map_free(&t->merges);
    edgellm_tok_u64map_free(&t->trie);
    edgellm_free(t->trie_token);
    edgellm_free(t);
}

/* ------------------------------------------------------------------ loading */

/* Copy a mapped string into a C buffer (truncated) for messages and comparisons. */
static void str_to_buf(edgellm_str s, char *buf, size_t size)
{
    size_t n = s.len < size - 1 ? (size_t)s.len : size - 1;
    memcpy(buf, s.ptr, n);
    buf[n] = 0;
}

static edgellm_status load_tokens(edgellm_tokenizer *t, const edgellm_gguf *g, const char *path, edgellm_error *err)
{
    const char *key = "tokenizer.ggml.tokens";
    edgellm_gguf_vtype et;
    uint64_t n = 0;
    if (!edgellm_gguf_arr_info(g, key, &et, &n))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s is missing", path, key);
    if (et != EDGELLM_GGUF_STRING)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s is an array of %s, not of strings", path, key,
                            edgellm_gguf_vtype_name(et));
    if (n == 0 || n > (uint64_t)INT32_MAX / 2)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s has %llu entries", path, key, (unsigned long long)n);
    t->n_vocab = (int32_t)n;

    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        edgellm_str s;
        if (!edgellm_gguf_arr_str(g, key, i, &s))
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s[%llu] is unreadable", path, key, (unsigned long long)i);
        if (s.len > UINT32_MAX / 2)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s[%llu] is %llu bytes long", path, key,
                                (unsigned long long)i, (unsigned long long)s.len);
        if (!edgellm_add_u64(total, s.len + 1, &total) || total > SIZE_MAX / 2)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s is too large", path, key);
    }
    t->pool = edgellm_malloc((size_t)total);
    t->text_off = edgellm_malloc((size_t)n * sizeof *t->text_off);
    t->text_len = edgellm_malloc((size_t)n * sizeof *t->text_len);
    if (!t->pool || !t->text_off || !t->text_len) return edgellm_fail_nomem(err, path);
    size_t off = 0;
    for (uint64_t i = 0; i < n; i++) {
        edgellm_str s;
        edgellm_gguf_arr_str(g, key, i, &s);
        memcpy(t->pool + off, s.ptr, (size_t)s.len);
        t->pool[off + s.len] = 0;
        t->text_off[i] = off;
        t->text_len[i] = (uint32_t)s.len;
        off += (size_t)s.len + 1;
    }
    return EDGELLM_OK;
}

bool edgellm_tok_build_vocab_map(edgellm_tokenizer *t)
{
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->text_len[id] > t->max_text_len) t->max_text_len = t->text_len[id];
    return edgellm_tok_strmap_build(&t->vocab, t->pool, t->text_off, t->text_len, t->n_vocab);
}

static bool is_byte_token_text(const char *s, uint32_t len, int *value)
{
    static const char HEX[] = "0123456789ABCDEF";
    if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return false;
    const char *h = strchr(HEX, s[3]), *l = strchr(HEX, s[4]);
    if (!h || !l || !s[3] || !s[4]) return false;
    *value = (int)((h - HEX) * 16 + (l - HEX));
    return true;
}

static edgellm_status load_scores_types(edgellm_tokenizer *t, const edgellm_gguf *g, const char *path,
                                        edgellm_error *err)
{
    size_t n = (size_t)t->n_vocab;
    edgellm_gguf_vtype et;
    uint64_t count;
    t->scores = edgellm_calloc(n, sizeof *t->scores);
    t->type = edgellm_malloc(n);
    if (!t->scores || !t->type) return edgellm_fail_nomem(err, path);

    if (edgellm_gguf_arr_info(g, "tokenizer.ggml.scores", &et, &count)) {
        if (et != EDGELLM_GGUF_FLOAT32 || count != n)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                                "%s: tokenizer.ggml.scores must be %zu float32 values (one per token), found %llu of %s",
                                path, n, (unsigned long long)count, edgellm_gguf_vtype_name(et));
        memcpy(t->scores, edgellm_gguf_arr_data(g, "tokenizer.ggml.scores"), n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            if (isnan(t->scores[i]))
                return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tokenizer.ggml.scores[%zu] is NaN", path, i);
    }

    if (edgellm_gguf_arr_info(g, "tokenizer.ggml.token_type", &et, &count)) {
        if (et != EDGELLM_GGUF_INT32 || count != n)
            return edgellm_fail(err, EDGELLM_ERR_FORMAT,
                                "%s: tokenizer.ggml.token_type must be %zu int32 values (one per token), found %llu of %s",
                                path, n, (unsigned long long)count, edgellm_gguf_vtype_name(et));
        const unsigned char *p = edgellm_gguf_arr_data(g, "tokenizer.ggml.token_type");
        for (size_t i = 0; i < n; i++) {
            int32_t v = (int32_t)edgellm_rd_u32(p + 4 * i);
            if (v < EDGELLM_TOKTYPE_UNDEFINED || v > EDGELLM_TOKTYPE_BYTE)
                return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tokenizer.ggml.token_type[%zu] = %d is not a token type (0..6)",
                                    path, i, (int)v);
            t->type[i] = (uint8_t)v;
        }
    } else {
        /* no types: normal tokens, plus SentencePiece's "<0xXX>" byte tokens */
        for (size_t i = 0; i < n; i++) {
            int b;
            t->type[i] = t->kind == EDGELLM_TOK_SPM && is_byte_token_text(edgellm_tok_text(t, (int32_t)i), t->text_len[i], &b)
                             ? EDGELLM_TOKTYPE_BYTE : EDGELLM_TOKTYPE_NORMAL;
        }
    }
    return EDGELLM_OK;
}

/* True when no token text has a "▁" (E2 96 81) preceded by anything but another "▁": then
 * no SPM merge can cross the start of a word (see tok_spm.c). */
static bool spm_words_are_independent(const edgellm_tokenizer *t)
{
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const char *s = edgellm_tok_text(t, id);
        uint32_t n = t->text_len[id];
        for (uint32_t i = 1; i + 3 <= n; i++) {
            if (memcmp(s + i, "\xE2\x96\x81", 3) != 0) continue;
            if (i < 3 || memcmp(s + i - 3, "\xE2\x96\x81", 3) != 0) return false;
        }
    }
    return true;
}

/* A special token id: absent -> dflt (if in range), -1/0xFFFFFFFF -> none, else in range. */
static edgellm_status load_special_id(const edgellm_tokenizer *t, const edgellm_gguf *g, const char *path,
                                      const char *key, int32_t dflt, int32_t *out, edgellm_error *err)
{
    int64_t v;
    *out = dflt >= 0 && dflt < t->n_vocab ? dflt : -1;
    if (edgellm_gguf_find_key(g, key) < 0) return EDGELLM_OK;
    if (!edgellm_gguf_get_i64(g, key, &v))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s is not an integer", path, key);
    if (v == -1 || v == 0xFFFFFFFFll) { *out = -1; return EDGELLM_OK; }
    if (v < 0 || v >= t->n_vocab)
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s = %lld is outside the vocabulary (%d tokens)", path, key,
                            (long long)v, (int)t->n_vocab);
    *out = (int32_t)v;
    return EDGELLM_OK;
}

static edgellm_status load_flag(const edgellm_gguf *g, const char *path, const char *key, bool dflt, bool *out,
                                edgellm_error *err)
{
    *out = dflt;
    if (edgellm_gguf_find_key(g, key) < 0) return EDGELLM_OK;
    if (!edgellm_gguf_get_bool(g, key, out))
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %s is not a boolean", path, key);
    return EDGELLM_OK;
}

/* Texts llama.cpp takes as control tokens whatever their stored type, because converters
 * often leave them NORMAL or USER_DEFINED: end of turn / generation, end of message and
 * fill-in-the-middle markers (ggml-org/llama.cpp src/llama-vocab.cpp, llama_vocab::impl::
 * load, "auto-detect special tokens by text" and the EOG list). eog: ends a generation. */
static const struct { const char *text; bool eog; } forced_control[] = {
    {"<|eot_id|>", true}, {"<|im_end|>", true}, {"<|end|>", true}, {"<end_of_turn>", true},
    {"<|endoftext|>", true}, {"<|end_of_text|>", true}, {"<EOT>", true}, {"_<EOT>", true}, {"[EOT]", true},
    {"[EOS]", true}, {"<｜end▁of▁sentence｜>", true},
    {"<end_of_utterance>", true}, {"<|eom_id|>", true}, {"</s>", true}, {"<|return|>", true}, {"<|call|>", true},
    {"<|flush|>", true}, {"<|calls|>", true}, {"<eos>", true}, {"<turn|>", true}, {"<|tool_response>", true},
    {"[e~[", true},
    {"<|fim_prefix|>", false}, {"<fim-prefix>", false}, {"<fim_prefix>", false},
    {"<｜fim▁begin｜>", false}, {"<PRE>", false}, {"▁<PRE>", false},
    {"<|code_prefix|>", false}, {"<|prefix|>", false},
    {"<|fim_suffix|>", false}, {"<fim-suffix>", false}, {"<fim_suffix>", false},
    {"<｜fim▁hole｜>", false}, {"<SUF>", false}, {"▁<SUF>", false},
    {"<|code_suffix|>", false}, {"<|suffix|>", false},
    {"<|fim_middle|>", false}, {"<fim-middle>", false}, {"<fim_middle>", false},
    {"<｜fim▁end｜>", false}, {"<MID>", false}, {"▁<MID>", false},
    {"<|code_middle|>", false}, {"<|middle|>", false},
    {"<|fim_pad|>", true}, {"<fim-pad>", true}, {"<fim_pad>", true}, {"<PAD>", true}, {"[PAD]", true},
    {"<|fim_repo|>", true}, {"<|repo_name|>", true}, {"<fim-repo>", true}, {"<REPO>", true}, {"<reponame>", true},
    {"<|file_sep|>", true},
};

/* Attributes of every token (EDGELLM_TOKATTR_*): from the stored types, the forced texts and
 * the EOS / EOT / EOM ids. As llama.cpp: when "<|end|>" ends generation together with
 * "<|return|>" and "<|call|>" (or "<|calls|>" and "<|flush|>"), "<|end|>" is a plain
 * user-defined token (OpenAI's harmony format uses it between messages). */
static edgellm_status set_attrs(edgellm_tokenizer *t, const edgellm_gguf *g, const char *path, edgellm_error *err)
{
    if (!(t->attr = edgellm_calloc((size_t)t->n_vocab, 1))) return edgellm_fail_nomem(err, path);
    for (int32_t id = 0; id < t->n_vocab; id++) {
        const uint8_t ty = t->type[id];
        t->attr[id] = ty == EDGELLM_TOKTYPE_CONTROL ? EDGELLM_TOKATTR_CONTROL
                    : ty == EDGELLM_TOKTYPE_USER_DEFINED ? EDGELLM_TOKATTR_USER
                    : ty == EDGELLM_TOKTYPE_UNKNOWN ? EDGELLM_TOKATTR_UNKNOWN : 0;
    }
    int32_t end = -1;
    bool has_return = false, has_call = false, has_flush = false;
    for (size_t i = 0; i < sizeof forced_control / sizeof forced_control[0]; i++) {
        const char *text = forced_control[i].text;
        const size_t n = strlen(text);
        const int32_t id = edgellm_tok_lookup(t, text, n);
        if (id < 0) continue;
        t->attr[id] = (uint8_t)((t->attr[id] & ~EDGELLM_TOKATTR_USER) | EDGELLM_TOKATTR_CONTROL);
        if (!forced_control[i].eog) continue;
        t->attr[id] |= EDGELLM_TOKATTR_EOG;
        if (!strcmp(text, "<|end|>")) end = id;
        has_return |= !strcmp(forced_control[i].text, "<|return|>");
        has_call |= !strcmp(forced_control[i].text, "<|call|>") || !strcmp(forced_control[i].text, "<|calls|>");
        has_flush |= !strcmp(forced_control[i].text, "<|flush|>");
    }
    if (end >= 0 && has_call && (has_return || has_flush)) t->attr[end] = EDGELLM_TOKATTR_USER;
    int32_t eot = -1, eom = -1;
    edgellm_status rc;
    if ((rc = load_special_id(t, g, path, "tokenizer.ggml.eot_token_id", -1, &eot, err)) ||
        (rc = load_special_id(t, g, path, "tokenizer.ggml.eom_token_id", -1, &eom, err)))
        return rc;
    const int32_t ends[3] = {t->eos, eot, eom};
    for (int i = 0; i < 3; i++)
        if (ends[i] >= 0) t->attr[ends[i]] |= EDGELLM_TOKATTR_EOG;
    return EDGELLM_OK;
}

/* Byte trie of the special tokens (attributes CONTROL, USER or UNKNOWN), for
 * leftmost-longest matching in the input. */
static edgellm_status build_trie(edgellm_tokenizer *t, const char *path, edgellm_error *err)
{
    const uint8_t special = EDGELLM_TOKATTR_CONTROL | EDGELLM_TOKATTR_USER | EDGELLM_TOKATTR_UNKNOWN;
    size_t nodes_cap = 1;
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->attr[id] & special) nodes_cap += t->text_len[id];
    if (nodes_cap == 1) return EDGELLM_OK;                       /* none: no trie */
    if (nodes_cap > INT32_MAX / 2) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: special tokens too long", path);
    t->trie_token = edgellm_malloc(nodes_cap * sizeof *t->trie_token);
    if (!t->trie_token || !edgellm_tok_u64map_init(&t->trie, nodes_cap)) return edgellm_fail_nomem(err, path);
    t->trie_token[0] = -1;
    t->trie_nodes = 1;
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!(t->attr[id] & special) || t->text_len[id] == 0) continue;
        const unsigned char *s = (const unsigned char *)edgellm_tok_text(t, id);
        int32_t node = 0;
        for (uint32_t i = 0; i < t->text_len[id]; i++) {
            uint64_t key = ((uint64_t)node << 8) | s[i];
            int32_t child;
            if (!edgellm_tok_u64map_get(&t->trie, key, &child, NULL)) {
                child = t->trie_nodes++;
                t->trie_token[child] = -1;
                if (!edgellm_tok_u64map_put(&t->trie, key, child, 0, true)) return edgellm_fail_nomem(err, path);
            }
            node = child;
        }
        if (t->trie_token[node] < 0) t->trie_token[node] = id;   /* the first id of a repeated text */
    }
    return EDGELLM_OK;
}

edgellm_status edgellm_tokenizer_from_gguf(const edgellm_gguf *g, edgellm_tokenizer **out, edgellm_error *err)
{
    edgellm_status rc;
    const char *path = g ? edgellm_gguf_path(g) : "(null)";
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: tokenizer: out is NULL", path);
    *out = NULL;
    if (!g) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "tokenizer: GGUF handle is NULL");

    edgellm_str s;
    char name[64];
    if (!edgellm_gguf_get_str(g, "tokenizer.ggml.model", &s))
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: no tokenizer (tokenizer.ggml.model is missing)", path);
    str_to_buf(s, name, sizeof name);
    edgellm_tok_kind kind;
    if (!strcmp(name, "llama")) kind = EDGELLM_TOK_SPM;
    else if (!strcmp(name, "gpt2")) kind = EDGELLM_TOK_BPE;
    else
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED,
                            "%s: tokenizer model '%s' is not supported (edgellm knows 'llama' and 'gpt2')", path, name);

    edgellm_pretok pre = EDGELLM_PRETOK_DEFAULT;
    if (kind == EDGELLM_TOK_BPE && edgellm_gguf_get_str(g, "tokenizer.ggml.pre", &s)) {
        str_to_buf(s, name, sizeof name);
        if (!edgellm_pretok_from_name(name, &pre))
            return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: pre-tokenizer '%s' (tokenizer.ggml.pre) is not supported",
                                path, name);
    }

    edgellm_tokenizer *t = edgellm_calloc(1, sizeof *t);
    if (!t) return edgellm_fail_nomem(err, path);
    t->kind = kind;
    t->pre = pre;
    snprintf(t->model_name, sizeof t->model_name, "%s", kind == EDGELLM_TOK_SPM ? "llama" : "gpt2");
    for (int b = 0; b < 256; b++) t->byte_token[b] = -1;

    bool spm = kind == EDGELLM_TOK_SPM;
    if ((rc = load_tokens(t, g, path, err)) || (rc = load_scores_types(t, g, path, err))) goto done;
    if ((rc = load_special_id(t, g, path, "tokenizer.ggml.bos_token_id", spm ? 1 : -1, &t->bos, err)) ||
        (rc = load_special_id(t, g, path, "tokenizer.ggml.eos_token_id", spm ? 2 : -1, &t->eos, err)) ||
        (rc = load_special_id(t, g, path, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, &t->unk, err)))
        goto done;
    if ((rc = load_flag(g, path, "tokenizer.ggml.add_bos_token", spm, &t->add_bos, err)) ||
        (rc = load_flag(g, path, "tokenizer.ggml.add_eos_token", false, &t->add_eos, err)) ||
        (rc = load_flag(g, path, "tokenizer.ggml.add_space_prefix", spm, &t->add_space_prefix, err)))
        goto done;
    if (t->bos < 0) t->add_bos = false;
    if (t->eos < 0) t->add_eos = false;
    if (!spm) t->add_space_prefix = false;

    if (!edgellm_tok_build_vocab_map(t)) { rc = edgellm_fail_nomem(err, path); goto done; }
    if (spm) {
        t->spm_word_cuts = spm_words_are_independent(t);
        for (int b = 0; b < 256; b++) {
            char hex[8];
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            t->byte_token[b] = edgellm_tok_lookup(t, hex, 6);
        }
    } else if ((rc = edgellm_tok_bpe_load(t, g, err))) {
        goto done;
    }
    if ((rc = set_attrs(t, g, path, err)) || (rc = build_trie(t, path, err))) goto done;
    *out = t;
    t = NULL;
done:
    edgellm_tokenizer_free(t);
    return rc;
}

edgellm_status edgellm_tokenizer_load(const char *path, edgellm_tokenizer **out, edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "tokenizer_load: out is NULL");
    *out = NULL;
    if (!path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "tokenizer_load: path is NULL");
    edgellm_gguf *g = NULL;
    edgellm_status rc = edgellm_gguf_open(path, &g, err);
    if (rc == EDGELLM_OK) rc = edgellm_tokenizer_from_gguf(g, out, err);
    edgellm_gguf_close(g);
    return rc;
}

/* ------------------------------------------------------------------ encoding */

/* Protected byte ranges of an input (chat message contents): no control or unknown token
 * may be matched across or inside them. Sorted, non-overlapping. */
typedef struct {
    const size_t (*r)[2];
    size_t n;
} prot_spans;

/* Whether [a, b) touches a protected range. */
static bool protected_overlap(const prot_spans *ps, size_t a, size_t b)
{
    for (size_t i = 0; ps && i < ps->n; i++)
        if (ps->r[i][0] < b && a < ps->r[i][1]) return true;
    return false;
}

/* Longest special token starting at text[pos] that may be matched there (user-defined
 * ones always; control and unknown ones with `special`, outside protected ranges): its id
 * and byte length, or -1. */
static int32_t match_special(const edgellm_tokenizer *t, const char *text, size_t len, size_t pos, bool special,
                             const prot_spans *ps, size_t *mlen)
{
    int32_t node = 0, best = -1;
    for (size_t k = pos; k < len; k++) {
        int32_t child;
        if (!edgellm_tok_u64map_get(&t->trie, ((uint64_t)node << 8) | (unsigned char)text[k], &child, NULL)) break;
        node = child;
        const int32_t id = t->trie_token[node];
        if (id < 0) continue;
        if (!(t->attr[id] & EDGELLM_TOKATTR_USER) && (!special || protected_overlap(ps, pos, k + 1))) continue;
        best = id;
        *mlen = k - pos + 1;
    }
    return best;
}

static edgellm_status encode_raw(const edgellm_tokenizer *t, const char *text, size_t len, bool after_special,
                                 edgellm_tok_vec *v)
{
    if (len == 0) return EDGELLM_OK;
    if (t->kind == EDGELLM_TOK_SPM) return edgellm_tok_spm_encode(t, text, len, t->add_space_prefix && after_special, v);
    return edgellm_tok_bpe_encode(t, text, len, v);
}

/* Encode into a fresh vector (internal; see edgellm_tokenize). */
static edgellm_status encode_all(const edgellm_tokenizer *t, const char *text, size_t len, int flags,
                                 const prot_spans *ps, edgellm_tok_vec *v)
{
    edgellm_status rc = EDGELLM_OK;
    const bool special = (flags & EDGELLM_TOKENIZE_SPECIAL) != 0;
    if ((flags & EDGELLM_TOKENIZE_ADD_BOS) && t->add_bos && !edgellm_tok_vec_push(v, t->bos)) goto nomem;
    size_t raw = 0;                       /* start of the pending raw-text stretch */
    bool after_special = true;            /* SPM dummy prefix: text start counts as "after a special" */
    if (t->trie_nodes) {
        for (size_t pos = 0; pos < len;) {
            size_t mlen = 0;
            int32_t id = match_special(t, text, len, pos, special, ps, &mlen);
            if (id < 0) { pos++; continue; }
            if (pos > raw) {
                if ((rc = encode_raw(t, text + raw, pos - raw, after_special, v))) return rc;
                after_special = false;
            }
            if (!edgellm_tok_vec_push(v, id)) goto nomem;
            after_special = true;
            pos += mlen;
            raw = pos;
        }
    }
    if (len > raw && (rc = encode_raw(t, text + raw, len - raw, after_special, v))) return rc;
    if ((flags & EDGELLM_TOKENIZE_ADD_BOS) && t->add_eos && !edgellm_tok_vec_push(v, t->eos)) goto nomem;
    return EDGELLM_OK;
nomem:
    return edgellm_fail_nomem(NULL, "tokenizer");
}

edgellm_status edgellm_tokenize_protected(const edgellm_tokenizer *t, const char *text, size_t len, int flags,
                                          const size_t (*spans)[2], size_t n_spans, int32_t *out, int max_tokens,
                                          int *n_tokens, edgellm_error *err)
{
    if (n_tokens) *n_tokens = 0;
    if (!t || !n_tokens || (!text && len) || max_tokens < 0 || (!out && max_tokens > 0) || (!spans && n_spans))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "tokenize: bad arguments (NULL tokenizer/text/out or max_tokens < 0)");
    if (len > EDGELLM_TOK_MAX_TEXT)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "tokenize: text of %zu bytes is too long (limit %zu)", len,
                            EDGELLM_TOK_MAX_TEXT);
    for (size_t i = 0; i < n_spans; i++)
        if (spans[i][0] > spans[i][1] || spans[i][1] > len || (i && spans[i][0] < spans[i - 1][1]))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "tokenize: protected span %zu [%zu, %zu) is not an ordered "
                                "range inside the %zu-byte text", i, spans[i][0], spans[i][1], len);
    edgellm_tok_vec v = { 0 };
    const prot_spans ps = {spans, n_spans};
    edgellm_status rc = encode_all(t, text ? text : "", len, flags, &ps, &v);
    if (rc == EDGELLM_ERR_NOMEM) rc = edgellm_fail_nomem(err, "tokenize");
    if (rc == EDGELLM_OK) {
        size_t ncopy = v.n < (size_t)max_tokens ? v.n : (size_t)max_tokens;
        if (ncopy) memcpy(out, v.v, ncopy * sizeof *out);
        *n_tokens = (int)v.n;
        if (v.n > (size_t)max_tokens)
            rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "tokenize: the text needs %zu tokens, the buffer holds %d", v.n,
                              max_tokens);
    }
    edgellm_tok_vec_free(&v);
    return rc;
}

edgellm_status edgellm_tokenize(const edgellm_tokenizer *t, const char *text, size_t len, int flags, int32_t *out,
                                int max_tokens, int *n_tokens, edgellm_error *err)
{
    return edgellm_tokenize_protected(t, text, len, flags, NULL, 0, out, max_tokens, n_tokens, err);
}

int edgellm_token_is_eog(const edgellm_tokenizer *t, int32_t token)
{
    return t && token >= 0 && token < t->n_vocab && (t->attr[token] & EDGELLM_TOKATTR_EOG) != 0;
}

/* ------------------------------------------------------------------ decoding */

typedef struct {
    char *buf;
    int size, n;          /* capacity, bytes produced so far (may exceed size) */
} piece_writer;

static void put(piece_writer *w, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++, w->n++)
        if (w->n < w->size) w->buf[w->n] = s[i];
}

int edgellm_token_to_piece(const edgellm_tokenizer *t, int32_t token, char *buf, int buf_size)
{
    if (!t || token < 0 || token >= t->n_vocab) return -1;
    piece_writer w = { buf, buf ? EDGELLM_MAX(buf_size, 0) : 0, 0 };
    const char *s = edgellm_tok_text(t, token);
    size_t len = t->text_len[token];
    int b;
    switch (t->type[token]) {
    case EDGELLM_TOKTYPE_CONTROL:
    case EDGELLM_TOKTYPE_UNUSED:
        return 0;
    case EDGELLM_TOKTYPE_USER_DEFINED:
    case EDGELLM_TOKTYPE_UNKNOWN:
        put(&w, s, len);
        return w.n;
    case EDGELLM_TOKTYPE_BYTE:
        if (is_byte_token_text(s, (uint32_t)len, &b)) {
            char c = (char)b;
            put(&w, &c, 1);
            return w.n;
        }
        break;            /* not "<0xXX>": decode as a normal token */
    default:
        break;
    }
    for (size_t i = 0; i < len;) {
        size_t clen;
        uint32_t cp = edgellm_utf8_decode(s + i, len - i, &clen);
        if (t->kind == EDGELLM_TOK_SPM) {
            if (cp == 0x2581) put(&w, " ", 1);
            else put(&w, s + i, clen);
        } else {
            int byte = cp == EDGELLM_UNICODE_INVALID ? -1 : edgellm_tok_cp_to_byte(cp);
            if (byte >= 0) {
                char c = (char)byte;
                put(&w, &c, 1);
            } else {
                put(&w, s + i, clen);       /* outside the byte-level alphabet: as stored */
            }
        }
        i += clen;
    }
    return w.n;
}

edgellm_status edgellm_tokenizer_detokenize(const edgellm_tokenizer *t, const int32_t *ids, size_t n_ids,
                                            char **out, size_t *out_len, edgellm_error *err)
{
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!t || !out || !out_len || (!ids && n_ids))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "detokenize: bad arguments");
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        int n = edgellm_token_to_piece(t, ids[i], NULL, 0);
        if (n < 0)
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "detokenize: token %d at position %zu is outside the vocabulary",
                                (int)ids[i], i);
        total += (size_t)n;
    }
    char *s = edgellm_malloc(total + 1);
    if (!s) return edgellm_fail_nomem(err, "detokenize");
    size_t pos = 0;
    bool first = true;                      /* the first token after an optional BOS */
    for (size_t i = 0; i < n_ids; i++) {
        if (first && i == 0 && ids[i] == t->bos && t->bos >= 0) continue;
        int n = edgellm_token_to_piece(t, ids[i], s + pos, (int)(total - pos + 1));
        if (first && t->add_space_prefix && n > 0 && s[pos] == ' ') {
            memmove(s + pos, s + pos + 1, (size_t)n - 1);      /* the dummy prefix */
            n--;
        }
        first = false;
        pos += (size_t)n;
    }
    s[pos] = 0;
    *out = s;
    *out_len = pos;
    return EDGELLM_OK;
}

/* ------------------------------------------------------------------ accessors */

const char *edgellm_token_text(const edgellm_tokenizer *t, int32_t token)
{
    if (!t || token < 0 || token >= t->n_vocab) return NULL;
    return edgellm_tok_text(t, token);
}

int edgellm_tokenizer_n_vocab(const edgellm_tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t edgellm_token_bos(const edgellm_tokenizer *t) { return t ? t->bos : -1; }
int32_t edgellm_token_eos(const edgellm_tokenizer *t) { return t ? t->eos : -1; }
const char *edgellm_tokenizer_model(const edgellm_tokenizer *t) { return t ? t->model_name : "none"; }
