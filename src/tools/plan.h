/*
 * plan.h — internals of `edgellm plan` (public entry points are in include/edgellm.h,
 * section "Planning"): the tensor list of a model, the precision recipes (which type each
 * tensor gets), the memory and speed arithmetic, and the built-in catalogues
 * (plan_catalog.c). Every function here is pure arithmetic and unit-tested in
 * tests/test_plan.c.
 */
#ifndef EDGELLM_PLAN_H
#define EDGELLM_PLAN_H

#include "../common/common.h"
#include "edgellm_tools.h"

/* ---- assumptions (each one is a calibration hook; see plan.c's opening comment) ---- */

/* Decode time per token (plan_math.c, edgellm_plan_decode_steps_per_s) =
 *     weights and KV read / (bandwidth x efficiency)          streaming
 *   + weight rows x EDGELLM_PLAN_ROW_OVERHEAD_S / cores          per-row work of the kernels
 *   + n_layer x EDGELLM_PLAN_SYNC_OVERHEAD_S (when threaded)     hand-offs between kernels
 * and never faster than the compute over the big cores.
 * Calibrated with `edgellm bench` (bench/calibrate-plan.sh checks it): a least-squares fit
 * over tg32 of synthetic smollm2-135m Q8_0, smollm2-360m Q4_0, tinyllama-1.1b Q4_0 and Q8_0
 * at 1 and 2 threads on the 2-core Zen 5 dev VM, each against a plain read of the same
 * weights by the same threads just before (bench's paired roofline), gave efficiency 0.99,
 * 18 ns per weight row per token on one core and 22 us per layer with 2 threads; the worst
 * of the eight predictions was 12 % off. The per-row cost was refit to 10 ns after the
 * kernels' partial last group stopped copying (rows of 18 and 30 blocks got ~1.3x faster)
 * and row tiles were scheduled guidedly (calibrate-plan.sh, 2026-11-30: all eight within
 * ±25 %, worst 1.20). The per-row and per-layer costs are CPU time: on
 * cores slower than that Zen 5 they are larger (not calibrated elsewhere).
 * For a catalogue device quoted at theoretical peak bandwidth: llama.cpp decode reaches
 * 60 % (Pi 5), ~68 % (i9-13900K DDR5-6400), ~78 % (Apple M1), 57-74 % (OnePlus 12,
 * ExecuTorch) of the peak figure (llama.cpp#26484, #34, #1642; executorch llama README); we take 0.65. */
/* --shape n_layer at most this (a tensor list of n_layer x 9 entries is built from it; a
 * fuzzed 3,293,298 asked for ~0.7 GB). Published models have up to ~130. */
#define EDGELLM_PLAN_MAX_LAYERS 1024
#define EDGELLM_PLAN_EFF_MEASURED 0.99
#define EDGELLM_PLAN_EFF_PEAK     0.65
#define EDGELLM_PLAN_ROW_OVERHEAD_S 10e-9
#define EDGELLM_PLAN_SYNC_OVERHEAD_S 22e-6
/* Batched decode (several sequences, one token each per step; edgellm_plan_batch_steps_per_s):
 * the weights are read once per step and each row unpacked once for all its tokens (the
 * tile kernels' 2-8-token path, src/kernels/x86/gemm_q8_avx512.c), so the per-row cost
 * is paid once per step, and each sequence after the first costs only its products: at
 * the prefill kernel's cost per multiply-add where that is the cheaper (the tile-kernel
 * types), else at the decode kernel's (types computed by a dot per row and token).
 * Measured: a 512 x 2048 L2-resident Q4_0 matrix, 1 thread (best of 3000): 13.3 us for
 * one token, +4.96 us per further token (423 GFLOP/s; Q4_0 prefill's figure is 302).
 * Counted per token as before, the model said 2.4x at B = 4 and 8 for a tinyllama-shape
 * Q4_0 on the Zen 5 VM (compute-bound from B = 4); `edgellm bench -b` measured more (see
 * docs/planning.md, "Batched decode"). */
#define EDGELLM_PLAN_BATCH_MODEL 1
/* Prompt tokens processed per forward pass (llama-bench's default -ub 512, its README). */
#define EDGELLM_PLAN_UBATCH 512
/* Fixed runtime memory: executable, libc, thread stacks, allocator slack. Peak RSS from
 * `edgellm bench` minus weights, KV cache, scratch and tokenizer tables was 3-5 MiB for the
 * calibration models above; 6 MiB keeps a little slack. */
#define EDGELLM_PLAN_OVERHEAD_FIXED ((uint64_t)6 << 20)
/* Tokenizer tables per vocabulary entry: string (~8 B), score, type, length, hash index. */
#define EDGELLM_PLAN_OVERHEAD_PER_TOKEN 40u
/* Fixed cost per layer per prefill pass (ubatch): thread hand-offs and barriers around
 * ~8 kernels. */
#define EDGELLM_PLAN_LAYER_OVERHEAD_S 20e-6
/* Largest batch the offline recommendation suggests (the guide's 4-8, §4.4 and §6.2). */
#define EDGELLM_PLAN_MAX_BATCH 8

/* ---- tensors ---- */
typedef enum {
    EDGELLM_PT_NORM = 0,      /* 1-D: norms and biases — never quantized                */
    EDGELLM_PT_TOKEN_EMBD,
    EDGELLM_PT_OUTPUT,
    EDGELLM_PT_ATTN_Q,
    EDGELLM_PT_ATTN_K,
    EDGELLM_PT_ATTN_V,
    EDGELLM_PT_ATTN_QKV,      /* fused (Phi-3); the Q4_K_M rule treats it like attn_v    */
    EDGELLM_PT_ATTN_OUT,
    EDGELLM_PT_FFN_GATE,
    EDGELLM_PT_FFN_UP,
    EDGELLM_PT_FFN_DOWN,
    EDGELLM_PT_OTHER          /* any other matrix: gets the recipe's base type          */
} edgellm_plan_role;

typedef struct {
    int      role;            /* edgellm_plan_role                                      */
    int      layer;           /* block index, -1 outside the blocks                     */
    int64_t  ne0;             /* row length (GGUF ne[0])                                */
    int64_t  n_rows;          /* product of ne[1..]                                     */
    int      file_type;       /* type in the file; -1 for a shape                       */
    uint64_t file_bytes;      /* size in the file; 0 for a shape                        */
} edgellm_plan_tensor;

/* Tensor list of a llama-style model from its shape, in GGUF order. Writes at most `max`
 * entries and returns how many the model has (call with max 0 to size the array). */
size_t edgellm_plan_shape_tensors(const edgellm_plan_model *m, edgellm_plan_tensor *out, size_t max);
/* Model and tensor list of a GGUF file (metadata and tensor table only). *tensors is
 * allocated with edgellm_malloc (caller frees with edgellm_free); either out-pointer may be
 * NULL. Statuses as edgellm_plan_model_from_gguf. */
edgellm_status edgellm_plan_gguf_tensors(const char *path, edgellm_plan_model *m, edgellm_plan_tensor **tensors,
                                         size_t *n_tensors, edgellm_error *err);
/* Role of a GGUF tensor name ("blk.3.attn_v.weight") and its block index (-1 if none). */
int edgellm_plan_role_from_name(const char *name, size_t len, uint32_t n_dims, int *layer);

/* ---- precision recipes ---- */
typedef struct {
    char name[24];            /* "Q4_K_M"                                               */
    int  base;                /* type of every matrix not named below                   */
    int  more_bits;           /* attn_v/attn_qkv/ffn_down on use_more_bits layers; -1 base */
    int  output;              /* output.weight and a tied token_embd; -1: base          */
    int  file;                /* 1: every tensor keeps its type in the file             */
} edgellm_plan_recipe;

/* llama.cpp's use_more_bits(i, n): first and last eighth of the layers and every third
 * layer in between (ggml-org/llama.cpp src/llama-quant.cpp). */
bool edgellm_plan_use_more_bits(int i_layer, int n_layer);
/* Type a row of ne0 elements can really have, by edgellm quantize's own rule
 * (edgellm_quant_fallback_type, quant_recipe.c): K-quants fall back when ne0 % 256 != 0
 * (Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, Q2_K/Q3_K->Q4_0), I4/I8 groups to the next smaller
 * group (g256->g128->g64), then anything still not dividing ne0 to F16 (as llama-quant.cpp does). */
int edgellm_plan_fallback_type(int type, int64_t ne0);
/* Type a recipe gives a tensor (1-D tensors stay F32). */
int edgellm_plan_tensor_type(const edgellm_plan_recipe *r, const edgellm_plan_tensor *t, int n_layer);
/* Bytes of n_rows rows of ne0 elements of `type`; edgellm's group-wise types use the
 * traits table when registered, else 4 or 8 bits plus an f16 scale (and an f16 min for
 * _ASYM) per group. 0 for an unknown type or a row that does not fill whole blocks. */
uint64_t edgellm_plan_type_bytes(int type, int64_t ne0, int64_t n_rows);
/* Recipe by name: "F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "I4_G128" (alias of
 * I4_G128_SYM), "i4:g64" style aliases, or any type name edgellm knows (then a single type
 * with llama.cpp's output rule). EDGELLM_ERR_MISUSE for an unknown name. */
edgellm_status edgellm_plan_recipe_from_name(const char *name, edgellm_plan_recipe *out, edgellm_error *err);

typedef struct {
    uint64_t weight_bytes;    /* all tensors                                            */
    uint64_t read_bytes;      /* streamed per decode step: all but token_embd (one row)  */
    uint64_t matmul_params;   /* weights multiplied per token: all matrices but token_embd
                                 (tied: token_embd is the output matrix and counts)      */
    uint64_t pp_params;       /* matmul_params, each tensor's times its type's prefill cost
                                 and decode cost (edgellm_plan_kernel_cost): the compute  */
    uint64_t dec_params;      /* a token takes, in Q4_0-prefill multiply-adds            */
    uint64_t batch_params;    /* the same for each further sequence of a batched step: at
                                 the cheaper of the two costs (EDGELLM_PLAN_BATCH_MODEL) */
    uint64_t n_params;
} edgellm_plan_weights;

/* Cost of a multiply-add with weights of `type` in edgellm's matrix kernels, relative to
 * Q4_0 prefill (the kernel `plan --device host` measures GFLOP/s with, compute_bench.c):
 * *pp in prefill (tile kernels for Q4_0/Q8_0/Q4_K/Q5_K/Q6_K/F16; the others a dot per row
 * and token), *dec in decode (one row at a time). Measured with bench_kernels on the Zen 5 dev
 * machine, AVX-512 level, one thread (pp64 and L2-resident decode GFLOP/s); ARM devices
 * use edgellm_plan_kernel_cost_isa's table. */
void edgellm_plan_kernel_cost(int type, double *pp, double *dec);
/* The same on AArch64 (arm != 0). No ARM machine measured these; they come from published
 * llama.cpp results on ARM and the NEON kernels' instruction counts:
 *  - Q4_0, Q8_0: a dotprod tile kernel, prefill cost 1 (the reference); decode as x86's.
 *  - Q4_K 1.1, Q6_K 1.25 in prefill (a dotprod dot per row and token): llama.cpp's Q4_K dot
 *    on Cortex-X1C/A78C reaches 6.0 GFLOP/s per 128-bit pipe and GHz (TinyLlama pp512,
 *    geerlingguy/ai-benchmarks#54), its Q4_0 GEMM on Cortex-A76 5.6 (Llama 2 7B prompt,
 *    ggml-org/llama.cpp#6928): a dot per row costs about what the tile does on these cores;
 *    Q6_K's extra unpacking as x86's Q6_K/Q4_K decode ratio (1.14).
 *  - F16 3.3, F32 6.6: llama.cpp on a Pi 4 prompts TinyLlama q8_0 at 10 tok/s and f16 at 3
 *    (justine.lol/matmul); F32 moves twice F16's bytes through the same FMLA lanes.
 *  - every other type (Q5_0, Q5_1, Q4_1, Q5_K, Q2_K, Q3_K, the group-wise I4/I8, BF16) has
 *    no NEON kernel and runs the scalar reference dot: a Cortex-A76 does 5.6 multiply-adds
 *    per cycle in the Q4_0 tile (27 GFLOP/s at 2.4 GHz), a scalar dot about one per four
 *    instructions at ~3 per cycle, 0.7: cost 8. */
void edgellm_plan_kernel_cost_isa(int type, int arm, double *pp, double *dec);

void edgellm_plan_recipe_weights(const edgellm_plan_recipe *r, const edgellm_plan_tensor *t, size_t n,
                                 int n_layer, int tied, edgellm_plan_weights *out);
/* edgellm_plan_recipe_weights with the kernel costs of `arm` (edgellm_plan_kernel_cost_isa). */
void edgellm_plan_recipe_weights_isa(const edgellm_plan_recipe *r, const edgellm_plan_tensor *t, size_t n,
                                     int n_layer, int tied, int arm, edgellm_plan_weights *out);
/* 1 when the device's kernels are AArch64's (isa "arm"). */
int edgellm_plan_device_is_arm(const edgellm_plan_device *d);
/* EDGELLM_OK when every figure of a device is usable (finite, in range: RAM and usable
 * memory > 0 and usable <= RAM, bandwidth 0.01..100000 GB/s, 1..1024 big cores, 0..1024
 * little, GFLOP/s per big core in 0.001..1e6, decode_efficiency 0 or in 0.05..1, isa ""
 * "arm" or "x86"); else EDGELLM_ERR_MISUSE naming the figure. */
edgellm_status edgellm_plan_check_device(const edgellm_plan_device *d, edgellm_error *err);

/* ---- memory and speed ---- */
/* Activations, attention scores and logits (bytes, f32) at the larger of prefill (one
 * ubatch of min(n_ctx, 512) tokens, scores of one head per thread) and decode (`batch`
 * sequences, scores of all heads over n_ctx, logits). */
uint64_t edgellm_plan_scratch_bytes(const edgellm_plan_model *m, int n_ctx, int batch, int n_threads);
uint64_t edgellm_plan_overhead_bytes(const edgellm_plan_model *m);
/* FLOPs of one token at position `pos`: 2 per matmul weight + 4 * n_layer * n_head *
 * head_dim * pos for QK^T and AV. */
double edgellm_plan_flops_per_token(const edgellm_plan_model *m, uint64_t matmul_params, double pos);
/* Weight rows multiplied per decoded token: q, k, v, o, gate, up, down of every layer and
 * the output matrix (n_vocab rows). */
double edgellm_plan_rows_per_token(const edgellm_plan_model *m);
/* Decode steps per second of `batch` sequences at context position n_ctx (see the
 * calibration comments above): streaming (read_bytes + batch * KV) / (bw * eff), plus
 * rows x EDGELLM_PLAN_ROW_OVERHEAD_S over the cores (once per step: a row is unpacked
 * once for all the step's tokens), plus n_layer x EDGELLM_PLAN_SYNC_OVERHEAD_S when more
 * than one core works; never faster than the compute over the big cores (little cores
 * slow decode down, ggml-org/llama.cpp#7176): the first sequence's tokens at dec_params,
 * each further one at batch_params (EDGELLM_PLAN_BATCH_MODEL). */
double edgellm_plan_batch_steps_per_s(const edgellm_plan_model *m, const edgellm_plan_device *d,
                                      uint64_t read_bytes, uint64_t dec_params, uint64_t batch_params, int n_ctx,
                                      int kv_type, int batch, double efficiency);
/* edgellm_plan_batch_steps_per_s with batch_params = matmul_params. */
double edgellm_plan_decode_steps_per_s(const edgellm_plan_model *m, const edgellm_plan_device *d,
                                       uint64_t read_bytes, uint64_t matmul_params, int n_ctx, int kv_type,
                                       int batch, double efficiency);
/* Milliseconds to prefill n_prompt tokens: compute over the big cores, but never faster
 * than streaming the weights once per ubatch. */
double edgellm_plan_prefill_ms(const edgellm_plan_model *m, const edgellm_plan_device *d, uint64_t read_bytes,
                               uint64_t matmul_params, int n_prompt, double efficiency);
double edgellm_plan_efficiency(const edgellm_plan_device *d);

/* ---- catalogues (plan_catalog.c) ---- */
/* The one catalogue of model shapes (model_catalog.c): the plan's models, and with
 * rope_theta / rms_eps recorded (> 0) and a runnable architecture, synth's shapes. */
typedef struct {
    edgellm_plan_model m;
    float rope_theta;             /* config.json rope_theta; 0: not recorded          */
    float rms_eps;                /* config.json rms_norm_eps; 0: not recorded        */
} edgellm_catalog_model;
extern const edgellm_catalog_model edgellm_model_catalog[];
extern const int                   edgellm_model_catalog_n;
extern const edgellm_plan_device edgellm_plan_catalog_devices[];
extern const int                 edgellm_plan_catalog_n_devices;

/* Published quality of a precision (llama.cpp perplexity tables etc.). */
typedef struct {
    const char *type;
    double delta_ppl_pct, kld, top1_pct;   /* NaN: not published */
    const char *source;
} edgellm_plan_published;
extern const edgellm_plan_published edgellm_plan_published_quality[];
extern const int                    edgellm_plan_published_n;

/* Default candidate list, in order of decreasing bits per weight. */
extern const char *const edgellm_plan_default_types[];
extern const int         edgellm_plan_default_n_types;

/* ---- membw.c ---- */
/* Sustained Q4_0 matrix-product GFLOP/s of one core with this build's kernels (prefill
 * shape: 64 tokens, weights in L2), best of repetitions within max_ms (<= 0: 200 ms).
 * 0 when memory cannot be had. compute_bench.c. */
double edgellm_plan_measure_gflops(int max_ms);

/* Read bandwidth of one existing buffer (e.g. a model's mapped tensor data), GB/s: the
 * best of `passes` passes in which n_threads threads each sum their slice once (the
 * edgellm_membw_measure kernel). 0 on bad arguments or when a thread cannot start. */
double edgellm_membw_read_gbps(const void *data, size_t bytes, int n_threads, int passes);

/* Buffer size edgellm_membw_measure picks when buffer_bytes is 0. */
size_t edgellm_membw_auto_bytes(void);

/* The low-memory option (plan_lowmem.c): the device's storage read figure (GB/s; *source
 * its source or the assumption for a device without one) and, for rows that do not fit,
 * the budget and decode speed of run --mem-budget; sets report.lowmem_pick. */
double edgellm_plan_storage_gbps(const char *device, const char **source);
void edgellm_plan_low_memory(edgellm_plan_report *r);

#endif
