/*
 * matmul.c — y = x · Wᵀ for every weight type, through the kernels chosen in dispatch.c
 * and the tile kernels of gemm.h (contract in matmul.h).
 *
 * Two parallel steps:
 *  1. convert: activation row t -> vec_dot_type (tokens split over threads). Skipped when
 *     the activation type is F32 (float weights): x is read directly. When the weight type
 *     has a tile kernel at the active kernel level (gemm_kernels below), the row is also
 *     packed for it (gemm.h).
 *  2. dot, one of:
 *     - tile kernel (gemm.h): thread ith takes whole 16-row tiles of W; the kernel reads
 *       each weight block once per 64 tokens and computes 16 rows × 8 tokens per step.
 *       Used for 1 token as for many, so decode and prefill stay bit-identical.
 *     - vec_dot loop: thread ith takes rows [r0, r1). For each block of up to `tb` tokens
 *       it walks its rows and, per row, all tokens of the block:
 *
 *        for block of tokens:             (block of converted x: stays in L2)
 *            for r in r0..r1:             (weight row r: read from memory once per block)
 *                for t in block: y[t][r] = vec_dot(row r, xq[t])
 *
 *       tb is chosen so that a block of converted activations takes about 256 KiB.
 * Small products (< MIN_PARALLEL_MACS) run on the caller only.
 * Which path and which thread computes an element never changes its value for a given
 * kernel level.
 */
#include "matmul.h"
#include "dispatch.h"
#include "gemm.h"

#define BLOCK_BYTES (256 * 1024)   /* target size of one block of converted activations */
/* Below this many multiply-adds a product runs on the calling thread alone: waking the
 * workers costs more than the work (a 64×64 matrix-vector product takes ~1 µs). Which
 * thread computes an element never changes its value, so this is invisible in results. */
#define MIN_PARALLEL_MACS (1 << 16)
#define GEMM_TILE_ROWS 16          /* rows per tile of every gemm kernel: the thread split unit */
#define SCRATCH_ALIGN 64

/* Tile kernels by weight type and the kernel level they need (dispatch level name). */
typedef struct {
    int type;
    const char *level;
    edgellm_gemm_prep_fn prep;
    edgellm_gemm_fn gemm;
    size_t group_bytes;       /* packed activation bytes per token and 16 blocks */
    int64_t block;            /* elements per activation block                   */
} gemm_kernel;

static const gemm_kernel gemm_kernels[] = {
#if defined(__x86_64__)
    {EDGELLM_TYPE_Q4_0, "avx512", edgellm_gemm_prep_q4_0_avx512, edgellm_gemm_q4_0_avx512, EDGELLM_GEMM_Q8_0_XG, 32},
    {EDGELLM_TYPE_Q8_0, "avx512", edgellm_gemm_prep_q8_0_avx512, edgellm_gemm_q8_0_avx512, EDGELLM_GEMM_Q8_0_XG, 32},
#endif
    {-1, NULL, NULL, NULL, 0, 0},
};

/* The tile kernel for `type` at the active level, or NULL. */
static const gemm_kernel *find_gemm(int type)
{
    const char *level = edgellm_kernels_name();
    for (const gemm_kernel *g = gemm_kernels; g->level; g++)
        if (g->type == type && !strcmp(g->level, level)) return g;
    return NULL;
}

static size_t align_up(size_t v) { return (v + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN; }

/* Packed activation bytes for n tokens of cols elements (the largest over the levels of
 * `type`); SIZE_MAX on overflow. */
static size_t packed_size(int type, int64_t cols, int64_t n)
{
    size_t best = 0;
    for (const gemm_kernel *g = gemm_kernels; g->level; g++) {
        if (g->type != type || cols % g->block) continue;
        const size_t groups = (size_t)((cols / g->block + 15) / 16);
        size_t s;
        if (!edgellm_mul_size(groups, (size_t)n, &s) || !edgellm_mul_size(s, g->group_bytes, &s)) return SIZE_MAX;
        best = EDGELLM_MAX(best, s);
    }
    return best;
}

size_t edgellm_matmul_scratch_size(const edgellm_tensor *W, int64_t n)
{
    const edgellm_type_traits *t = edgellm_type_get_traits(W->type);
    if (!t || t->vec_dot_type == EDGELLM_TYPE_F32 || n <= 0) return 0;
    size_t row = edgellm_type_row_size(t->vec_dot_type, W->ne0), total;
    if (!row || !edgellm_mul_size(row, (size_t)n, &total)) return 0;
    const size_t packed = packed_size(W->type, W->ne0, n);
    if (packed == SIZE_MAX || total > SIZE_MAX / 2 || packed > SIZE_MAX / 2) return 0;
    return packed ? align_up(total) + packed + SCRATCH_ALIGN : total;
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
    uint8_t *xp;                 /* packed activations of the tile kernel */
    int64_t n;
    int64_t tb;                  /* tokens per block                   */
    edgellm_from_float_fn from_float;
    edgellm_vec_dot_fn dot;
    const gemm_kernel *gemm;     /* NULL: vec_dot loop                 */
} matmul_task;

static void convert_task(void *arg, int ith, int nth)
{
    matmul_task *m = arg;
    int64_t t0, t1, cols = m->W->ne0;
    edgellm_split_range(m->n, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        uint8_t *row = (uint8_t *)m->xq_out + (size_t)t * m->xq_row_bytes;
        m->from_float(m->x + t * cols, row, cols);
        if (m->gemm) m->gemm->prep(row, t, cols, m->xp);
    }
}

static void dot_task(void *arg, int ith, int nth)
{
    matmul_task *m = arg;
    const edgellm_tensor *W = m->W;
    int64_t r0, r1, rows = W->ne1, cols = W->ne0;
    if (m->gemm) {
        int64_t tile0, tile1;
        edgellm_split_range((rows + GEMM_TILE_ROWS - 1) / GEMM_TILE_ROWS, ith, nth, &tile0, &tile1);
        edgellm_gemm_args a = {
            .w = W->data, .row_bytes = W->row_bytes, .cols = cols,
            .r0 = tile0 * GEMM_TILE_ROWS, .r1 = EDGELLM_MIN(tile1 * GEMM_TILE_ROWS, rows),
            .xp = m->xp, .n = m->n, .y = m->y, .ldy = rows,
        };
        if (a.r0 < a.r1) m->gemm->gemm(&a);
        return;
    }
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
        m.gemm = find_gemm(W->type);
        if (m.gemm && W->ne0 % m.gemm->block) m.gemm = NULL;
        if (m.gemm) {
            uintptr_t p = (uintptr_t)scratch + m.xq_row_bytes * (size_t)n;
            m.xp = (uint8_t *)((p + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN);
        }
        edgellm_threadpool_run(pool, convert_task, &m);
    }
    m.tb = (int64_t)(BLOCK_BYTES / (m.xq_row_bytes ? m.xq_row_bytes : 1));
    m.tb = EDGELLM_MAX(m.tb, 1);
    edgellm_threadpool_run(pool, dot_task, &m);
}
