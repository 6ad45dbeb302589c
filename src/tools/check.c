/*
 * check.c — scan every tensor of a GGUF file for values that are not finite numbers
 * (`edgellm info --check`, edgellm_check_file in edgellm.h).
 *
 * Why: a NaN or an infinity in one weight poisons every activation it touches; the
 * forward pass then reports "NaN or inf in the logits" (EDGELLM_ERR_NUMERIC) without
 * saying where it came from. This scan names the first bad tensor and element.
 *
 * How: the file is opened with the validating GGUF reader (src/format/gguf_read.c), so
 * every tensor's bytes are known to lie inside the mapping. Each tensor is dequantized
 * with its type's to_float (src/tensor/types.h) in chunks of whole blocks (at most
 * EDGELLM_CHECK_CHUNK elements, so memory stays small whatever the tensor size), and every
 * float is tested with isfinite. A quantized block's values are finite exactly when its
 * scales are (the quants are small integers), so dequantizing covers the f16 scales of
 * Q4_0...Q6_K and the group types alike. F64 is read as doubles; integer tensors (I8..I64)
 * cannot hold non-numbers and are counted as checked; types without a dequantizer (IQ*,
 * TQ*, MXFP4) are counted as skipped.
 *
 * Element index: the flat index in ggml order (ne[0] fastest), reported with its row
 * (index / ne[0]) and column (index % ne[0]).
 */
#include "edgellm_tools.h"
#include "../format/gguf.h"
#include "../kernels/repack.h"
#include "../tensor/blocks.h"
#include "../tensor/types.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define EDGELLM_CHECK_CHUNK 65536   /* elements dequantized per step */

static void fill_bad(edgellm_check_report *r, const edgellm_gguf_tensor *t, int64_t ti, uint64_t idx, double v)
{
    r->found = 1;
    snprintf(r->tensor, sizeof r->tensor, "%.*s", (int)(t->name.len < 200 ? t->name.len : 200), t->name.ptr);
    r->tensor_index = ti;
    r->element = idx;
    r->row = idx / (uint64_t)t->ne[0];
    r->col = idx % (uint64_t)t->ne[0];
    r->value = v;
}

/* Scan one tensor; returns true when a non-finite value was found (report filled). */
static bool scan_tensor(const edgellm_gguf_tensor *t, int64_t ti, float *buf, edgellm_check_report *r)
{
    const edgellm_type_traits *tr = edgellm_type_get_traits(t->type);
    if (t->type == EDGELLM_TYPE_F64) {
        const uint8_t *p = t->data;
        for (uint64_t i = 0; i < t->n_elements; i++) {
            double v;
            memcpy(&v, p + 8 * i, 8);
            if (!isfinite(v)) { fill_bad(r, t, ti, i, v); return true; }
        }
        r->n_tensors_checked++;
        r->n_values += t->n_elements;
        return false;
    }
    if (t->type == EDGELLM_TYPE_I8 || t->type == EDGELLM_TYPE_I16 || t->type == EDGELLM_TYPE_I32 ||
        t->type == EDGELLM_TYPE_I64) {
        r->n_tensors_checked++;
        r->n_values += t->n_elements;
        return false;
    }
    if (t->type == EDGELLM_TYPE_Q4_K_R16) {
        /* a stored layout: its Q4_K rows one at a time (a row's bytes are at most the
         * tensor's, which the reader bounded by the file), dequantized EDGELLM_CHECK_CHUNK
         * elements at a time into buf */
        const int64_t rows = t->ne[1], ne0 = t->ne[0];
        const size_t rb = edgellm_type_row_size(EDGELLM_TYPE_Q4_K, ne0);
        const edgellm_type_traits *q4 = edgellm_type_get_traits(EDGELLM_TYPE_Q4_K);
        const int64_t chunk = EDGELLM_CHECK_CHUNK / EDGELLM_QK_K * EDGELLM_QK_K;
        uint8_t *row = rows > 0 && rb > 0 ? malloc(rb) : NULL;
        if (rows > 0 && !row) {
            r->n_tensors_skipped++;
            return false;
        }
        for (int64_t k = 0; k < rows; k++) {
            edgellm_repack_q4_K_r16_unpack_row(t->data, rows, ne0, k, row);
            for (int64_t e0 = 0; e0 < ne0; e0 += chunk) {
                const int64_t n = ne0 - e0 < chunk ? ne0 - e0 : chunk;
                q4->to_float(row + (size_t)(e0 / EDGELLM_QK_K) * q4->type_size, buf, n);
                for (int64_t i = 0; i < n; i++)
                    if (!isfinite(buf[i])) {
                        fill_bad(r, t, ti, (uint64_t)(k * ne0 + e0 + i), buf[i]);
                        free(row);
                        return true;
                    }
            }
        }
        free(row);
        r->n_tensors_checked++;
        r->n_values += t->n_elements;
        return false;
    }
    if (!tr || !tr->to_float || tr->blck_size <= 0) {
        r->n_tensors_skipped++;
        return false;
    }
    const uint64_t blck = (uint64_t)tr->blck_size;
    const uint64_t n_blocks = t->n_elements / blck;   /* the reader proved ne[0] % blck == 0 */
    const uint64_t chunk_blocks = EDGELLM_CHECK_CHUNK / blck ? EDGELLM_CHECK_CHUNK / blck : 1;
    const uint8_t *p = t->data;
    for (uint64_t b = 0; b < n_blocks; b += chunk_blocks) {
        uint64_t nb = n_blocks - b < chunk_blocks ? n_blocks - b : chunk_blocks;
        tr->to_float(p + b * tr->type_size, buf, (int64_t)(nb * blck));   /* buf[nb*blck] */
        for (uint64_t i = 0; i < nb * blck; i++)
            if (!isfinite(buf[i])) { fill_bad(r, t, ti, b * blck + i, buf[i]); return true; }
    }
    r->n_tensors_checked++;
    r->n_values += t->n_elements;
    return false;
}

edgellm_status edgellm_check_file(const char *path, edgellm_check_report *report, edgellm_error *err)
{
    edgellm_check_report local;
    edgellm_check_report *r = report ? report : &local;
    memset(r, 0, sizeof *r);
    r->tensor_index = -1;
    if (!path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "check: NULL path");
    edgellm_gguf *g = NULL;
    edgellm_status rc = edgellm_gguf_open(path, &g, err);
    if (rc != EDGELLM_OK) return rc;
    float *buf = edgellm_malloc(EDGELLM_CHECK_CHUNK * sizeof *buf + 1024 * sizeof *buf);   /* + one block of slack */
    if (!buf) { edgellm_gguf_close(g); return edgellm_fail_nomem(err, path); }
    r->n_tensors = edgellm_gguf_n_tensors(g);
    for (int64_t i = 0; i < r->n_tensors; i++) {
        const edgellm_gguf_tensor *t = edgellm_gguf_tensor_at(g, i);
        if (scan_tensor(t, i, buf, r)) {
            const char *what = isnan(r->value) ? "NaN" : r->value > 0 ? "+inf" : "-inf";
            rc = edgellm_fail(err, EDGELLM_ERR_NUMERIC,
                              "%s: tensor %s (#%lld, %s) element %llu (row %llu, column %llu) is %s", path, r->tensor,
                              (long long)i, edgellm_type_name(t->type), (unsigned long long)r->element,
                              (unsigned long long)r->row, (unsigned long long)r->col, what);
            break;
        }
    }
    edgellm_free(buf);
    edgellm_gguf_close(g);
    return rc;
}
