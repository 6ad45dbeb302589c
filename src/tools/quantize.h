/*
 * quantize.h — internal side of `edgellm quantize` and `edgellm synth`: the quantization
 * scheme named on the command line and the per-tensor type recipe (quant_recipe.c), shared
 * by quantize.c (real weights) and synth.c (random weights), plus the row converter both
 * use to measure errors (quantize.c).
 */
#ifndef EDGELLM_TOOLS_QUANTIZE_H
#define EDGELLM_TOOLS_QUANTIZE_H

#include "../common/common.h"
#include "edgellm_tools.h"
#include "../tensor/quant.h"

/* What `--type` (+ --group, --asym) names. */
typedef struct {
    char name[32];        /* "Q4_0", "Q4_K_M", "I4_G128_ASYM" (upper case, for reports)   */
    char label[32];       /* edgellm.quant.scheme value for edgellm-only files ("i4 g128 asym") */
    int  base_type;       /* edgellm_type of most matrices                                   */
    bool k_mix;           /* q4_k_m / q5_k_m: llama.cpp's Q6_K bumps                         */
    bool edgellm_only;    /* base type is one of edgellm's group-wise types                 */
    int  file_type;       /* general.file_type (llama.cpp enum, ggml docs/gguf.md); -1: none */
} edgellm_quant_scheme;

/* Parse a type name ("q4_k_m", "i4"...; case-insensitive). group is used by i4/i8 only
 * (64/128/256; <= 0 means 128), asym likewise. EDGELLM_ERR_MISUSE names the problem. */
edgellm_status edgellm_quant_scheme_parse(const char *type, int group, int asym, edgellm_quant_scheme *out,
                                          edgellm_error *err);

/* Everything the recipe needs to know about the model as a whole. */
typedef struct {
    const edgellm_quant_scheme *scheme;
    int  n_layer;            /* blocks, for use_more_bits                                  */
    bool tied;               /* no output.weight: token_embd is the head                    */
    int  output_type;        /* -1: recipe                                                  */
    int  embd_type;          /* -1: recipe                                                  */
    const char *const *keep; /* fnmatch globs; matching tensors are kept                    */
    int  n_keep;
    bool pure;               /* no Q6_K output for plain types (llama-quantize --pure)      */
} edgellm_quant_recipe;

typedef struct {
    int  type;               /* the type to write                                          */
    int  wanted;             /* before a shape fallback                                    */
    bool fallback;
    bool convert;            /* false: copy the source bytes unchanged                      */
    char note[112];
} edgellm_quant_choice;

/* The type of one tensor (rules in edgellm.h, "Quantization"). src_type is the tensor's
 * type in the source (synth passes F32). */
void edgellm_quant_choose(const edgellm_quant_recipe *r, const char *name, uint32_t n_dims, const int64_t *ne,
                          int src_type, edgellm_quant_choice *out);

/* The next type to try when a row does not fit `type` (its block or group does not divide
 * ne0): Q4_K->Q5_0, Q5_K->Q5_1, Q6_K->Q8_0, Q2_K/Q3_K->Q4_0, I4/I8 g256->g128->g64 (same
 * kind), any other quantized type->F16; -1 for F32/F16/BF16 (they fit any row). Callers
 * loop until the row fits; edgellm_quant_choose and `edgellm plan` share this rule. */
int edgellm_quant_fallback_type(int type);

/* Whether edgellm can write tensors of `type` (a reference quantizer and a dequantizer)
 * and compute with them (matrices of a computable type, or F32/F16/BF16): the types
 * --output-type / --embd-type accept (quant_names.c). */
bool edgellm_quant_type_writable(int type);

/* llama.cpp's use_more_bits(i, n) (ggml-org/llama.cpp src/llama-quant.cpp). */
bool edgellm_quant_use_more_bits(int i_layer, int n_layer);

/* Error statistics of one converted chunk, merged over threads. */
typedef struct {
    double   sum_sq_x;       /* sum of x^2                                                 */
    double   sum_sq_err;     /* sum of (q - x)^2                                           */
    double   max_abs_err;
    uint64_t n_values, n_saturated, n_nonfinite;
} edgellm_quant_err;

/* Produces row `row` of a tensor as ne0 floats into out; called from worker threads, so it
 * must be thread-safe (read-only state, or per-row state derived from `row`). */
typedef void (*edgellm_row_source_fn)(const void *user, int64_t row, float *out);

/* Convert rows row0 .. row0+n_rows-1 of ne0 elements, produced by src, to `type` into dst
 * (n_rows * row_size bytes, packed), split over the pool's threads (NULL: the caller).
 * e (may be NULL) accumulates error statistics, measured by dequantizing what was
 * written. scratch: pool threads * 2 * ne0 floats. Returns false when `type` has no
 * quantizer for rows of ne0 (dst untouched). Results do not depend on the thread count. */
struct edgellm_threadpool;
bool edgellm_quant_rows(struct edgellm_threadpool *pool, int type, int64_t ne0, int64_t row0, int64_t n_rows,
                        edgellm_row_source_fn src, const void *user, void *dst, float *scratch,
                        edgellm_quant_err *e);

/* Importance-weighted quantization of one row (quantize_weighted.c): imw[n] are the
 * columns' mean squared activations (imatrix.c). false when `type` has no weighted form
 * (Q2_K, Q3_K, floats) or n is not whole blocks; dst is then untouched. The weighted
 * error of each block is at most the plain quantizer's. Thread-safe. */
bool edgellm_quant_weighted_supported(int type);
bool edgellm_quant_row_weighted(int type, const float *x, const float *imw, void *dst, int64_t n,
                                edgellm_quant_stats *st);

/* edgellm_quant_rows with importance weights imw[ne0] (NULL: plain; types without a
 * weighted form are quantized plainly). */
bool edgellm_quant_rows_w(struct edgellm_threadpool *pool, int type, int64_t ne0, int64_t row0, int64_t n_rows,
                          edgellm_row_source_fn src, const void *user, const float *imw, void *dst, float *scratch,
                          edgellm_quant_err *e);

/* edgellm_quantize_file with a type per tensor: types[i] (file order) >= 0 replaces the
 * recipe's choice for tensor i (it falls back for its shape as the recipe's would; it
 * applies to matrices the recipe converts or keeps); recipe (may be NULL) is stored as
 * edgellm.quant.recipe. */
edgellm_status edgellm_quantize_file_types(const char *in_path, const char *out_path, const edgellm_quantize_params *p,
                                           const int *types, int n_types, const char *recipe,
                                           edgellm_quantize_report *report, edgellm_error *err);

#endif
