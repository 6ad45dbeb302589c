/*
 * kv_cache.h — the key/value cache of one sequence: one K and one V row of kv_dim elements
 * per (layer, position), stored as float32 (default), IEEE half (EDGELLM_TYPE_F16, half the
 * bytes; rows rounded to nearest-even when written) or Q8_0 blocks (EDGELLM_TYPE_Q8_0, 34
 * bytes per 32 elements: 0.53 of F16; kv_dim a multiple of 32). Keys are stored after RoPE.
 */
#ifndef EDGELLM_KV_CACHE_H
#define EDGELLM_KV_CACHE_H

#include "../common/common.h"

/* A quantized (Q8_0) cache's head rows are dequantized into a stack buffer of this many
 * floats during attention (llama.c); edgellm_ctx_new refuses a larger head_dim. */
#define EDGELLM_KV_QUANT_MAX_HEAD_DIM 1024

typedef struct {
    int    n_layer;
    int    n_ctx;        /* positions                               */
    int    kv_dim;       /* n_head_kv * head_dim                    */
    int    type;         /* EDGELLM_TYPE_F32, _F16 or _Q8_0         */
    size_t row_bytes;    /* kv_dim * 4, kv_dim * 2, kv_dim / 32 * 34 */
    void  *k;            /* [n_layer][n_ctx][kv_dim] of type        */
    void  *v;            /* [n_layer][n_ctx][kv_dim] of type        */
    size_t size_bytes;   /* of k and v together                     */
} edgellm_kv_cache;

/* Allocate for n_layer × n_ctx × kv_dim (all > 0) elements of `type` (EDGELLM_TYPE_F32,
 * _F16, or _Q8_0 with kv_dim % 32 == 0). EDGELLM_ERR_UNSUPPORTED for another type or a Q8_0
 * kv_dim that does not divide, EDGELLM_ERR_NOMEM when the
 * size overflows or allocation fails (kv left empty). Free with edgellm_kv_cache_free. */
edgellm_status edgellm_kv_cache_init(edgellm_kv_cache *kv, int n_layer, int n_ctx, int kv_dim, int type,
                                     edgellm_error *err);
void edgellm_kv_cache_free(edgellm_kv_cache *kv);   /* NULL-safe; leaves kv empty */

/* Write the K and V rows of layer `il` at position `pos` from float rows k[kv_dim],
 * v[kv_dim] (converted to the cache type). */
void edgellm_kv_cache_store(edgellm_kv_cache *kv, int il, int pos, const float *k, const float *v);

/* Row of layer `il` at position `pos`: [kv_dim] elements of kv->type. The rows of one layer
 * are contiguous, so k_row(kv, il, 0) is that layer's [n_ctx][kv_dim] block. */
static inline void *edgellm_kv_k_row(const edgellm_kv_cache *kv, int il, int pos)
{
    return (uint8_t *)kv->k + ((size_t)il * (size_t)kv->n_ctx + (size_t)pos) * kv->row_bytes;
}
static inline void *edgellm_kv_v_row(const edgellm_kv_cache *kv, int il, int pos)
{
    return (uint8_t *)kv->v + ((size_t)il * (size_t)kv->n_ctx + (size_t)pos) * kv->row_bytes;
}

#endif
