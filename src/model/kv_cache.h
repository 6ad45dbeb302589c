/*
 * kv_cache.h — the key/value cache of one sequence: float32, one K and one V row of kv_dim
 * floats per (layer, position). Keys are stored after RoPE.
 */
#ifndef EDGELLM_KV_CACHE_H
#define EDGELLM_KV_CACHE_H

#include "../common/common.h"

typedef struct {
    int    n_layer;
    int    n_ctx;        /* positions                               */
    int    kv_dim;       /* n_head_kv * head_dim                    */
    float *k;            /* [n_layer][n_ctx][kv_dim]                */
    float *v;            /* [n_layer][n_ctx][kv_dim]                */
    size_t size_bytes;   /* of k and v together                     */
} edgellm_kv_cache;

/* Allocate for n_layer × n_ctx × kv_dim (all > 0). EDGELLM_ERR_NOMEM when the size
 * overflows or allocation fails (kv left empty). Free with edgellm_kv_cache_free. */
edgellm_status edgellm_kv_cache_init(edgellm_kv_cache *kv, int n_layer, int n_ctx, int kv_dim, edgellm_error *err);
void edgellm_kv_cache_free(edgellm_kv_cache *kv);   /* NULL-safe; leaves kv empty */

/* Row of layer `il` at position `pos`: [kv_dim]. The rows of one layer are contiguous, so
 * k_row(kv, il, 0) is that layer's [n_ctx][kv_dim] block. */
static inline float *edgellm_kv_k_row(const edgellm_kv_cache *kv, int il, int pos)
{
    return kv->k + ((size_t)il * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->kv_dim;
}
static inline float *edgellm_kv_v_row(const edgellm_kv_cache *kv, int il, int pos)
{
    return kv->v + ((size_t)il * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->kv_dim;
}

#endif
