/*
 * matmul.c — y = x · Wᵀ for every weight type, through the kernels chosen in dispatch.c
 * (contract in matmul.h).
 *
 * Two parallel steps:
 *  1. convert: activation row t -> vec_dot_type (tokens split over threads). Skipped when
 *     the activation type is F32 (float weights): x is read directly.
 *  2. dot: thread ith takes rows [r0, r1) of W. For each block of up to `tb` tokens it
 *     walks its rows and, per row, all tokens of the block:
 *
 *        for block of tokens:             (block of converted x: stays in L2)
 *            for r in r0..r1:             (weight row r: read from memory once per block)
 *                for t in block: y[t][r] = vec_dot(row r, xq[t])
 *
 *     tb is chosen so that a block of converted activations takes about 256 KiB.
 * Small products (< MIN_PARALLEL_MACS) run on the caller only.
 * Nothing here depends on the type beyond the traits and the dispatched functions:
 * quantized types plug in by providing vec_dot_type, from_float and vec_dot.
 */
#include "matmul.h"
#include "dispatch.h"

#define BLOCK_BYTES (256 * 1024)   /* target size of one block of converted activations */
/* Below this many multiply-adds a product runs on the calling thread alone: waking the
 * workers costs more than the work (a 64×64 matrix-vector product takes ~1 µs). Which
 * thread computes an element never changes its value, so this is invisible in results. */
#define MIN_PARALLEL_MACS (1 << 16)

size_t edgellm_matmul_scratch_size(const edgellm_tensor *W, int64_t n)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(W->type);
    if (!t || t->vec_dot_type == EDGELLM_TYPE_F32 || n <= 0) return 0;
    size_t row = edgellm_type_row_size(t->vec_dot_type, W->ne0), total;
    if (!row || !edgellm_mul_size(row, (size_t)n, &total)) return 0;
    return total;
}

bool edgellm_matmul_supported(const edgellm_tensor *W)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(W->type);
    if (!t || !edgellm_kernels_can_matmul(W->type)) return false;
    return edgellm_type_row_size(t->vec_dot_type, W->ne0) != 0;
}

typedef struct {
    float *y;                    /* [n][rows]                          */
    const edgellm_tensor *W;
    const float *x;              /* [n][cols]                          */
    const void *xq;              /* [n][xq_row_bytes], vec_dot_type    */
    void *xq_out;                /* same, writable (convert step)       */
    size_t xq_row_bytes;
    int64_t n;
    int64_t tb;                  /* tokens per block                   */
    edgellm_from_float_fn from_float;
    edgellm_vec_dot_fn dot;
} matmul_task;

static void convert_task(void *arg, int ith, int nth)
{
    matmul_task *m = arg;
    int64_t t0, t1, cols = m->W->ne0;
    edgellm_split_range(m->n, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++)
        m->from_float(m->x + t * cols, (uint8_t *)m->xq_out + (size_t)t * m->xq_row_bytes, cols);
}

static void dot_task(void *arg, int ith, int nth)
{
    matmul_task *m = arg;
    const edgellm_tensor *W = m->W;
    int64_t r0, r1, rows = W->ne1, cols = W->ne0;
    edgellm_split_range(rows, ith, nth, &r0, &r1);
    const uint8_t *xq = m->xq;
    for (int64_t tb0 = 0; tb0 < m->n; tb0 += m->tb) {
        int64_t tb1 = EDGELLM_MIN(tb0 + m->tb, m->n);
        for (int64_t r = r0; r < r1; r++) {
            const void *w = (const uint8_t *)W->data + (size_t)r * W->row_bytes;   /* [cols] */
            for (int64_t t = tb0; t < tb1; t++)
                m->y[t * rows + r] = m->dot(cols, w, xq + (size_t)t * m->xq_row_bytes);
        }
    }
}

void edgellm_matmul(edgellm_threadpool *pool, float *y, const edgellm_tensor *W, const float *x, int64_t n,
                    void *scratch)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(W->type);
    if ((double)W->ne0 * (double)W->ne1 * (double)n < MIN_PARALLEL_MACS) pool = NULL;
    matmul_task m = {
        .y = y, .W = W, .x = x, .n = n,
        .dot = edgellm_kernels_vec_dot(W->type),
    };
    if (t->vec_dot_type == EDGELLM_TYPE_F32) {
        m.xq = x;
        m.xq_row_bytes = (size_t)W->ne0 * sizeof(float);
    } else {
        m.xq = m.xq_out = scratch;
        m.xq_row_bytes = edgellm_type_row_size(t->vec_dot_type, W->ne0);
        m.from_float = edgellm_kernels_from_float(t->vec_dot_type);
        edgellm_threadpool_run(pool, convert_task, &m);
    }
    m.tb = (int64_t)(BLOCK_BYTES / (m.xq_row_bytes ? m.xq_row_bytes : 1));
    m.tb = EDGELLM_MAX(m.tb, 1);
    edgellm_threadpool_run(pool, dot_task, &m);
}
