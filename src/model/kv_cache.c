/*
 * kv_cache.c — allocation of the KV cache and the writing of its rows (layout in kv_cache.h).
 *
 * Size = 2 × n_layer × n_head_kv × n_seq × n_ctx × head row bytes (head_dim × 4 for F32, × 2 for F16,
 * head_dim/32 × 34 for Q8_0), computed with overflow checks. The memory is not zeroed: cells past a
 * sequence's count are never read, and untouched pages of a large cache then cost no RAM until used. F16 rows are
 * converted by the dispatched float -> F16 converter (IEEE 754 binary16, round to nearest
 * even), Q8_0 rows by the dispatched Q8_0 quantizer (llama.cpp's block: 32 int8 + an F16
 * scale amax/127, blocks.h).
 *
 * Saturation. IEEE rounding sends a finite float of magnitude >= 65520 to a half infinity,
 * and one infinite value in a key or value row turns attention into NaN (inf - inf in the
 * softmax, 0 * inf in the weighted sum): a model whose values reach ~66,400 ran with an F32
 * cache and failed with F16. Such values are stored as +-65504 instead, the largest half
 * (the value round-to-nearest gives everything below 65520). The Q8_0 quantizers already
 * clamp their input to 127 x 65504 so that the half scale stays finite; the store counts
 * those too. The check is a scan of the row; rows within range take the usual converter.
 */
#include <math.h>
#include "kv_cache.h"
#include "../kernels/dispatch.h"
#include "../tensor/blocks.h"

edgellm_status edgellm_kv_cache_init(edgellm_kv_cache *kv, int n_layer, int n_seq, int n_ctx, int n_head_kv,
                                     int head_dim, int type, edgellm_error *err)
{
    memset(kv, 0, sizeof *kv);
    if (type != EDGELLM_TYPE_F32 && type != EDGELLM_TYPE_F16 && type != EDGELLM_TYPE_Q8_0)
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "KV cache: type %s (%d) is not supported (F32, F16 or Q8_0)",
                            edgellm_type_name(type), type);
    if (type == EDGELLM_TYPE_Q8_0 && head_dim % EDGELLM_QK8_0 != 0)
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED,
                            "KV cache: Q8_0 rows need head_dim %d to be a multiple of %d", head_dim, EDGELLM_QK8_0);
    size_t row = head_dim > 0 ? edgellm_type_row_size(type, head_dim) : 0;
    size_t one;
    if (n_layer <= 0 || n_seq <= 0 || n_ctx <= 0 || n_head_kv <= 0 || head_dim <= 0 || row == 0 ||
        n_head_kv > INT32_MAX / head_dim || !edgellm_mul_size((size_t)n_layer, (size_t)n_head_kv, &one) ||
        !edgellm_mul_size(one, (size_t)n_seq, &one) || !edgellm_mul_size(one, (size_t)n_ctx, &one) ||
        !edgellm_mul_size(one, row, &one) || one > SIZE_MAX / 2)
        return edgellm_fail(err, EDGELLM_ERR_NOMEM,
                            "KV cache: %d layers x %d sequences x %d cells x %d heads x %d elements is too large",
                            n_layer, n_seq, n_ctx, n_head_kv, head_dim);
    kv->k = edgellm_malloc(one);
    kv->v = edgellm_malloc(one);
    if (!kv->k || !kv->v) {
        edgellm_kv_cache_free(kv);
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "KV cache: cannot allocate %zu bytes", 2 * one);
    }
    /* Not hinted to huge pages (edgellm_hint_huge_pages), though decode then faults in a
     * fresh 4 KiB page every few tokens per layer (on the 2-vCPU dev VM ~10 faults per
     * tinyllama token, ~80 us each, ~3 % of a 2-thread decode): with the hint, the kernel's
     * THP defrag=madvise compacted memory on the first touch and stalled the first prefill
     * by up to 200 ms (11-token prompt: 150-375 ms against 165 ms). TTFT wins. */
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->n_seq = n_seq;
    kv->n_head_kv = n_head_kv;
    kv->head_dim = head_dim;
    kv->kv_dim = n_head_kv * head_dim;
    kv->type = type;
    kv->row_bytes = row;
    kv->size_bytes = 2 * one;
    return EDGELLM_OK;
}

#define HALF_MAX 65504.0f               /* the largest finite IEEE half                  */
#define F16_OVERFLOW 65520.0f          /* the least magnitude IEEE rounding sends to inf */
#define Q8_0_LIMIT (127.0f * HALF_MAX) /* the Q8_0 quantizers' input clamp              */

/* Finite elements of x[n] at or beyond `limit` in magnitude. */
static int64_t count_beyond(const float *x, int n, float limit)
{
    int64_t c = 0;
    for (int i = 0; i < n; i++) c += fabsf(x[i]) >= limit && isfinite(x[i]);
    return c;
}

/* One head row into the cache: F16 beyond range through a clamped copy (in pieces of 64),
 * everything else by conv as is. Returns the elements saturated. */
static int64_t store_row(const edgellm_kv_cache *kv, edgellm_from_float_fn conv, const float *src, uint8_t *dst)
{
    const int n = kv->head_dim;
    if (kv->type == EDGELLM_TYPE_Q8_0) {   /* the quantizer clamps; count what it clamps */
        conv(src, dst, n);
        return count_beyond(src, n, nextafterf(Q8_0_LIMIT, INFINITY));
    }
    const int64_t over = count_beyond(src, n, F16_OVERFLOW);
    if (!over) {
        conv(src, dst, n);
        return 0;
    }
    float part[64];
    for (int i0 = 0; i0 < n; i0 += 64) {
        const int m = EDGELLM_MIN(64, n - i0);
        for (int i = 0; i < m; i++) {
            const float x = src[i0 + i];
            part[i] = isfinite(x) && fabsf(x) > HALF_MAX ? copysignf(HALF_MAX, x) : x;
        }
        conv(part, dst + 2 * (size_t)i0, m);
    }
    return over;
}

void edgellm_kv_cache_store(edgellm_kv_cache *kv, int il, int seq, int cell, const float *k, const float *v)
{
    const size_t off = (size_t)cell * kv->row_bytes;
    edgellm_from_float_fn conv = kv->type == EDGELLM_TYPE_F32 ? NULL : edgellm_kernels_from_float(kv->type);
    int64_t sat = 0;
    for (int h = 0; h < kv->n_head_kv; h++) {   /* float[head_dim] -> the head's row */
        uint8_t *kd = (uint8_t *)edgellm_kv_k_head(kv, il, h, seq) + off, *vd = (uint8_t *)edgellm_kv_v_head(kv, il, h, seq) + off;
        const float *ks = k + (size_t)h * (size_t)kv->head_dim, *vs = v + (size_t)h * (size_t)kv->head_dim;
        if (!conv) {
            memcpy(kd, ks, kv->row_bytes);
            memcpy(vd, vs, kv->row_bytes);
        } else {
            sat += store_row(kv, conv, ks, kd);
            sat += store_row(kv, conv, vs, vd);
        }
    }
    if (sat) {
        if (!kv->n_saturated)
            edgellm_log(EDGELLM_LOG_WARN, "KV cache (%s): a key or value beyond the type's range (layer %d) was stored "
                        "saturated, %s; the context counts such values", edgellm_type_name(kv->type), il,
                        kv->type == EDGELLM_TYPE_F16 ? "as +-65504, the largest IEEE half"
                                                     : "with the block scale at 65504, the largest IEEE half");
        kv->n_saturated += (uint64_t)sat;
    }
}

void edgellm_kv_cache_move(edgellm_kv_cache *kv, int src, int from, int dst, int to, int n)
{
    if (n <= 0) return;
    const size_t bytes = (size_t)n * kv->row_bytes;
    for (int il = 0; il < kv->n_layer; il++)
        for (int h = 0; h < kv->n_head_kv; h++) {
            memmove((uint8_t *)edgellm_kv_k_head(kv, il, h, dst) + (size_t)to * kv->row_bytes,
                    (uint8_t *)edgellm_kv_k_head(kv, il, h, src) + (size_t)from * kv->row_bytes, bytes);
            memmove((uint8_t *)edgellm_kv_v_head(kv, il, h, dst) + (size_t)to * kv->row_bytes,
                    (uint8_t *)edgellm_kv_v_head(kv, il, h, src) + (size_t)from * kv->row_bytes, bytes);
        }
}

void edgellm_kv_cache_free(edgellm_kv_cache *kv)
{
    if (!kv) return;
    edgellm_free(kv->k);
    edgellm_free(kv->v);
    memset(kv, 0, sizeof *kv);
}
