/*
 * bench_start.c — edgellm_bench_start (`edgellm bench --cold-warm`, `--mem-budget`): the
 * first token of a fresh process, cold against warmed up, and the speed and peak memory
 * of the low-memory mode against no budget (contract in include/edgellm_tools.h).
 *
 *   cold   the file is dropped from the page cache (posix_fadvise POSIX_FADV_DONTNEED,
 *          then mincore says what stayed: below 10 % of the pages counts as dropped; the
 *          kernel keeps pages another process maps, and may refuse nothing but drop
 *          nothing), the model loaded (mmap: weights fault in on first use), one context
 *          made, then the first token timed: one pass over n_prompt prompt tokens and one
 *          single-token decode;
 *   warm   the same drop and load, then edgellm_warmup (`--warmup`: MADV_WILLNEED, every
 *          page touched, one BOS decode), then the same first token;
 *   budget the model loaded with no budget, n_prompt tokens decoded, then n_gen single-token
 *          decodes timed (tok/s), the peak RSS (VmHWM, reset through clear_refs before the
 *          load) read; then the same with edgellm_membudget_attach(budget). The budget run
 *          re-reads released layers from the page cache when the file is there (minor
 *          faults), from storage otherwise.
 * Token ids are fixed ids spread over the vocabulary; nothing is sampled.
 */
#include "../common/common.h"
#include "../model/model.h"
#include "edgellm_tools.h"
#include <string.h>

edgellm_bench_start_params edgellm_bench_start_default_params(void)
{
    edgellm_bench_start_params p = {.size = sizeof p, .n_prompt = 32, .n_gen = 16, .cold_warm = 1};
    return p;
}

static void fill_ids(int32_t *ids, int n, int n_vocab)
{
    for (int i = 0; i < n; i++) ids[i] = (int32_t)((3 + (uint64_t)i * 7919u) % (uint64_t)(n_vocab > 3 ? n_vocab : 1));
}

/* Load path and make a context of n_ctx cells with n_threads. */
static edgellm_status open_model(const char *path, int n_ctx, int n_threads, edgellm_model **m, edgellm_ctx **c,
                                 double *load_ms, edgellm_error *err)
{
    *m = NULL, *c = NULL;
    const double t0 = edgellm_time_ms();
    edgellm_status rc = edgellm_model_load(path, NULL, m, err);
    if (rc) return rc;
    if (load_ms) *load_ms = edgellm_time_ms() - t0;
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = n_threads;
    if ((rc = edgellm_ctx_new(*m, &cp, c, err))) {
        edgellm_model_free(*m);
        *m = NULL;
    }
    return rc;
}

/* The first token: n prompt ids in one pass, then one single-token decode; ms in *ms. */
static edgellm_status first_token(edgellm_ctx *c, const int32_t *ids, int n, double *ms, edgellm_error *err)
{
    const double t0 = edgellm_time_ms();
    edgellm_status rc = edgellm_decode(c, ids, n, NULL, err);
    if (!rc) rc = edgellm_decode(c, ids + n, 1, NULL, err);
    *ms = edgellm_time_ms() - t0;
    return rc;
}

/* n_prompt ids, then n_gen single-token decodes timed; tok/s and the peak RSS since the
 * reset before the load. */
static edgellm_status budget_run(const char *path, const edgellm_bench_start_params *p, const int32_t *ids,
                                 uint64_t budget, double *ts, uint64_t *peak, int *window, edgellm_error *err)
{
    edgellm_proc_mem pm = {.size = sizeof pm};
    edgellm_proc_memory(&pm, 1);
    edgellm_model *m;
    edgellm_ctx *c;
    edgellm_status rc = open_model(path, p->n_prompt + p->n_gen + 2, p->n_threads, &m, &c, NULL, err);
    if (rc) return rc;
    edgellm_membudget *b = NULL;
    if (budget && (rc = edgellm_membudget_attach(c, budget, &b, err))) goto done;
    if ((rc = edgellm_decode(c, ids, p->n_prompt, NULL, err))) goto done;
    const double t0 = edgellm_time_ms();
    for (int i = 0; i < p->n_gen && !rc; i++) rc = edgellm_decode(c, ids + p->n_prompt + 1 + i, 1, NULL, err);
    const double s = (edgellm_time_ms() - t0) / 1e3;
    *ts = s > 0 ? p->n_gen / s : 0;
    edgellm_proc_memory(&pm, 0);
    *peak = pm.peak_rss_bytes != UINT64_MAX ? pm.peak_rss_bytes : 0;
    if (b) {
        edgellm_membudget_info bi = {.size = sizeof bi};
        edgellm_membudget_get_info(b, &bi);
        *window = bi.window_layers;
    }
done:
    edgellm_membudget_detach(b);
    edgellm_ctx_free(c);
    edgellm_model_free(m);
    return rc;
}

edgellm_status edgellm_bench_start(const char *path, const edgellm_bench_start_params *params,
                                   edgellm_bench_start_report *r, edgellm_error *err)
{
    if (!path || !r) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: NULL path or report");
    edgellm_bench_start_params p = edgellm_bench_start_default_params();
    if (params) memcpy(&p, params, params->size && params->size < sizeof p ? params->size : sizeof p);
    memset(r, 0, sizeof *r);
    r->cold_resident_frac = -1;
    if (p.n_prompt < 1 || p.n_prompt > (1 << 16) || p.n_gen < 1 || p.n_gen > (1 << 16))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "bench: first-token prompt %d and tokens %d must be in 1..65536",
                            p.n_prompt, p.n_gen);
    edgellm_model *m = NULL;
    edgellm_ctx *c = NULL;
    edgellm_status rc = open_model(path, 8, p.n_threads, &m, &c, NULL, err);   /* the vocabulary and layers */
    if (rc) return rc;
    const int n_vocab = m->hp.n_vocab;
    r->n_layer = m->hp.n_layer;
    edgellm_ctx_free(c);
    edgellm_model_free(m);
    const int n_ids = p.n_prompt + p.n_gen + 2;
    int32_t *ids = edgellm_malloc((size_t)n_ids * sizeof *ids);
    if (!ids) return edgellm_fail_nomem(err, "bench");
    fill_ids(ids, n_ids, n_vocab);
    const int n_ctx = p.n_prompt + 2;

    if (p.cold_warm) {
        for (int k = 0; k < 2 && !rc; k++) {   /* 0 cold, 1 warm */
            double frac = -1;
            edgellm_error ignored = {0};
            (void)edgellm_file_drop_cache(path, &frac, &ignored);
            double load_ms = 0, ttft = 0, warm_ms = 0;
            if ((rc = open_model(path, n_ctx, p.n_threads, &m, &c, &load_ms, err))) break;
            if (k == 1) rc = edgellm_warmup(c, &warm_ms, err);
            if (!rc) rc = first_token(c, ids, p.n_prompt, &ttft, err);
            edgellm_ctx_free(c);
            edgellm_model_free(m);
            if (k == 0) {
                r->cold_resident_frac = frac;
                r->cold_dropped = frac >= 0 && frac < 0.10;
                r->cold_load_ms = load_ms;
                r->cold_ttft_ms = ttft;
            } else {
                r->warm_resident_frac = frac;
                r->warm_load_ms = load_ms;
                r->warmup_ms = warm_ms;
                r->warm_ttft_ms = ttft;
            }
        }
    }
    if (!rc && p.mem_budget_bytes > 0) {
        r->budget_bytes = p.mem_budget_bytes;
        rc = budget_run(path, &p, ids, 0, &r->full_tg_ts, &r->full_peak_rss_bytes, &r->budget_window_layers, err);
        if (!rc)
            rc = budget_run(path, &p, ids, p.mem_budget_bytes, &r->budget_tg_ts, &r->budget_peak_rss_bytes,
                            &r->budget_window_layers, err);
    }
    edgellm_free(ids);
    return rc;
}
