/*
 * bench_gemm.c — the matrix products of one forward pass of a real model file, per kernel
 * level, interleaved (not a test: a measuring program, target `bench_gemm`).
 *
 * For each round and each level: one "pass" = the products of a forward pass over every
 * weight matrix of the model in forward order (per layer the batch q/k/v, o, the batch
 * gate/up, down; then output; batches through edgellm_matmul_batch as llama.c runs them)
 * with n tokens of random activations,
 * reading the weights from the model's mapping. Levels alternate pass by pass, so load from
 * other processes hits them alike; the report gives, per level, the best and the median
 * pass: ms, weight GB/s (bytes of all matrices / time) and tokens/s (n / time).
 * The pseudo-level "read" only streams the same bytes (sums them as 64-bit words, 8
 * independent accumulators, split over the threads like matmul's rows): the roofline of
 * these matrices in this mapping. With "read" among the levels, each other level is also
 * given as read time / its time within the same round (median and range over rounds);
 * without "read" but with "plain", as plain time / its time.
 * The pseudo-level "plain" runs the default level on a second load of the model with
 * load-time repacking off (dispatch.h: edgellm_kernels_repack), so that repacked and
 * in-place kernels alternate pass by pass; the other levels run on the default load
 * (repacked where the CPU has a layout: forcing a level below avx512 then unpacks rows).
 *
 * Usage: bench_gemm -m MODEL.gguf [-n TOKENS] [-t THREADS] [-r ROUNDS] [--levels avx2,avx512]
 */
#include "edgellm_tools.h"
#include "common/threadpool.h"
#include "kernels/dispatch.h"
#include "kernels/matmul.h"
#include "model/model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    const edgellm_tensor *W;
    uint64_t sink[EDGELLM_MAX_THREADS];
} read_task;

/* Thread ith of nth sums its share of W's bytes (whole 64-byte lines). */
static void read_fn(void *arg, int ith, int nth)
{
    read_task *r = arg;
    const size_t n_words = r->W->row_bytes * (size_t)r->W->ne1 / 64 * 8;
    int64_t w0, w1;
    edgellm_split_range((int64_t)(n_words / 8), ith, nth, &w0, &w1);
    const uint64_t *p = r->W->data;
    uint64_t a[8] = {0};
    for (int64_t i = w0 * 8; i < w1 * 8; i += 8)
        for (int k = 0; k < 8; k++) a[k] += p[i + k];
    r->sink[ith] = a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAX_LEVELS 8
#define MAX_ROUNDS 1000

int main(int argc, char **argv)
{
    const char *path = NULL, *levels_arg = "avx2,avx512";
    int n = 1, threads = 1, rounds = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) path = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--levels") && i + 1 < argc) levels_arg = argv[++i];
        else path = NULL, i = argc;
    }
    if (!path || n < 1 || threads < 1 || threads > EDGELLM_MAX_THREADS || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "usage: bench_gemm -m MODEL.gguf [-n TOKENS] [-t THREADS] [-r ROUNDS] [--levels avx2,avx512]\n");
        return 2;
    }
    char levels[MAX_LEVELS][16];
    int n_levels = 0;
    for (const char *p = levels_arg; *p && n_levels < MAX_LEVELS;) {
        size_t len = strcspn(p, ",");
        snprintf(levels[n_levels], sizeof levels[0], "%.*s", (int)len, p);
        if (!strcmp(levels[n_levels], "read") || !strcmp(levels[n_levels], "plain") ||
            edgellm_kernels_force(levels[n_levels]))
            n_levels++;
        else fprintf(stderr, "level %s not available, skipped\n", levels[n_levels]);
        p += len + (p[len] == ',');
    }
    edgellm_kernels_force(NULL);
    edgellm_error err = {0};
    edgellm_model *m = NULL;
    if (edgellm_model_load(path, NULL, &m, &err) != EDGELLM_OK) {
        fprintf(stderr, "bench_gemm: %s\n", err.msg);
        return 1;
    }
    edgellm_model *mp = NULL;                    /* "plain": loaded without repacking */
    for (int l = 0; l < n_levels && !mp; l++)
        if (!strcmp(levels[l], "plain")) {
            edgellm_kernels_set_repack(false);
            const edgellm_status st = edgellm_model_load(path, NULL, &mp, &err);
            edgellm_kernels_set_repack(true);
            if (st != EDGELLM_OK) {
                fprintf(stderr, "bench_gemm: %s\n", err.msg);
                return 1;
            }
        }
    printf("repacked matrices: %d (%.1f ms at load)\n", m->n_repacked, m->repack_ms);
    const edgellm_hparams *hp = &m->hp;
    const int n_mats = 7 * hp->n_layer + 1;
    const edgellm_tensor **mats = malloc(sizeof *mats * (size_t)n_mats), **pmats = malloc(sizeof *mats * (size_t)n_mats);
    size_t bytes = 0, scratch_size = 0;
    int64_t max_in = 0, max_out = 0;
    for (int il = 0, k = 0; il < hp->n_layer; il++) {
        const edgellm_layer *L = &m->layers[il];
        const edgellm_tensor *ws[7] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->w_gate, &L->w_up, &L->w_down};
        const edgellm_layer *P = mp ? &mp->layers[il] : L;
        const edgellm_tensor *ps[7] = {&P->wq, &P->wk, &P->wv, &P->wo, &P->w_gate, &P->w_up, &P->w_down};
        for (int i = 0; i < 7; i++) pmats[k] = ps[i], mats[k++] = ws[i];
    }
    mats[n_mats - 1] = &m->output;
    pmats[n_mats - 1] = mp ? &mp->output : &m->output;
    for (int i = 0; i < n_mats; i++) {
        bytes += mats[i]->row_bytes * (size_t)mats[i]->ne1;
        scratch_size = EDGELLM_MAX(scratch_size, edgellm_matmul_scratch_size(mats[i], n));
        max_in = EDGELLM_MAX(max_in, mats[i]->ne0);
        max_out = EDGELLM_MAX(max_out, mats[i]->ne1);
    }
    float *x = malloc(sizeof(float) * (size_t)(n * max_in)), *y = malloc(sizeof(float) * (size_t)(3 * n * max_out));
    void *scratch = malloc(scratch_size + 64);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < n * max_in; i++) {
        rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
        x[i] = (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    edgellm_threadpool *pool = NULL;
    if (threads > 1 && edgellm_threadpool_new(threads, &pool, &err) != EDGELLM_OK) return 1;
    static double t[MAX_LEVELS][MAX_ROUNDS];
    uint64_t sink = 0;
    for (int r = -1; r < rounds; r++) {                       /* round -1: warm-up */
        for (int l = 0; l < n_levels; l++) {
            const bool rd = !strcmp(levels[l], "read"), plain = !strcmp(levels[l], "plain");
            if (!rd) edgellm_kernels_force(plain ? NULL : levels[l]);
            const edgellm_tensor **ms = plain ? pmats : mats;
            double t0 = now_s();
            for (int i = 0; i < n_mats;) {
                /* batches of a layer: q,k,v | o | gate,up | down; the output alone */
                const int pos = i % 7, len = i == n_mats - 1 ? 1 : pos == 0 ? 3 : pos == 4 ? 2 : 1;
                if (rd) {
                    for (int j = 0; j < len; j++) {
                        read_task rt = {.W = mats[i + j]};
                        edgellm_threadpool_run(pool, read_fn, &rt);
                        sink ^= rt.sink[0];
                    }
                } else {
                    edgellm_matmul_job jobs[3];
                    float *yj = y;
                    for (int j = 0; j < len; j++) {
                        jobs[j] = (edgellm_matmul_job){yj, ms[i + j]};
                        yj += (size_t)n * (size_t)ms[i + j]->ne1;
                    }
                    edgellm_matmul_batch(pool, jobs, len, x, n, scratch);
                }
                i += len;
            }
            if (r >= 0) t[l][r] = now_s() - t0;
        }
    }
    /* each level against "read" in the same round (the machine's bandwidth drifts between
     * rounds, so the ratio of two medians mixes moments; this ratio does not); before the
     * table, whose sorting loses the rounds' pairing */
    int lr = -1;
    double ratio[MAX_LEVELS][3] = {{0}};
    for (int l = 0; l < n_levels; l++)
        if (!strcmp(levels[l], "read")) lr = l;
    for (int l = 0; l < n_levels && lr < 0; l++)   /* no "read": against "plain" (in place) */
        if (!strcmp(levels[l], "plain")) lr = l;
    for (int l = 0; l < n_levels && lr >= 0; l++) {
        static double q[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) q[r] = t[lr][r] / t[l][r];
        qsort(q, (size_t)rounds, sizeof(double), cmp_double);
        ratio[l][0] = q[rounds / 2], ratio[l][1] = q[0], ratio[l][2] = q[rounds - 1];
    }
    printf("%s: %d matrices, %.1f MiB of weights, n = %d, %d thread(s), %d rounds\n", path, n_mats,
           (double)bytes / 1048576.0, n, threads, rounds);
    printf("%-8s | %9s %8s %9s | %9s %8s %9s\n", "level", "best ms", "GB/s", "tok/s", "median ms", "GB/s", "tok/s");
    for (int l = 0; l < n_levels; l++) {
        qsort(t[l], (size_t)rounds, sizeof(double), cmp_double);
        double best = t[l][0], med = t[l][rounds / 2];
        printf("%-8s | %9.2f %8.2f %9.2f | %9.2f %8.2f %9.2f\n", levels[l], best * 1e3, (double)bytes / best / 1e9,
               n / best, med * 1e3, (double)bytes / med / 1e9, n / med);
    }
    for (int l = 0; l < n_levels && lr >= 0; l++)
        if (l != lr)
            printf("%-8s | %s time / this time, same round: median %.3f, range %.3f .. %.3f\n", levels[l],
                   levels[lr], ratio[l][0], ratio[l][1], ratio[l][2]);
    if (sink == 42) printf("\n");
    edgellm_threadpool_free(pool);
    edgellm_model_free(m);
    edgellm_model_free(mp);
    free(mats);
    free(pmats);
    free(x);
    free(y);
    free(scratch);
    return 0;
}
