/*
 * tokenizer_internal.h — the tokenizer object and the pieces its files share:
 *   tokenizer.c      loading/validation of tokenizer.ggml.*, special-token splitting,
 *                    decoding, the public API
 *   tok_spm.c        SentencePiece-style BPE with scores ("llama")
 *   tok_bpe.c        byte-level BPE with ranked merges ("gpt2")
 *   tok_pretok.c     the regex pre-tokenizers of byte-level BPE vocabs, hand-coded
 *   containers.c     hash maps (token text -> id, merge pair -> rank), the id vector and
 *                    the min-heap of merge candidates (containers.h)
 * Not part of the public API.
 */
#ifndef EDGELLM_TOKENIZER_INTERNAL_H
#define EDGELLM_TOKENIZER_INTERNAL_H

#include "containers.h"
#include "tokenizer.h"

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type, stored as-is in GGUF). */
enum {
    EDGELLM_TOKTYPE_UNDEFINED = 0,
    EDGELLM_TOKTYPE_NORMAL = 1,
    EDGELLM_TOKTYPE_UNKNOWN = 2,
    EDGELLM_TOKTYPE_CONTROL = 3,
    EDGELLM_TOKTYPE_USER_DEFINED = 4,
    EDGELLM_TOKTYPE_UNUSED = 5,
    EDGELLM_TOKTYPE_BYTE = 6
};

typedef enum { EDGELLM_TOK_SPM = 0, EDGELLM_TOK_BPE = 1 } edgellm_tok_kind;

/* Token attributes (tokenizer.c), as llama.cpp derives them (src/llama-vocab.cpp,
 * llama_vocab::impl::load): CONTROL for type 3 and for the texts llama.cpp takes as end of
 * turn, end of generation or fill-in-the-middle markers whatever their stored type; USER for
 * the other user-defined tokens (type 4); UNKNOWN for type 2; EOG for the tokens that end a
 * generation (EOS, EOT, EOM and the end-of-turn texts). CONTROL and UNKNOWN tokens are
 * matched in text only with special-token parsing; USER tokens always. */
enum {
    EDGELLM_TOKATTR_CONTROL = 1,
    EDGELLM_TOKATTR_USER = 2,
    EDGELLM_TOKATTR_UNKNOWN = 4,
    EDGELLM_TOKATTR_EOG = 8
};

/* Pre-tokenizers of byte-level BPE vocabs, chosen by tokenizer.ggml.pre (tok_pretok.c). */
typedef enum {
    EDGELLM_PRETOK_DEFAULT = 0,     /* "default" or key absent                          */
    EDGELLM_PRETOK_GPT2,            /* "gpt-2", "mpt", "olmo", "jais"                    */
    EDGELLM_PRETOK_DEEPSEEK_LLM,    /* "deepseek-llm"                                    */
    EDGELLM_PRETOK_DEEPSEEK_CODER,  /* "deepseek-coder"                                  */
    EDGELLM_PRETOK_FALCON,          /* "falcon"                                          */
    EDGELLM_PRETOK_STARCODER,       /* "starcoder", "refact", "command-r", "smollm", ... */
    EDGELLM_PRETOK_LLAMA3,          /* "llama3", "llama-bpe", "dbrx", "smaug-bpe"        */
    EDGELLM_PRETOK_QWEN2            /* "qwen2", "stablelm2"                              */
} edgellm_pretok;

/* Map pre-tokenizer name -> id; false for a name edgellm does not know. */
bool edgellm_pretok_from_name(const char *name, edgellm_pretok *out);

struct edgellm_tokenizer {
    edgellm_tok_kind kind;
    edgellm_pretok pre;                 /* BPE only                                          */
    int32_t n_vocab;
    char *pool;                         /* every token text, each NUL-terminated             */
    size_t *text_off;                   /* [n_vocab] offset of token i's text in pool        */
    uint32_t *text_len;                 /* [n_vocab] bytes                                   */
    uint32_t max_text_len;              /* longest token text, bytes (lookups stop early)    */
    float *scores;                      /* [n_vocab] SPM merge priority (0 when absent)      */
    uint8_t *type;                      /* [n_vocab] EDGELLM_TOKTYPE_*                       */
    uint8_t *attr;                      /* [n_vocab] EDGELLM_TOKATTR_* bits                  */
    edgellm_tok_strmap vocab;           /* text -> id (the last id wins on duplicate texts)  */
    edgellm_tok_u64map merges;          /* BPE: (left id, right id) -> (rank, merged id)     */
    int32_t byte_token[256];            /* SPM: "<0xXX>" token; BPE: token of the byte's
                                           mapped character; -1 when the vocab lacks it     */
    /* special tokens (attr CONTROL, USER or UNKNOWN), matched literally in the input
     * (leftmost-longest among those allowed): a byte trie */
    edgellm_tok_u64map trie;            /* (node << 8 | byte) -> (child node, -)             */
    int32_t *trie_token;                /* [trie_nodes] token ending at the node, or -1      */
    int32_t trie_nodes;
    int32_t bos, eos, unk;              /* -1 when none                                      */
    bool add_bos, add_eos;
    bool add_space_prefix;              /* SPM: prefix "▁" to raw text (add_dummy_prefix)    */
    bool spm_word_cuts;                 /* SPM: no token has "▁" right after another
                                           character, so words can be merged separately   */
    char model_name[8];                 /* "llama" / "gpt2"                                  */
};

static inline const char *edgellm_tok_text(const edgellm_tokenizer *t, int32_t id)
{
    return t->pool + t->text_off[id];
}

/* Token id whose text is s[0..n), or -1. */
static inline int32_t edgellm_tok_lookup(const edgellm_tokenizer *t, const char *s, size_t n)
{
    if (n > t->max_text_len) return -1;
    return edgellm_tok_strmap_find(&t->vocab, t->pool, t->text_off, t->text_len, s, n);
}
/* Build t->vocab and t->max_text_len from the texts already in t (text_off/text_len/pool).
 * false when out of memory. */
bool edgellm_tok_build_vocab_map(edgellm_tokenizer *t);

/* SPM: encode one raw-text fragment (no special tokens inside), appending ids to out.
 * add_prefix: prepend the dummy-prefix "▁". Fails only with EDGELLM_ERR_NOMEM. */
edgellm_status edgellm_tok_spm_encode(const edgellm_tokenizer *t, const char *text, size_t len,
                                      bool add_prefix, edgellm_tok_vec *out);

/* BPE: encode one raw-text fragment: pre-tokenize, byte-map, merge per word. NOMEM only. */
edgellm_status edgellm_tok_bpe_encode(const edgellm_tokenizer *t, const char *text, size_t len,
                                      edgellm_tok_vec *out);
/* BPE: read tokenizer.ggml.merges into t->merges; fill t->byte_token. */
edgellm_status edgellm_tok_bpe_load(edgellm_tokenizer *t, const edgellm_gguf *g, edgellm_error *err);
/* GPT-2 byte <-> unicode mapping (byte-level BPE alphabet). */
uint32_t edgellm_tok_byte_to_cp(uint8_t b);
int edgellm_tok_cp_to_byte(uint32_t cp);          /* -1 when cp is not in the alphabet */

/* Pre-tokenize text[0..len): writes the cut points into *cuts (a partition of the text:
 * piece i is [cuts[i], cuts[i+1]) in bytes; first 0, last len; n_cuts >= 1). Caller frees
 * *cuts with edgellm_free. NOMEM only. */
edgellm_status edgellm_pretokenize(edgellm_pretok pre, const char *text, size_t len, size_t **cuts,
                                   size_t *n_cuts);

#endif
