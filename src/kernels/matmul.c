/*
 * matmul.c — y = x · Wᵀ for every weight type, through the kernels chosen in dispatch.c
 * and the tile kernels of gemm.h (contract in matmul.h).
 *
 * A batch of products that read the same activations (q/k/v, gate/up) runs as:
 *  1. convert: activation row t -> vec_dot_type, and when the weights have a tile kernel
 *     at the active kernel level (edgellm_kernels_gemm, dispatch.h) -> the kernel's packed
 *     layout (gemm.h). One token is converted by the calling thread; more tokens are split
 *     over the threads in their own parallel run. Skipped for float weights (x read
 *     directly).
 *  2. dot: one parallel run for all the products of the batch. Their rows, as whole
 *     16-row tiles, form one list (job after job), shared among the threads as the
 *     caller asks (edgellm_matmul_sched, matmul.h):
 *     - STREAM (default): thread i owns tiles [i·T/nth, (i+1)·T/nth) and takes them front
 *       to back from an atomic (lo, hi) pair, a quarter of what is left of it at a time
 *       (at least one tile: fewer locked compare-exchanges, each a full fence on x86, and
 *       a fine last take); a thread whose range is empty cuts the back half off the
 *       largest range left (the owner's next take then fails its compare-exchange and
 *       rereads). Each thread reads one sequential stream, as the hardware prefetchers
 *       like, and the threads still finish together.
 *     - IN_ORDER: threads take chunks from one shared counter by guided self-scheduling
 *       (Polychronopoulos & Kuck 1987): each take is the remaining tiles / (GUIDED_DIV ·
 *       threads), at least MIN_TAKE_TILES, so the rows are read roughly in file order
 *       (the first pass over a cold mapping; see matmul.h).
 *     Per chunk, per job it covers:
 *     - tile kernel (gemm.h): each weight block is read once per 64 tokens; used for 1
 *       token as for many, so decode and prefill are bit-identical;
 *     - vec_dot loop: for each block of up to `tb` tokens, each row r, each token t of the
 *       block: y[t][r] = vec_dot(row r, xq[t]) (tb: converted activations of ~256 KiB, so
 *       a block of them stays in L2 while the rows stream by).
 * Which thread, chunk or path computes an element never changes its value for a given
 * kernel level. Small batches (< MIN_PARALLEL_MACS) run on the caller only.
 */
#include "matmul.h"
#include "dispatch.h"
#include "gemm.h"
#include <stdatomic.h>

#define BLOCK_BYTES (256 * 1024)   /* target size of one block of converted activations */
/* Below this many multiply-adds a product runs on the calling thread alone: waking the
 * workers costs more than the work (a 64×64 matrix-vector product takes ~1 µs). Which
 * thread computes an element never changes its value, so this is invisible in results. */
#define MIN_PARALLEL_MACS (1 << 16)
#define TILE_ROWS 16               /* rows per tile of every gemm kernel: the chunk unit    */
/* Long runs of contiguous rows per thread matter: on the 2-core Zen 5 dev machine 2-thread
 * decode of a Q4_0 tinyllama took 11.1 / 11.7 / 12.5 / 13.5 ms per pass of its matrices
 * with 1 / 2 / 8 / 16 equal chunks per thread (a plain read of the weights: 10.4 ms), and
 * 20 ms with chunks capped at 64 KiB. STREAM reads one run per thread (plus the stolen
 * tail); IN_ORDER's guided takes (remaining / (GUIDED_DIV · threads) tiles, at least
 * MIN_TAKE_TILES) about 7 per thread and matrix. bench_gemm, 2 threads, matrices only,
 * median pass as a fraction of a plain read of the same bytes: Q4_0 0.89-0.95 (STREAM) vs
 * 0.84-0.89 (IN_ORDER), Q4_K_M 0.90-0.95 vs 0.82-0.86. */
#define GUIDED_DIV 2
#define MIN_TAKE_TILES 2
#define STREAM_DIV 4               /* STREAM: a take is the own range's tiles left / 4 ... */
#define STREAM_MIN_TILES 1         /* ... but at least one tile                             */
#define SCRATCH_ALIGN 64
#define MAX_BATCH 8

static size_t align_up(size_t v) { return (v + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN; }

/* Packed activation bytes for n tokens of cols elements (the largest over the levels of
 * `type`); SIZE_MAX on overflow. */
static size_t packed_size(int type, int64_t cols, int64_t n)
{
    const size_t per_token = edgellm_kernels_gemm_packed_bytes(type, cols);
    size_t s;
    if (per_token == SIZE_MAX || !edgellm_mul_size(per_token, (size_t)n, &s)) return SIZE_MAX;
    return s;
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

/* One thread's range of tiles (range_pack'ed), alone on its cache line. */
typedef struct {
    _Alignas(64) atomic_uint_fast64_t r;
} range_slot;

typedef struct {
    const edgellm_matmul_job *jobs;
    int k;
    const float *x;              /* [n][cols]                                    */
    int64_t n, cols;
    const void *xq;              /* [n][xq_row_bytes], vec_dot_type              */
    void *xq_out;                /* same, writable (convert step)                 */
    size_t xq_row_bytes;
    uint8_t *xp;                 /* packed activations of the tile kernel         */
    int64_t tb;                  /* tokens per block (vec_dot loop)               */
    edgellm_from_float_fn from_float;
    edgellm_vec_dot_fn dot[MAX_BATCH];
    const edgellm_gemm_kernel *gemm[MAX_BATCH];   /* NULL: vec_dot loop           */
    bool unpack[MAX_BATCH];      /* repacked W whose kernel is not of the active level:
                                  * the vec_dot loop over rows unpacked one at a time */
    int nth;                     /* threads of the run                            */
    size_t prefetch;             /* edgellm_gemm_args.prefetch                    */
    int64_t first_tile[MAX_BATCH + 1];    /* job j owns tiles [first[j], first[j+1])  */
    edgellm_matmul_sched sched;
    atomic_int_fast64_t next;    /* IN_ORDER: first tile not yet taken            */
    range_slot *range;           /* STREAM: [nth], thread i's tiles left          */
} matmul_task;

static void convert_rows(matmul_task *m, int64_t t0, int64_t t1)
{
    for (int64_t t = t0; t < t1; t++) {
        uint8_t *row = (uint8_t *)m->xq_out + (size_t)t * m->xq_row_bytes;
        m->from_float(m->x + t * m->cols, row, m->cols);
        if (m->gemm[0] && m->gemm[0]->prep) m->gemm[0]->prep(row, t, m->cols, m->xp);
    }
}

static void convert_task(void *arg, int ith, int nth)
{
    matmul_task *m = arg;
    int64_t t0, t1;
    edgellm_split_range(m->n, ith, nth, &t0, &t1);
    convert_rows(m, t0, t1);
}

/* Rows [r0, r1) of job j, all tokens. */
static void dot_rows(const matmul_task *m, int j, int64_t r0, int64_t r1)
{
    const edgellm_tensor *W = m->jobs[j].W;
    float *y = m->jobs[j].y;
    const int64_t rows = W->ne1;
    if (m->gemm[j]) {
        const edgellm_gemm_args a = {
            .w = W->data, .row_bytes = W->row_bytes, .cols = W->ne0, .r0 = r0, .r1 = r1,
            .xp = m->xp, .xq = m->xq, .xq_row_bytes = m->xq_row_bytes, .n = m->n, .y = y, .ldy = rows,
            .prefetch = m->prefetch,
            .w2 = W->repack ? (const uint8_t *)W->data + W->repack->plane2(rows, W->ne0) : NULL,
        };
        m->gemm[j]->gemm(&a);
        return;
    }
    const uint8_t *xq = m->xq;
    uint8_t plain[m->unpack[j] ? W->row_bytes : 1];   /* a repacked row, unpacked */
    for (int64_t tb0 = 0; tb0 < m->n; tb0 += m->tb) {
        const int64_t tb1 = EDGELLM_MIN(tb0 + m->tb, m->n);
        for (int64_t r = r0; r < r1; r++) {
            const void *w = (const uint8_t *)W->data + (size_t)r * W->row_bytes;   /* [cols] */
            if (m->unpack[j]) {
                W->repack->unpack_row(W->data, rows, W->ne0, r, plain);
                w = plain;
            }
            for (int64_t t = tb0; t < tb1; t++) y[t * rows + r] = m->dot[j](W->ne0, w, xq + (size_t)t * m->xq_row_bytes);
        }
    }
}

/* Tiles [t0, t1) of the batch: each job's rows in that range. */
static void dot_tiles(const matmul_task *m, int64_t t0, int64_t t1)
{
    for (int j = 0; j < m->k; j++) {
        const int64_t a = EDGELLM_MAX(t0, m->first_tile[j]), b = EDGELLM_MIN(t1, m->first_tile[j + 1]);
        if (a >= b) continue;
        const int64_t rows = m->jobs[j].W->ne1;
        dot_rows(m, j, (a - m->first_tile[j]) * TILE_ROWS, EDGELLM_MIN((b - m->first_tile[j]) * TILE_ROWS, rows));
    }
}

/* EDGELLM_MATMUL_IN_ORDER: chunks of guided sizes from one shared counter. */
static void dot_task_in_order(matmul_task *m)
{
    const int64_t total = m->first_tile[m->k];
    int64_t t0 = atomic_load_explicit(&m->next, memory_order_relaxed);
    for (;;) {
        if (t0 >= total) return;
        const int64_t take = m->nth == 1 ? total : EDGELLM_MAX((total - t0) / (GUIDED_DIV * m->nth), MIN_TAKE_TILES);
        const int64_t t1 = EDGELLM_MIN(t0 + take, total);
        if (!atomic_compare_exchange_weak_explicit(&m->next, &t0, t1, memory_order_relaxed, memory_order_relaxed))
            continue;                                   /* t0 now holds the current value */
        dot_tiles(m, t0, t1);
        t0 = t1 < total ? atomic_load_explicit(&m->next, memory_order_relaxed) : total;
    }
}

/* A range of tiles [lo, hi) in one atomic word: lo in the high half, hi in the low half
 * (tile counts are < 2^32: rows < 2^36). */
static inline uint64_t range_pack(int64_t lo, int64_t hi) { return (uint64_t)lo << 32 | (uint64_t)hi; }
static inline int64_t range_lo(uint64_t v) { return (int64_t)(v >> 32); }
static inline int64_t range_hi(uint64_t v) { return (int64_t)(v & 0xffffffffu); }

/* EDGELLM_MATMUL_STREAM: thread ith walks its own range front to back, left / STREAM_DIV
 * tiles at a time (at least STREAM_MIN_TILES); when it is empty, the thread cuts the back
 * half off the largest range left and makes that its own, until no range has tiles left. */
static void dot_task_stream(matmul_task *m, int ith, int nth)
{
    atomic_uint_fast64_t *own = &m->range[ith].r;
    for (;;) {
        uint64_t v = atomic_load_explicit(own, memory_order_relaxed);
        while (range_lo(v) < range_hi(v)) {
            const int64_t lo = range_lo(v), left = range_hi(v) - lo;
            const int64_t t1 = EDGELLM_MIN(lo + EDGELLM_MAX(left / STREAM_DIV, STREAM_MIN_TILES), range_hi(v));
            if (!atomic_compare_exchange_weak_explicit(own, &v, range_pack(t1, range_hi(v)), memory_order_relaxed,
                                                       memory_order_relaxed))
                continue;                               /* a thief cut the range: v reloaded */
            dot_tiles(m, lo, t1);
            v = atomic_load_explicit(own, memory_order_relaxed);
        }
        for (;;) {                                      /* steal */
            int victim = -1;
            int64_t most = 0;
            uint64_t vv = 0;
            for (int i = 0; i < nth; i++) {
                const uint64_t w = i == ith ? 0 : atomic_load_explicit(&m->range[i].r, memory_order_relaxed);
                if (range_hi(w) - range_lo(w) > most) {
                    most = range_hi(w) - range_lo(w);
                    victim = i;
                    vv = w;
                }
            }
            if (victim < 0) return;
            const int64_t cut = range_hi(vv) - (most + 1) / 2;
            if (!atomic_compare_exchange_strong_explicit(&m->range[victim].r, &vv, range_pack(range_lo(vv), cut),
                                                         memory_order_relaxed, memory_order_relaxed))
                continue;
            /* thieves skip an empty range, so only this thread writes its own here */
            atomic_store_explicit(own, range_pack(cut, range_hi(vv)), memory_order_relaxed);
            break;
        }
    }
}

static void dot_task(void *arg, int ith, int nth)
{
    matmul_task *m = arg;
    if (m->sched == EDGELLM_MATMUL_IN_ORDER || nth == 1) dot_task_in_order(m);
    else dot_task_stream(m, ith, nth);
}

void edgellm_matmul_batch_sched(edgellm_threadpool *pool, const edgellm_matmul_job *jobs, int k, const float *x,
                                int64_t n, void *scratch, edgellm_matmul_sched sched)
{
    if (k < 1) return;
    if (k > MAX_BATCH) {
        for (int j = 0; j < k; j += MAX_BATCH)
            edgellm_matmul_batch_sched(pool, jobs + j, EDGELLM_MIN(MAX_BATCH, k - j), x, n, scratch, sched);
        return;
    }
    const edgellm_tensor *W0 = jobs[0].W;
    const edgellm_type_traits *t = edgellm_type_get_traits(W0->type);
    matmul_task m = {.jobs = jobs, .k = k, .x = x, .n = n, .cols = W0->ne0};
    double macs = 0;
    for (int j = 0; j < k; j++) {
        const edgellm_tensor *W = jobs[j].W;
        const edgellm_type_traits *tj = edgellm_type_get_traits(W->type);
        m.dot[j] = edgellm_kernels_vec_dot(W->type);
        m.gemm[j] = edgellm_kernels_gemm(W->type, W->ne0);
        if (W->repack) {
            m.unpack[j] = !edgellm_kernels_repack_usable(W->repack);
            m.gemm[j] = m.unpack[j] ? NULL : &W->repack->gemm;
        }
        /* one conversion serves all: same row length, activation type and packing */
        if (W->ne0 != W0->ne0 || tj->vec_dot_type != t->vec_dot_type ||
            (m.gemm[j] ? m.gemm[j]->prep : NULL) != (m.gemm[0] ? m.gemm[0]->prep : NULL)) {
            for (int i = 0; i < k; i++) edgellm_matmul_batch_sched(pool, jobs + i, 1, x, n, scratch, sched);
            return;
        }
        macs += (double)W->ne0 * (double)W->ne1 * (double)n;
    }
    if (macs < MIN_PARALLEL_MACS) pool = NULL;
    const int nth = edgellm_threadpool_n_threads(pool);
    if (t->vec_dot_type == EDGELLM_TYPE_F32) {
        m.xq = x;
        m.xq_row_bytes = (size_t)W0->ne0 * sizeof(float);
    } else {
        m.xq = m.xq_out = scratch;
        m.xq_row_bytes = edgellm_type_row_size(t->vec_dot_type, W0->ne0);
        m.from_float = edgellm_kernels_from_float(t->vec_dot_type);
        if (m.gemm[0] && m.gemm[0]->prep) {
            const uintptr_t p = (uintptr_t)scratch + m.xq_row_bytes * (size_t)n;
            m.xp = (uint8_t *)((p + SCRATCH_ALIGN - 1) / SCRATCH_ALIGN * SCRATCH_ALIGN);
        }
        if (n == 1 || nth == 1) convert_rows(&m, 0, n);
        else edgellm_threadpool_run(pool, convert_task, &m);
    }
    m.tb = EDGELLM_MAX((int64_t)(BLOCK_BYTES / (m.xq_row_bytes ? m.xq_row_bytes : 1)), 1);
    m.nth = nth;
    /* software prefetch hides memory latency the core's own prefetchers leave; whether
     * it pays with several threads sharing the memory bus depends on the CPU (dispatch.h) */
    m.prefetch = n == 1 ? edgellm_kernels_decode_prefetch(nth) : 0;
    m.first_tile[0] = 0;
    for (int j = 0; j < k; j++) m.first_tile[j + 1] = m.first_tile[j] + (jobs[j].W->ne1 + TILE_ROWS - 1) / TILE_ROWS;
    m.sched = m.first_tile[k] < ((int64_t)1 << 31) ? sched : EDGELLM_MATMUL_IN_ORDER;   /* range_pack */
    atomic_init(&m.next, 0);
    range_slot ranges[EDGELLM_MAX_THREADS];   /* [0, nth) set below; inside the task, its
                                              * initializer would zero all 4 KiB each call */
    m.range = ranges;
    if (m.sched == EDGELLM_MATMUL_STREAM)
        for (int i = 0; i < nth; i++) {
            int64_t lo, hi;
            edgellm_split_range(m.first_tile[k], i, nth, &lo, &hi);
            atomic_init(&m.range[i].r, range_pack(lo, hi));
        }
    edgellm_threadpool_run(pool, dot_task, &m);
}

void edgellm_matmul_batch(edgellm_threadpool *pool, const edgellm_matmul_job *jobs, int k, const float *x,
                          int64_t n, void *scratch)
{
    edgellm_matmul_batch_sched(pool, jobs, k, x, n, scratch, EDGELLM_MATMUL_STREAM);
}

void edgellm_matmul_run(edgellm_matmul_runner *r, const edgellm_matmul_job *jobs, int k, const float *x, int64_t n)
{
    edgellm_matmul_batch_sched(r->pool, jobs, k, x, n, r->scratch,
                               r->warm ? EDGELLM_MATMUL_STREAM : EDGELLM_MATMUL_IN_ORDER);
}

void edgellm_matmul_pass_done(edgellm_matmul_runner *r) { r->warm = true; }

void edgellm_matmul(edgellm_threadpool *pool, float *y, const edgellm_tensor *W, const float *x, int64_t n,
                    void *scratch)
{
    const edgellm_matmul_job job = {y, W};
    edgellm_matmul_batch(pool, &job, 1, x, n, scratch);
}
