/*
 * edgellm.h — the one public header of edgellm, a C11 toolkit for running language
 * models on the device itself (phones, single-board computers, laptops without a GPU).
 *
 * Conventions (see README.md):
 *  - Fallible calls return edgellm_status (EDGELLM_OK == 0) and fill an optional
 *    edgellm_error whose message names the file and the problem. Passing NULL for the
 *    error is allowed.
 *  - Objects come from X_load / X_new and are released by the matching X_free (NULL-safe).
 *  - Shapes are written outermost first in C order: logits [n_tokens][n_vocab].
 *  - Nothing in the library prints, exits or aborts on bad input.
 *  - Thread safety: distinct objects may be used from distinct threads; one object must
 *    not be used from two threads at once. A model may be shared (read-only) by contexts.
 */
#ifndef EDGELLM_H
#define EDGELLM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define EDGELLM_API __declspec(dllexport)
#elif defined(__GNUC__)
#  define EDGELLM_API __attribute__((visibility("default")))
#else
#  define EDGELLM_API
#endif

#define EDGELLM_VERSION "0.2.1"

/* ------------------------------------------------------------------------------------
 * Status and errors. Values are frozen: append, never renumber.
 * ---------------------------------------------------------------------------------- */
typedef enum {
    EDGELLM_OK              = 0,
    EDGELLM_ERR_IO          = 1,  /* open/read/write/mmap failed                          */
    EDGELLM_ERR_FORMAT      = 2,  /* the file is malformed or lies about its contents     */
    EDGELLM_ERR_NOMEM       = 3,  /* an allocation failed                                 */
    EDGELLM_ERR_MISUSE      = 4,  /* bad argument at the API boundary                     */
    EDGELLM_ERR_UNSUPPORTED = 5,  /* valid, but not something edgellm runs (arch, type)   */
    EDGELLM_ERR_CTX_FULL    = 6,  /* the KV cache has no room for the tokens              */
    EDGELLM_ERR_NUMERIC     = 7,  /* NaN or inf where a number was required              */
    EDGELLM_ERR_CANCELLED   = 8,  /* a callback asked to stop                             */
    EDGELLM_ERR_NOT_FOUND   = 9   /* a named key, tensor or item does not exist            */
} edgellm_status;

typedef struct {
    edgellm_status code;
    char msg[512];           /* NUL-terminated, "path: what is wrong" */
} edgellm_error;

/* Short constant name of a status ("EDGELLM_ERR_FORMAT"). Never NULL. */
EDGELLM_API const char *edgellm_status_name(edgellm_status s);

/* Remove the temporary files edgellm is writing at this moment (a GGUF being written under
 * "OUT.tmp.PID" before its rename, eval save-logits' "OUT.tmp", eval sweep's scratch folder
 * and the quantized models in it). Async-signal-safe (only unlink() and rmdir()): meant for
 * an application's SIGINT / SIGTERM handler, before it re-raises the signal; the edgellm CLI
 * does exactly that. Without it, a process killed mid-write leaves those files behind (the
 * target path itself is never half-written). */
EDGELLM_API void edgellm_remove_temp_files(void);

/* ------------------------------------------------------------------------------------
 * Tensor types. Ids 0..39 are ggml's (ggml-org/ggml docs/gguf.md) and are stored as-is
 * in GGUF. edgellm's own group-wise types live at 1000+ (outside ggml's range).
 * ---------------------------------------------------------------------------------- */
typedef enum {
    EDGELLM_TYPE_F32  = 0,
    EDGELLM_TYPE_F16  = 1,
    EDGELLM_TYPE_Q4_0 = 2,
    EDGELLM_TYPE_Q4_1 = 3,
    EDGELLM_TYPE_Q5_0 = 6,
    EDGELLM_TYPE_Q5_1 = 7,
    EDGELLM_TYPE_Q8_0 = 8,
    EDGELLM_TYPE_Q8_1 = 9,
    EDGELLM_TYPE_Q2_K = 10,
    EDGELLM_TYPE_Q3_K = 11,
    EDGELLM_TYPE_Q4_K = 12,
    EDGELLM_TYPE_Q5_K = 13,
    EDGELLM_TYPE_Q6_K = 14,
    EDGELLM_TYPE_Q8_K = 15,
    EDGELLM_TYPE_IQ2_XXS = 16,
    EDGELLM_TYPE_IQ2_XS  = 17,
    EDGELLM_TYPE_IQ3_XXS = 18,
    EDGELLM_TYPE_IQ1_S   = 19,
    EDGELLM_TYPE_IQ4_NL  = 20,
    EDGELLM_TYPE_IQ3_S   = 21,
    EDGELLM_TYPE_IQ2_S   = 22,
    EDGELLM_TYPE_IQ4_XS  = 23,
    EDGELLM_TYPE_I8   = 24,
    EDGELLM_TYPE_I16  = 25,
    EDGELLM_TYPE_I32  = 26,
    EDGELLM_TYPE_I64  = 27,
    EDGELLM_TYPE_F64  = 28,
    EDGELLM_TYPE_IQ1_M = 29,
    EDGELLM_TYPE_BF16 = 30,
    EDGELLM_TYPE_TQ1_0 = 34,
    EDGELLM_TYPE_TQ2_0 = 35,
    EDGELLM_TYPE_MXFP4 = 39,
    EDGELLM_TYPE_GGML_COUNT = 40,
    /* edgellm group-wise integer types (edgellm-only files) */
    EDGELLM_TYPE_I4_G64_SYM   = 1000,
    EDGELLM_TYPE_I4_G128_SYM  = 1001,
    EDGELLM_TYPE_I4_G256_SYM  = 1002,
    EDGELLM_TYPE_I4_G64_ASYM  = 1003,
    EDGELLM_TYPE_I4_G128_ASYM = 1004,
    EDGELLM_TYPE_I4_G256_ASYM = 1005,
    EDGELLM_TYPE_I8_G64_SYM   = 1006,
    EDGELLM_TYPE_I8_G128_SYM  = 1007,
    EDGELLM_TYPE_I8_G256_SYM  = 1008,
    EDGELLM_TYPE_I8_G64_ASYM  = 1009,
    EDGELLM_TYPE_I8_G128_ASYM = 1010,
    EDGELLM_TYPE_I8_G256_ASYM = 1011
} edgellm_type;

/* "F32", "Q4_K", "I4_G128_ASYM"...; "?" for an unknown id. Never NULL. */
EDGELLM_API const char *edgellm_type_name(int type);

/* ------------------------------------------------------------------------------------
 * Model: a GGUF file mapped read-only. Weights are views into the mapping.
 * ---------------------------------------------------------------------------------- */
typedef struct edgellm_model edgellm_model;

typedef struct {
    int n_threads;        /* worker threads for compute; <= 0 means physical cores */
} edgellm_model_params;

EDGELLM_API edgellm_model_params edgellm_model_default_params(void);

/* Load a model from a GGUF file. The file is mmap'd read-only and validated in full
 * before any tensor is used. Statuses: EDGELLM_ERR_IO, EDGELLM_ERR_FORMAT (named
 * problem), EDGELLM_ERR_UNSUPPORTED (architecture or tensor type), EDGELLM_ERR_NOMEM.
 * Free with edgellm_model_free. */
EDGELLM_API edgellm_status edgellm_model_load(const char *path, const edgellm_model_params *params,
                                              edgellm_model **out, edgellm_error *err);
EDGELLM_API void edgellm_model_free(edgellm_model *m);

typedef struct {
    char   arch[32];          /* "llama" or "qwen2"                                  */
    int    n_vocab;
    int    n_ctx_train;       /* context_length from metadata                        */
    int    n_embd;
    int    n_layer;
    int    n_head;
    int    n_head_kv;
    int    head_dim;          /* n_embd / n_head                                     */
    int    n_ff;
    float  rope_freq_base;
    float  rms_eps;
    int    tied_output;       /* 1 when the output matrix is token_embd              */
    uint64_t n_params;        /* parameters in all tensors                           */
    uint64_t weight_bytes;    /* bytes of all tensor data                            */
} edgellm_model_info;

EDGELLM_API void edgellm_model_get_info(const edgellm_model *m, edgellm_model_info *out);

/* ------------------------------------------------------------------------------------
 * Tokenizer: SentencePiece-style ("llama") and byte-level BPE ("gpt2") from the
 * tokenizer.ggml.* metadata of a GGUF file.
 * ---------------------------------------------------------------------------------- */
typedef struct edgellm_tokenizer edgellm_tokenizer;

/* Load only the tokenizer of a GGUF file (a vocab-only file works). Free with
 * edgellm_tokenizer_free. */
EDGELLM_API edgellm_status edgellm_tokenizer_load(const char *path, edgellm_tokenizer **out,
                                                  edgellm_error *err);
EDGELLM_API void edgellm_tokenizer_free(edgellm_tokenizer *t);

/* The model's tokenizer: borrowed, valid while the model lives. NULL when the file has no
 * tokenizer edgellm reads (no tokenizer.ggml.model, or a type other than llama/gpt2): the
 * model then runs on token ids only. */
EDGELLM_API const edgellm_tokenizer *edgellm_model_tokenizer(const edgellm_model *m);

/* The same for work on text: NULL with EDGELLM_ERR_UNSUPPORTED in err, naming the file and
 * why it has no tokenizer, where edgellm_model_tokenizer gives NULL. */
EDGELLM_API const edgellm_tokenizer *edgellm_model_text_tokenizer(const edgellm_model *m, edgellm_error *err);

/* Encode len bytes of UTF-8 text into token ids. add_bos: prepend BOS when the vocab asks
 * for it (tokenizer.ggml.add_bos_token, default per model type); add_special = 0 never adds.
 * Writes at most max_tokens ids to out and the full count to *n_tokens; when the count
 * exceeds max_tokens returns EDGELLM_ERR_MISUSE with *n_tokens set to the needed size. */
EDGELLM_API edgellm_status edgellm_tokenize(const edgellm_tokenizer *t, const char *text, size_t len,
                                            int add_special, int32_t *out, int max_tokens,
                                            int *n_tokens, edgellm_error *err);

/* Bytes a token decodes to (byte-fallback and byte-level BPE resolved, "▁" -> " ").
 * Returns the number of bytes the piece needs (may exceed buf_size; then nothing beyond
 * buf_size is written), or -1 for an id out of range. Control tokens decode to "". */
EDGELLM_API int edgellm_token_to_piece(const edgellm_tokenizer *t, int32_t token, char *buf, int buf_size);

/* Raw vocabulary string of a token (as stored in GGUF), borrowed; NULL if out of range. */
EDGELLM_API const char *edgellm_token_text(const edgellm_tokenizer *t, int32_t token);

EDGELLM_API int     edgellm_tokenizer_n_vocab(const edgellm_tokenizer *t);
EDGELLM_API int32_t edgellm_token_bos(const edgellm_tokenizer *t);   /* -1 when none */
EDGELLM_API int32_t edgellm_token_eos(const edgellm_tokenizer *t);   /* -1 when none */
/* "llama" or "gpt2" */
EDGELLM_API const char *edgellm_tokenizer_model(const edgellm_tokenizer *t);

/* ------------------------------------------------------------------------------------
 * Context: KV cache + scratch buffers for one sequence.
 * ---------------------------------------------------------------------------------- */
typedef struct edgellm_ctx edgellm_ctx;

typedef struct {
    int n_ctx;       /* KV cache positions; <= 0: the model's context_length, capped at 4096 */
    int n_threads;   /* <= 0: the model params' value                                       */
    int kv_type;     /* element type of the K and V cache rows: EDGELLM_TYPE_F32 (default, 4
                        bytes per element), EDGELLM_TYPE_F16 (2 bytes: half the cache; keys
                        and values rounded to IEEE half when written, attention reads them
                        back exactly) or EDGELLM_TYPE_Q8_0 (34 bytes per 32 elements, llama.cpp's
                        block; rows quantized when written, each head's row dequantized when
                        attended; needs head_dim a multiple of 32, else
                        EDGELLM_ERR_UNSUPPORTED). edgellm_ctx_new returns
                        EDGELLM_ERR_UNSUPPORTED for another known type, EDGELLM_ERR_MISUSE for
                        an unknown id                                                      */
} edgellm_ctx_params;

EDGELLM_API edgellm_ctx_params edgellm_ctx_default_params(void);
EDGELLM_API edgellm_status edgellm_ctx_new(const edgellm_model *m, const edgellm_ctx_params *p,
                                           edgellm_ctx **out, edgellm_error *err);
EDGELLM_API void edgellm_ctx_free(edgellm_ctx *c);
EDGELLM_API int  edgellm_ctx_n_ctx(const edgellm_ctx *c);
EDGELLM_API int  edgellm_ctx_n_past(const edgellm_ctx *c);     /* positions already in the cache */
EDGELLM_API void edgellm_ctx_reset(edgellm_ctx *c);            /* forget the sequence           */
/* Roll the sequence back to its first n_past positions: the cache keeps positions
 * 0 .. n_past-1 and the next edgellm_decode continues at position n_past (the later rows
 * are overwritten, never read). For scoring several continuations of one prefix: decode the
 * prefix once, then per continuation truncate to the prefix length and decode it. A decode
 * after a truncation gives the same logits, bit for bit, as the same tokens decoded after
 * decoding just the kept prefix (each position's result does not depend on how tokens were
 * split over calls). n_past 0 is edgellm_ctx_reset. The last logits are dropped
 * (edgellm_ctx_logits returns NULL until the next decode).
 * Statuses: EDGELLM_ERR_MISUSE when c is NULL or n_past is outside 0 .. edgellm_ctx_n_past(c)
 * (nothing changed). Not thread-safe: no other call on c at the same time. */
EDGELLM_API edgellm_status edgellm_ctx_truncate(edgellm_ctx *c, int n_past, edgellm_error *err);
EDGELLM_API const edgellm_model *edgellm_ctx_model(const edgellm_ctx *c);

/* Run n_tokens tokens through the model in one causal pass at positions n_past ..
 * n_past+n_tokens-1 (prefill when n_tokens > 1, decode when 1), appending to the KV cache.
 * logits_all: NULL, or [n_tokens][n_vocab] floats to receive every position's logits.
 * The last position's logits are always kept (edgellm_ctx_logits).
 * Statuses: EDGELLM_ERR_CTX_FULL (nothing computed), EDGELLM_ERR_MISUSE (token id out of
 * range), EDGELLM_ERR_NUMERIC (NaN/inf in the logits). */
EDGELLM_API edgellm_status edgellm_decode(edgellm_ctx *c, const int32_t *tokens, int n_tokens,
                                          float *logits_all, edgellm_error *err);

/* Logits of the last decoded position: [n_vocab], borrowed until the next edgellm_decode. */
EDGELLM_API const float *edgellm_ctx_logits(const edgellm_ctx *c);

/* ------------------------------------------------------------------------------------
 * Sampling.
 * ---------------------------------------------------------------------------------- */
typedef struct {
    float    temperature;     /* <= 0: greedy (argmax after the repetition penalty, lowest id on ties) */
    int      top_k;           /* 0: off                                                 */
    float    top_p;           /* 1.0: off                                               */
    float    min_p;           /* 0.0: off                                               */
    float    repeat_penalty;  /* 1.0: off; positive logits /= r, negative *= r          */
    int      repeat_last_n;   /* window of previous tokens the penalty looks at         */
    uint64_t seed;            /* the same seed reproduces the same run                  */
} edgellm_sampler_params;

EDGELLM_API edgellm_sampler_params edgellm_sampler_default_params(void);

typedef struct edgellm_sampler edgellm_sampler;
EDGELLM_API edgellm_status edgellm_sampler_new(const edgellm_sampler_params *p, int n_vocab,
                                               edgellm_sampler **out, edgellm_error *err);
EDGELLM_API void edgellm_sampler_free(edgellm_sampler *s);
/* Choose a token from logits [n_vocab]. EDGELLM_ERR_NUMERIC on NaN/inf logits. */
EDGELLM_API edgellm_status edgellm_sampler_sample(edgellm_sampler *s, const float *logits,
                                                  int32_t *token, edgellm_error *err);
/* Record a token in the repetition-penalty history (prompt tokens and sampled ones). */
EDGELLM_API void edgellm_sampler_accept(edgellm_sampler *s, int32_t token);

/* ------------------------------------------------------------------------------------
 * Generation loop.
 * ---------------------------------------------------------------------------------- */
/* Called for every generated token with its decoded bytes. Return non-zero to stop. */
typedef int (*edgellm_token_callback)(int32_t token, const char *piece, size_t piece_len, void *user);

typedef enum {
    EDGELLM_STOP_EOS = 0,       /* the model produced end-of-sequence                   */
    EDGELLM_STOP_N_PREDICT = 1, /* -n tokens were generated                             */
    EDGELLM_STOP_CTX_FULL = 2,  /* the KV cache reached n_ctx                           */
    EDGELLM_STOP_CALLBACK = 3   /* the callback asked to stop                            */
} edgellm_stop_reason;

typedef struct {
    int n_predict;                    /* tokens to generate; < 0: until EOS or n_ctx       */
    int add_bos;                      /* 1: BOS per the vocab; 0: never                    */
    edgellm_sampler_params sampling;
} edgellm_generate_params;

EDGELLM_API edgellm_generate_params edgellm_generate_default_params(void);

typedef struct {
    int    n_prompt;                  /* prompt tokens (with BOS)                           */
    int    n_generated;
    double prefill_ms;                /* prompt pass, until the first token's logits       */
    double decode_ms;                 /* all single-token steps                            */
    edgellm_stop_reason stop;
} edgellm_generate_stats;

/* Tokenize prompt, prefill it in one pass, then sample and decode one token per step,
 * calling cb for each generated token. The context is reset first. A prompt that does not
 * fit n_ctx is refused (EDGELLM_ERR_CTX_FULL) before any compute. The prompt itself is not
 * passed to cb; EOS ends the run without a callback. An empty prompt starts from BOS alone
 * (error without a BOS token), and for SentencePiece vocabularies its first piece loses the
 * leading space (as SentencePiece decoding does). Details: src/runtime/generate.c. */
EDGELLM_API edgellm_status edgellm_generate(edgellm_ctx *c, const char *prompt,
                                            const edgellm_generate_params *p,
                                            edgellm_token_callback cb, void *user,
                                            edgellm_generate_stats *stats, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Import.
 * ---------------------------------------------------------------------------------- */
/* Convert a llama2.c checkpoint (legacy 7-int32 header or version-1 "ak42" header) and
 * its tokenizer.bin into a GGUF v3 file (F32 weights, SentencePiece metadata). */
EDGELLM_API edgellm_status edgellm_convert_llama2c(const char *model_path, const char *tokenizer_path,
                                                   const char *out_path, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Planning: will a model fit on a device, how fast will it run, at which precision
 * (`edgellm plan`). Pure arithmetic over shapes: a GGUF file's metadata is read, its
 * weights never. Units: *_bytes are bytes; GiB = 2^30 bytes and GB = 1e9 bytes are kept
 * distinct; bandwidth in GB/s (1e9 bytes/s); speeds in tokens per second.
 * All structs are plain data (no pointers to free). Functions are thread-safe except
 * edgellm_plan_host_device, which measures the machine and should run alone.
 * ---------------------------------------------------------------------------------- */
#define EDGELLM_PLAN_MAX_CANDIDATES 16

/* A model's shape. From the catalogue, a GGUF file or explicit numbers. */
typedef struct {
    char     name[64];        /* catalogue name ("llama-2-7b") or file name              */
    char     arch[32];        /* "llama", "qwen2", "phi3", "gemma2"...                   */
    char     source[256];     /* where the numbers come from                             */
    int      n_layer;
    int      n_embd;
    int      n_head;
    int      n_head_kv;
    int      head_dim;        /* per head; n_embd / n_head unless the config says else    */
    int      n_ff;
    int      n_vocab;
    int      n_ctx_train;     /* trained context length; 0: unknown                      */
    int      tied_embeddings; /* 1: the output matrix is token_embd                      */
    int      qkv_bias;        /* 1: attn_q/k/v carry biases (Qwen2)                      */
    int      fused_qkv;       /* 1: one attn_qkv matrix per layer (Phi-3)                */
    int      extra_norms;     /* extra [n_embd] norm vectors per layer (Gemma-2: 2)      */
    uint64_t n_params;        /* parameters in all tensors (embedding included)          */
    int      from_file;       /* 1: read from a GGUF file                                */
    char     file_label[24];  /* the file's precision ("Q4_K_M", "F32"...)               */
    uint64_t file_weight_bytes; /* sum of the file's tensor sizes                        */
    uint64_t file_bytes;      /* size of the whole file                                  */
} edgellm_plan_model;

/* A device. Figures of the built-in catalogue carry their sources in plan_catalog.c. */
typedef struct {
    char     name[48];        /* "pi5-8gb"                                               */
    char     description[96];
    char     source[256];
    uint64_t ram_bytes;       /* installed RAM                                           */
    uint64_t usable_bytes;    /* what one app can realistically use before the OS kills it */
    double   bw_gbps;         /* memory read bandwidth, GB/s                             */
    int      bw_measured;     /* 1: measured streaming read; 0: theoretical peak         */
    int      n_big_cores;     /* cores decode runs on (all cores when not big.LITTLE)    */
    int      n_little_cores;
    double   gflops_big;      /* assumed sustained GFLOP/s per big core, quantized matmul */
    double   gflops_little;
    int      has_npu;         /* an NPU exists (edgellm runs on the CPU regardless)      */
} edgellm_plan_device;

/* Quality cost of a precision relative to the full-precision model. NaN: unknown. */
typedef struct {
    char   type[24];          /* candidate name, "Q4_K_M"                                */
    double delta_ppl_pct;     /* perplexity increase, percent                            */
    double kld;               /* mean KL divergence from the reference, nats             */
    double top1_pct;          /* same top token as the reference, percent                */
    char   source[200];       /* "edgellm eval: FILE" or the published source            */
} edgellm_plan_quality;

typedef enum {
    EDGELLM_PLAN_FITS   = 0,  /* total <= usable x (1 - safety margin)                   */
    EDGELLM_PLAN_TIGHT  = 1,  /* fits the usable memory, but inside the safety margin    */
    EDGELLM_PLAN_NO_FIT = 2   /* more than the usable memory                             */
} edgellm_plan_verdict;

typedef enum { EDGELLM_PLAN_REALTIME = 0, EDGELLM_PLAN_OFFLINE = 1 } edgellm_plan_scenario;

/* One candidate precision on the device. */
typedef struct {
    char     type[24];        /* "Q4_K_M", "F16", "I4_G128_SYM", or the file's own label  */
    int      weight_exact;    /* 1: sum of the file's tensor sizes; 0: from bits/weight   */
    double   bpw;             /* weight bits per parameter over all tensors              */
    uint64_t weight_bytes;
    uint64_t kv_bytes;        /* 2 * n_layer * n_ctx * n_head_kv * head_dim * bytes(kv) * batch */
    uint64_t scratch_bytes;   /* activations, attention scores, logits                   */
    uint64_t overhead_bytes;  /* runtime and tokenizer tables                            */
    uint64_t total_bytes;
    uint64_t budget_bytes;    /* usable x (1 - safety margin)                            */
    int64_t  left_bytes;      /* budget - total; negative when over                      */
    edgellm_plan_verdict verdict;
    int      max_ctx;         /* largest n_ctx within the budget (<= n_ctx_train); 0: none */
    uint64_t read_bytes_per_token; /* streamed per decode step at n_ctx (weights + KV)   */
    double   decode_tps;      /* per sequence, with the context full (n_ctx)             */
    double   decode_tps_total;/* all `batch` sequences together                          */
    double   prefill_tps;     /* prompt processing, 512-token prompt (pp512)             */
    double   ttft_ms;         /* prefill of prompt_tokens: time to the first token       */
    edgellm_plan_quality quality;
    int      needs_original;  /* 1: more bits than the (already quantized) model file: it
                                 cannot be made from that file, only from the original
                                 weights; never recommended                              */
} edgellm_plan_row;

typedef struct {
    const char *model;        /* catalogue name or path of a .gguf; NULL: "llama-3.2-3b"  */
    const edgellm_plan_model *shape;  /* explicit model (wins over `model`); borrowed     */
    const char *device;       /* catalogue name, "host", or a name in extra_devices;
                                 NULL: "phone-mid"                                       */
    const edgellm_plan_device *extra_devices;  /* user devices (JSON file), borrowed     */
    int    n_extra_devices;
    int    n_ctx;             /* 0: min(n_ctx_train, 4096); < 0: EDGELLM_ERR_MISUSE       */
    int    kv_type;           /* EDGELLM_TYPE_F16 (default), EDGELLM_TYPE_Q8_0 or _F32    */
    int    batch;             /* sequences decoded together, >= 1 (default 1)            */
    int    scenario;          /* edgellm_plan_scenario listed first (both are computed)  */
    double latency_ms;        /* real-time: first-token budget, default 200 ms           */
    double reading_tps;       /* real-time: decode speed needed afterwards, default 5    */
    int    prompt_tokens;     /* prompt length behind ttft_ms; 0 (default): 64, or n_ctx
                                 when smaller; more than n_ctx: EDGELLM_ERR_MISUSE        */
    const char *types;        /* extra candidates, comma-separated ("q5_0,i4_g64_sym")   */
    double safety_margin;     /* fraction of usable memory kept free, default 0.20       */
    double calibration;       /* multiplies predicted speeds; 1.0 until calibrated       */
    const edgellm_plan_quality *quality;  /* measured results (edgellm eval), borrowed   */
    int    n_quality;
    int    host_bench_ms;     /* time budget of the bandwidth benchmark for "host" (1000) */
} edgellm_plan_params;

typedef struct {
    edgellm_plan_model  model;
    edgellm_plan_device device;
    int    n_ctx, kv_type, batch, prompt_tokens, scenario;
    double latency_ms, reading_tps, safety_margin;
    double efficiency;        /* fraction of device bandwidth decode reaches (see plan.c) */
    double calibration;
    int    n_rows;
    edgellm_plan_row rows[EDGELLM_PLAN_MAX_CANDIDATES];
    int    realtime_pick;     /* index into rows, -1: nothing qualifies                  */
    int    offline_pick;      /* index into rows, -1: nothing fits                       */
    int    offline_batch;     /* suggested batch for offline work (1..8)                 */
    double offline_batch_tps; /* total decode tok/s at that batch                        */
    char   realtime_why[384];
    char   offline_why[384];
    char   advice[640];       /* what to change when nothing fits; "" otherwise          */
} edgellm_plan_report;

EDGELLM_API edgellm_plan_params edgellm_plan_default_params(void);

/* Size and speed every candidate precision of a model on a device, and recommend one per
 * scenario. `report` is filled completely (no allocations to free).
 * Statuses: EDGELLM_ERR_NOT_FOUND (unknown model or device name: the message lists the
 * valid names), EDGELLM_ERR_MISUSE (n_ctx < 0, batch < 1, unsupported kv_type, a shape
 * that does not divide, an unknown name in `types`), EDGELLM_ERR_IO / EDGELLM_ERR_FORMAT
 * (the model file cannot be read or is not GGUF), EDGELLM_ERR_UNSUPPORTED (a GGUF file
 * without the llama-style shape keys), EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_plan(const edgellm_plan_params *p, edgellm_plan_report *report,
                                        edgellm_error *err);

/* Bytes of a KV cache: 2 (K and V) * n_layer * n_ctx * bytes of one row of n_head_kv *
 * head_dim elements of kv_type (F32 4, F16 2, Q8_0 34 per 32). 0 when the type is not
 * F32/F16/Q8_0, a row does not fill whole Q8_0 blocks, or an argument is negative. */
EDGELLM_API uint64_t edgellm_plan_kv_bytes(int n_layer, int n_ctx, int n_head_kv, int head_dim, int kv_type);

/* The built-in catalogues: counts, entries by index (copied, n_params filled in), lookup
 * by name (case-insensitive; EDGELLM_ERR_NOT_FOUND lists the valid names). */
EDGELLM_API int edgellm_plan_n_models(void);
EDGELLM_API int edgellm_plan_n_devices(void);
EDGELLM_API edgellm_status edgellm_plan_model_at(int i, edgellm_plan_model *out);
EDGELLM_API edgellm_status edgellm_plan_device_at(int i, edgellm_plan_device *out);
EDGELLM_API edgellm_status edgellm_plan_find_model(const char *name, edgellm_plan_model *out, edgellm_error *err);
EDGELLM_API edgellm_status edgellm_plan_find_device(const char *name, edgellm_plan_device *out, edgellm_error *err);

/* A model from a GGUF file's metadata and tensor table (weights are not read).
 * Statuses: EDGELLM_ERR_IO, EDGELLM_ERR_FORMAT (not GGUF / malformed),
 * EDGELLM_ERR_UNSUPPORTED (shape keys missing), EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_plan_model_from_gguf(const char *path, edgellm_plan_model *out,
                                                        edgellm_error *err);

/* A llama-style model from explicit numbers (untied embeddings, head_dim = n_embd/n_head).
 * EDGELLM_ERR_MISUSE when a number is <= 0 or the shape does not divide (n_embd % n_head,
 * n_head % n_head_kv). */
EDGELLM_API edgellm_status edgellm_plan_model_from_shape(int n_layer, int n_embd, int n_head, int n_head_kv,
                                                         int n_ff, int n_vocab, edgellm_plan_model *out,
                                                         edgellm_error *err);

/* This machine: RAM and MemAvailable from /proc/meminfo, cores (big/little from cpufreq
 * when present) and memory-read bandwidth from edgellm_membw_measure with bench_ms as its
 * budget (<= 0: 1000 ms). Usable memory = MemAvailable. */
EDGELLM_API edgellm_status edgellm_plan_host_device(int bench_ms, edgellm_plan_device *out, edgellm_error *err);

/* Memory-read bandwidth benchmark (`edgellm bench --bandwidth` reuses it): threads stream
 * through a buffer much larger than the last-level cache; the best of several runs wins. */
typedef struct {
    int    n_threads;         /* <= 0: physical cores                                    */
    size_t buffer_bytes;      /* 0: clamp(4 x LLC, 128 MiB, 512 MiB), <= MemAvailable / 4 */
    int    max_ms;            /* time budget incl. allocation, default 1000 (>= 3 runs;
                                 may overrun where page faults are very slow)            */
} edgellm_membw_params;

typedef struct {
    double   best_gbps;       /* best run, GB/s (1e9 bytes/s)                            */
    double   mean_gbps;
    double   median_gbps;     /* sustained: what `plan --device host` uses (on a shared
                                 host the best run catches bursts of an idle neighbour)  */
    int      n_runs;
    int      n_threads;
    size_t   buffer_bytes;
    double   elapsed_ms;      /* wall time including allocation                          */
    uint64_t checksum;        /* sum of what was read (keeps the reads honest)           */
} edgellm_membw_result;

EDGELLM_API edgellm_membw_params edgellm_membw_default_params(void);
/* Statuses: EDGELLM_ERR_MISUSE (n_threads outside 0..256), EDGELLM_ERR_NOMEM,
 * EDGELLM_ERR_IO (threads could not be started). Uses n_threads threads for max_ms. */
EDGELLM_API edgellm_status edgellm_membw_measure(const edgellm_membw_params *p, edgellm_membw_result *out,
                                                 edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Quantization (`edgellm quantize`): rewrite a GGUF model with its matrices in another
 * type, tensor by tensor (the input is mapped, the output streamed: memory stays at about
 * one chunk of rows per thread, not the model). Type choice per tensor:
 *   - 1-D tensors (norms, biases) become F32; tensors of non-float types and 2-D tensors
 *     whose name does not end in "weight" are copied unchanged;
 *   - tensors matching a `keep` glob (fnmatch) keep their source type when it is
 *     F32/F16/BF16 (an exact copy) and become F16 when the source is quantized;
 *   - plain types ("q4_0", "q8_0", "q4_k", "i4"...) put every other matrix in that type;
 *     output.weight (or a tied token_embd) gets Q6_K when the type has fewer than 6 bits
 *     (llama-quantize's default, llama.cpp src/llama-quant.cpp), unless `pure` is set, which puts every
 *     matrix, output and embedding included, in the one type (llama-quantize --pure);
 *     the mixes "q4_k_m"/"q5_k_m" follow llama.cpp's recipe: output Q6_K, attn_v and
 *     ffn_down Q6_K in layers where use_more_bits(i, n_layer), the rest Q4_K/Q5_K;
 *     output_type / embd_type override the choice for those two tensors;
 *   - a row length that does not fill whole blocks falls back, as llama.cpp does:
 *     Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, Q2_K/Q3_K->Q4_0, a group type to the next
 *     smaller group (g256->g128->g64), and F16 when nothing fits; the report says so.
 * Already quantized inputs are dequantized and requantized (report.requantized = 1).
 * Files using edgellm's group-wise types carry `edgellm.quant.scheme` ("i4 g128 asym")
 * and no general.file_type: they are edgellm-only. Others get llama.cpp's file type.
 * ---------------------------------------------------------------------------------- */

/* Progress: fraction done in [0, 1] and the tensor being worked on. Called on the
 * calling thread; a non-zero return cancels (EDGELLM_ERR_CANCELLED, no output file). */
typedef int (*edgellm_progress_fn)(void *user, double fraction, const char *what);

typedef struct {
    const char *type;          /* "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k", "q5_k",
                                  "q6_k", "q4_k_m", "q5_k_m", "i8", "i4", "f16", "f32"     */
    int    group;              /* i4/i8 group size: 64, 128 (default) or 256              */
    int    asym;               /* i4/i8: 1 = scale + minimum per group, 0 = scale only     */
    const char *const *keep;   /* glob patterns on tensor names (borrowed), may be NULL    */
    int    n_keep;
    int    output_type;        /* edgellm_type for output.weight; -1: the recipe's         */
    int    embd_type;          /* edgellm_type for token_embd.weight; -1: the recipe's     */
    int    n_threads;          /* <= 0: physical cores                                     */
    edgellm_progress_fn progress;   /* may be NULL */
    void  *progress_user;
    int    pure;               /* 1: every matrix in the one type, no Q6_K output (--pure) */
} edgellm_quantize_params;

EDGELLM_API edgellm_quantize_params edgellm_quantize_default_params(void);

/* One tensor of the report. Errors compare the written values (dequantized) with the
 * source values (dequantized when the source is quantized), over all elements. */
typedef struct {
    char     name[64];
    int      n_dims;
    int64_t  ne[4];            /* GGUF order, ne[0] = row length; unused = 1               */
    int      src_type;
    int      type;             /* the type written                                         */
    int      wanted_type;      /* the recipe's type before a shape fallback                */
    int      fallback;         /* 1: the row length did not fit wanted_type                */
    int      quantized;        /* 1: converted (errors measured); 0: copied unchanged       */
    uint64_t n_elements;
    uint64_t src_bytes, dst_bytes;
    double   rmse;             /* sqrt(mean((q - x)^2))                                    */
    double   max_abs_err;      /* max |q - x|                                              */
    double   sqnr_db;          /* 10 log10(sum x^2 / sum (q - x)^2); +inf when exact        */
    uint64_t n_saturated;      /* values clamped to the type's range (quant.h)            */
    char     note[112];        /* why this type: "1-D: F32", "Q4_K does not fit rows of 64: Q5_0" */
} edgellm_quantize_tensor;

typedef struct {
    char     scheme[32];       /* "Q4_K_M", "I4_G128_ASYM", "Q8_0"                         */
    int      file_type;        /* general.file_type written; -1: none (edgellm-only file)  */
    int      edgellm_only;     /* 1: uses edgellm's own types                              */
    int      scheme_edgellm;   /* 1: the scheme asked for edgellm's own types (i4/i8); with
                                * edgellm_only 0, no tensor's rows fit them (all fell back) */
    int      requantized;      /* 1: some source tensors were already quantized            */
    int      n_fallbacks;      /* tensors whose type fell back for their shape             */
    int      n_threads;
    int      n_tensors;
    edgellm_quantize_tensor *tensors;   /* [n_tensors], in file order; owned by the report */
    uint64_t n_elements;       /* all tensors                                              */
    uint64_t src_bytes, dst_bytes;      /* tensor data of input and output                 */
    double   src_bpw, dst_bpw; /* bits per weight over all tensors                         */
    double   elapsed_ms;
} edgellm_quantize_report;

/* Quantize in_path into out_path (written to a temporary file and renamed: on any failure
 * out_path is neither created nor touched). report (may be NULL) receives the per-tensor
 * table; free it with edgellm_quantize_report_free (also after a failure). Statuses:
 * EDGELLM_ERR_MISUSE (unknown type, bad group, threads outside 0..64, in == out,
 * output_type/embd_type not a computable type), EDGELLM_ERR_IO / EDGELLM_ERR_FORMAT
 * (input unreadable, not GGUF or without tensors, output unwritable), EDGELLM_ERR_UNSUPPORTED (a tensor
 * that must be converted has a type without dequantizer), EDGELLM_ERR_NUMERIC (NaN/inf in
 * a source tensor, named), EDGELLM_ERR_CANCELLED, EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_quantize_file(const char *in_path, const char *out_path,
                                                 const edgellm_quantize_params *p,
                                                 edgellm_quantize_report *report, edgellm_error *err);
EDGELLM_API void edgellm_quantize_report_free(edgellm_quantize_report *r);   /* NULL-safe */

/* ------------------------------------------------------------------------------------
 * Built-in architecture shapes (`edgellm synth --shape`, usable by plan): the exact
 * config.json values of real models, sources cited in src/tools/shapes.c.
 * ---------------------------------------------------------------------------------- */
typedef struct {
    char  name[32];            /* "tinyllama-1.1b"                                         */
    char  arch[16];            /* "llama" or "qwen2"                                       */
    int   n_layer, n_embd, n_head, n_head_kv, n_ff, n_vocab;
    int   n_ctx_train;         /* context length                                           */
    int   tied;                /* 1: no output.weight, the head is token_embd             */
    float rope_theta;          /* rope.freq_base                                           */
    float rms_eps;
    char  source[160];
} edgellm_shape;

EDGELLM_API int edgellm_shape_count(void);
/* Entry i (0 <= i < count) copied into out; EDGELLM_ERR_MISUSE when out of range. */
EDGELLM_API edgellm_status edgellm_shape_at(int i, edgellm_shape *out);
/* Case-insensitive lookup; EDGELLM_ERR_NOT_FOUND lists the valid names. */
EDGELLM_API edgellm_status edgellm_shape_find(const char *name, edgellm_shape *out, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Synthetic models (`edgellm synth`): random weights, a real architecture's exact shape,
 * to measure speed and memory without downloading a model. Matrices ~ N(0, std^2),
 * norms 1, biases 0 (qwen2), generated row by row from the seed (the same seed gives the
 * same file whatever the thread count) and quantized per the type recipe of
 * edgellm_quantize_file, streamed to disk (memory stays small even for 7B shapes).
 * Metadata: the llama-style hyperparameter keys and a SentencePiece ("llama") vocabulary
 * of n_vocab tokens (<unk>, <s>, </s>, 256 byte tokens <0xXX>, then filler pieces).
 * ---------------------------------------------------------------------------------- */
typedef struct {
    edgellm_shape shape;       /* arch "llama" or "qwen2"; name goes to general.name       */
    const char *type;          /* as edgellm_quantize_params.type                          */
    int    group, asym;        /* i4/i8                                                    */
    uint64_t seed;
    float  std;                /* weight standard deviation, default 0.02                  */
    int    n_threads;          /* <= 0: physical cores                                     */
    edgellm_progress_fn progress;
    void  *progress_user;
} edgellm_synth_params;

EDGELLM_API edgellm_synth_params edgellm_synth_default_params(void);   /* shape zeroed */

/* Write the model to out_path (atomically). n_params / file bytes in *n_params and
 * *file_bytes when not NULL. Statuses: EDGELLM_ERR_MISUSE (shape numbers <= 0, n_embd not
 * divisible by n_head or n_head by n_head_kv, odd head_dim, n_vocab < 259, unknown type
 * or arch), EDGELLM_ERR_IO, EDGELLM_ERR_CANCELLED, EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_synth(const edgellm_synth_params *p, const char *out_path,
                                         uint64_t *n_params, uint64_t *file_bytes, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Benchmark (`edgellm bench`), llama-bench conventions (tools/llama-bench/README.md): pp<N> = one
 * causal pass over N prompt tokens from an empty cache, tg<N> = N single-token decodes
 * from an empty cache; a warm-up first; each test repeated; no tokenization or sampling
 * inside the timing (token ids are fixed pseudo-random ids).
 * ---------------------------------------------------------------------------------- */
#define EDGELLM_BENCH_MAX_THREADS_LIST 16
#define EDGELLM_BENCH_MAX_DEPTHS 8
#define EDGELLM_BENCH_MAX_RESULTS 64   /* thread counts x depths x (pp, tg) at most this */

typedef struct {
    int    n_prompt;           /* pp test size, 0 = no pp test (default 128)              */
    int    n_gen;              /* tg test size, 0 = no tg test (default 64)               */
    int    n_reps;             /* repetitions per test (default 5)                         */
    int    threads[EDGELLM_BENCH_MAX_THREADS_LIST];   /* thread counts to test             */
    int    n_threads_list;     /* 0: one run at physical cores                             */
    int    warmup;             /* 1 (default): an untimed warm-up before each test (pp: one
                                  prompt pass, tg: one token, as llama-bench)              */
    int    cold_load;          /* 1 (default): drop the file from the page cache (posix_fadvise
                                  DONTNEED) before the first load, to time a cold load    */
    double bw_gbps;            /* memory-read bandwidth for roofline_frac, used for every
                                  thread count; <= 0: measure it, with all physical cores and
                                  with each tested thread count                            */
    int    bw_ms;              /* time budget of that measurement (default 1000)           */
    edgellm_progress_fn progress;   /* may be NULL: called before each test                */
    void  *progress_user;
    int    kv_type;            /* KV cache type of the contexts (edgellm_ctx_params.kv_type):
                                  EDGELLM_TYPE_F32 (default) or EDGELLM_TYPE_F16           */
    int    depths[EDGELLM_BENCH_MAX_DEPTHS];   /* context depths (llama-bench -d): each test
                                  also runs with that many tokens already in the KV cache
                                  (filled once per depth, untimed; each repetition starts
                                  from it), e.g. "tg64 @ d1024"                              */
    int    n_depths;           /* 0: depth 0 only                                          */
} edgellm_bench_params;

typedef struct {
    char     test[32];         /* "pp128", "tg64", "tg64 @ d1024" (llama-bench's names)   */
    int      n_prompt, n_gen, n_threads, n_reps;
    int      n_depth;          /* tokens in the KV cache before the test                   */
    double   avg_ts, stddev_ts;   /* tokens per second over the repetitions                */
    double   avg_ns, stddev_ns;   /* time per repetition, ns                               */
    double   samples_ts[32];   /* first min(n_reps, 32) repetitions                        */
    double   ttft_ms;          /* prefill of n_prompt tokens + one decode (mean); 0 if no pp */
    uint64_t bytes_per_token;  /* tg: weights read per token + KV read at the mean depth
                                  (n_depth + (n_gen + 1) / 2 rows per layer)               */
    double   bw_gbps;          /* tg: read bandwidth with n_threads threads (the roofline of
                                  this test: decode on t threads cannot stream faster than t
                                  threads can read), GB/s; 0 for pp                        */
    double   roofline_frac;    /* tg: avg_ts * bytes_per_token / bw_gbps; 0 for pp          */
    double   roofline_frac_all;   /* tg: avg_ts * bytes_per_token / report bw_gbps (all
                                  physical cores); 0 for pp                                */
    double   cpu_frac;         /* CPU time the process got / (wall time x n_threads) during
                                  the timed runs: below 1 when threads waited for work or
                                  for a CPU                                                */
    double   wait_frac;        /* time its threads sat runnable in the run queue (Linux
                                  schedstat run_delay) / (wall time x n_threads): other
                                  processes took the cores, speeds understate the code;
                                  -1 when unknown                                          */
} edgellm_bench_result;

typedef struct {
    char     model_type[128];  /* llama-bench style: "llama 1.1B Q4_0"                     */
    char     arch[32];
    char     ftype[64];        /* "Q4_0", "Q4_K_M", "i4 g128 sym", or the dominant type    */
    uint64_t model_size;       /* bytes of tensor data                                     */
    uint64_t model_n_params;
    uint64_t weight_bytes_per_token;   /* weights read per decoded token (see bench.c)     */
    double   load_ms;          /* first load (cold when cold_load succeeded)              */
    double   load_warm_ms;     /* mean of later loads (file in the page cache)            */
    int      load_cold;        /* 1: the first load was after dropping the page cache     */
    uint64_t peak_rss_bytes;   /* peak RSS during this model's load and tests (VmHWM, reset
                                  first through /proc/self/clear_refs where Linux allows)  */
    double   bw_gbps;          /* read bandwidth with bw_n_threads threads (or as given)   */
    int      bw_measured;      /* 1: measured here (also per thread count: results' bw_gbps);
                                  0: given, used for every thread count                   */
    int      n_results;
    edgellm_bench_result results[EDGELLM_BENCH_MAX_RESULTS];   /* by thread count, depth, pp/tg */
    int      kv_type;          /* KV cache type the tests ran with (the params' kv_type)   */
    int      bw_n_threads;     /* threads of bw_gbps: the default -t (physical cores this
                                  process may use, at most 64); 0 when bw_gbps was given  */
} edgellm_bench_report;

EDGELLM_API edgellm_bench_params edgellm_bench_default_params(void);

/* Run the tests on model_path, filling *report (plain data, nothing to free). Statuses:
 * those of edgellm_model_load / edgellm_ctx_new / edgellm_decode, EDGELLM_ERR_MISUSE
 * (n_prompt/n_gen < 0, both 0, n_reps outside 1..1000, a thread count outside 1..64, a
 * depth outside 0..2^20, more than EDGELLM_BENCH_MAX_RESULTS tests),
 * EDGELLM_ERR_CANCELLED. Uses the CPU for as long as the tests take; run alone. */
EDGELLM_API edgellm_status edgellm_bench(const char *model_path, const edgellm_bench_params *p,
                                         edgellm_bench_report *report, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Numeric check (`edgellm info --check`): scan every tensor of a GGUF file for NaN/inf.
 * ---------------------------------------------------------------------------------- */
typedef struct {
    int64_t  n_tensors;          /* tensors in the file                                     */
    int64_t  n_tensors_checked;  /* scanned completely (integer tensors count as checked)   */
    int64_t  n_tensors_skipped;  /* types without a dequantizer (IQ*, TQ*, MXFP4)           */
    uint64_t n_values;           /* elements scanned                                        */
    int      found;              /* 1: a non-finite value was found; the fields below say where */
    char     tensor[208];        /* name of the first bad tensor                            */
    int64_t  tensor_index;       /* its index in the file; -1 when none                     */
    uint64_t element;            /* flat index in ggml order (ne[0] fastest)                */
    uint64_t row, col;           /* element / ne[0], element % ne[0]                         */
    double   value;              /* the value as dequantized (NaN, +inf or -inf)            */
} edgellm_check_report;

/* Open and validate path, then dequantize every tensor (in chunks of 64K elements) and
 * stop at the first value that is not a finite number. Statuses: EDGELLM_OK (all finite),
 * EDGELLM_ERR_NUMERIC (the message names the file, tensor, element, row/column and NaN or
 * inf; report says the same), EDGELLM_ERR_IO / EDGELLM_ERR_FORMAT (file), EDGELLM_ERR_NOMEM,
 * EDGELLM_ERR_MISUSE (NULL path). report may be NULL. Reads every weight once: time is
 * about the file size over the disk or page-cache bandwidth. Thread-safe. */
EDGELLM_API edgellm_status edgellm_check_file(const char *path, edgellm_check_report *report,
                                              edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Evaluation (`edgellm eval`): perplexity, comparison with a reference model (KL
 * divergence, top-1 agreement, change in probability of the correct token), accuracy on
 * task sets, and a sweep over quantization types. Conventions of llama-perplexity
 * (ggml-org/llama.cpp tools/perplexity/perplexity.cpp), so the numbers are comparable:
 *   - the text is tokenized once (BOS first when the vocabulary adds one) and cut into
 *     windows of n_ctx tokens; each window is evaluated from an empty KV cache, with its
 *     first token replaced by BOS (when the vocabulary has one);
 *   - stride 0 (default): disjoint windows, only the second half is scored: the logits at
 *     positions n_ctx/2 .. n_ctx-2 predict the next token (n_ctx - 1 - n_ctx/2 per window);
 *     stride S in 1..n_ctx/2: windows start every S tokens and score their last S tokens;
 *   - the text must have at least 2 * n_ctx tokens (llama-perplexity's rule), else
 *     EDGELLM_ERR_MISUSE with a message giving both numbers;
 *   - nll = logsumexp(logits) - logit[target]; PPL = exp(mean nll), error = PPL x the
 *     standard error of the mean nll; KLD(ref || model) = sum_v p_ref(v) (ln p_ref(v) -
 *     ln p_model(v)), exact over the whole vocabulary with a live reference.
 * Results are deterministic: sums run in position order in double precision, and the
 * forward pass does not depend on the thread count.
 * ---------------------------------------------------------------------------------- */
typedef struct {
    int    n_ctx;             /* tokens per window, >= 8 (default 512)                    */
    int    stride;            /* 0: llama-perplexity halves; 1..n_ctx/2: sliding windows  */
    int    max_chunks;        /* windows to evaluate, <= 0: all the text gives             */
    int    n_threads;         /* compute threads, <= 0: the model's setting               */
    int    top_k;             /* saved logits: entries kept per position, >= 1; values
                                 >= n_vocab keep the whole vocabulary (exact KLD). Default 64 */
    const char *text_name;    /* the text's file name, for messages; may be NULL         */
    edgellm_progress_fn progress;   /* may be NULL; called after each window              */
    void  *progress_user;
    int    kv_type;           /* KV cache type of the evaluated model (edgellm_ctx_params):
                                 EDGELLM_TYPE_F32 (default), _F16 or _Q8_0. A reference
                                 model (compare --ref) always runs with an F32 cache, so
                                 compare -m X --ref X with kv_type Q8_0 measures the cache's
                                 own cost                                                 */
} edgellm_eval_params;

EDGELLM_API edgellm_eval_params edgellm_eval_default_params(void);

typedef struct {
    int64_t n_text_tokens;    /* tokens of the whole text (BOS included)                 */
    int     n_chunks;         /* windows evaluated                                        */
    int64_t n_scored;         /* predictions scored                                       */
    int     n_ctx, stride;
    double  nll_mean;         /* nats per token                                           */
    double  nll_err;          /* standard error of nll_mean                               */
    double  ppl;              /* exp(nll_mean)                                            */
    double  ppl_err;          /* ppl * nll_err                                            */
    double  elapsed_ms;
    double  tok_per_s;        /* window tokens evaluated per second                       */
} edgellm_eval_ppl_result;

/* Perplexity of model m over text[len] (UTF-8 bytes, borrowed). Statuses: EDGELLM_ERR_MISUSE
 * (bad params, text too short), those of edgellm_ctx_new / edgellm_decode, EDGELLM_ERR_NOMEM,
 * EDGELLM_ERR_CANCELLED (the progress callback returned non-zero). Uses n_threads threads. */
EDGELLM_API edgellm_status edgellm_eval_ppl(const edgellm_model *m, const char *text, size_t len,
                                            const edgellm_eval_params *p, edgellm_eval_ppl_result *out,
                                            edgellm_error *err);

/* Save the reference model's distributions for a later comparison (the full-precision
 * model need not be on the device then). Per scored position the file keeps the top_k
 * log-probabilities with their ids, the log of the probability mass outside them, and the
 * target token with its log-probability; the header names the model (file name, shape),
 * the tokenizer (n_vocab, hash of all token texts), the text (bytes, hash), n_ctx, stride
 * and windows. Layout: src/tools/eval_logits.c. The file is written to a temporary name
 * and renamed. ppl (may be NULL) receives the reference's perplexity. Statuses: those of
 * edgellm_eval_ppl, EDGELLM_ERR_IO (cannot write out_path). */
EDGELLM_API edgellm_status edgellm_eval_save_logits(const edgellm_model *ref, const char *text, size_t len,
                                                    const edgellm_eval_params *p, const char *out_path,
                                                    edgellm_eval_ppl_result *ppl, edgellm_error *err);

typedef struct {
    edgellm_eval_ppl_result ref;    /* the reference (from the file with saved logits)    */
    edgellm_eval_ppl_result model;  /* the model under test                               */
    double  delta_ppl_pct;    /* (PPL / PPL_ref - 1) * 100                                */
    double  ln_ratio_mean;    /* mean of nll - nll_ref = ln(PPL / PPL_ref)                */
    double  ln_ratio_err;     /* its standard error (paired, so far below the PPL errors) */
    double  kld_mean, kld_err;           /* nats; standard error of the mean               */
    double  kld_median, kld_p99, kld_max;
    double  top1_pct, top1_err_pct;      /* same argmax as the reference, % (binomial error) */
    double  dp_mean_pct;      /* mean of p_model(target) - p_ref(target), percent         */
    double  dp_rms_pct;       /* root mean square of the same                             */
    int     ref_top_k;        /* reference entries per position (n_vocab: exact KLD)      */
    int     kld_exact;        /* 1: the whole vocabulary was compared                     */
    char    ref_name[128];    /* the reference's file name                                */
} edgellm_eval_compare_result;

/* Compare model m with a reference: either a live model `ref` (exact) or a file written by
 * edgellm_eval_save_logits (`ref_logits_path`; exactly one of the two is non-NULL). With
 * saved top-k logits, KLD sums the top_k entries exactly and lumps the rest of the
 * vocabulary into one bucket: a lower bound of the exact KLD, low by
 * P_ref(rest) x KL(ref || model restricted to the rest); exact when top_k >= n_vocab.
 * PPL, top-1 and delta-p are the same as with the live model (float32 storage).
 * With a file, the layout is the file's: params n_ctx and stride, when > 0, must equal the
 * file's; max_chunks may be fewer than the file holds (<= 0: all). NULL params: the file's.
 * Statuses: those of edgellm_eval_ppl; EDGELLM_ERR_IO / EDGELLM_ERR_FORMAT (the logits file
 * is unreadable, truncated or not one); EDGELLM_ERR_MISUSE when the file does not fit
 * (another text, tokenizer, model shape, n_ctx or stride: the message says which, with
 * both values); EDGELLM_ERR_NOMEM; EDGELLM_ERR_CANCELLED. */
EDGELLM_API edgellm_status edgellm_eval_compare(const edgellm_model *m, const edgellm_model *ref,
                                                const char *ref_logits_path, const char *text, size_t len,
                                                const edgellm_eval_params *p, edgellm_eval_compare_result *out,
                                                edgellm_error *err);

/* One task item, plain strings (borrowed). Multiple choice: context + choices + label, the
 * choice text appended verbatim to the context (so choices usually start with a space).
 * Generation: context is the prompt, answer the expected text, choices NULL. */
typedef struct {
    const char *context;
    const char *const *choices;   /* [n_choices], NULL for a generation item              */
    int    n_choices;             /* >= 2 for multiple choice                             */
    int    label;                 /* index of the right choice                            */
    const char *answer;           /* generation items: expected text; NULL otherwise      */
} edgellm_eval_item;

typedef struct {
    int    n_threads;             /* <= 0: the model's setting                            */
    int    max_gen_tokens;        /* generation: tokens generated at most (default 24)    */
    edgellm_progress_fn progress;
    void  *progress_user;
    int    kv_type;               /* KV cache type of the model (not the reference, which
                                     runs with F32); default EDGELLM_TYPE_F32             */
} edgellm_eval_task_params;

EDGELLM_API edgellm_eval_task_params edgellm_eval_task_default_params(void);

/* One metric of a task set. Multiple choice (each choice scored by the sum of the
 * log-probabilities of its tokens after the context):
 *   acc       the highest sum is the label;
 *   acc_norm  the highest sum per byte of the choice text is the label (length-normalised,
 *             as lm-evaluation-harness);
 * Generation (greedy decoding of up to max_gen_tokens, stopping at a newline):
 *   exact     the generated text, leading whitespace dropped, starts with the answer
 *             followed by a non-alphanumeric byte or the end;
 *   contains  the answer occurs anywhere in the generated text.
 * Ties go to the lowest choice index. Errors are binomial: sqrt(p (1 - p) / n). */
typedef struct {
    char   name[16];              /* "acc", "acc_norm", "exact", "contains"               */
    int    n;                     /* items this metric scored; 0: none of its kind         */
    double pct, err_pct;          /* the model, percent                                   */
    double ref_pct, ref_err_pct;  /* the reference; NaN without one                        */
    double gap_pts;               /* ref_pct - pct, percentage points                      */
    double gap_pct;               /* gap_pts / ref_pct * 100: percent of the reference     */
} edgellm_eval_metric;

typedef struct {
    int    n_items, n_mc, n_gen;
    int    has_ref;
    edgellm_eval_metric metrics[4];   /* acc, acc_norm, exact, contains                   */
    double elapsed_ms;
    /* per model, [0] the model and [1] the reference (zeros without one):                */
    int    max_positions[2];      /* the most positions one item decoded (context + choice
                                   * but the last token, which is only predicted; prompt +
                                   * generated tokens): compare with the trained context     */
    int    max_positions_item[2]; /* the item (index) that used them; -1: no item            */
    int    n_past_ctx_train[2];   /* items that decoded more positions than the model's
                                   * trained context (n_ctx_train); their scores measure a
                                   * model outside the range it was trained for             */
} edgellm_eval_task_result;

/* Accuracy of m (and of ref when not NULL) on items[n_items]. Statuses: EDGELLM_ERR_MISUSE
 * (an item without context, with a label out of range, fewer than 2 choices, an empty
 * choice or answer; the message gives the item's index), those of edgellm_ctx_new /
 * edgellm_decode / edgellm_generate, EDGELLM_ERR_NOMEM, EDGELLM_ERR_CANCELLED. */
EDGELLM_API edgellm_status edgellm_eval_task(const edgellm_model *m, const edgellm_model *ref,
                                             const edgellm_eval_item *items, int n_items,
                                             const edgellm_eval_task_params *p, edgellm_eval_task_result *out,
                                             edgellm_error *err);

/* Sweep: quantize the reference into each type (in a temporary folder), compare each with
 * the live reference, and measure decode speed. */
#define EDGELLM_EVAL_SWEEP_MAX 24

typedef struct {
    edgellm_eval_params eval;     /* text windows, threads, progress                      */
    const char *types;            /* comma-separated: "q8_0,q4_0,q4_k_m,i4:g64,i4:g128:asym"
                                     (also "i4_g128_asym"); sym unless ":asym"            */
    const char *tmp_dir;          /* NULL: $TMPDIR or /tmp                                 */
    int    keep_files;            /* 1: leave the quantized files in the temporary folder */
    int    bench_tokens;          /* tok/s test: tg<N> single-token decodes (default 64; 0: skip) */
    int    bench_reps;            /* repetitions, best kept (default 3)                    */
} edgellm_eval_sweep_params;

typedef struct {
    char     type[24];            /* scheme name as edgellm plan names it: "Q4_K_M", "I4_G64_ASYM" */
    char     spec[32];            /* as written in `types`                                 */
    char     used[160];           /* tensor types actually written, with counts: "Q5_0 x30, Q8_0 x1, F16 x5" */
    int      n_fallbacks;         /* matrices whose row length did not fit the type        */
    uint64_t file_bytes;          /* size of the quantized file                            */
    uint64_t weight_bytes;        /* tensor data                                           */
    double   bpw;                 /* bits per weight over all tensors                      */
    double   tok_per_s;           /* decode speed (tg<bench_tokens>, best of bench_reps); 0: not measured */
    edgellm_eval_compare_result cmp;
    char     path[256];           /* the quantized file ("" once removed)                  */
} edgellm_eval_sweep_row;

typedef struct {
    edgellm_eval_sweep_row ref;   /* the reference itself (cmp: KLD 0, top-1 100 %)       */
    int    n_rows;
    edgellm_eval_sweep_row rows[EDGELLM_EVAL_SWEEP_MAX];
    char   tmp_dir[256];          /* the folder used                                       */
    double elapsed_ms;
} edgellm_eval_sweep_report;

EDGELLM_API edgellm_eval_sweep_params edgellm_eval_sweep_default_params(void);

/* Run the sweep for the model file ref_path over text[len]. The report is plain data.
 * Statuses: EDGELLM_ERR_MISUSE (an unknown type, more than EDGELLM_EVAL_SWEEP_MAX types,
 * bad eval params, text too short), EDGELLM_ERR_IO (temporary folder), those of
 * edgellm_quantize_file, edgellm_model_load and edgellm_eval_compare. */
EDGELLM_API edgellm_status edgellm_eval_sweep(const char *ref_path, const char *text, size_t len,
                                              const edgellm_eval_sweep_params *p, edgellm_eval_sweep_report *out,
                                              edgellm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* EDGELLM_H */
