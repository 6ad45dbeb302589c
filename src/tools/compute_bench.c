/*
 * compute_bench.c — sustained matrix-product throughput of one core, in GFLOP/s, measured
 * with edgellm's own kernels: what `edgellm plan --device host` uses for prefill speed and
 * as the compute bound of decode.
 *
 * Method: a 256 × 2048 Q4_0 weight matrix (288 KiB, stays in L2) times 64 activation rows
 * (prefill-like: the tile kernels reuse each weight block for many tokens), through
 * edgellm_matmul on the calling thread only, repeated until the time budget is spent; the
 * best repetition counts (other processes only ever slow a run down). FLOPs = 2 × rows ×
 * cols × tokens. Q4_0 because it is the type prefill is most often run with on devices;
 * the dispatch picks the best kernel level of this CPU (AVX-512 VNNI, AVX2, dotprod, NEON
 * or scalar), so the figure is what this build can do here, not a datasheet peak.
 * Measured on the 2-core Zen 5 dev machine: ~300-450 GFLOP/s (AVX-512 VNNI).
 */
#include "plan.h"
#include "../kernels/matmul.h"

#define CB_ROWS 256
#define CB_COLS 2048
#define CB_TOKENS 64

double edgellm_plan_measure_gflops(int max_ms)
{
    const edgellm_type_traits *tr = edgellm_type_get_traits(EDGELLM_TYPE_Q4_0);
    edgellm_tensor W = {0};
    W.type = EDGELLM_TYPE_Q4_0;
    W.ne0 = CB_COLS;
    W.ne1 = CB_ROWS;
    W.row_bytes = edgellm_type_row_size(EDGELLM_TYPE_Q4_0, CB_COLS);
    if (!tr || !tr->from_float_ref || !edgellm_matmul_supported(&W)) return 0;
    float *x = edgellm_malloc(sizeof(float) * CB_COLS * CB_TOKENS);
    float *y = edgellm_malloc(sizeof(float) * CB_ROWS * CB_TOKENS);
    void *w = edgellm_malloc(W.row_bytes * CB_ROWS);
    size_t scratch_bytes = edgellm_matmul_scratch_size(&W, CB_TOKENS);
    void *scratch = scratch_bytes ? edgellm_malloc(scratch_bytes) : NULL;
    double best = 0;
    if (x && y && w && (scratch || !scratch_bytes)) {
        uint32_t s = 12345;   /* any values in [-1, 1): a fixed LCG (Numerical Recipes constants) */
        for (int i = 0; i < CB_COLS * CB_TOKENS; i++) x[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
        for (int r = 0; r < CB_ROWS; r++) {
            float row[CB_COLS];
            for (int i = 0; i < CB_COLS; i++) row[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 8388608.0f - 1.0f;
            tr->from_float_ref(row, (uint8_t *)w + (size_t)r * W.row_bytes, CB_COLS);
        }
        W.data = w;
        const double flops = 2.0 * CB_ROWS * CB_COLS * CB_TOKENS;
        const double budget = max_ms > 0 ? max_ms : 200;
        double start = edgellm_time_ms();
        edgellm_matmul(NULL, y, &W, x, CB_TOKENS, scratch);   /* warm-up: caches, page faults */
        for (int rep = 0; rep < 1000 && (rep < 3 || edgellm_time_ms() - start < budget); rep++) {
            double t0 = edgellm_time_ms();
            edgellm_matmul(NULL, y, &W, x, CB_TOKENS, scratch);
            double dt = (edgellm_time_ms() - t0) * 1e-3;
            if (dt > 0 && flops / dt / 1e9 > best) best = flops / dt / 1e9;
        }
    }
    edgellm_free(x);
    edgellm_free(y);
    edgellm_free(w);
    edgellm_free(scratch);
    return best;
}
