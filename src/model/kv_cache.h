/*
 * kv_cache.h — the key/value cache of a context's sequences: one K and one V row of head_dim
 * elements per (layer, KV head, sequence, cell), stored as float32 (default), IEEE half (EDGELLM_TYPE_F16,
 * half the bytes; rounded to nearest-even when written) or Q8_0 blocks (EDGELLM_TYPE_Q8_0,
 * 34 bytes per 32 elements: 0.53 of F16; head_dim a multiple of 32). Keys are stored after
 * RoPE.
 *
 * Layout [n_layer][n_head_kv][n_seq][n_ctx][head_dim]: the cells of one KV head of one
 * sequence are one contiguous block, so attention reads each head as one sequential stream. The earlier
 * [n_layer][n_ctx][kv_dim] layout made every head a strided read (head_dim of each kv_dim
 * row) that the hardware prefetchers followed poorly: attention over 1040 cached positions
 * of a tinyllama shape (22 layers, 32 heads, cache evicted between tokens as the weight
 * stream does) took ~10 ms per token against ~7 with this layout (AVX-512 kernel, 1 thread).
 */
#ifndef EDGELLM_KV_CACHE_H
#define EDGELLM_KV_CACHE_H

#include "../common/common.h"
#include "../kernels/dispatch.h"

/* A quantized (Q8_0) cache's head rows are dequantized into a stack buffer of this many
 * floats during attention (edgellm_kernels_attend); edgellm_ctx_new refuses a larger
 * head_dim. */
#define EDGELLM_KV_QUANT_MAX_HEAD_DIM EDGELLM_ATTEND_QUANT_MAX_HEAD_DIM

typedef struct {
    int    n_layer;
    int    n_ctx;        /* cells per sequence                                */
    int    n_seq;        /* sequences                                         */
    int    n_head_kv;
    int    head_dim;
    int    kv_dim;       /* n_head_kv * head_dim                              */
    int    type;         /* EDGELLM_TYPE_F32, _F16 or _Q8_0                   */
    size_t row_bytes;    /* of one head's row: head_dim * 4, * 2, / 32 * 34   */
    void  *k;            /* [n_layer][n_head_kv][n_seq][n_ctx][head_dim] of type */
    void  *v;            /* the same                                          */
    size_t size_bytes;   /* of k and v together                               */
    uint64_t n_saturated;/* elements stored at the type's largest magnitude instead of
                          * overflowing: F16 values |x| >= 65520 (IEEE rounding would
                          * give inf) as +-65504; Q8_0 blocks past 127 x 65504 with the
                          * scale held at 65504 (counted per element clamped)      */
} edgellm_kv_cache;

/* Allocate for n_layer × n_head_kv × n_seq × n_ctx × head_dim (all > 0) elements of `type`
 * (EDGELLM_TYPE_F32, _F16, or _Q8_0 with head_dim % 32 == 0). EDGELLM_ERR_UNSUPPORTED for
 * another type or a Q8_0 head_dim that does not divide, EDGELLM_ERR_NOMEM when the size
 * overflows or allocation fails (kv left empty). Free with edgellm_kv_cache_free. */
edgellm_status edgellm_kv_cache_init(edgellm_kv_cache *kv, int n_layer, int n_seq, int n_ctx, int n_head_kv,
                                     int head_dim, int type, edgellm_error *err);
void edgellm_kv_cache_free(edgellm_kv_cache *kv);   /* NULL-safe; leaves kv empty */

/* Write the K and V rows of layer `il`, sequence `seq`, cell `cell` from float rows
 * k[kv_dim], v[kv_dim] (heads one after another, as the projections give them; converted
 * to the cache type head by head). A finite value beyond the type's range saturates (F16:
 * +-65504, never inf; Q8_0: the block's scale at 65504) and counts in kv->n_saturated; the
 * first one is said once through edgellm_log (a warning). Rows within range are converted
 * by the dispatched converter, bit for bit as weights are. */
void edgellm_kv_cache_store(edgellm_kv_cache *kv, int il, int seq, int cell, const float *k, const float *v);

/* Cells [from, from + n) of sequence src -> cells [to, to + n) of sequence dst, every layer
 * and head, K and V (memmove: the ranges may overlap when src == dst). */
void edgellm_kv_cache_move(edgellm_kv_cache *kv, int src, int from, int dst, int to, int n);

/* KV head `h` of layer `il`, sequence `seq`: its [n_ctx][head_dim] block of kv->type, cell
 * c at c * kv->row_bytes bytes. */
static inline size_t edgellm_kv_head_offset(const edgellm_kv_cache *kv, int il, int h, int seq)
{
    return (((size_t)il * (size_t)kv->n_head_kv + (size_t)h) * (size_t)kv->n_seq + (size_t)seq) * (size_t)kv->n_ctx *
           kv->row_bytes;
}
static inline void *edgellm_kv_k_head(const edgellm_kv_cache *kv, int il, int h, int seq)
{
    return (uint8_t *)kv->k + edgellm_kv_head_offset(kv, il, h, seq);
}
static inline void *edgellm_kv_v_head(const edgellm_kv_cache *kv, int il, int h, int seq)
{
    return (uint8_t *)kv->v + edgellm_kv_head_offset(kv, il, h, seq);
}

#endif
