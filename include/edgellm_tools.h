/*
 * edgellm_tools.h — the tools of edgellm on top of the core (edgellm.h): planning, model
 * import, quantization, synthetic models, benchmarks, numeric checks and evaluation — what
 * the `edgellm` command line runs — and what it is built on besides (GGUF metadata, output
 * files written whole, UTF-8 for JSON, the environment check): the CLI includes no other
 * header. Link: libedgellm_tools and libedgellm, both static (`pkg-config --static
 * edgellm-tools`): the tools use the core's internals, so they are not offered as a shared
 * library, and their structs are plain data of fixed layout that may change with each
 * minor version (rebuild against the new header).
 * Conventions as in edgellm.h (statuses, edgellm_error, X_default_params, NULL-safe frees).
 */
#ifndef EDGELLM_TOOLS_H
#define EDGELLM_TOOLS_H

#include "edgellm.h"
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Remove the temporary files edgellm is writing at this moment (a GGUF being written under
 * "OUT.tmp.PID" before its rename, saved logits, eval sweep's scratch folder and the models
 * in it). Async-signal-safe (only unlink() and rmdir()): meant for an application's SIGINT /
 * SIGTERM handler, before it re-raises the signal, as the edgellm CLI does. Without it, a
 * process killed mid-write leaves those files behind (the target path itself is never
 * half-written). */
EDGELLM_API void edgellm_remove_temp_files(void);

/* ------------------------------------------------------------------------------------
 * Output files written whole or not at all, as every edgellm writer does (GGUF files,
 * saved logits, reports): the bytes go to "TARGET.tmp.PID", registered for
 * edgellm_remove_temp_files before it exists, created with O_EXCL | O_NOFOLLOW (a file or
 * link planted at that name is never written through) and given the permissions of the
 * file it replaces; it is renamed onto TARGET only once all of it is written, flushed and
 * synced. On any failure, or a signal whose handler calls edgellm_remove_temp_files,
 * TARGET is untouched and no temporary stays. TARGET is PATH, or for a symbolic link (a
 * chain, a dangling one included) the file it names: the link stays a link. PATH "-" is
 * standard output; a PATH that exists and is no regular file (/dev/null, a FIFO) or that
 * leads through /proc (/dev/stdout, /dev/fd/N) is written in place, with nothing to
 * replace. POSIX rename(2) makes the replacement atomic. Implementation:
 * src/common/tmpfiles.c. Distinct handles may be used on distinct threads.
 * ---------------------------------------------------------------------------------- */
typedef struct edgellm_output edgellm_output;

/* Start writing path (fopen mode: "w" or "wb"): *out receives the handle (NULL on
 * failure, when nothing is left open or registered). Statuses: EDGELLM_ERR_IO ("PATH:
 * cannot write it (its temporary TMP: reason)", "PATH: cannot write it: reason" for a link
 * loop or a file written in place, "PATH: is a directory"), EDGELLM_ERR_MISUSE (NULL or
 * empty path, a path too long, NULL mode or out), EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_output_open(const char *path, const char *mode, edgellm_output **out,
                                               edgellm_error *err);
/* The stream to write to, until commit or discard; NULL for a NULL handle. */
EDGELLM_API FILE *edgellm_output_stream(edgellm_output *o);
/* Check the stream's error flag, flush, fsync (EINVAL/EROFS ignored: not every file
 * system syncs), close, rename onto the target, and free o (in every case). Statuses:
 * EDGELLM_ERR_IO ("PATH: write failed: reason", "PATH: cannot rename TMP into place:
 * reason"; the temporary is then removed), EDGELLM_ERR_MISUSE (o NULL). */
EDGELLM_API edgellm_status edgellm_output_commit(edgellm_output *o, edgellm_error *err);
/* Close the stream, remove the temporary and free o: the writer's own error path.
 * NULL-safe. */
EDGELLM_API void edgellm_output_discard(edgellm_output *o);
/* Whether edgellm_output_open(path) would succeed, without creating anything (a check
 * before long work): 0, or the errno it would fail with (EISDIR, ELOOP, EINVAL for a NULL
 * or empty path; EACCES, ENOENT or EROFS for the target's folder, where the temporary and
 * the rename go, or for path itself when it is written in place). */
EDGELLM_API int edgellm_output_check(const char *path);
/* 1 when paths a and b name the same file: equal strings, or both exist with the same
 * device and inode (symbolic and hard links followed); never for a device, pipe or socket
 * (writing /dev/null over itself destroys nothing); 0 otherwise, and for NULL. For "the
 * output is the input" checks before writing. Thread-safe. */
EDGELLM_API int edgellm_path_same_file(const char *a, const char *b);

/* ------------------------------------------------------------------------------------
 * Environment: the core reads EDGELLM_KERNELS (a kernel level: ref, scalar, avx2, avx512
 * on x86-64; ref, scalar, neon, dotprod on AArch64) and EDGELLM_PREFETCH (decode's
 * software prefetch distance in bytes, 0..1048576) once, when it first picks kernels. A
 * value that does not parse is ignored and a level this CPU cannot run is capped to the
 * best one it can, silently: the core never prints. (src/kernels/dispatch.c)
 * ---------------------------------------------------------------------------------- */
/* One line per such variable, each ending in '\n', into buf[size] as snprintf does
 * (NUL-terminated, truncated to fit; buf may be NULL when size is 0):
 *   "EDGELLM_KERNELS=avx9 is not a kernel level of this build (...); running the avx2 kernels"
 *   "EDGELLM_KERNELS=avx512 is above what this CPU runs; running the avx2 kernels"
 *   "EDGELLM_PREFETCH=x is not a byte count in [0, 1048576]; decode prefetch stays at this
 *    CPU's default (0 bytes)"
 * Returns the length of all of them (0: both are unset or used as given). Thread-safe
 * while nothing changes the environment. */
EDGELLM_API size_t edgellm_env_check(char *buf, size_t size);

/* ------------------------------------------------------------------------------------
 * Text for machine-readable output. Well-formed UTF-8 is the Unicode Standard's (chapter
 * 3, table 3-7): no overlong forms, no surrogates, nothing above U+10FFFF, no truncated
 * sequences; the tokenizers read text with the same decoder (src/tokenizer/unicode.c).
 * ---------------------------------------------------------------------------------- */
/* Bytes (1..4) of the well-formed UTF-8 character at s[0..len), or 0 when s does not
 * start one (len 0 or s NULL included). Thread-safe. */
EDGELLM_API int edgellm_utf8_char_len(const char *s, size_t len);
/* text[0..len) with each byte that is not part of a well-formed character replaced by
 * U+FFFD (EF BF BD), as JSON text must be UTF-8 (RFC 8259 section 8.1), into out[size]:
 * whole characters only, NUL-terminated when size > 0 (out may be NULL when size is 0).
 * Returns the length of the whole result (at most 3 x len): when it is >= size, the
 * output was cut. Thread-safe. */
EDGELLM_API size_t edgellm_utf8_sanitize(const char *text, size_t len, char *out, size_t size);

/* ------------------------------------------------------------------------------------
 * GGUF metadata (`edgellm info`): a file's header, metadata keys and tensor table,
 * read-only. The file is mapped and validated completely on open, as edgellm_model_load
 * does (every count, length, type, shape, offset and size against the file; spec:
 * ggml-org/ggml:docs/gguf.md, GGUF v2 and v3); tensor data is never read. Keys and tensors
 * are in file order, indices 0 .. n - 1. Strings (keys, values, tensor names) are handed
 * out as pointer and length into the mapping: not NUL-terminated, may hold any byte, valid
 * until edgellm_gguf_meta_close. A handle is read-only once open: any number of threads
 * may read it at once. Calls on a NULL handle or an index out of range return 0, NULL or
 * "?" as each says.
 * ---------------------------------------------------------------------------------- */
typedef struct edgellm_gguf_meta edgellm_gguf_meta;

/* One entry of the tensor table. */
typedef struct {
    const char *name;          /* name_len bytes inside the mapping, not NUL-terminated   */
    size_t   name_len;
    int      type;             /* edgellm_type (edgellm_type_name names it)               */
    int      n_dims;           /* 1..4                                                    */
    int64_t  ne[4];            /* ggml order: ne[0] is the row length; unused = 1         */
    uint64_t n_elements;
    uint64_t size_bytes;       /* bytes of its data                                       */
    uint64_t offset;           /* of its data, from edgellm_gguf_meta_data_offset (bytes) */
} edgellm_gguf_tensor_info;

/* Open and validate path. Statuses: EDGELLM_ERR_IO (cannot open or map it; not a regular
 * file), EDGELLM_ERR_FORMAT (not GGUF, or malformed: the message names the problem),
 * EDGELLM_ERR_NOMEM, EDGELLM_ERR_MISUSE (NULL path or out). *out is NULL on failure. */
EDGELLM_API edgellm_status edgellm_gguf_meta_open(const char *path, edgellm_gguf_meta **out, edgellm_error *err);
EDGELLM_API void edgellm_gguf_meta_close(edgellm_gguf_meta *g);   /* NULL-safe */

/* The header: GGUF version (2 or 3), alignment of tensor data (general.alignment, default
 * 32), size of the file and where tensor data starts in it, in bytes. */
EDGELLM_API uint32_t edgellm_gguf_meta_version(const edgellm_gguf_meta *g);
EDGELLM_API uint32_t edgellm_gguf_meta_alignment(const edgellm_gguf_meta *g);
EDGELLM_API uint64_t edgellm_gguf_meta_file_size(const edgellm_gguf_meta *g);
EDGELLM_API uint64_t edgellm_gguf_meta_data_offset(const edgellm_gguf_meta *g);

/* Metadata keys: their count; key i's name (*len, when len is not NULL, receives its
 * length; NULL out of range)
 * and the name of its value type ("UINT32", "FLOAT32", "STRING", "ARRAY"..., as the spec
 * spells them; "?" out of range). */
EDGELLM_API int64_t edgellm_gguf_meta_n_keys(const edgellm_gguf_meta *g);
EDGELLM_API const char *edgellm_gguf_meta_key(const edgellm_gguf_meta *g, int64_t i, size_t *len);
EDGELLM_API const char *edgellm_gguf_meta_key_type(const edgellm_gguf_meta *g, int64_t i);
/* Key i's value for display, NUL-terminated into buf[size] ("" out of range): numbers
 * ("2048", "1e-05"), true/false, a string in double quotes with a newline as \n and the
 * other control bytes as \xNN, cut with "..." where the buffer ends, an array as
 * "[512 x STRING]". */
EDGELLM_API void edgellm_gguf_meta_format_value(const edgellm_gguf_meta *g, int64_t i, char *buf, size_t size);
/* Values by key name. Each returns 1 and fills its outputs when the key exists with a
 * value of a fitting type, else 0 with the outputs untouched (a default set beforehand
 * survives): _str a STRING; _int any integer type or BOOL whose value fits int64_t;
 * _array an ARRAY (*elem_type: its elements' type name, may be NULL; *count: elements);
 * _array_str element j of an array of STRING. */
EDGELLM_API int edgellm_gguf_meta_get_str(const edgellm_gguf_meta *g, const char *key, const char **str, size_t *len);
EDGELLM_API int edgellm_gguf_meta_get_int(const edgellm_gguf_meta *g, const char *key, int64_t *out);
EDGELLM_API int edgellm_gguf_meta_get_array(const edgellm_gguf_meta *g, const char *key, const char **elem_type,
                                            uint64_t *count);
EDGELLM_API int edgellm_gguf_meta_array_str(const edgellm_gguf_meta *g, const char *key, uint64_t j,
                                            const char **str, size_t *len);
/* The file's RoPE frequency scaling as edgellm_model_load reads it (<arch>.rope.scaling.*,
 * rope_freqs.weight), in one line into buf[size]: "none", "linear, factor 4 (positions /
 * 4)", "yarn, factor 4, original context 32768, correction dims 0..19, magnitude 1.1386",
 * "...; frequency factors from rope_freqs.weight (64 values, 1 .. 8)". EDGELLM_OK, or the
 * status and message the loader would give (EDGELLM_ERR_UNSUPPORTED for a type edgellm
 * does not implement, such as longrope; EDGELLM_ERR_FORMAT for a bad value); buf is then
 * "". EDGELLM_ERR_MISUSE for NULL arguments. */
EDGELLM_API edgellm_status edgellm_gguf_meta_rope_scaling(const edgellm_gguf_meta *g, char *buf, size_t size,
                                                          edgellm_error *err);

/* Tensors: their count, and entry i copied into *out (EDGELLM_ERR_MISUSE when i is out of
 * range or an argument NULL). */
EDGELLM_API int64_t edgellm_gguf_meta_n_tensors(const edgellm_gguf_meta *g);
EDGELLM_API edgellm_status edgellm_gguf_meta_tensor(const edgellm_gguf_meta *g, int64_t i,
                                                    edgellm_gguf_tensor_info *out);

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
    char     file_label[24];  /* the file's precision: the type holding most of the matrix
                                 weights ("Q4_K_M", "Q4_0", "F32"...)                    */
    char     file_kept[128];  /* matrices of a quantized file kept in a float type
                                 ("output.weight kept F32"); "" when none                */
    uint64_t file_weight_bytes; /* sum of the file's tensor sizes                        */
    uint64_t file_bytes;      /* size of the whole file                                  */
    int      head_dim_v;      /* per head of V when it differs from head_dim (K); 0: same */
    char     rope_scaling[200]; /* a file's RoPE frequency scaling as edgellm runs it ("none",
                                   "yarn, factor 4, ..."), or why edgellm run refuses it
                                   (rope_unsupported); "" for a catalogue model or a shape */
    int      rope_unsupported;  /* 1: a scaling type edgellm does not implement            */
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
    double   decode_efficiency; /* fraction of bw_gbps decode reaches; 0: the default
                                 (0.99 of a measured read, 0.65 of a peak figure)        */
    char     isa[8];          /* "arm" or "x86" (""): which per-type kernel cost table   */
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
    uint64_t kv_bytes;        /* n_layer * n_ctx * n_head_kv * (head_dim of K + of V) *
                                 bytes(kv) * batch (edgellm_plan_model_kv_bytes)          */
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
    /* The low-memory mode (run --mem-budget) when the row does not fit: the budget within
     * the device's (weights less KV, scratch, overhead), or the minimum it would need when
     * none fits (then lowmem_tps 0); decode tok/s when every layer is read again from
     * storage per token (lowmem_read_bytes, at report.storage_gbps). 0 for rows that fit. */
    uint64_t lowmem_budget_bytes;
    double   lowmem_tps;
    uint64_t lowmem_read_bytes;
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
    const char *explain;      /* a row's name ("Q4_0"), or "" for the real-time pick (else
                                 the offline pick, else the first row): its arithmetic goes
                                 to report.explanation; NULL: none                        */
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
    char   realtime_cmd[512]; /* the commands that give the real-time pick: edgellm
                                 quantize (unless the file already is that precision) and
                                 edgellm run with its context, KV type and threads; ""
                                 without a pick                                          */
    char   offline_cmd[512];  /* the same for the offline pick: run --batch-file -b B (and
                                 serve -np B) when a batch is advised                    */
    char   explanation[2048]; /* with params.explain: the arithmetic of one row, lines    */
    double storage_gbps;      /* the device's storage sequential read, GB/s (low-memory mode) */
    char   storage_source[160];   /* its source, or the assumption                        */
    int    lowmem_pick;       /* the row offered in the low-memory mode (the file's own when
                                 possible, else the fastest); -1: none                    */
    char   lowmem_cmd[512];   /* edgellm run ... --mem-budget SIZE for it; "" without     */
} edgellm_plan_report;

EDGELLM_API edgellm_plan_params edgellm_plan_default_params(void);

/* Size and speed every candidate precision of a model on a device, and recommend one per
 * scenario. `report` is filled completely (no allocations to free).
 * Statuses: EDGELLM_ERR_NOT_FOUND (unknown model or device name: the message lists the
 * valid names), EDGELLM_ERR_MISUSE (n_ctx < 0, batch < 1, unsupported kv_type, a shape
 * that does not divide, an unknown name in `types`), EDGELLM_ERR_IO / EDGELLM_ERR_FORMAT
 * (the model file cannot be read, is not GGUF, or its shape does not hold together),
 * EDGELLM_ERR_UNSUPPORTED (a GGUF file
 * without the llama-style shape keys), EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_plan(const edgellm_plan_params *p, edgellm_plan_report *report,
                                        edgellm_error *err);

/* Bytes of a KV cache: 2 (K and V) * n_layer * n_ctx * bytes of one row of n_head_kv *
 * head_dim elements of kv_type (F32 4, F16 2, Q8_0 34 per 32). 0 when the type is not
 * F32/F16/Q8_0, a row does not fill whole Q8_0 blocks, or an argument is negative. */
EDGELLM_API uint64_t edgellm_plan_kv_bytes(int n_layer, int n_ctx, int n_head_kv, int head_dim, int kv_type);
/* The KV cache of a model at n_ctx positions: K rows of n_head_kv * head_dim and V rows of
 * n_head_kv * head_dim_v (head_dim when 0), each as edgellm_plan_kv_bytes counts half of
 * its bytes; 0 under the same conditions. */
EDGELLM_API uint64_t edgellm_plan_model_kv_bytes(const edgellm_plan_model *m, int n_ctx, int kv_type);

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
 *     (llama-quantize's default: ggml-org/llama.cpp:src/llama-quant.cpp), unless `pure` is set, which puts every
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

/* Importance statistics ("importance matrix", src/tools/imatrix.c): per weight matrix and
 * input column j, the sum of x_j^2 over the calibration tokens and the token count, so
 * mean(x_j^2) is known. Weighting a quantizer's squared error by it minimizes the
 * expected error of the matrix's outputs instead of its weights (the statistic of
 * llama.cpp's llama-imatrix, ggml-org/llama.cpp tools/imatrix/README.md). Files: llama.cpp's
 * GGUF imatrix ("<name>.in_sum2" / "<name>.counts" tensors, general.type "imatrix") when
 * the path ends in .gguf, llama.cpp's legacy binary .dat layout otherwise; both are read. */
typedef struct edgellm_imatrix edgellm_imatrix;
/* edgellm_imatrix_collect (declared with the evaluation functions below) runs a model over
 * the windows of a text (edgellm_eval_params: n_ctx, max_chunks, threads, progress,
 * text_name) and collects the statistics of every matrix of every layer and of the output
 * (named token_embd.weight when tied); freed with edgellm_imatrix_free. */
EDGELLM_API edgellm_status edgellm_imatrix_save(const edgellm_imatrix *im, const char *path, edgellm_error *err);
/* Statuses: EDGELLM_ERR_IO, EDGELLM_ERR_FORMAT (not an imatrix file, damaged, empty). */
EDGELLM_API edgellm_status edgellm_imatrix_load(const char *path, edgellm_imatrix **out, edgellm_error *err);
EDGELLM_API void edgellm_imatrix_free(edgellm_imatrix *im);   /* NULL-safe */
EDGELLM_API int edgellm_imatrix_n_entries(const edgellm_imatrix *im);
/* mean(x_j^2) of tensor `name` into out[n_cols]; 0 when absent or of another width, 1 otherwise. */
EDGELLM_API int edgellm_imatrix_weights(const edgellm_imatrix *im, const char *name, int64_t n_cols, float *out);
/* One line: "36 matrices, 8 chunks of 256 tokens from calib.txt". */
EDGELLM_API void edgellm_imatrix_describe(const edgellm_imatrix *im, char *buf, size_t size);

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
    const edgellm_imatrix *imatrix;  /* importance statistics (borrowed), NULL: none. Matrices
                                  it names are quantized to minimize the error weighted by
                                  mean(x_j^2) (types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, I4, I8; the
                                  K-quants stay plain); the file gets edgellm.quant.imatrix */
    const char *layout;        /* NULL: each tensor keeps the layout of its type (a stored
                                  one stays stored); "q4_K_r16": Q4_K weight matrices
                                  (blk.* and output.weight, rows a multiple of 16) are
                                  written in the 16-row layout the AVX-512 kernels read
                                  (type Q4_K_R16, edgellm-only: kernels/repack.h), so a
                                  load maps them as they are; "plain": stored layouts back
                                  to plain Q4_K (llama.cpp reads the file). With type NULL
                                  every tensor keeps its type and only the layout changes
                                  (bytes of the blocks unchanged, no requantizing), and
                                  output_type, embd_type, keep and imatrix are refused
                                  (EDGELLM_ERR_MISUSE). Note that the default params set
                                  type "q8_0": set it to NULL for a layout-only rewrite. */
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
    int      weighted;         /* 1: quantized with importance weights                    */
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
    int      n_layout;         /* tensors written in a stored layout (Q4_K_R16)            */
} edgellm_quantize_report;

/* Quantize in_path into out_path (written to a temporary file and renamed: on any failure
 * out_path is neither created nor touched). report (may be NULL) receives the per-tensor
 * table; free it with edgellm_quantize_report_free (also after a failure). Statuses:
 * EDGELLM_ERR_MISUSE (unknown type or layout, bad group, threads outside 0..64, in == out,
 * output_type/embd_type not a computable type), EDGELLM_ERR_IO / EDGELLM_ERR_FORMAT
 * (input unreadable, not GGUF or without tensors, output unwritable), EDGELLM_ERR_UNSUPPORTED (a tensor
 * that must be converted has a type without dequantizer), EDGELLM_ERR_NUMERIC (NaN/inf in
 * a source tensor, named), EDGELLM_ERR_CANCELLED, EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_quantize_file(const char *in_path, const char *out_path,
                                                 const edgellm_quantize_params *p,
                                                 edgellm_quantize_report *report, edgellm_error *err);
EDGELLM_API void edgellm_quantize_report_free(edgellm_quantize_report *r);   /* NULL-safe */

/* What a type (with group and asym, as in edgellm_quantize_params) stands for. */
typedef struct {
    char name[32];             /* as report.scheme names it: "Q4_K_M", "I4_G128_ASYM"      */
    char label[32];            /* edgellm's group-wise types: the edgellm.quant.scheme
                                  value of the files ("i4 g128 asym"); "" otherwise        */
    int  base_type;            /* edgellm_type of most matrices                           */
    int  edgellm_only;         /* 1: edgellm's group-wise types (files only edgellm reads) */
} edgellm_quant_scheme_info;

/* Statuses: EDGELLM_ERR_MISUSE (an unknown type, a group other than 64/128/256, group or
 * asym given for a type without groups; the message says which). Thread-safe. */
EDGELLM_API edgellm_status edgellm_quantize_scheme(const char *type, int group, int asym,
                                                   edgellm_quant_scheme_info *out, edgellm_error *err);
/* The tensor type a name spells (case-insensitive, as edgellm_type_name: "q6_k", "F16",
 * "I4_G64_ASYM") when edgellm can write it (it has a quantizer) and compute with it, as
 * edgellm_quantize_params.output_type and .embd_type must; -1 otherwise. Thread-safe. */
EDGELLM_API int edgellm_quantize_type_from_name(const char *name);

/* ------------------------------------------------------------------------------------
 * Hugging Face checkpoints <-> GGUF (`edgellm convert --hf`, `edgellm export --hf`):
 * LlamaForCausalLM (Llama 2/3.x, TinyLlama, SmolLM, also MistralForCausalLM) and
 * Qwen2ForCausalLM folders of config.json, model.safetensors (or shards with
 * model.safetensors.index.json; F32, F16, BF16) and the tokenizer files (tokenizer.model,
 * tokenizer.json, or vocab.json + merges.txt; tokenizer_config.json,
 * special_tokens_map.json, generation_config.json, chat_template.jinja). The keys,
 * tensor names and the Q/K row permutation are llama.cpp's (docs/import.md has the
 * table); the pre-tokenizer of a byte-level BPE tokenizer.json is identified from its own
 * pre_tokenizer section. Implementation: src/tools/hf_*.c. Needs cJSON at build time
 * (libcjson-dev); without it both return EDGELLM_ERR_UNSUPPORTED.
 * ---------------------------------------------------------------------------------- */
typedef struct {
    const char *outtype;       /* "auto" (NULL too): the checkpoint's float type; "f32",
                                  "f16", "bf16"; or any edgellm_quantize_params.type
                                  ("q8_0", "q4_k_m", "i4"...), quantized while converting  */
    int    group, asym;        /* i4/i8, as edgellm_quantize_params                        */
    int    n_threads;          /* <= 0: physical cores                                     */
    int    vocab_only;         /* 1: the tokenizer only (no weights; config.json optional) */
    edgellm_progress_fn progress;   /* may be NULL */
    void  *progress_user;
} edgellm_hf_convert_params;

EDGELLM_API edgellm_hf_convert_params edgellm_hf_convert_default_params(void);

typedef struct {
    char     arch[16];         /* GGUF architecture written: "llama", "qwen2"              */
    char     hf_arch[64];      /* config.json's class ("LlamaForCausalLM")                 */
    char     tokenizer[8];     /* tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2"  */
    char     pre[24];          /* tokenizer.ggml.pre                                       */
    char     tokenizer_source[32];   /* "tokenizer.model", "tokenizer.json", ...          */
    char     outtype[32];      /* the scheme written ("F16", "Q4_K_M"); "" vocab only      */
    char     rope_scaling[16]; /* "", "linear", "yarn", "llama3"                           */
    int      n_vocab, n_merges;
    int      n_padded;         /* "[PADi]" tokens filling ids the tokenizer does not use  */
    int      has_chat_template;
    int      n_tensors;        /* written                                                  */
    int      n_files;          /* safetensors files read                                   */
    int      tied;             /* 1: no output.weight (the head is token_embd)             */
    int      permuted;         /* 1: Q/K rows permuted (llama)                             */
    int      n_fallbacks;      /* tensors whose type fell back for their row length        */
    uint64_t n_params;
    uint64_t src_bytes, dst_bytes;   /* tensor data read and written                       */
    double   elapsed_ms;
} edgellm_hf_convert_report;

/* Convert the checkpoint folder dir into out_path (written whole or not at all). Nothing
 * is written before config.json, every safetensors file (mapped; lengths, dtypes,
 * shapes, offsets inside the file and without overlap or hole, names unique and UTF-8)
 * and the tokenizer are validated and every tensor the architecture needs is found with
 * the shape config.json implies. report may be NULL. Statuses: EDGELLM_ERR_MISUSE (bad
 * params, an unknown outtype, output = an input file), EDGELLM_ERR_NOT_FOUND (no
 * config.json / weights / tokenizer), EDGELLM_ERR_FORMAT (a malformed or inconsistent file:
 * the message names the file, and the key or tensor), EDGELLM_ERR_UNSUPPORTED (another
 * architecture, a dtype other than F32/F16/BF16, a pre-tokenizer edgellm does not implement
 * — the pattern quoted), EDGELLM_ERR_NUMERIC (NaN/inf in a tensor), EDGELLM_ERR_IO,
 * EDGELLM_ERR_CANCELLED, EDGELLM_ERR_NOMEM. Uses n_threads threads; call from one thread
 * per output. */
EDGELLM_API edgellm_status edgellm_convert_hf(const char *dir, const char *out_path,
                                              const edgellm_hf_convert_params *p,
                                              edgellm_hf_convert_report *report, edgellm_error *err);

typedef struct {
    const char *outtype;       /* "auto" (NULL too): F32/F16/BF16 tensors keep their type,
                                  quantized ones become F32; or "f32", "f16", "bf16"      */
    uint64_t max_shard_bytes;  /* 0: one model.safetensors; else shards of at most this
                                  many tensor bytes (one tensor larger than it gets a shard
                                  of its own) and model.safetensors.index.json            */
    edgellm_progress_fn progress;   /* may be NULL */
    void  *progress_user;
    int    vocab_only;         /* 1: the tokenizer files only (any architecture; a GGUF
                                  without tensors, such as llama.cpp's vocabulary files)  */
} edgellm_hf_export_params;

EDGELLM_API edgellm_hf_export_params edgellm_hf_export_default_params(void);

typedef struct {
    char     arch[16];
    int      n_tensors;
    int      n_files;          /* safetensors files written                                */
    int      n_dequantized;    /* quantized tensors written as floats                      */
    char     tokenizer_file[32];   /* "tokenizer.model" or "tokenizer.json"               */
    uint64_t bytes;            /* tensor data written                                      */
    double   elapsed_ms;
} edgellm_hf_export_report;

/* The reverse: a llama or qwen2 GGUF file into the folder out_dir (config.json,
 * generation_config.json, model.safetensors or shards, tokenizer.model (SentencePiece
 * vocabularies) or tokenizer.json (byte-level BPE), tokenizer_config.json with the chat
 * templates), so that edgellm_convert_hf gives the same tensors and tokenizer back. Q/K
 * rows of a llama are permuted back to Hugging Face's layout. out_dir must not exist or be
 * empty; the files are written into "OUT_DIR.tmp.PID" (removed on failure, and by
 * edgellm_remove_temp_files) which is renamed to out_dir at the end. report may be NULL.
 * Statuses: EDGELLM_ERR_MISUSE (bad params, out_dir not empty), EDGELLM_ERR_UNSUPPORTED
 * (another architecture, a type without dequantizer, llama3 rope factors edgellm cannot
 * express as config.json values, a tokenizer without a pre-tokenizer edgellm knows),
 * EDGELLM_ERR_FORMAT, EDGELLM_ERR_IO, EDGELLM_ERR_CANCELLED, EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_export_hf(const char *gguf_path, const char *out_dir,
                                             const edgellm_hf_export_params *p,
                                             edgellm_hf_export_report *report, edgellm_error *err);

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
    float  branch_scale;       /* the residual branches' output matrices (attn_output,
                                  ffn_down) get std * branch_scale: near 0 the network is
                                  close to a map of the last token (a greedy text that falls
                                  into a cycle), with the same bytes per token; 0 or 1:
                                  unscaled (default 1)                                     */
} edgellm_synth_params;

EDGELLM_API edgellm_synth_params edgellm_synth_default_params(void);   /* shape zeroed */

/* Write the model to out_path (atomically). n_params / file bytes in *n_params and
 * *file_bytes when not NULL. Statuses: EDGELLM_ERR_MISUSE (shape numbers <= 0, n_embd not
 * divisible by n_head or n_head by n_head_kv, odd head_dim, n_vocab < 259, unknown type
 * or arch), EDGELLM_ERR_IO, EDGELLM_ERR_CANCELLED, EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_synth(const edgellm_synth_params *p, const char *out_path,
                                         uint64_t *n_params, uint64_t *file_bytes, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Benchmark (`edgellm bench`), llama-bench conventions (ggml-org/llama.cpp:tools/llama-bench/README.md): pp<N> = one
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
    int      n_repacked;       /* weight matrices the loader repacked into a load-time
                                  layout (0: all in the file's layout)                    */
    double   repack_ms;        /* the first load's time spent repacking (part of load_ms)  */
    int      n_stored;         /* matrices in a stored layout read where they are mapped
                                  (`quantize --layout`; no load-time pass)                */
} edgellm_bench_report;

EDGELLM_API edgellm_bench_params edgellm_bench_default_params(void);

/* The CPU as llama-bench's cpu_info names it: the model name of /proc/cpuinfo, and on
 * x86-64 the family and model from CPUID, which tell the microarchitecture where a virtual
 * machine's model name does not ("AMD EPYC 9R14 (family 0x19 model 0x11)": AMD family
 * 0x19 is Zen 3/4, 0x1A Zen 5); "unknown" when nothing is known. snprintf-style into
 * buf[size]. Thread-safe. */
EDGELLM_API void edgellm_bench_cpu_info(char *buf, size_t size);

/* Run the tests on model_path, filling *report (plain data, nothing to free). Statuses:
 * those of edgellm_model_load / edgellm_ctx_new / edgellm_decode, EDGELLM_ERR_MISUSE
 * (n_prompt/n_gen < 0, both 0, n_reps outside 1..1000, a thread count outside 1..64, a
 * depth outside 0..2^20, more than EDGELLM_BENCH_MAX_RESULTS tests),
 * EDGELLM_ERR_CANCELLED. Uses the CPU for as long as the tests take; run alone. */
EDGELLM_API edgellm_status edgellm_bench(const char *model_path, const edgellm_bench_params *p,
                                         edgellm_bench_report *report, edgellm_error *err);

/* Batched decoding (`edgellm bench -b`), with the definitions of llama.cpp's batched-bench,
 * prompt not shared (ggml-org/llama.cpp tools/batched-bench/batched-bench.cpp): for each
 * batch size B, B sequences each prefill PP tokens in one edgellm_decode_batch of B x PP
 * tokens (T_PP), then TG steps of one edgellm_decode_batch holding one token of every
 * sequence (T_TG). Token ids are fixed pseudo-random ids; no sampling is timed. The
 * context has max(B) sequences of PP + TG cells each. */
#define EDGELLM_BATCHED_MAX_SIZES 16

typedef struct {
    int    n_prompt;           /* PP: prompt tokens per sequence, >= 0 (default 128)       */
    int    n_gen;              /* TG: generated tokens per sequence, >= 1 (default 64)     */
    int    sizes[EDGELLM_BATCHED_MAX_SIZES];   /* batch sizes B, each 1..64                */
    int    n_sizes;            /* 0: B = 1, 2, 4, 8                                        */
    int    n_threads;          /* <= 0: physical cores                                     */
    int    kv_type;            /* edgellm_ctx_params.kv_type (default EDGELLM_TYPE_F32)    */
    int    n_reps;             /* runs per B, reported as the mean of their times (default 1,
                                  as batched-bench)                                        */
    int    warmup;             /* 1 (default): one untimed PP pass + one TG step of every
                                  sequence before the first B                             */
    edgellm_progress_fn progress;   /* may be NULL: called before each B                   */
    void  *progress_user;
} edgellm_batched_bench_params;

/* What every row shares (the model and context of the run). */
typedef struct {
    char     model_type[128];  /* "llama 1.1B Q4_0"                                        */
    uint64_t model_size;       /* bytes of tensor data                                     */
    uint64_t model_n_params;
    int      n_threads;
    int      kv_type;
    int      n_seq;            /* sequences of the context: max(B)                          */
    int      n_ctx;            /* cells per sequence: PP + TG                               */
    uint64_t kv_bytes_per_seq; /* K and V bytes of one sequence's n_ctx cells, as allocated */
} edgellm_batched_bench_info;

/* One row, batched-bench's columns. */
typedef struct {
    int    pp, tg, b;          /* PP, TG, B                                                */
    int    n_kv;               /* N_KV = B x (PP + TG): cells the run fills                */
    double t_pp;               /* T_PP s: the prompt pass of B x PP tokens                 */
    double s_pp;               /* S_PP t/s = B x PP / T_PP                                 */
    double t_tg;               /* T_TG s: the TG steps                                     */
    double s_tg;               /* S_TG t/s = B x TG / T_TG: aggregate generation speed      */
    double t;                  /* T s = T_PP + T_TG                                         */
    double s;                  /* S t/s = B x (PP + TG) / T                                 */
    double wait_frac;          /* run-queue wait / (wall x threads) during the timed runs
                                  (other processes took the cores); -1 when unknown        */
    double s_tg_peak;          /* B / the fastest TG step: the aggregate speed of an
                                  undisturbed step (on a shared machine S_TG mixes in the
                                  steps other processes slowed; not a batched-bench column) */
} edgellm_batched_bench_row;

/* Called once per batch size, in the order of p->sizes; non-zero stops the run
 * (EDGELLM_ERR_CANCELLED). */
typedef int (*edgellm_batched_bench_fn)(const edgellm_batched_bench_info *info, const edgellm_batched_bench_row *row,
                                        void *user);

EDGELLM_API edgellm_batched_bench_params edgellm_batched_bench_default_params(void);

/* Run the batched test on model_path, calling on_row for each batch size. Statuses: those
 * of edgellm_model_load / edgellm_ctx_new / edgellm_decode_batch, EDGELLM_ERR_MISUSE (PP <
 * 0, TG < 1, a size outside 1..64, more than EDGELLM_BATCHED_MAX_SIZES sizes, n_reps outside
 * 1..1000), EDGELLM_ERR_CANCELLED. Uses the CPU for as long as it takes; run alone. */
EDGELLM_API edgellm_status edgellm_batched_bench(const char *model_path, const edgellm_batched_bench_params *p,
                                                 edgellm_batched_bench_fn on_row, void *user, edgellm_error *err);

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
 * (ggml-org/llama.cpp:tools/perplexity/perplexity.cpp), so the numbers are comparable:
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

/* Importance statistics of m over text (see edgellm_imatrix above). */
EDGELLM_API edgellm_status edgellm_imatrix_collect(const edgellm_model *m, const char *text, size_t len,
                                                   const edgellm_eval_params *p, edgellm_imatrix **out,
                                                   edgellm_error *err);

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
    int64_t n_kld_inf;        /* positions where the model gives probability 0 to a token the
                                 reference does not: their KLD is +inf, and so are the mean
                                 and the maximum (terms where the reference gives 0 count 0) */
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

/* ------------------------------------------------------------------------------------
 * Device sensors, the thermal/battery governor and a simulated device
 * (src/tools/governor*.c, docs/governor.md). Linux sysfs, read under a root folder that
 * tests and demos can move: ROOT/class/thermal/thermal_zoneN/{temp,type,trip_point_*_temp,
 * trip_point_*_type} (millidegrees Celsius; Documentation/driver-api/thermal/sysfs-api.rst),
 * ROOT/class/power_supply/NAME/{type,capacity,status,power_now,current_now,voltage_now}
 * (percent, microwatts, microamperes, microvolts; Documentation/ABI/testing/sysfs-class-power),
 * ROOT/devices/system/cpu/cpuN/cpufreq/{scaling_cur_freq,scaling_max_freq} (kHz). A sensor
 * that is missing, unreadable, not a number, NaN or outside a plausible range is reported as
 * unknown (NAN, or -1 for flags), never as a cool or full reading.
 * ---------------------------------------------------------------------------------- */
#define EDGELLM_SYSFS_ROOT_ENV "EDGELLM_SYSFS_ROOT"   /* the root when none is given: "/sys" */

typedef struct {
    size_t size;            /* set by the caller: sizeof(edgellm_sensors)                  */
    double temp_c;          /* hottest readable thermal zone, degrees C; NAN: unknown      */
    char   temp_zone[32];   /* its `type` ("cpu-thermal", "x86_pkg_temp"); "" when unknown */
    double trip_hot_c;      /* lowest trip point of type passive or hot over the zones; NAN */
    double trip_crit_c;     /* lowest trip point of type critical; NAN                     */
    int    n_zones;         /* thermal zones found                                         */
    int    n_zones_bad;     /* of them, zones whose temp could not be read or made no sense */
    double battery_pct;     /* capacity of the first battery, 0..100; NAN: no battery/unknown */
    int    charging;        /* 1 charging or full, 0 discharging / not charging, -1 unknown */
    double power_w;         /* battery power draw, W (power_now, else current x voltage); NAN */
    double cpu_freq_ratio;  /* mean scaling_cur_freq / scaling_max_freq over CPUs, 0..1; NAN */
} edgellm_sensors;

/* Read all sensors under root (NULL: $EDGELLM_SYSFS_ROOT, else "/sys") into the first
 * out->size bytes of *out. Missing sensors are unknown, not errors. EDGELLM_ERR_MISUSE for
 * NULL out or size 0. Thread-safe (reads files only). */
EDGELLM_API edgellm_status edgellm_sensors_read(const char *root, edgellm_sensors *out, edgellm_error *err);

/* Governor levels, from cool to hot. */
typedef enum {
    EDGELLM_GOV_NOMINAL = 0,
    EDGELLM_GOV_WARM = 1,
    EDGELLM_GOV_HOT = 2,
    EDGELLM_GOV_CRITICAL = 3,
    EDGELLM_GOV_N_LEVELS = 4
} edgellm_gov_level;

/* "nominal", "warm", "hot", "critical"; "?" otherwise. */
EDGELLM_API const char *edgellm_gov_level_name(int level);

/* What the runtime does at a level. */
typedef struct {
    int    n_threads;       /* compute threads at this level; 0: the application's own.
                               Applied when the next context is made (next request)        */
    double max_tok_s;       /* generated tokens per second, at most (sleeps between tokens:
                               a duty cycle); 0: no cap                                     */
    int    light_model;     /* 1: use the lighter model (the policy's) from the next request */
    int    pause;           /* 1: no new requests (edgellm_governor_admit says 0) and a
                               running generation waits between tokens until the level drops,
                               at most pause_max_s                                          */
} edgellm_gov_action;

typedef struct {
    size_t size;                 /* sizeof(edgellm_gov_policy)                             */
    const char *sysfs_root;      /* NULL: $EDGELLM_SYSFS_ROOT, else "/sys"                 */
    /* A level is entered when the temperature reaches enter_c[level] (levels 1..3; NAN: the
     * level is never entered by temperature) and left when it falls below
     * enter_c[level] - hysteresis_c. Default 60 / 70 / 80 C, hysteresis 3 C. */
    double enter_c[EDGELLM_GOV_N_LEVELS];
    double hysteresis_c;
    /* The same for a thermal headroom the application feeds (edgellm_governor_set_headroom;
     * Android ADPF getThermalHeadroom: 1.0 = severe throttling). Default 0.7 / 0.85 / 1.0,
     * hysteresis 0.05. */
    double enter_headroom[EDGELLM_GOV_N_LEVELS];
    double hysteresis_headroom;
    /* Below battery_low_pct percent and not charging: at least battery_level (default 20 %,
     * EDGELLM_GOV_WARM, the low-power level); <= 0: no battery rule. */
    double battery_low_pct;
    int    battery_level;
    /* Level while neither temperature nor headroom is known (logged as unknown): default
     * EDGELLM_GOV_NOMINAL; a cautious deployment sets EDGELLM_GOV_WARM. */
    int    unknown_level;
    edgellm_gov_action action[EDGELLM_GOV_N_LEVELS];   /* default: nominal nothing; warm
                               max 0.75 x threads (at least 1); hot 1 thread, 4 tok/s, light
                               model; critical pause                                       */
    double poll_s;               /* sensors are read at most this often, s; default 1; 0: at
                                    every call                                               */
    double pause_max_s;          /* longest wait between two tokens while paused; default 30 */
    const char *light_model_path;/* the lighter model for light_model; NULL: none (ignored)  */
    /* One line per level change and per sensor that becomes unknown or known ("governor:
     * nominal -> hot: temp 71.5 C >= 70.0 C (thermal_zone0 cpu-thermal); threads 1, max 4
     * tok/s, light model"); NULL: none. Called on the thread that polls. */
    void (*log)(void *user, const char *line);
    void *log_user;
} edgellm_gov_policy;

/* The defaults above; n_threads is the application's thread count the default actions are
 * scaled from (<= 0: 4). */
EDGELLM_API edgellm_gov_policy edgellm_gov_default_policy(int n_threads);

typedef struct {
    size_t size;            /* set by the caller: sizeof(edgellm_gov_state)                 */
    int    level;           /* edgellm_gov_level                                            */
    const char *reason;     /* "temperature", "headroom", "battery", "unknown", "start"     */
    edgellm_sensors sensors;/* the last reading (size = sizeof(edgellm_sensors))            */
    double headroom;        /* the last fed headroom; NAN: none                             */
    edgellm_gov_action action;  /* in force                                                 */
    int    n_changes;       /* level changes so far                                         */
    double slept_s;         /* time spent in duty-cycle sleeps and pauses, s                */
    double max_temp_c;      /* highest temperature seen; NAN: none                          */
    double pause_max_s;     /* the policy's pause_max_s                                      */
} edgellm_gov_state;

typedef struct edgellm_governor edgellm_governor;

/* A governor with a copy of policy (strings borrowed: keep them alive). Reads the sensors
 * once. EDGELLM_ERR_MISUSE for a bad policy (levels out of order, negative hysteresis),
 * EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_governor_new(const edgellm_gov_policy *policy, edgellm_governor **out,
                                                edgellm_error *err);
EDGELLM_API void edgellm_governor_free(edgellm_governor *g);
/* Feed a thermal headroom reading (any thread; NAN clears it). */
EDGELLM_API void edgellm_governor_set_headroom(edgellm_governor *g, double headroom);
/* Read the sensors (if poll_s has passed; force 1: now) and move the level with hysteresis,
 * logging a change. Fills *out when not NULL. Returns 1 when the level changed, else 0.
 * One thread at a time (the generating one); set_headroom may run concurrently. */
EDGELLM_API int edgellm_governor_poll(edgellm_governor *g, int force, edgellm_gov_state *out);
/* Between two tokens: poll, then sleep so that tokens come no faster than the level's
 * max_tok_s, and while the level pauses (at most pause_max_s). Returns the seconds slept. */
EDGELLM_API double edgellm_governor_between_tokens(edgellm_governor *g);
/* Before a new request: poll; 0 when the level pauses (refuse or wait), else 1. */
EDGELLM_API int edgellm_governor_admit(edgellm_governor *g);
/* Threads for the next context: the level's n_threads, else app_threads. */
EDGELLM_API int edgellm_governor_threads(edgellm_governor *g, int app_threads);
/* The model for the next request: the policy's light_model_path when the level asks for
 * it and one is set, else default_path. */
EDGELLM_API const char *edgellm_governor_model(edgellm_governor *g, const char *default_path);

/* A simulated device for tests and demos, where the machine has no thermal zones: a fake
 * sysfs tree under root (class/thermal/thermal_zone0 with a passive trip point, and
 * devices/system/cpu/cpu0/cpufreq) whose temperature follows a first-order thermal model
 * driven by this process's CPU time: dT/dt = (ambient + k_c_per_cpu x cpus_busy - T) / tau,
 * cpus_busy = CPU seconds used per wall second (all threads), updated by a background
 * thread every 100 ms. Above the trip point the simulated CPU throttles: speed =
 * max(min_speed, 1 - (T - trip) / throttle_span_c), written as scaling_cur_freq; callers
 * that emulate it (soak) stretch each token by 1 / speed. */
typedef struct {
    size_t size;            /* sizeof(edgellm_simdev_params)                               */
    const char *root;       /* folder to create the tree in (made when missing)            */
    double ambient_c;       /* default 30                                                  */
    double k_c_per_cpu;     /* steady-state rise per busy CPU, C; default 30               */
    double tau_s;           /* time constant, s; default 30                                */
    double trip_c;          /* passive trip point, C; default 70                           */
    double throttle_span_c; /* default 15                                                  */
    double min_speed;       /* default 0.4                                                 */
    double start_c;         /* initial temperature; NAN: ambient                           */
    int    declared_load;   /* 0: cpus_busy from the process's CPU time; 1: from what the
                               caller declares (edgellm_simdev_set_load), for machines where
                               other processes take the CPUs so CPU time says little about
                               what a device running alone would burn                      */
} edgellm_simdev_params;

typedef struct edgellm_simdev edgellm_simdev;
EDGELLM_API edgellm_simdev_params edgellm_simdev_default_params(void);
/* Create the tree and start the thread. EDGELLM_ERR_IO when root cannot be written. */
EDGELLM_API edgellm_status edgellm_simdev_start(const edgellm_simdev_params *p, edgellm_simdev **out,
                                                edgellm_error *err);
/* Stop the thread (the tree stays). NULL-safe. */
EDGELLM_API void edgellm_simdev_stop(edgellm_simdev *d);
EDGELLM_API double edgellm_simdev_temp(edgellm_simdev *d);    /* C, any thread        */
EDGELLM_API double edgellm_simdev_speed(edgellm_simdev *d);   /* 0..1, any thread      */
/* With declared_load: the CPUs computing from now on (threads while a token computes, 0
 * while sleeping), integrated over time. Any thread. */
EDGELLM_API void edgellm_simdev_set_load(edgellm_simdev *d, double cpus);

/* ------------------------------------------------------------------------------------
 * Soak test (`edgellm soak`; src/tools/soak*.c, docs/soak.md): a repeated, varied workload
 * (prompt lengths, new conversations and continuations) for a set duration, optionally
 * through a governor and on a simulated device, measured per interval; then drift slopes
 * with 95 % confidence intervals, throughput retention and a verdict against thresholds,
 * written as CSV, JSON and an SVG plot (one panel per metric over time).
 * Memory is read from /proc/self/status (RssAnon, RssFile, VmSwap: anonymous memory is
 * where a leak shows; file-backed pages are the mapped weights) and /proc/self/fd.
 * ---------------------------------------------------------------------------------- */
typedef struct {
    double slope;           /* least-squares slope of y over x, in the report's unit       */
    double lo, hi;          /* its 95 % confidence interval (Student t, n - 2 dof); NAN when
                               n < 3                                                       */
    int    n;               /* points fitted                                               */
} edgellm_soak_trend;

/* Least squares y = a + b x over the points with finite x and y (NAN y skipped): b with
 * its 95 % interval b +- t(0.975, n-2) x se(b). Thread-safe. */
EDGELLM_API edgellm_soak_trend edgellm_soak_fit(const double *x, const double *y, int n);
/* The q-quantile (0..1) of v[n], linear between order statistics (type 7 of Hyndman and
 * Fan 1996, numpy's default); sorts v in place; NAN when n == 0. */
EDGELLM_API double edgellm_soak_quantile(double *v, int n, double q);

typedef struct {
    double t_s;             /* end of the interval, seconds since the start                */
    int    n_requests;      /* requests that finished in it                                */
    int    n_tokens;        /* tokens generated in it                                      */
    double tok_s;           /* n_tokens / interval wall time (pauses and prefill included) */
    double ttft_p50_ms, ttft_p95_ms;   /* time to first token of requests started in it; NAN: none */
    double itl_p50_ms, itl_p95_ms;     /* inter-token latency; NAN: none                   */
    double rss_anon_mib, rss_file_mib, swap_mib;   /* at its end; NAN: unknown             */
    int    n_fds;           /* open file descriptors at its end; -1: unknown               */
    double temp_c;          /* NAN: unknown                                                */
    int    gov_level;       /* -1: no governor                                             */
    int    n_threads;       /* threads of the context in use                               */
    int    light_model;     /* 1: the governor's lighter model was in use                  */
} edgellm_soak_row;

typedef int (*edgellm_soak_row_fn)(void *user, const edgellm_soak_row *row, double fraction);

typedef struct {
    size_t size;                  /* sizeof(edgellm_soak_params)                           */
    double duration_s;            /* default 60                                            */
    double interval_s;            /* one row per interval; default 10                       */
    const char *const *prompts;   /* [n_prompts]; NULL: a built-in set of short and long ones */
    int    n_prompts;
    int    n_predict;             /* tokens per request, drawn in [n_predict/2, n_predict]; 64 */
    double continue_frac;         /* share of requests that continue the conversation (when it
                                     fits the context) instead of starting one; default 0.3 */
    int    n_threads;             /* <= 0: physical cores                                  */
    int    n_ctx;                 /* default 1024                                          */
    int    kv_type;               /* EDGELLM_TYPE_F32 (default), _F16, _Q8_0                */
    uint64_t seed;                /* prompts, lengths, sampling; default 1                 */
    edgellm_governor *governor;   /* borrowed; NULL: none                                  */
    edgellm_simdev *simdev;       /* borrowed; NULL: none. Its throttling is emulated: each
                                     token is stretched by 1 / speed                       */
    const char *sysfs_root;       /* for the temperature column without a governor (NULL:
                                     as edgellm_sensors_read)                              */
    size_t leak_bytes_per_request;/* test hook: this many bytes allocated, touched and kept
                                     until the end per request (a leak soak must flag); 0  */
    /* verdict thresholds */
    double max_rss_mib_per_h;     /* RssAnon slope whose whole interval is above: leak; 16   */
    double max_latency_pct_per_10min; /* inter-token p50 drift whose interval is above; 10 */
    double min_retention;         /* tok/s retention below: throttled; default 0.8        */
    edgellm_soak_row_fn on_row;   /* after each row (progress); non-zero return stops      */
    void  *user;
} edgellm_soak_params;

EDGELLM_API edgellm_soak_params edgellm_soak_default_params(void);

typedef struct {
    size_t size;                  /* set by the caller: sizeof(edgellm_soak_report)         */
    edgellm_soak_row *rows;       /* [n_rows], owned: edgellm_soak_report_free             */
    int    n_rows;
    char   model[256];            /* file name                                              */
    double duration_s;            /* measured                                               */
    long long n_requests, n_tokens;
    double window_s;              /* of the retention: min(30, duration / 4)                 */
    double retention;             /* tok/s in the last window / tok/s in the first           */
    edgellm_soak_trend tok_s_pct_per_10min;  /* slopes as % of the series' mean per 10 min, */
    edgellm_soak_trend itl_pct_per_10min;    /* over the rows after the first (warm-up)     */
    edgellm_soak_trend ttft_pct_per_10min;
    edgellm_soak_trend rss_anon_mib_per_h;   /* MiB per hour                                 */
    edgellm_soak_trend fds_per_h;
    double rss_anon_first_mib, rss_anon_last_mib;   /* second row (after warm-up) and last */
    int    fds_first, fds_last;
    double max_temp_c;            /* NAN: unknown                                           */
    double trip_c;                /* the hot/passive trip point seen; NAN: none             */
    double above_trip_s;          /* time whose rows were above the trip point              */
    int    n_gov_changes;
    double gov_slept_s;
    int    pass;                  /* 1: no flag raised                                      */
    char   verdict[512];          /* "pass" or the flags: "leak: RssAnon +x MiB/h [lo, hi]; ..." */
    char   thresholds[256];       /* the thresholds applied, in words                        */
} edgellm_soak_report;

/* Load model_path (and the governor's lighter model when it asks), run the workload for
 * p->duration_s and fill *report. Statuses: those of edgellm_model_load, edgellm_ctx_new,
 * edgellm_generate; EDGELLM_ERR_MISUSE (bad params); EDGELLM_ERR_CANCELLED (on_row
 * stopped it; the report holds the rows so far). Uses the CPU for the whole duration. */
EDGELLM_API edgellm_status edgellm_soak(const char *model_path, const edgellm_soak_params *p,
                                        edgellm_soak_report *report, edgellm_error *err);
/* Recompute the trends, retention and verdict from report->rows (edgellm_soak does it; a
 * test can call it on synthetic rows). */
EDGELLM_API void edgellm_soak_analyze(edgellm_soak_report *report, const edgellm_soak_params *p);
EDGELLM_API void edgellm_soak_report_free(edgellm_soak_report *r);   /* frees rows; NULL-safe */
/* Write DIR/soak.csv (one row per interval), DIR/soak.json (summary and rows) and
 * DIR/soak.svg (panels: tok/s, TTFT and inter-token p50/p95, RssAnon and RssFile, fds,
 * temperature and governor level), creating DIR. EDGELLM_ERR_IO names the file. */
EDGELLM_API edgellm_status edgellm_soak_write(const edgellm_soak_report *r, const char *dir, edgellm_error *err);
/* The SVG alone, to f (self-contained, no script or external resource). */
EDGELLM_API void edgellm_soak_svg(const edgellm_soak_report *r, FILE *f);

/* ------------------------------------------------------------------------------------
 * Memory: a low-memory mode (resident weights under a budget), warm-up, locking the
 * weights, dropping a file from the page cache, and this process's memory
 * (src/tools/memory.c, docs/governor.md). Linux madvise(2), mlock(2), posix_fadvise(2),
 * proc(5) /proc/self/status and clear_refs.
 * ---------------------------------------------------------------------------------- */
typedef struct edgellm_membudget edgellm_membudget;

typedef struct {
    size_t   size;            /* set by the caller: sizeof(edgellm_membudget_info)          */
    uint64_t budget_bytes;    /* as asked                                                  */
    uint64_t fixed_bytes;     /* always resident: output head and norms                    */
    uint64_t layer_bytes_max; /* the largest layer's matrices                              */
    int      window_layers;   /* layers kept resident at once (n_layer: all fit)           */
    int      n_layer;
    uint64_t n_released;      /* madvise(MADV_DONTNEED) calls so far                       */
} edgellm_membudget_info;

/* Keep the mapped weights resident in c's process under budget_bytes while c decodes: the
 * forward pass's layer hook keeps the last window_layers layers (budget - fixed, in largest
 * layers) and releases older ones and the token-embedding table with MADV_DONTNEED; what
 * loading touched is released now. Resident memory is then about fixed + window x layer +
 * the KV cache and scratch (anonymous). Results are bit-identical (the pages are re-read
 * from the file). EDGELLM_ERR_MISUSE when the budget is below fixed + one layer (the
 * message says the minimum) or c already has one; EDGELLM_ERR_UNSUPPORTED when the model's
 * matrices were repacked at load (owned memory, not the mapping: load it with EDGELLM_REPACK=0,
 * as `run --mem-budget` does); EDGELLM_ERR_NOMEM. Detach before
 * freeing c; one context per budget; the model may be shared (its pages are shared too:
 * several contexts release each other's pages, harmless but slower). */
EDGELLM_API edgellm_status edgellm_membudget_attach(edgellm_ctx *c, uint64_t budget_bytes, edgellm_membudget **out,
                                                    edgellm_error *err);
EDGELLM_API void edgellm_membudget_get_info(const edgellm_membudget *b, edgellm_membudget_info *out);
EDGELLM_API void edgellm_membudget_detach(edgellm_membudget *b);   /* NULL-safe */

/* Warm-up for a fresh context (every sequence empty, else EDGELLM_ERR_MISUSE): read the
 * weights ahead (MADV_WILLNEED) and fault every page in, unless a memory budget is
 * attached, then decode one BOS token and reset the context, so the first request pays
 * neither page faults nor first-use costs. *ms (may be NULL): its duration. */
EDGELLM_API edgellm_status edgellm_warmup(edgellm_ctx *c, double *ms, edgellm_error *err);
/* Lock the model's weights in RAM (mlock). EDGELLM_ERR_NOMEM with the sizes and how to
 * raise it when RLIMIT_MEMLOCK is below the weights (not root), or mlock's reason. */
EDGELLM_API edgellm_status edgellm_model_mlock(const edgellm_model *m, edgellm_error *err);
/* Write path's dirty pages back (fsync) and ask the kernel to drop it from the page cache
 * (POSIX_FADV_DONTNEED; pages mapped by a process stay) and report the fraction still resident (mincore; -1: unknown) in
 * *resident_frac (may be NULL), so a cold start can be timed where that is permitted. */
EDGELLM_API edgellm_status edgellm_file_drop_cache(const char *path, double *resident_frac, edgellm_error *err);

typedef struct {
    size_t   size;            /* set by the caller: sizeof(edgellm_proc_mem)                */
    uint64_t rss_bytes, rss_anon_bytes, rss_file_bytes, swap_bytes;   /* UINT64_MAX: unknown */
    uint64_t peak_rss_bytes;  /* VmHWM (before a reset)                                     */
    int      peak_reset;      /* 1: the peak was reset (clear_refs 5, Linux >= 4.0)         */
} edgellm_proc_mem;
/* This process's memory from /proc/self/status; reset_peak 1 then resets VmHWM. */
EDGELLM_API edgellm_status edgellm_proc_memory(edgellm_proc_mem *out, int reset_peak);

/* Start-up and low-memory figures for `edgellm bench --cold-warm` / `--mem-budget`
 * (src/tools/bench_start.c): the first token of a fresh load with the file dropped from
 * the page cache (cold) and after edgellm_warmup (warm), and decode speed and peak RSS with
 * a memory budget against none. */
typedef struct {
    size_t   size;              /* sizeof(edgellm_bench_start_params)                       */
    int      n_prompt;          /* prompt tokens of the first request (default 32)           */
    int      n_gen;             /* single-token decodes timed for tok/s (default 16)         */
    int      n_threads;         /* <= 0: physical cores                                      */
    int      cold_warm;         /* 1 (default): the cold and warm first-token runs           */
    uint64_t mem_budget_bytes;  /* > 0: the runs without and with this budget                */
} edgellm_bench_start_params;

typedef struct {
    int      cold_dropped;      /* 1: below 10 % of the file's pages stayed resident after
                                   posix_fadvise DONTNEED (else the cold run was not cold)  */
    double   cold_resident_frac, warm_resident_frac;   /* after the drop (mincore); -1: unknown */
    double   cold_load_ms, cold_ttft_ms;   /* load; prompt pass + one decode                 */
    double   warm_load_ms, warmup_ms, warm_ttft_ms;
    uint64_t budget_bytes;
    double   full_tg_ts, budget_tg_ts;     /* decode tok/s without / with the budget         */
    uint64_t full_peak_rss_bytes, budget_peak_rss_bytes;   /* VmHWM of each run              */
    int      budget_window_layers, n_layer;
} edgellm_bench_start_report;

EDGELLM_API edgellm_bench_start_params edgellm_bench_start_default_params(void);
/* Run the cold/warm and budget runs on path (in this order; each loads the model afresh).
 * Statuses of edgellm_model_load / ctx_new / decode / warmup / membudget_attach (a budget
 * below the minimum: EDGELLM_ERR_MISUSE naming it); EDGELLM_ERR_MISUSE for sizes outside
 * 1..65536. Drops path from the page cache (other processes reading it pay for that).
 * Run alone: it times and reads this process's peak RSS. */
EDGELLM_API edgellm_status edgellm_bench_start(const char *path, const edgellm_bench_start_params *p,
                                               edgellm_bench_start_report *r, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Quantization to a quality target (`edgellm quantize IN OUT --target ...`,
 * src/tools/quantize_target.c, docs/quantization.md): the type of every matrix is chosen
 * so that the file meets a quality gap against the source model on a calibration text at
 * the smallest size (or the best quality within a size), then the file is measured and
 * the choice adjusted until the measurement meets the target:
 *   1. scan: the cost of each candidate type for each matrix alone. "measured": the KLD
 *      of the source model with only that matrix quantized (and dequantized in place)
 *      against the source, on the first scan_chunks calibration windows; "proxy" (large
 *      models): the
 *      importance-weighted relative error sum_j E[x_j^2] dw_j^2 / sum_j E[x_j^2] w_j^2 of a
 *      sample of rows;
 *   2. choice: every matrix starts at its smallest candidate; the greedy path takes, one
 *      step at a time, the upgrade with the largest cost saved per byte added, until all
 *      are at their largest; a choice is a prefix of that path, whose predicted cost (the
 *      sum of the chosen costs) falls as its bytes grow;
 *   3. verification: the prefix whose prediction equals the target (size targets: the
 *      longest that fits) is written and compared with the source on the calibration
 *      windows (edgellm_eval_compare); the next prefix predicts the current prediction x
 *      target / measured, kept strictly between the longest prefix that missed and the
 *      shortest that met, for up to max_rounds files; the smallest file that met is kept;
 *   4. the kept file is compared with the source on the held-out text (when given).
 * Targets: "kld:X" (mean KLD in nats), "dppl:X%" (perplexity increase, percent),
 * "top1:X%" (same argmax as the source, percent), "size:N[KiB|MiB|GiB|B]" (tensor data +
 * metadata at most N bytes: the best predicted quality within it).
 * ---------------------------------------------------------------------------------- */
#define EDGELLM_QT_MAX_TYPES 16
#define EDGELLM_QT_MAX_ROUNDS 12

typedef struct {
    edgellm_quantize_params quant;  /* n_threads, keep (matching matrices are not scanned and
                                       stay as the recipe says), progress, imatrix (NULL:
                                       collected from the calibration text unless no_imatrix);
                                       type, group, asym: the recipe for the tensors that are
                                       not scanned (default q8_0)                          */
    const char *target;             /* "kld:0.02", "dppl:3%", "top1:95%", "size:300MiB"      */
    const char *types;              /* candidates, comma-separated tensor types ("q4_0,
                                       q5_0,i4_g64_asym,q8_0,f16"; "i4:g64:asym" too); NULL:
                                       q4_0,q4_1,q5_0,q5_1,q8_0,q4_k,q5_k,q6_k,i4_g64,
                                       i4_g64_asym,i4_g128,i4_g128_asym,f16                 */
    const char *calib;              /* calibration text (borrowed) and its length          */
    size_t calib_len;
    const char *calib_name;         /* for reports; may be NULL                              */
    const char *heldout;            /* held-out text for the final report; NULL: none       */
    size_t heldout_len;
    const char *heldout_name;
    int    n_ctx;                   /* tokens per window (default 256)                        */
    int    calib_chunks;            /* calibration windows of the verification (default 16)   */
    int    scan_chunks;             /* the first of them that the measured scan uses (8)      */
    int    heldout_chunks;          /* held-out windows (default 32; <= 0: all)               */
    int    max_rounds;              /* verification rounds, 1..EDGELLM_QT_MAX_ROUNDS (6)      */
    int    no_imatrix;              /* 1: plain quantizers                                    */
    int    scan;                    /* 0: measured up to 50 M parameters, proxy above;
                                       1: measured; 2: proxy                                  */
    double predict_scale;           /* scan costs are multiplied by this (1; tests use it to
                                       make the prediction wrong on purpose)                  */
    double margin;                  /* (0, 1]: the rounds aim at margin x the gap (kld, dppl,
                                       100 - top1), leaving room for the difference between
                                       calibration and other text (default 1)                 */
} edgellm_quantize_target_params;

EDGELLM_API edgellm_quantize_target_params edgellm_quantize_target_default_params(void);

typedef struct {
    char     name[64];
    int      n_options;
    int      type[EDGELLM_QT_MAX_TYPES];       /* candidate types after shape fallbacks, distinct */
    double   cost[EDGELLM_QT_MAX_TYPES];       /* scan cost of each (KLD nats or proxy)         */
    uint64_t bytes[EDGELLM_QT_MAX_TYPES];
    uint64_t n_elements;
    int      chosen;                           /* index of the kept file's choice                */
    char     why[96];
} edgellm_quantize_target_tensor;

typedef struct {
    double   budget;           /* cost budget of the choice (size targets: bytes)           */
    double   predicted;        /* sum of the chosen scan costs                              */
    uint64_t bytes;            /* tensor data of the file                                   */
    double   bpw;
    edgellm_eval_compare_result cal;   /* measured on the calibration windows               */
    double   value;            /* the target's metric, measured                             */
    int      met;
} edgellm_quantize_target_round;

typedef struct {
    char     metric[8];        /* "kld", "dppl", "top1", "size"                             */
    double   target;           /* nats, percent, percent or bytes                            */
    int      scan_measured;    /* 1: KLD scan; 0: proxy                                      */
    int      n_tensors;        /* matrices scanned                                           */
    edgellm_quantize_target_tensor *tensors;   /* owned                                      */
    int      n_rounds;
    edgellm_quantize_target_round rounds[EDGELLM_QT_MAX_ROUNDS];
    int      kept_round;       /* the round whose file was written to OUT                    */
    int      met;              /* 1: the kept file meets the target on the calibration text */
    int      has_heldout;
    edgellm_eval_compare_result heldout;   /* the kept file on the held-out text            */
    uint64_t file_bytes;       /* size of OUT                                                */
    uint64_t n_elements;       /* all tensors                                                */
    double   bpw;              /* tensor data bits per weight                                */
    char     imatrix[160];     /* the statistics used ("none")                               */
    char    *recipe;           /* the per-tensor types as written in edgellm.quant.recipe; owned */
    double   scan_ms, elapsed_ms;
} edgellm_quantize_target_report;

/* Quantize in_path into out_path to meet p->target (steps above). The kept file holds
 * edgellm.quant.recipe ("target dppl:3% ...; blk.0.attn_q.weight=Q4_0,...") and, with
 * statistics, edgellm.quant.imatrix. report (may be NULL) must be freed with
 * edgellm_quantize_target_report_free. Returns EDGELLM_OK when a file was written, also if no
 * round met the target (report.met 0: the best-measured file is kept). Statuses:
 * EDGELLM_ERR_MISUSE (bad target or type list, texts too short), those of
 * edgellm_model_load, edgellm_quantize_file and edgellm_eval_compare. Uses n_threads threads. */
EDGELLM_API edgellm_status edgellm_quantize_target(const char *in_path, const char *out_path,
                                                   const edgellm_quantize_target_params *p,
                                                   edgellm_quantize_target_report *report, edgellm_error *err);
EDGELLM_API void edgellm_quantize_target_report_free(edgellm_quantize_target_report *r);   /* NULL-safe */

/* ------------------------------------------------------------------------------------
 * OpenAI-compatible HTTP server (`edgellm serve`; src/tools/server*.c, docs/server.md):
 * POST /v1/chat/completions and /v1/completions (streamed as Server-Sent Events or not),
 * GET /v1/models, /health (no key; 503 while the model loads), /metrics (Prometheus text).
 * Request fields and response shapes follow llama.cpp's server (ngxson/llama.cpp:
 * tools/server/). Continuous batching: n_parallel slots, each a sequence of one context
 * with its own n_ctx cells, decode together one forward pass per step; more requests wait
 * in a bounded queue (429 with Retry-After when it is full). A prompt reuses the longest
 * prefix a free slot holds; a chat longer than the slot's context loses its oldest turns
 * after the system message (the response's "messages_dropped" says how many). A client
 * that disconnects cancels its generation. HTTP through libmicrohttpd, JSON through cJSON:
 * without them edgellm_server_run returns EDGELLM_ERR_UNSUPPORTED.
 * ---------------------------------------------------------------------------------- */
typedef struct {
    size_t size;                 /* sizeof(edgellm_server_params)                             */
    const char *model_path;      /* GGUF model (required)                                     */
    const char *model_id;        /* the model's id in /v1/models and responses; NULL: the file
                                    name without folder and .gguf                            */
    const char *host;            /* address to bind (numeric or a name); NULL: "127.0.0.1"    */
    int port;                    /* TCP port, 0 = a free one (the "listening on" line and
                                    on_listen say which); default 8080                       */
    int n_parallel;              /* slots decoding together, 1..64; default 4                 */
    int n_ctx;                   /* KV cells of EACH slot; <= 0: the model's context_length,
                                    at most 4096                                             */
    int n_threads;               /* compute threads; <= 0: physical cores                     */
    int kv_type;                 /* EDGELLM_TYPE_F32 (default), _F16 or _Q8_0                  */
    const char *api_key;         /* NULL or "": none; else every endpoint but /health needs
                                    "Authorization: Bearer KEY" (or "X-Api-Key: KEY"),
                                    compared in constant time                                */
    const char *chat_template;   /* Jinja text; NULL: the model's tokenizer.chat_template, or
                                    the built-in "chatml" when it has none                   */
    int queue_size;              /* requests waiting for a slot, beyond the slots; default 64  */
    double timeout_s;            /* per request from its arrival (queue and generation);
                                    <= 0: none; default 600                                  */
    int prefill_batch;           /* prompt tokens per step over all slots; default 256         */
    size_t max_body_bytes;       /* request bodies above this: 413; default 8 MiB              */
    double drain_s;              /* after edgellm_server_stop: seconds running requests may go
                                    on before they are cancelled; default 30                 */
    /* Lines for an operator (listening, ready, one per request, stopping), with their
     * level; NULL: none. Called from any thread, one line at a time. */
    void (*log)(void *user, edgellm_log_level level, const char *line);
    /* Called once the socket listens (before the model is loaded), with its port. */
    void (*on_listen)(void *user, int port);
    void *user;
    /* Borrowed; NULL: none. Between forward passes: a paused level answers new requests 503
     * with Retry-After and holds running streams between tokens; the tok/s cap paces the
     * slots together; another thread count re-makes the context once the running requests
     * finish; the lighter model is not switched (one model serves every slot). /metrics
     * shows the level (edgellm_srv_engine_govern, docs/governor.md). */
    edgellm_governor *governor;
    /* Speculative decoding (needs n_parallel 1 and no governor): drafts from `draft` (a model with the
     * model's vocabulary, the caller's: free it after edgellm_server_run returns; NULL: none)
     * and/or prompt lookup (spec.lookup > 0), checked as edgellm_generate_speculative does;
     * /metrics adds acceptance, accepted tokens per draft, target passes per token and the
     * speed-up over the runs' one-token passes. Default: off (no draft, lookup 0). */
    edgellm_model *draft;
    edgellm_spec_params spec;
} edgellm_server_params;

EDGELLM_API edgellm_server_params edgellm_server_default_params(void);

/* Listen, load the model (/health answers 503 meanwhile), then serve until
 * edgellm_server_stop; then drain: no new connections, queued requests get 503, running
 * ones have drain_s to finish (then they are cancelled and answered with what they have),
 * and everything is freed. Returns EDGELLM_OK after a stop; EDGELLM_ERR_IO when the
 * address cannot be bound, the statuses of edgellm_model_load / edgellm_ctx_new,
 * EDGELLM_ERR_MISUSE (bad params, or a server already running in this process),
 * EDGELLM_ERR_UNSUPPORTED (built without libmicrohttpd or cJSON). One server per process
 * at a time; blocks the calling thread. */
EDGELLM_API edgellm_status edgellm_server_run(const edgellm_server_params *p, edgellm_error *err);
/* Ask the running server (if any) to stop and drain, from any thread or a signal handler
 * (async-signal-safe: it sets a flag and writes one byte to a pipe). A stop that arrives
 * while the model loads takes effect once it has loaded. */
EDGELLM_API void edgellm_server_stop(void);

/* ------------------------------------------------------------------------------------
 * Model store (`edgellm store`; src/tools/store*.c, docs/store.md): versions of models on
 * the device. A folder holds blobs named by their SHA-256 (blobs/sha256-HEX), one manifest
 * per NAME@VERSION (manifests/NAME/VERSION.json: file size and SHA-256, per-tensor SHA-256,
 * created, expires, minimum edgellm version, optional patch; Ed25519-signed), the result
 * of its verification (manifests/NAME/VERSION.status), one pointer file per name
 * (refs/NAME: active and previous version, replaced by rename), trusted public keys
 * (keys/HEX16.pub) and a lock file (flock: one writer at a time; readers of refs take none).
 * Every change is written to a temporary, fsynced, renamed and its folder fsynced, so a
 * process killed at any point leaves the store consistent: an operation either took
 * effect or can be run again (downloads resume). Signatures and hashes through libsodium,
 * manifests through cJSON, downloads through libcurl, patches through libzstd: without
 * libsodium or cJSON every call returns EDGELLM_ERR_UNSUPPORTED; without libcurl only
 * URLs do, without libzstd only patches. The threat model follows TUF (theupdateframework
 * specification, "Goals to protect against"): rollback (a version lower than or equal to
 * the installed one is refused), freeze (an expired manifest is refused), endless data
 * (the manifest's size caps every download), and arbitrary software (an unsigned or
 * badly signed manifest is refused unless allow_unsigned).
 * Thread safety: a store handle may be used by one thread at a time; distinct handles on
 * one folder, in one process or many, are serialized by the lock.
 * ---------------------------------------------------------------------------------- */
typedef struct edgellm_store edgellm_store;

typedef struct {
    size_t size;                /* sizeof(edgellm_store_params)                               */
    const char *dir;            /* the store folder (created); NULL: $EDGELLM_STORE, else
                                   $XDG_DATA_HOME/edgellm/store, else ~/.local/share/edgellm/store */
    int smoke_test;             /* verification loads the model and decodes 4 tokens (finite
                                   logits); default 1                                        */
    edgellm_progress_fn progress;   /* long operations (copy, download, patch, verify); may be NULL */
    void *progress_user;
} edgellm_store_params;

EDGELLM_API edgellm_store_params edgellm_store_default_params(void);

/* Open (create) a store folder. Statuses: EDGELLM_ERR_IO (cannot create or write it),
 * EDGELLM_ERR_UNSUPPORTED (built without libsodium or cJSON), EDGELLM_ERR_MISUSE. */
EDGELLM_API edgellm_status edgellm_store_open(const edgellm_store_params *p, edgellm_store **out,
                                              edgellm_error *err);
EDGELLM_API void edgellm_store_close(edgellm_store *s);   /* NULL-safe */
/* The store's folder (borrowed). */
EDGELLM_API const char *edgellm_store_dir(const edgellm_store *s);

/* One version of a model, as list, add and resolve describe it. */
typedef struct {
    size_t size;                /* set by the caller: sizeof(edgellm_store_entry)            */
    char name[64];
    int64_t version;
    uint64_t file_size;         /* bytes                                                     */
    char sha256[65];            /* of the whole file, lowercase hex                          */
    int active, previous;       /* 1 when refs/NAME points to it                              */
    int verified;               /* 1: passed verification; 0: not (yet) verified; -1: failed  */
    int signed_by_trusted;      /* 1: its manifest is signed by a key in keys/               */
    int64_t created, expires;   /* Unix seconds (expires 0: never)                           */
    char path[1024];            /* the blob (open this file to use the model)                */
    char note[512];             /* why verification failed, or a warning ("" when none)       */
    char gate[400];             /* a verified version's quality gate result ("quality gate
                                   passed: KLD …, top-1 …"); "" when its manifest has none    */
} edgellm_store_entry;

typedef struct {
    size_t size;                /* sizeof(edgellm_store_add_params)                          */
    const char *source;         /* a GGUF file, or an http://, https:// or file:// URL;
                                   NULL: the file the manifest names, beside the manifest     */
    const char *manifest;       /* a manifest file or URL; NULL: made from the file (then
                                   name, version and allow_unsigned are needed)              */
    const char *patch;          /* a patch file or URL (edgellm_delta_create) to apply to a
                                   version the store holds; NULL: the manifest's patch when
                                   the store holds its base, else the whole file             */
    const char *name;           /* NAME: [A-Za-z0-9._-], 1..63 bytes, not starting with '.'  */
    int64_t version;            /* > 0                                                        */
    int allow_unsigned;         /* accept a manifest without a trusted signature              */
    int activate;               /* activate once verified                                     */
    /* downloads */
    uint64_t chunk_bytes;       /* checkpoint every this many bytes; default 4 MiB            */
    int retries;                /* attempts after a failed transfer; default 5                */
    double connect_timeout_s;   /* default 15                                                 */
    double low_speed_time_s;    /* abort a transfer slower than 1 KiB/s for this long; default 30 */
} edgellm_store_add_params;

EDGELLM_API edgellm_store_add_params edgellm_store_add_default_params(void);

/* Add a version: read and check the manifest (signature by a trusted key, not expired,
 * minimum edgellm version, version above every installed one of the name, except the same
 * manifest again, which resumes), bring the blob in (a file is hashed while copied; a URL
 * is downloaded with resume from per-chunk checkpoints, retries with backoff, the
 * manifest's size as a hard cap and a free-space check; a patch is applied to its base),
 * verify it (size, SHA-256, GGUF validation, per-tensor SHA-256, smoke test, and the
 * manifest's quality gate: eval compare against its reference logits, KLD and top-1 within
 * its thresholds), and record the result. out (may be NULL) describes the version.
 * Statuses: EDGELLM_ERR_FORMAT (bad manifest, signature, hash, file; the message names
 * the file and the field; a version that fails verification, the gate included, is
 * recorded as failed with the reason and never activated), EDGELLM_ERR_IO,
 * EDGELLM_ERR_UNSUPPORTED (no trusted signature, expired, rollback, too new, or a URL or
 * patch without libcurl or libzstd), EDGELLM_ERR_MISUSE, EDGELLM_ERR_NOMEM. */
EDGELLM_API edgellm_status edgellm_store_add(edgellm_store *s, const edgellm_store_add_params *p,
                                             edgellm_store_entry *out, edgellm_error *err);
/* Make NAME@version the active one; the active one becomes previous. Only a verified
 * version can be activated. One rename: atomic, and quick whatever the model size.
 * Statuses: EDGELLM_ERR_NOT_FOUND, EDGELLM_ERR_FORMAT (not verified), EDGELLM_ERR_IO. */
EDGELLM_API edgellm_status edgellm_store_activate(edgellm_store *s, const char *name, int64_t version,
                                                  edgellm_error *err);
/* Swap active and previous of NAME. EDGELLM_ERR_NOT_FOUND when there is no previous. */
EDGELLM_API edgellm_status edgellm_store_rollback(edgellm_store *s, const char *name, edgellm_error *err);
/* The version "NAME" (active) or "NAME@V" refers to, into *out (out->size set), with
 * out->path the file to open. check 1: validate the file (GGUF, size); when the active
 * version fails, record the failure, roll back to the previous one and describe that
 * (out->note says so). Statuses: EDGELLM_ERR_NOT_FOUND, EDGELLM_ERR_FORMAT, EDGELLM_ERR_IO. */
EDGELLM_API edgellm_status edgellm_store_resolve(edgellm_store *s, const char *ref, int check,
                                                 edgellm_store_entry *out, edgellm_error *err);
/* Load the model "NAME" or "NAME@V" refers to. When the active version fails to load,
 * its failure is recorded, the store rolls back and the previous version is loaded. */
EDGELLM_API edgellm_status edgellm_store_load_model(edgellm_store *s, const char *ref,
                                                    const edgellm_model_params *mp, edgellm_model **out,
                                                    edgellm_error *err);
/* Every version, by name then version, to fn (e->size is sizeof(edgellm_store_entry)).
 * Statuses: EDGELLM_ERR_IO. */
EDGELLM_API edgellm_status edgellm_store_list(edgellm_store *s,
                                              void (*fn)(void *user, const edgellm_store_entry *e), void *user,
                                              edgellm_error *err);
/* Re-hash every blob and check every manifest, status and pointer; each problem is one
 * line to fn ("blobs/sha256-…: SHA-256 does not match"). Never changes or removes a file.
 * *n_problems (may be NULL) counts them. EDGELLM_OK when there are none, else
 * EDGELLM_ERR_FORMAT. */
EDGELLM_API edgellm_status edgellm_store_verify(edgellm_store *s, void (*fn)(void *user, const char *line),
                                                void *user, int *n_problems, edgellm_error *err);
/* Remove all but the keep newest versions of each name (never the active or previous
 * one), blobs no manifest names, and leftover temporaries. Partial downloads stay
 * (resumable). *n_removed, *bytes_freed may be NULL. */
EDGELLM_API edgellm_status edgellm_store_gc(edgellm_store *s, int keep, int *n_removed, uint64_t *bytes_freed,
                                            edgellm_error *err);
/* Trust the Ed25519 public key in pub_path (64 hex digits) for manifests. */
EDGELLM_API edgellm_status edgellm_store_trust(edgellm_store *s, const char *pub_path, edgellm_error *err);
/* Stop trusting the key in pub_path (key rotation or revocation): manifests it signed are
 * refused from then on (unless --allow-unsigned); installed versions stay, listed as not
 * signed by a trusted key. Any number of keys may be trusted at once. Statuses:
 * EDGELLM_ERR_NOT_FOUND (not trusted), EDGELLM_ERR_FORMAT (not a key file), EDGELLM_ERR_IO. */
EDGELLM_API edgellm_status edgellm_store_untrust(edgellm_store *s, const char *pub_path, edgellm_error *err);

/* A new Ed25519 key pair: secret_path (mode 0600, 128 hex digits) and pub_path (64). */
EDGELLM_API edgellm_status edgellm_store_keygen(const char *secret_path, const char *pub_path, edgellm_error *err);

typedef struct {
    size_t size;                /* sizeof(edgellm_store_publish_params)                      */
    const char *model;          /* the GGUF file to publish (required)                       */
    const char *secret_key;     /* edgellm_store_keygen's secret file (required)              */
    const char *out_dir;        /* created; gets NAME@V.gguf, NAME@V.json, NAME.json (the
                                   latest manifest) and NAME@V.patch (required)              */
    const char *name;           /* required                                                   */
    int64_t version;            /* > 0, required                                              */
    const char *previous;       /* the previous version's GGUF: a patch from it is made       */
    double expires_days;        /* the manifest expires this long after now; default 365      */
    edgellm_progress_fn progress;
    void *progress_user;
    /* quality gate (optional): reference logits over a text shipped with the version;
       edgellm_store_add runs edgellm_eval_compare against them and activates the version
       only when KLD <= gate_max_kld and top-1 >= gate_min_top1 */
    const char *gate_ref;       /* a reference GGUF: its logits over gate_text are saved, or */
    const char *gate_logits;    /* a saved-logits file (edgellm_eval_save_logits over gate_text) */
    const char *gate_text;      /* the text (UTF-8, <= 64 MiB); required with a gate          */
    double gate_max_kld;        /* nats, 0 .. 1e6; required with a gate (default -1: unset)   */
    double gate_min_top1;       /* percent, 0 .. 100; required with a gate (default -1: unset) */
    int gate_n_ctx, gate_chunks;    /* with gate_ref: eval n_ctx (default 128) and windows (4) */
} edgellm_store_publish_params;

EDGELLM_API edgellm_store_publish_params edgellm_store_publish_default_params(void);
/* Write a folder any static HTTP server can serve: the model, its signed manifest and,
 * with previous, a patch; with a gate, NAME@V.logits and NAME@V.gate.txt (the model must
 * pass its own gate). Statuses: EDGELLM_ERR_IO, EDGELLM_ERR_FORMAT (model or key),
 * EDGELLM_ERR_MISUSE (also: the model fails its gate), EDGELLM_ERR_UNSUPPORTED (no
 * libsodium/cJSON; libzstd for the patch). */
EDGELLM_API edgellm_status edgellm_store_publish(const edgellm_store_publish_params *p, edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Per-tensor patches between two GGUF files (`edgellm delta`; src/tools/store_delta.c):
 * the header region and each tensor of NEW are either copied from OLD (the same bytes:
 * referenced by offset), or carried compressed with libzstd (after XOR with OLD's tensor of
 * the same name, type and shape, when that is smaller). Applying checks OLD's and the
 * result's SHA-256 and never writes past NEW's size. Thread-safe (distinct files).
 * ---------------------------------------------------------------------------------- */
typedef struct {
    size_t size;                /* sizeof(edgellm_delta_report)                              */
    uint64_t old_bytes, new_bytes, patch_bytes;
    int n_tensors, n_copied, n_xor, n_literal;   /* tensors of NEW and how each is carried   */
} edgellm_delta_report;

/* Write the patch from old_path to new_path into out_path (replaced atomically). report
 * may be NULL. Statuses: EDGELLM_ERR_IO, EDGELLM_ERR_FORMAT (not GGUF), EDGELLM_ERR_NOMEM,
 * EDGELLM_ERR_UNSUPPORTED (built without libzstd or libsodium). */
EDGELLM_API edgellm_status edgellm_delta_create(const char *old_path, const char *new_path, const char *out_path,
                                                edgellm_delta_report *report, edgellm_error *err);
/* Apply patch_path to old_path into out_path (replaced atomically, fsynced), checking old's
 * SHA-256 before and the result's after (EDGELLM_ERR_FORMAT naming the patch and the
 * field on any mismatch, truncation or excess). */
EDGELLM_API edgellm_status edgellm_delta_apply(const char *old_path, const char *patch_path, const char *out_path,
                                               edgellm_progress_fn progress, void *progress_user,
                                               edgellm_error *err);

/* ------------------------------------------------------------------------------------
 * Cascade (`edgellm cascade`): answer with a small model, escalate to a large one when the
 * small model's confidence is below a threshold (FrugalGPT, Chen, Zaharia, Zou 2023,
 * arXiv:2305.05176; per-token probability quantiles as the deferral signal: Gupta et al.
 * 2024, "Language model cascades: token-level uncertainty and beyond", arXiv:2404.10136).
 * The models may have different vocabularies: answers are compared, not tokens.
 * ---------------------------------------------------------------------------------- */
typedef enum {
    EDGELLM_CASCADE_MIN_PROB = 0,     /* the least probability of a generated token          */
    EDGELLM_CASCADE_P10 = 1,          /* the 10th percentile of those probabilities          */
    EDGELLM_CASCADE_MEAN_LOGPROB = 2, /* their mean natural log                              */
    EDGELLM_CASCADE_ENTROPY = 3       /* minus the mean entropy (nats) of the distributions  */
} edgellm_cascade_signal;

/* "min-prob", "p10", "mean-logprob", "entropy"; NULL for another value. */
EDGELLM_API const char *edgellm_cascade_signal_name(int signal);
/* The signal of a generated answer: probs[n] the probability each token had when chosen,
 * entropies[n] the entropy of each step's distribution (nats; used by ENTROPY only). Higher
 * is more confident. n == 0: +inf (nothing to doubt). p10: the value at rank floor(0.1 (n-1))
 * of the sorted probabilities. */
EDGELLM_API double edgellm_cascade_signal_value(int signal, const float *probs, const float *entropies, int n);

typedef struct {
    int    signal;          /* edgellm_cascade_signal (default P10)                          */
    double threshold;       /* escalate when the signal is below it (default 0.2)           */
    int    n_predict;       /* greedy tokens per answer at most (default 64)                */
} edgellm_cascade_params;

EDGELLM_API edgellm_cascade_params edgellm_cascade_default_params(void);

typedef struct {
    char  *text;            /* the answer (owned: edgellm_cascade_result_free)              */
    int    escalated;       /* 1: the large model's                                         */
    double signal;          /* the small model's signal                                     */
    int    n_small, n_large;   /* tokens each generated                                     */
    double small_ms, large_ms; /* their generation times (large_ms 0 when not escalated)    */
} edgellm_cascade_result;

/* Greedy answer of `small` to prompt (BOS per the vocabulary, up to n_predict tokens or an
 * end-of-generation token); when its signal is below p->threshold, the answer of `large`
 * instead. Both contexts are reset first. p may be NULL. Statuses: those of edgellm_tokenize
 * and edgellm_decode, EDGELLM_ERR_MISUSE (bad signal, NULL), EDGELLM_ERR_NOMEM. Not
 * thread-safe on the contexts. */
EDGELLM_API edgellm_status edgellm_cascade_generate(edgellm_ctx *small, edgellm_ctx *large, const char *prompt,
                                                    const edgellm_cascade_params *p, edgellm_cascade_result *out,
                                                    edgellm_error *err);
EDGELLM_API void edgellm_cascade_result_free(edgellm_cascade_result *r);

/* The cost/quality curve over multiple-choice items (edgellm_eval_item, scored as
 * edgellm_eval_task's acc). An item's small-model signal is the probability of its chosen
 * choice among the choices (softmax of the choices' log-likelihoods); an item escalates
 * when it is below the threshold. Points: threshold 0 (never), the 5 %, 10 % ... 95 %
 * quantiles of the signals, and +inf (always). */
#define EDGELLM_CASCADE_MAX_POINTS 21
typedef struct {
    double threshold;
    double accuracy_pct;    /* of the cascade                                               */
    double escalation_pct;  /* items answered by the large model                            */
    double mean_ms;         /* per item: the small model's time + the large one's when escalated */
} edgellm_cascade_point;

typedef struct {
    int    n_items;
    double small_pct, large_pct;   /* accuracy of each alone                                */
    double small_ms, large_ms;     /* mean time per item of each                            */
    int    n_points;
    edgellm_cascade_point points[EDGELLM_CASCADE_MAX_POINTS];
    int    chosen;          /* the point with the least escalation whose accuracy is within
                               max_gap_pct percent of large_pct; -1: none                    */
    double max_gap_pct;
} edgellm_cascade_report;

/* Score items[n_items] (multiple choice only, else EDGELLM_ERR_MISUSE naming the item) with
 * both models (n_threads <= 0: the models' setting) and fill *out. max_gap_pct: the
 * accuracy loss allowed, percent of the large model's (<= 0: 3). */
EDGELLM_API edgellm_status edgellm_cascade_tasks(const edgellm_model *small, const edgellm_model *large,
                                                 const edgellm_eval_item *items, int n_items, int n_threads,
                                                 double max_gap_pct, edgellm_cascade_report *out, edgellm_error *err);

#ifdef __cplusplus
}
#endif
#endif /* EDGELLM_TOOLS_H */
