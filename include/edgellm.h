/*
 * edgellm.h — the embeddable core of edgellm (C11, on-device language models): load a GGUF
 * model, tokenize, decode, sample, generate. Link: libedgellm (`pkg-config edgellm`); the
 * tools (plan, quantize, eval, bench, synth, check) are in edgellm_tools.h.
 * Conventions: fallible calls return edgellm_status (EDGELLM_OK == 0) and fill an optional
 * edgellm_error naming the file and the problem. X_load / X_new pair with X_free (NULL-safe).
 * Shapes are outermost first in C order: logits [n_tokens][n_vocab]. Structs that may grow
 * start with `size` (as the caller compiled them; X_default_params() sets it, results need
 * {.size = sizeof r}; 0 is EDGELLM_ERR_MISUSE): the library touches only those bytes, so
 * older programs work with newer libraries. The library never prints, exits or aborts on
 * bad input (messages go to edgellm_log_set's callback). Threads: distinct objects on
 * distinct threads; one object on one thread at a time; a model is read-only after load
 * and may be shared by any number of contexts on any threads.
 */
#ifndef EDGELLM_H
#define EDGELLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* EDGELLM_BUILD: building the library; EDGELLM_STATIC: using the static one on Windows. */
#if defined(_WIN32) && !defined(EDGELLM_STATIC)
#  if defined(EDGELLM_BUILD)
#    define EDGELLM_API __declspec(dllexport)
#  else
#    define EDGELLM_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define EDGELLM_API __attribute__((visibility("default")))
#else
#  define EDGELLM_API
#endif

/* ---- version: semantic versioning; 0.x minor versions may change the ABI ---- */
#define EDGELLM_VERSION_MAJOR 0
#define EDGELLM_VERSION_MINOR 3
#define EDGELLM_VERSION_PATCH 0
#define EDGELLM_VERSION "0.3.0"
#define EDGELLM_VERSION_NUMBER (EDGELLM_VERSION_MAJOR * 10000 + EDGELLM_VERSION_MINOR * 100 + EDGELLM_VERSION_PATCH)

/* The library's version at run time (EDGELLM_VERSION: the header's). */
EDGELLM_API const char *edgellm_version(void);
EDGELLM_API int edgellm_version_number(void);

/* ---- status and errors: values are frozen (append, never renumber) ---- */
typedef enum {
    EDGELLM_OK              = 0,
    EDGELLM_ERR_IO          = 1,  /* open/read/write/mmap failed                          */
    EDGELLM_ERR_FORMAT      = 2,  /* the file is malformed or lies about its contents     */
    EDGELLM_ERR_NOMEM       = 3,  /* an allocation failed                                 */
    EDGELLM_ERR_MISUSE      = 4,  /* bad argument at the API boundary                     */
    EDGELLM_ERR_UNSUPPORTED = 5,  /* valid, but not something edgellm runs (arch, type)   */
    EDGELLM_ERR_CTX_FULL    = 6,  /* the KV cache has no room for the tokens              */
    EDGELLM_ERR_NUMERIC     = 7,  /* NaN or inf where a number was required              */
    EDGELLM_ERR_CANCELLED   = 8,  /* a callback or an abort asked to stop                 */
    EDGELLM_ERR_NOT_FOUND   = 9   /* a named key, tensor or item does not exist            */
} edgellm_status;

typedef struct {
    edgellm_status code;
    char msg[512];           /* NUL-terminated, "path: what is wrong" */
} edgellm_error;

/* "EDGELLM_ERR_FORMAT"..., never NULL. */
EDGELLM_API const char *edgellm_status_name(edgellm_status s);

/* ---- log: what the library would otherwise print (load summaries, warnings) ---- */
typedef enum { EDGELLM_LOG_ERROR = 0, EDGELLM_LOG_WARN = 1, EDGELLM_LOG_INFO = 2, EDGELLM_LOG_DEBUG = 3 } edgellm_log_level;
/* One message (no newline) on the thread that logs, one at a time under a lock (fn must not
 * call edgellm_log_set). _set: messages up to max_level to fn (NULL: none, the default);
 * thread-safe; once it returns, the previous fn is not called again. */
typedef void (*edgellm_log_fn)(edgellm_log_level level, const char *msg, void *user);
EDGELLM_API void edgellm_log_set(edgellm_log_fn fn, void *user, edgellm_log_level max_level);

/* ---- tensor types: ids 0..39 are ggml's (ggml-org/ggml:docs/gguf.md), stored as-is in
 * GGUF; edgellm's group-wise integer types and stored matrix layouts live at 1000+
 * (edgellm-only files) ---- */
typedef enum {
    EDGELLM_TYPE_F32 = 0, EDGELLM_TYPE_F16 = 1, EDGELLM_TYPE_Q4_0 = 2, EDGELLM_TYPE_Q4_1 = 3,
    EDGELLM_TYPE_Q5_0 = 6, EDGELLM_TYPE_Q5_1 = 7, EDGELLM_TYPE_Q8_0 = 8, EDGELLM_TYPE_Q8_1 = 9,
    EDGELLM_TYPE_Q2_K = 10, EDGELLM_TYPE_Q3_K = 11, EDGELLM_TYPE_Q4_K = 12, EDGELLM_TYPE_Q5_K = 13,
    EDGELLM_TYPE_Q6_K = 14, EDGELLM_TYPE_Q8_K = 15, EDGELLM_TYPE_IQ2_XXS = 16, EDGELLM_TYPE_IQ2_XS = 17,
    EDGELLM_TYPE_IQ3_XXS = 18, EDGELLM_TYPE_IQ1_S = 19, EDGELLM_TYPE_IQ4_NL = 20, EDGELLM_TYPE_IQ3_S = 21,
    EDGELLM_TYPE_IQ2_S = 22, EDGELLM_TYPE_IQ4_XS = 23, EDGELLM_TYPE_I8 = 24, EDGELLM_TYPE_I16 = 25,
    EDGELLM_TYPE_I32 = 26, EDGELLM_TYPE_I64 = 27, EDGELLM_TYPE_F64 = 28, EDGELLM_TYPE_IQ1_M = 29,
    EDGELLM_TYPE_BF16 = 30, EDGELLM_TYPE_TQ1_0 = 34, EDGELLM_TYPE_TQ2_0 = 35, EDGELLM_TYPE_MXFP4 = 39,
    EDGELLM_TYPE_GGML_COUNT = 40,
    EDGELLM_TYPE_I4_G64_SYM = 1000, EDGELLM_TYPE_I4_G128_SYM = 1001, EDGELLM_TYPE_I4_G256_SYM = 1002,
    EDGELLM_TYPE_I4_G64_ASYM = 1003, EDGELLM_TYPE_I4_G128_ASYM = 1004, EDGELLM_TYPE_I4_G256_ASYM = 1005,
    EDGELLM_TYPE_I8_G64_SYM = 1006, EDGELLM_TYPE_I8_G128_SYM = 1007, EDGELLM_TYPE_I8_G256_SYM = 1008,
    EDGELLM_TYPE_I8_G64_ASYM = 1009, EDGELLM_TYPE_I8_G128_ASYM = 1010, EDGELLM_TYPE_I8_G256_ASYM = 1011,
    /* a Q4_K matrix stored in 16-row groups (the q4_K_r16 layout, `quantize --layout`) */
    EDGELLM_TYPE_Q4_K_R16 = 1012
} edgellm_type;

/* "F32", "Q4_K", "I4_G128_ASYM"...; "?" for an unknown id. Never NULL. */
EDGELLM_API const char *edgellm_type_name(int type);

/* ---- model: a GGUF file mapped read-only; weights are views into the mapping ---- */
typedef struct edgellm_model edgellm_model;

typedef struct {
    size_t size;          /* sizeof(edgellm_model_params)                                 */
    int n_threads;        /* worker threads for compute; <= 0 means physical cores        */
} edgellm_model_params;

EDGELLM_API edgellm_model_params edgellm_model_default_params(void);

/* Load a GGUF file, mapped read-only and validated in full before any tensor is used
 * (params NULL: defaults). Statuses: _IO, _FORMAT (the problem named), _UNSUPPORTED
 * (architecture or tensor type), _NOMEM, _MISUSE. */
EDGELLM_API edgellm_status edgellm_model_load(const char *path, const edgellm_model_params *params,
                                              edgellm_model **out, edgellm_error *err);
/* The same from data[size] (borrowed until _free; 4-byte aligned, else _FORMAT), or from
 * size bytes (0: to the end) at offset (a multiple of 4) of an open fd, mapped (as Android's
 * AAsset_openFileDescriptor64 gives an APK asset; fd may be closed on return). name (may be
 * NULL) is used in messages. Matrices stored in the q4_K_r16 layout are used in place only
 * when data (or offset) is a multiple of 64 bytes; otherwise they are unpacked into owned
 * memory at load. */
EDGELLM_API edgellm_status edgellm_model_load_memory(const void *data, size_t size, const char *name,
                                                     const edgellm_model_params *params, edgellm_model **out,
                                                     edgellm_error *err);
EDGELLM_API edgellm_status edgellm_model_load_fd(int fd, uint64_t offset, uint64_t size, const char *name,
                                                 const edgellm_model_params *params, edgellm_model **out,
                                                 edgellm_error *err);
EDGELLM_API void edgellm_model_free(edgellm_model *m);

typedef struct {
    size_t size;              /* set by the caller: sizeof(edgellm_model_info)            */
    char   arch[32];          /* "llama" or "qwen2"                                       */
    int    n_vocab, n_ctx_train, n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff;   /* GGUF's */
    float  rope_freq_base, rms_eps;
    int    tied_output;       /* 1 when the output matrix is token_embd                   */
    uint64_t n_params, weight_bytes;   /* elements and bytes of all tensors               */
    /* RoPE scaling as llama.cpp applies rope.scaling.* and rope_freqs.weight: type 0 none,
     * 1 linear, 2 yarn; angles / factor; yarn's original context (else context_length); cos
     * and sin times attn_factor (yarn: 1 + 0.1 ln factor); per-pair divisors (0: none) */
    int    rope_scaling;
    float  rope_scaling_factor;
    int    rope_n_ctx_orig;
    float  rope_attn_factor;
    int    rope_n_freq_factors;
} edgellm_model_info;

/* Fill the first out->size bytes of *out. EDGELLM_ERR_MISUSE for NULL or size 0. */
EDGELLM_API edgellm_status edgellm_model_get_info(const edgellm_model *m, edgellm_model_info *out);

/* ---- tokenizer: SentencePiece ("llama") and byte-level BPE ("gpt2"), tokenizer.ggml.* ---- */
typedef struct edgellm_tokenizer edgellm_tokenizer;

/* Load only the tokenizer of a GGUF file (a vocab-only file works). */
EDGELLM_API edgellm_status edgellm_tokenizer_load(const char *path, edgellm_tokenizer **out, edgellm_error *err);
EDGELLM_API void edgellm_tokenizer_free(edgellm_tokenizer *t);

/* The model's tokenizer (borrowed); NULL when it has none (_text_: err says why). */
EDGELLM_API const edgellm_tokenizer *edgellm_model_tokenizer(const edgellm_model *m);
EDGELLM_API const edgellm_tokenizer *edgellm_model_text_tokenizer(const edgellm_model *m, edgellm_error *err);

/* Encode len bytes of UTF-8. _ADD_BOS: BOS when the vocab asks (tokenizer.ggml.add_bos_token);
 * _SPECIAL: control tokens ("<|im_end|>") in the text are parsed (llama.cpp's parse_special),
 * else plain text. Writes up to max_tokens ids and the count to *n_tokens; a larger count
 * is EDGELLM_ERR_MISUSE with *n_tokens the size needed. */
#define EDGELLM_TOKENIZE_ADD_BOS 1
#define EDGELLM_TOKENIZE_SPECIAL 2
EDGELLM_API edgellm_status edgellm_tokenize(const edgellm_tokenizer *t, const char *text, size_t len, int flags,
                                            int32_t *out, int max_tokens, int *n_tokens, edgellm_error *err);

/* A token's bytes ("▁" -> " ", byte tokens resolved, control ""): the length (may exceed
 * buf_size: nothing past it written), -1 for a bad id. _text: the raw GGUF string or NULL. */
EDGELLM_API int edgellm_token_to_piece(const edgellm_tokenizer *t, int32_t token, char *buf, int buf_size);
EDGELLM_API const char *edgellm_token_text(const edgellm_tokenizer *t, int32_t token);
EDGELLM_API int     edgellm_tokenizer_n_vocab(const edgellm_tokenizer *t);
EDGELLM_API int32_t edgellm_token_bos(const edgellm_tokenizer *t);   /* -1 when none */
EDGELLM_API int32_t edgellm_token_eos(const edgellm_tokenizer *t);   /* -1 when none */
/* 1 when the token ends a generation: EOS, EOT, "<|im_end|>", ... (llama.cpp's EOG set). */
EDGELLM_API int edgellm_token_is_eog(const edgellm_tokenizer *t, int32_t token);
EDGELLM_API const char *edgellm_tokenizer_model(const edgellm_tokenizer *t);   /* "llama" or "gpt2" */

/* ---- context: a KV cache of n_seq sequences x n_ctx cells, and scratch. One pass takes
 * tokens of several sequences (each weight read once); a sequence's logits do not depend on
 * the rest of the batch, the thread count or the split over calls, bit for bit. ---- */
typedef struct edgellm_ctx edgellm_ctx;

typedef struct {
    size_t size;     /* sizeof(edgellm_ctx_params)                                          */
    int n_ctx;       /* KV cells per sequence; <= 0: the model's context_length, at most 4096 */
    int n_threads;   /* <= 0: the model's; above the affinity mask's CPUs: a logged warning */
    int kv_type;     /* EDGELLM_TYPE_F32 (default), _F16, _Q8_0 (head_dim % 32 == 0)         */
    int n_seq;       /* sequences, 1 (default) .. 64; the cache holds n_seq x n_ctx cells   */
} edgellm_ctx_params;

EDGELLM_API edgellm_ctx_params edgellm_ctx_default_params(void);
EDGELLM_API edgellm_status edgellm_ctx_new(const edgellm_model *m, const edgellm_ctx_params *p,
                                           edgellm_ctx **out, edgellm_error *err);
/* Frees c; a generation job on it (edgellm_generate_async) must have been waited for. */
EDGELLM_API void edgellm_ctx_free(edgellm_ctx *c);
EDGELLM_API const edgellm_model *edgellm_ctx_model(const edgellm_ctx *c);
EDGELLM_API int  edgellm_ctx_n_ctx(const edgellm_ctx *c);    /* cells per sequence           */
EDGELLM_API int  edgellm_ctx_n_seq(const edgellm_ctx *c);
EDGELLM_API int  edgellm_ctx_n_threads(const edgellm_ctx *c); /* threads it runs (0: NULL)  */
/* Stop the decode or generation running on c, from any thread or a signal handler (a flag,
 * as sqlite3_interrupt): within a layer it returns EDGELLM_ERR_CANCELLED, adding nothing. */
EDGELLM_API void edgellm_ctx_abort(edgellm_ctx *c);

/* Sequences: seq 0 .. n_seq-1 (else EDGELLM_ERR_MISUSE); a cell holds a token at a position,
 * increasing from cell to cell. _tokens [n_past] is borrowed until the sequence changes;
 * _clear forgets it (-1: all). */
EDGELLM_API int edgellm_seq_n_past(const edgellm_ctx *c, int seq);    /* cells in use      */
EDGELLM_API int edgellm_seq_pos_max(const edgellm_ctx *c, int seq);   /* -1: empty         */
EDGELLM_API const int32_t *edgellm_seq_tokens(const edgellm_ctx *c, int seq);
EDGELLM_API edgellm_status edgellm_seq_clear(edgellm_ctx *c, int seq, edgellm_error *err);
/* Remove the cells at positions [p0, p1) (p1 < 0: to the end). Later cells keep their
 * positions (a gap, as llama.cpp's seq_rm): the next token goes after the last one. */
EDGELLM_API edgellm_status edgellm_seq_remove(edgellm_ctx *c, int seq, int p0, int p1, edgellm_error *err);
/* dst becomes a copy of src's first n cells (a shared system prompt): nothing recomputed. */
EDGELLM_API edgellm_status edgellm_seq_copy(edgellm_ctx *c, int src, int dst, int n, edgellm_error *err);

/* A batch: token i goes to sequence seq[i] at position pos[i]. */
typedef struct {
    size_t size;              /* sizeof(edgellm_batch)                                      */
    int n_tokens;
    const int32_t *tokens;    /* [n_tokens]                                                 */
    const int32_t *seq;       /* [n_tokens] sequences; NULL: all 0                          */
    const int32_t *pos;       /* [n_tokens] positions, increasing within a sequence and past
                                 what it holds; NULL: each sequence's next                   */
    float *logits;            /* NULL, or [n_tokens][n_vocab]: every token's logits          */
} edgellm_batch;

/* One causal pass (chunks of 64 tokens), each token appended to its sequence; each
 * sequence's last logits kept (edgellm_seq_logits). On error no sequence changes: _CTX_FULL
 * (beyond n_ctx, nothing computed), _MISUSE (id, seq, pos), _NUMERIC, _CANCELLED. */
EDGELLM_API edgellm_status edgellm_decode_batch(edgellm_ctx *c, const edgellm_batch *b, edgellm_error *err);
/* Logits [n_vocab] of seq's last token in the last batch that held it; NULL when none since
 * the sequence last changed otherwise. Borrowed until the next decode. */
EDGELLM_API const float *edgellm_seq_logits(const edgellm_ctx *c, int seq);

/* Sequence 0 as one stream: decode appends to it (logits_all as in edgellm_batch); _logits,
 * _n_past: its; _truncate keeps its first n_past cells; _reset clears every sequence. */
EDGELLM_API edgellm_status edgellm_decode(edgellm_ctx *c, const int32_t *tokens, int n_tokens,
                                          float *logits_all, edgellm_error *err);
EDGELLM_API const float *edgellm_ctx_logits(const edgellm_ctx *c);
EDGELLM_API int  edgellm_ctx_n_past(const edgellm_ctx *c);
EDGELLM_API edgellm_status edgellm_ctx_truncate(edgellm_ctx *c, int n_past, edgellm_error *err);
EDGELLM_API void edgellm_ctx_reset(edgellm_ctx *c);

/* ---- sampling: the repeat, frequency and presence penalties act on the distinct tokens of
 * the last repeat_last_n accepted (prompt and generated), in that order, as llama.cpp's
 * penalties sampler (ggml-org/llama.cpp:src/llama-sampler.cpp, llama_sampler_penalties_apply);
 * then top-k, temperature, top-p, min-p, draw ---- */
typedef struct {
    size_t   size;            /* sizeof(edgellm_sampler_params)                              */
    float    temperature;     /* <= 0: greedy (argmax after the penalties, lowest id on ties) */
    int      top_k;           /* 0: off                                                      */
    float    top_p;           /* 1.0: off; 0.0: the most likely token only                   */
    float    min_p;           /* 0.0: off                                                    */
    float    repeat_penalty;  /* 1.0: off; positive logits /= r, negative *= r               */
    int      repeat_last_n;   /* window of previous tokens the penalty looks at              */
    uint64_t seed;            /* the same seed reproduces the same run                       */
    float    frequency_penalty; /* 0.0: off; logit -= f * (occurrences in the repeat_last_n window) */
    float    presence_penalty;  /* 0.0: off; logit -= p once for a token in the window           */
} edgellm_sampler_params;

EDGELLM_API edgellm_sampler_params edgellm_sampler_default_params(void);

typedef struct edgellm_sampler edgellm_sampler;
EDGELLM_API edgellm_status edgellm_sampler_new(const edgellm_sampler_params *p, int n_vocab,
                                               edgellm_sampler **out, edgellm_error *err);
EDGELLM_API void edgellm_sampler_free(edgellm_sampler *s);
/* _sample: a token from logits [n_vocab] (_NUMERIC on NaN/inf); _accept: a token (prompt or
 * sampled) into the penalty history. */
EDGELLM_API edgellm_status edgellm_sampler_sample(edgellm_sampler *s, const float *logits,
                                                  int32_t *token, edgellm_error *err);
EDGELLM_API void edgellm_sampler_accept(edgellm_sampler *s, int32_t token);

/* ---- generation ---- */
/* Each token with the whole UTF-8 characters it completes (maybe none; bad bytes U+FFFD);
 * token -1 flushes held bytes at the end. Return non-zero to stop. */
typedef int (*edgellm_token_callback)(int32_t token, const char *piece, size_t piece_len, void *user);

/* Why generation stopped: an end-of-generation token, n_predict reached, n_ctx cells
 * reached, the callback asked, edgellm_ctx_abort / edgellm_job_abort. */
typedef enum { EDGELLM_STOP_EOS = 0, EDGELLM_STOP_N_PREDICT = 1, EDGELLM_STOP_CTX_FULL = 2,
               EDGELLM_STOP_CALLBACK = 3, EDGELLM_STOP_ABORT = 4 } edgellm_stop_reason;

typedef struct {
    size_t size;                /* sizeof(edgellm_generate_params)                         */
    int n_predict;              /* tokens to generate; < 0: until EOS or n_ctx             */
    int add_bos;                /* 1: BOS per the vocab when the sequence is empty; 0: never */
    edgellm_sampler_params sampling;
    int seq;                    /* sequence to generate in (default 0)                     */
    int append;                 /* 0: the sequence becomes the prompt, reusing the longest
                                   prefix it holds (prompt cache); 1: after it (next turn) */
    const int32_t *prompt_tokens; /* ids instead of text (prompt NULL)                     */
    int n_prompt_tokens;
} edgellm_generate_params;

EDGELLM_API edgellm_generate_params edgellm_generate_default_params(void);

typedef struct {
    size_t size;                /* set by the caller: sizeof(edgellm_generate_stats)        */
    int    n_prompt;            /* prompt tokens (with BOS)                                */
    int    n_generated;
    double prefill_ms;          /* prompt pass, until the first token's logits (TTFT)      */
    double decode_ms;           /* all single-token steps                                  */
    edgellm_stop_reason stop;
    int    n_cached;            /* prompt tokens already in the cache, not recomputed      */
} edgellm_generate_stats;

/* The prompt (text, special tokens not parsed; or prompt_tokens) into p->seq as p->append
 * says, what is not cached prefilled in one pass, then a token per step to cb (may be NULL).
 * A prompt that does not fit: _CTX_FULL before any compute; later EDGELLM_STOP_CTX_FULL. */
EDGELLM_API edgellm_status edgellm_generate(edgellm_ctx *c, const char *prompt, const edgellm_generate_params *p,
                                            edgellm_token_callback cb, void *user,
                                            edgellm_generate_stats *stats, edgellm_error *err);

/* The same on a worker thread (prompt and p copied; the callbacks run there, done last).
 * One job per context; until it is waited for, only abort and edgellm_job_* may use c. */
typedef struct edgellm_job edgellm_job;
typedef void (*edgellm_done_callback)(edgellm_status status, const edgellm_generate_stats *stats,
                                      const edgellm_error *err, void *user);
EDGELLM_API edgellm_status edgellm_generate_async(edgellm_ctx *c, const char *prompt,
                                                  const edgellm_generate_params *p, edgellm_token_callback cb,
                                                  edgellm_done_callback done, void *user, edgellm_job **out,
                                                  edgellm_error *err);
/* Any thread: _done is 1 once done has returned; _abort stops it (EDGELLM_ERR_MISUSE once
 * finished); _wait (once) returns its status, stats and error; _free aborts, waits, frees. */
EDGELLM_API int edgellm_job_done(const edgellm_job *j);
EDGELLM_API edgellm_status edgellm_job_abort(edgellm_job *j, edgellm_error *err);
EDGELLM_API edgellm_status edgellm_job_wait(edgellm_job *j, edgellm_generate_stats *stats, edgellm_error *err);
EDGELLM_API void edgellm_job_free(edgellm_job *j);

/* Continuous batching: prompts[n_prompts] with up to n_seq decoding together, one token
 * each per pass, a finished one replaced at once; each as edgellm_generate with p (append
 * 0, same seed: the same tokens as alone). stats: NULL or [n_prompts] with sizes set. */
typedef int (*edgellm_batch_callback)(int index, int32_t token, const char *piece, size_t piece_len, void *user);
EDGELLM_API edgellm_status edgellm_generate_batch(edgellm_ctx *c, const char *const *prompts, int n_prompts,
                                                  const edgellm_generate_params *p, edgellm_batch_callback cb,
                                                  void *user, edgellm_generate_stats *stats, edgellm_error *err);
/* The same with each prompt's own parameters: params[i] (n_predict, sampling, add_bos,
 * prompt_tokens when prompts[i] is NULL; seq and append are ignored) for prompts[i]. */
EDGELLM_API edgellm_status edgellm_generate_batch_each(edgellm_ctx *c, const char *const *prompts,
                                                       const edgellm_generate_params *const *params, int n_prompts,
                                                       edgellm_batch_callback cb, void *user,
                                                       edgellm_generate_stats *stats, edgellm_error *err);

/* ---- speculative decoding (Leviathan et al. 2023, arXiv:2211.17192; Chen et al. 2023,
 * arXiv:2302.01318): greedy gives edgellm_generate's tokens, always; sampling keeps draft x
 * ~ q with probability min(1, p(x)/q(x)), else draws from norm(max(0, p - q)), plus a bonus
 * from p when all are kept: edgellm_generate's distribution, not its draws for a seed. ---- */
typedef struct {
    size_t size;      /* sizeof(edgellm_spec_params)                                          */
    int draft_max;    /* draft tokens per pass at most (16)                                    */
    int draft_min;    /* a draft shorter than this is not used (0)                             */
    int lookup;       /* prompt lookup: what followed the latest earlier match of the last
                         N..1 tokens in prompt + output; 0: off (0)                          */
    int adaptive;     /* 1: length from measured acceptance and pass times (0 when it does
                         not pay, probed now and then); 0: always draft_max (1)              */
} edgellm_spec_params;

EDGELLM_API edgellm_spec_params edgellm_spec_default_params(void);

typedef struct {
    size_t size;        /* set by the caller: sizeof(edgellm_spec_stats)                      */
    int    n_drafted;   /* draft tokens proposed (draft model and lookup)                      */
    int    n_accepted;  /* of them kept; acceptance = n_accepted / n_drafted                  */
    int    n_lookup;    /* of n_drafted, from prompt lookup                                    */
    int    n_passes;    /* target passes after the prompt's (each gives 1 + kept tokens)       */
    int    n_draft_passes; /* passes that checked at least one draft token                    */
    double draft_ms;    /* drafting: the draft model's passes and sampling, lookups           */
    double verify_ms;   /* the target's passes                                                */
    double pass1_ms;    /* mean one-token target pass (a plain decoding step), ms; 0: none ran */
    int    n_draft_model_passes; /* the draft model's passes (catch-ups and draft steps)      */
    int    n_draft_model_tokens; /* tokens they processed                                     */
} edgellm_spec_stats;

/* edgellm_generate on c with drafts from prompt lookup (tried first) and/or `draft`'s model
 * (its sequence 0; NULL: lookup only), which needs c's vocabulary (else _UNSUPPORTED). sp,
 * spec_stats may be NULL. Statuses, stats, callbacks as edgellm_generate. */
EDGELLM_API edgellm_status edgellm_generate_speculative(edgellm_ctx *c, edgellm_ctx *draft, const char *prompt,
                                                        const edgellm_generate_params *p, const edgellm_spec_params *sp,
                                                        edgellm_token_callback cb, void *user, edgellm_generate_stats *stats,
                                                        edgellm_spec_stats *spec_stats, edgellm_error *err);

/* ---- diagnostics: kernels in use (snprintf-style), whether an architecture runs, names ---- */
EDGELLM_API int edgellm_kernels_describe(char *buf, size_t size);
EDGELLM_API int edgellm_arch_supported(const char *arch);
EDGELLM_API const char *edgellm_arch_names(void);

/* ---- chat templates: tokenizer.chat_template (Jinja) rendered as transformers'
 * apply_chat_template does (Jinja2 3.1, trim_blocks, lstrip_blocks, its tojson and
 * raise_exception; messages, add_generation_prompt, bos_token, eos_token, strftime_now) ---- */
typedef struct { const char *role; const char *content; } edgellm_chat_message;   /* UTF-8 */
typedef struct {
    size_t size;                  /* sizeof(edgellm_chat_params)                             */
    int add_generation_prompt;    /* 1 (default): end with the assistant turn's opening       */
    const char *bos_token;        /* texts of bos_token / eos_token in the template; NULL: "" */
    const char *eos_token;
    const char *date;             /* strftime_now's clock "YYYY-MM-DD[ HH:MM[:SS]]"; NULL: now */
} edgellm_chat_params;
EDGELLM_API edgellm_chat_params edgellm_chat_default_params(void);
typedef struct edgellm_chat_text edgellm_chat_text;   /* a rendered prompt */
/* Render template_text over msgs[n_msgs] (p may be NULL). Errors say "NAME:LINE:COL: ...":
 * _MISUSE (bad message, raise_exception), _FORMAT (syntax, rendering), _UNSUPPORTED (a
 * construct or a limit on output, nesting, steps), _NOMEM. Thread-safe. */
EDGELLM_API edgellm_status edgellm_chat_template_render(const char *template_text, const char *template_name,
                                                        const edgellm_chat_message *msgs, int n_msgs,
                                                        const edgellm_chat_params *p, edgellm_chat_text **out,
                                                        edgellm_error *err);
/* The text (*len bytes, NUL-terminated, borrowed), and the sorted byte ranges [begin, end)
 * that came from the messages (no special token may be read inside or across them). */
EDGELLM_API const char *edgellm_chat_text_str(const edgellm_chat_text *t, size_t *len);
EDGELLM_API int  edgellm_chat_text_n_spans(const edgellm_chat_text *t);
EDGELLM_API void edgellm_chat_text_span(const edgellm_chat_text *t, int i, size_t *begin, size_t *end);
EDGELLM_API void edgellm_chat_text_free(edgellm_chat_text *t);
/* Official templates by name: chatml, llama2, llama3, mistral, phi3, gemma, zephyr; NULL. */
EDGELLM_API const char *edgellm_chat_template_builtin(const char *name);
/* Copies tokenizer.chat_template into buf[buf_size] (cut to fit); its length, -1: none. */
EDGELLM_API int edgellm_model_chat_template(const edgellm_model *m, char *buf, int buf_size);
/* msgs rendered with template_text (NULL: the model's; _NOT_FOUND when none) and tokenized,
 * the template's special tokens parsed, the messages' never. Above max_tokens the oldest
 * turns after a system message are dropped whole (*n_dropped, may be NULL); _CTX_FULL when
 * the system message and the last turn alone do not fit. */
EDGELLM_API edgellm_status edgellm_chat_tokenize(const edgellm_model *m, const char *template_text,
                                                 const edgellm_chat_message *msgs, int n_msgs,
                                                 const edgellm_chat_params *p, int32_t *out, int max_tokens,
                                                 int *n_tokens, int *n_dropped, edgellm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* EDGELLM_H */
