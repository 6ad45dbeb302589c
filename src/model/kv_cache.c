/*
 * kv_cache.c — allocation of the float32 KV cache (layout in kv_cache.h).
 *
 * Size = 2 × n_layer × n_ctx × kv_dim × 4 bytes, computed with overflow checks. The memory
 * is not zeroed: positions >= n_past are never read, and untouched pages of a large cache
 * then cost no RAM until used.
 */
#include "kv_cache.h"

edgellm_status edgellm_kv_cache_init(edgellm_kv_cache *kv, int n_layer, int n_ctx, int kv_dim, edgellm_error *err)
{
    memset(kv, 0, sizeof *kv);
    size_t one;
    if (n_layer <= 0 || n_ctx <= 0 || kv_dim <= 0 ||
        !edgellm_mul_size((size_t)n_layer, (size_t)n_ctx, &one) ||
        !edgellm_mul_size(one, (size_t)kv_dim, &one) ||
        !edgellm_mul_size(one, sizeof(float), &one) || one > SIZE_MAX / 2)
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "KV cache: %d layers x %d positions x %d floats is too large",
                            n_layer, n_ctx, kv_dim);
    kv->k = edgellm_malloc(one);
    kv->v = edgellm_malloc(one);
    if (!kv->k || !kv->v) {
        edgellm_kv_cache_free(kv);
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "KV cache: cannot allocate %zu bytes", 2 * one);
    }
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    kv->size_bytes = 2 * one;
    return EDGELLM_OK;
}

void edgellm_kv_cache_free(edgellm_kv_cache *kv)
{
    if (!kv) return;
    edgellm_free(kv->k);
    edgellm_free(kv->v);
    memset(kv, 0, sizeof *kv);
}
