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

#define EDGELLM_VERSION "0.1.0"

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

/* The model's tokenizer: borrowed, valid while the model lives. */
EDGELLM_API const edgellm_tokenizer *edgellm_model_tokenizer(const edgellm_model *m);

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
} edgellm_ctx_params;

EDGELLM_API edgellm_ctx_params edgellm_ctx_default_params(void);
EDGELLM_API edgellm_status edgellm_ctx_new(const edgellm_model *m, const edgellm_ctx_params *p,
                                           edgellm_ctx **out, edgellm_error *err);
EDGELLM_API void edgellm_ctx_free(edgellm_ctx *c);
EDGELLM_API int  edgellm_ctx_n_ctx(const edgellm_ctx *c);
EDGELLM_API int  edgellm_ctx_n_past(const edgellm_ctx *c);     /* positions already in the cache */
EDGELLM_API void edgellm_ctx_reset(edgellm_ctx *c);            /* forget the sequence           */
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
    float    temperature;     /* <= 0: greedy (argmax, lowest id on ties; the rest unused) */
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
    char     file_label[16];  /* the file's precision ("Q4_K_M", "F32"...)               */
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
    int    prompt_tokens;     /* prompt length behind ttft_ms, default 64                */
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
    size_t buffer_bytes;      /* 0: clamp(4 x LLC, 64 MiB, 512 MiB), <= MemAvailable / 4  */
    int    max_ms;            /* time budget incl. allocation, default 1000 (>= 3 runs)   */
} edgellm_membw_params;

typedef struct {
    double   best_gbps;       /* best run, GB/s (1e9 bytes/s)                            */
    double   mean_gbps;
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

#ifdef __cplusplus
}
#endif
#endif /* EDGELLM_H */
