/*
 * dispatch.h — the single place where edgellm picks the kernel that runs: per tensor type
 * the dot product, the converters, the matrix-product tile kernel (gemm.h) and the
 * attention over a KV cache of that type.
 *
 * Everything that multiplies weights (src/kernels/matmul.c), converts them or attends over
 * a cache (src/model/llama.c) asks here; no other file chooses between a reference kernel
 * and a fast one, or compares kernel level names. The choice is a table per kernel level
 * (dispatch.c): by default a type gets the variant of the highest level that defines one
 * (the portable float dots of dot_float_scalar.c for F32/F16/BF16 at level "scalar", SIMD
 * variants at the levels above), otherwise the traits' reference (src/tensor/types.c).
 * Environment EDGELLM_KERNELS=ref (read once) forces the reference kernels everywhere;
 * edgellm_kernels_set_ref() does the same for tests. EDGELLM_KERNELS=scalar|avx2|avx512|
 * neon|dotprod (or edgellm_kernels_force) caps the SIMD level instead.
 *
 * Contract for every variant: same signature and same result as its reference within the
 * tolerance stated by its file, and a result that depends only on the inputs (not on the
 * thread, the batch it belongs to, or the alignment of the row), so that prefill and
 * decode give bit-identical logits.
 */
#ifndef EDGELLM_DISPATCH_H
#define EDGELLM_DISPATCH_H

#include "../tensor/types.h"
#include "gemm.h"
#include "repack.h"

/* Kernel levels, lowest first; a level inherits every kernel it does not define from the
 * levels below it (tile kernels excepted: edgellm_kernels_gemm). The x86-64 levels exist
 * in x86-64 builds only, the AArch64 ones in AArch64 builds only. */
typedef enum {
    EDGELLM_KERNELS_REF = 0,      /* the traits' reference kernels (double accumulation)   */
    EDGELLM_KERNELS_SCALAR,       /* portable C float dots (dot_float_scalar.c)             */
    EDGELLM_KERNELS_AVX2,         /* x86-64 AVX2 + FMA + F16C (x86/ files ending _avx2.c)   */
    EDGELLM_KERNELS_AVX512,       /* x86-64 AVX-512 F/BW/VL/DQ + VNNI (_avx512.c, _gfni.c)  */
    EDGELLM_KERNELS_NEON,         /* AArch64 Advanced SIMD (arm/ files ending _neon.c)      */
    EDGELLM_KERNELS_DOTPROD       /* AArch64 + FEAT_DotProd (_dotprod.c)                    */
} edgellm_kernel_level;

/* ---- per tensor type ---- */

/* Dot product of a weight row of `type` with an activation row of
 * traits(type)->vec_dot_type. NULL when the type has no dot product. */
edgellm_vec_dot_fn edgellm_kernels_vec_dot(int type);

/* Convert float activations into `type` (used with type = a vec_dot_type). NULL when the
 * type has no converter. For F32 it is a copy (callers skip it). */
edgellm_from_float_fn edgellm_kernels_from_float(int type);

/* Dequantize/convert a row of `type` to float. NULL when unsupported. */
edgellm_to_float_fn edgellm_kernels_to_float(int type);

/* True when matrices of `type` can be multiplied: traits say computable, dot product
 * present, converter to the activation type present (unless it is F32), and to_float
 * present (embedding rows). Row lengths must also be whole blocks of the activation type:
 * check edgellm_type_row_size(vec_dot_type, ne0) != 0 per tensor. */
bool edgellm_kernels_can_matmul(int type);

/* ---- matrix products ---- */

/* The tile kernel (gemm.h) of the active level for weights of `type` with rows of `cols`
 * elements, or NULL: multiply with edgellm_kernels_vec_dot row by row. A level uses only
 * its own tile kernels (not those of the levels below), and a kernel that needs more of the
 * CPU than its level (GFNI) only where the CPU has it. Static storage. */
const edgellm_gemm_kernel *edgellm_kernels_gemm(int type, int64_t cols);
/* Bytes of packed activations per token that the tile kernels of `type` need for rows of
 * `cols` elements: the largest over every level of this build (a context sizes its
 * scratch once, and the level may be forced later); 0 when none packs; SIZE_MAX on
 * overflow. */
size_t edgellm_kernels_gemm_packed_bytes(int type, int64_t cols);

/* ---- load-time repacked layouts (repack.h) ---- */

/* The layout a weight matrix of `type` with rows of `cols` elements is repacked into when
 * it is loaded, for the active level on this CPU, or NULL (keep the rows in place):
 * q4_K_r16 for Q4_K at level avx512 (its GFNI kernel where the CPU has GFNI), cols a
 * multiple of 256 up to EDGELLM_GEMM_R16_MAX_COLS. NULL too when repacking is off:
 * environment EDGELLM_REPACK=0 (read at every call: the CLI's --no-repack sets it) or
 * edgellm_kernels_set_repack(false). Static storage. */
const edgellm_repack *edgellm_kernels_repack(int type, int64_t cols);
/* The layout stored in a file as type stored_type (EDGELLM_TYPE_Q4_K_R16) with its tile
 * kernel at the active level, for rows of cols elements; NULL when the level has none
 * (the loader then unpacks such matrices). Not affected by EDGELLM_REPACK, which turns
 * off only the load-time copies of plain matrices. Static storage. */
const edgellm_repack *edgellm_kernels_layout(int stored_type, int64_t cols);
/* True when the tile kernel of layout r (a tensor's, from edgellm_kernels_repack at load)
 * belongs to the active level and the CPU runs it. False after a lower level was forced:
 * edgellm_matmul then unpacks rows and uses that level's kernels (same results as on the
 * plain rows of that level). */
bool edgellm_kernels_repack_usable(const edgellm_repack *r);
/* Repacking on or off for later loads, over EDGELLM_REPACK (unset or anything but "0":
 * on). Not thread-safe against concurrent loads. */
void edgellm_kernels_set_repack(bool on);
/* The layouts edgellm_kernels_repack hands out now: "q4_K_r16 for Q4_K", "off" (switched
 * off) or "none at level avx2" (the level has none), into buf[n]; returns buf. */
const char *edgellm_kernels_repack_describe(char *buf, size_t n);

/* ---- attention ---- */

/* Stack room for one dequantized row: a quantized cache needs head_dim <= this. */
#define EDGELLM_ATTEND_QUANT_MAX_HEAD_DIM 1024

typedef struct edgellm_attend_kernel edgellm_attend_kernel;
/* One query head attending causally to the n_pos cached rows of one KV head:
 *   out[head_dim] = sum_j softmax_j(scale * q·k_j) v_j,  j in 0..n_pos-1,
 * where k_j = k + j*stride and v_j = v + j*stride (stride in BYTES) each hold head_dim
 * elements of the cache type the kernel was chosen for (edgellm_kernels_attend).
 * scores: scratch of n_pos floats; it receives the probabilities. kern: the kernel itself
 * (its dot and to_float). Thread-safe: no state besides out and scores. */
typedef void (*edgellm_attend_kv_fn)(const edgellm_attend_kernel *kern, float *out, const float *q, const void *k,
                                     const void *v, size_t stride, int head_dim, int64_t n_pos, float scale,
                                     float *scores);
struct edgellm_attend_kernel {
    edgellm_attend_kv_fn run;       /* NULL: no attention over this cache type          */
    edgellm_vec_dot_fn dot;         /* q·k of the level: edgellm_kernels_vec_dot of the
                                     * cache type when its dot takes F32 activations (F32,
                                     * F16), else of F32 (a quantized row is dequantized
                                     * first)                                            */
    edgellm_to_float_fn to_float;   /* the level's dequantization of the cache type      */
};
/* The attention kernel of the active level for a KV cache of kv_type, called as
 * kern.run(&kern, ...). Its results equal, bit for bit, probabilities included, those of
 * the reference in ops.h called with kern.dot (and kern.to_float):
 *   EDGELLM_TYPE_F32   edgellm_attend       (x86 avx2: attend_avx2.c, avx512: attend_avx512.c)
 *   EDGELLM_TYPE_F16   edgellm_attend_f16   (x86 avx2: attend_avx2.c, avx512: attend_avx512.c)
 *   EDGELLM_TYPE_Q8_0  edgellm_attend_quant (x86 avx512: attend_avx512.c for head_dim a
 *                      multiple of 32 up to 256; else, and at the other levels, the
 *                      reference itself), head_dim <= EDGELLM_ATTEND_QUANT_MAX_HEAD_DIM
 * For another type .run is NULL. Chosen at the level active when called: callers ask once
 * per operation (a forward pass), as for the other kernels. */
edgellm_attend_kernel edgellm_kernels_attend(int kv_type);

/* ---- levels ---- */

/* Force the reference kernels (true) or go back to the default choice (false). Not
 * thread-safe against running kernels: call between operations. */
void edgellm_kernels_set_ref(bool ref);

/* Force a kernel level by name (any case): "ref", "scalar" (alias "portable"), "avx2",
 * "avx512" (x86-64), "neon", "dotprod" (AArch64); NULL or "auto" goes back to the default
 * (the best level of this CPU, or what EDGELLM_KERNELS asked for). Returns false, changing
 * nothing, for an unknown name or a level this CPU cannot run. Not thread-safe against
 * running kernels (as edgellm_kernels_set_ref). */
bool edgellm_kernels_force(const char *name);

/* The canonical name of a kernel level of this build ("portable" -> "scalar"), or NULL when
 * name is none (EDGELLM_KERNELS ignores it then). */
const char *edgellm_kernels_level_name(const char *name);
/* Name of the active level: "ref", "scalar", "avx2", "avx512", "neon" or "dotprod". */
const char *edgellm_kernels_name(void);
/* The active level. */
edgellm_kernel_level edgellm_kernels_level(void);

/* Software prefetch of decode: how many bytes past the weights being read the avx512
 * decode kernels of Q4_0, Q4_K (both layouts) and Q6_K prefetch into L2 (PREFETCHT1, one
 * line per 64 bytes read) when nth threads share a matrix product of one token
 * (matmul.c); 0 = none. Default 9216 on AMD with AVX-512 of family 0x19 (Zen 4) at one
 * thread, where one thread then decodes a tinyllama-shape Q4_0 model ~30 % faster and two
 * threads were slower, and of family 0x1a (Zen 5) at any thread count, where the
 * q4_K_x16 decode needs it (~1.5x the matrix time at 1 and 2 threads; Q4_0 and Q6_K
 * 0-10 % faster, Q8_0 level: docs/kernels.md), and on Intel CPUs with AVX-512 at any
 * thread count (a Sapphire Rapids-class VM: Q4_K_M, Q5_K_M, Q6_K decode 1.2-1.55x, Q4_0
 * 1.15-1.25x); 0 elsewhere. EDGELLM_PREFETCH=BYTES (read once) overrides the distance:
 * see edgellm_kernels_parse_prefetch; an empty value or one that does not parse is
 * ignored. EDGELLM_PREFETCH_THREADS=0|1 overrides the thread rule (1: also when several
 * threads share a product; 0: only one thread). Kernels of other levels never prefetch.
 * Thread-safe. */
size_t edgellm_kernels_decode_prefetch(int nth);
/* Parse an EDGELLM_PREFETCH value: decimal bytes in [0, 1048576], nothing else; false
 * otherwise (*bytes unchanged). */
bool edgellm_kernels_parse_prefetch(const char *s, size_t *bytes);

#endif
