/*
 * plan.c — `edgellm plan`: will this model fit on that device, at which precision, and how
 * fast will it run. edgellm_plan() resolves the model (catalogue, GGUF file or shape) and
 * the device (catalogue, user file or this machine), sizes every candidate precision with
 * the arithmetic of plan_math.c, judges it against the memory an app may use, and picks one
 * precision per scenario.
 *
 * Rules (shared/docs/deployment-guide.zh.md §3.1, §6.1, §6.2; vllm#7379; llama.cpp perplexity README):
 *  - budget  = usable memory x (1 - safety margin), margin >= 20 % ("留出至少20%的内存余量");
 *    verdict: total <= budget "fits"; total <= usable "tight"; otherwise "does not fit".
 *  - real-time: the best quality that fits, reaches the first token within --latency-ms
 *    (default 200 ms, the guide's perceptible-lag threshold) and then decodes at least at
 *    reading speed (default 5 tok/s: ~240 words/min silent reading, Brysbaert 2019, x ~1.3
 *    tokens per word).
 *  - offline: the best quality that fits; suggests the batch <= 8 that fits and gives the
 *    most tokens per second in total (the guide's 4-8 where memory, not compute, bounds
 *    one sequence; none where compute does).
 *  - quality order: lower mean KLD when both candidates have one (measured by `edgellm
 *    eval`, else published), otherwise more bits per weight.
 *  - a GGUF file's own row is labelled with its real precision (plan_source.c,
 *    file_precision) and takes that precision's quality (eval results, else published);
 *    when the file is already quantized, candidates with more bits per weight are marked
 *    needs_original and never recommended: they need the original weights; the others
 *    would requantize the file, and show no quality figure unless measured.
 *
 * Calibration: every speed is multiplied by params.calibration (1.0); the decode model and
 * its constants (EDGELLM_PLAN_EFF_*, _ROW_OVERHEAD_S, _SYNC_OVERHEAD_S, _OVERHEAD_FIXED in
 * plan.h) were fitted to `edgellm bench` on synthetic models of four sizes and are checked
 * by bench/calibrate-plan.sh (numbers in the README, "Planning").
 */
#include "plan.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

edgellm_plan_params edgellm_plan_default_params(void)
{
    edgellm_plan_params p;
    memset(&p, 0, sizeof p);
    p.n_ctx = 0;
    p.kv_type = EDGELLM_TYPE_F16;
    p.batch = 1;
    p.scenario = EDGELLM_PLAN_REALTIME;
    p.latency_ms = 200.0;
    p.reading_tps = 5.0;
    p.prompt_tokens = 0;         /* 64, or n_ctx when that is smaller */
    p.safety_margin = 0.20;
    p.calibration = 1.0;
    p.host_bench_ms = 1000;
    return p;
}

/* Everything one sizing needs. */
typedef struct {
    const edgellm_plan_model  *m;
    const edgellm_plan_device *d;
    const edgellm_plan_tensor *t;
    size_t n;
    int n_ctx, kv_type, batch;
    double margin, eff;
} plan_job;

static const double GIB_D = 1073741824.0;

/* ASCII case-insensitive equality (letters only: '[' and '{' differ), as strcasecmp in
 * the C locale, which the device-file checks use. */
static int name_eq(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        const int ca = *a >= 'A' && *a <= 'Z' ? *a + 32 : *a, cb = *b >= 'A' && *b <= 'Z' ? *b + 32 : *b;
        if (ca != cb) return 0;
    }
    return *a == *b;
}

static uint64_t budget_of(const plan_job *j)
{
    return (uint64_t)((double)j->d->usable_bytes * (1.0 - j->margin));
}

/* Total bytes of a precision at n_ctx positions and `batch` sequences. */
static uint64_t total_at(const plan_job *j, const edgellm_plan_weights *w, int n_ctx, int batch)
{
    uint64_t kv = edgellm_plan_model_kv_bytes(j->m, n_ctx, j->kv_type);
    return w->weight_bytes + kv * (uint64_t)batch +
           edgellm_plan_scratch_bytes(j->m, n_ctx, batch, j->d->n_big_cores) + edgellm_plan_overhead_bytes(j->m);
}

static int max_ctx_within(const plan_job *j, const edgellm_plan_weights *w, uint64_t budget)
{
    int hi = j->m->n_ctx_train > 0 ? j->m->n_ctx_train : 1 << 20;
    if (total_at(j, w, 1, j->batch) > budget) return 0;
    if (total_at(j, w, hi, j->batch) <= budget) return hi;
    int lo = 1;   /* invariant: lo fits, hi does not */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (total_at(j, w, mid, j->batch) <= budget) lo = mid;
        else hi = mid;
    }
    return lo;
}

static void find_quality(const edgellm_plan_params *p, const char *type, edgellm_plan_quality *q)
{
    snprintf(q->type, sizeof q->type, "%s", type);
    q->delta_ppl_pct = q->kld = q->top1_pct = NAN;
    for (int i = 0; i < p->n_quality; i++)
        if (name_eq(p->quality[i].type, type)) {
            *q = p->quality[i];
            snprintf(q->type, sizeof q->type, "%s", type);
            return;
        }
    if (name_eq(type, "F32")) type = "BF16";   /* both are the unquantized reference */
    for (int i = 0; i < edgellm_plan_published_n; i++)
        if (name_eq(edgellm_plan_published_quality[i].type, type)) {
            const edgellm_plan_published *pq = &edgellm_plan_published_quality[i];
            q->delta_ppl_pct = pq->delta_ppl_pct;
            q->kld = pq->kld;
            q->top1_pct = pq->top1_pct;
            snprintf(q->source, sizeof q->source, "%s", pq->source);
            return;
        }
    snprintf(q->source, sizeof q->source, "no published figure; run edgellm eval");
}

/* Whether eval results (p->quality) hold a measured figure for this candidate name. */
static bool measured(const edgellm_plan_params *p, const char *type)
{
    for (int i = 0; i < p->n_quality; i++)
        if (name_eq(p->quality[i].type, type)) return true;
    return false;
}

/* A candidate without a measured figure whose every tensor gets the same type as in a
 * candidate with one (all its rows fall back: stories260K's Q6_K is its Q8_0 file) would
 * make the same file: it takes that measured figure, not a published one for a type it
 * does not use. */
static void share_measured_quality(const plan_job *j, const edgellm_plan_params *p, const edgellm_plan_recipe *used,
                                   int n_used, edgellm_plan_row *rows)
{
    for (int k = 0; k < n_used; k++) {
        if (measured(p, rows[k].type)) continue;
        for (int l = 0; l < n_used; l++) {
            if (l == k || !measured(p, rows[l].type)) continue;
            size_t i = 0;
            while (i < j->n && edgellm_plan_tensor_type(&used[k], &j->t[i], j->m->n_layer) ==
                                   edgellm_plan_tensor_type(&used[l], &j->t[i], j->m->n_layer))
                i++;
            if (i < j->n) continue;
            rows[k].quality = rows[l].quality;
            snprintf(rows[k].quality.type, sizeof rows[k].quality.type, "%.23s", rows[k].type);
            snprintf(rows[k].quality.source, sizeof rows[k].quality.source,
                     "every tensor as in %.23s, so %.23s's measured figure (%.100s)", rows[l].type, rows[l].type,
                     rows[l].quality.source);
            break;
        }
    }
}

static void fill_row(const plan_job *j, const edgellm_plan_params *p, const edgellm_plan_recipe *rc,
                     edgellm_plan_row *row)
{
    edgellm_plan_weights w;
    edgellm_plan_recipe_weights_isa(rc, j->t, j->n, j->m->n_layer, j->m->tied_embeddings,
                                    edgellm_plan_device_is_arm(j->d), &w);
    memset(row, 0, sizeof *row);
    snprintf(row->type, sizeof row->type, "%.23s", rc->name);
    row->weight_exact = rc->file;
    row->bpw = w.n_params ? 8.0 * (double)w.weight_bytes / (double)w.n_params : 0.0;
    row->weight_bytes = w.weight_bytes;
    row->kv_bytes = edgellm_plan_model_kv_bytes(j->m, j->n_ctx, j->kv_type) * (uint64_t)j->batch;
    row->scratch_bytes = edgellm_plan_scratch_bytes(j->m, j->n_ctx, j->batch, j->d->n_big_cores);
    row->overhead_bytes = edgellm_plan_overhead_bytes(j->m);
    row->total_bytes = row->weight_bytes + row->kv_bytes + row->scratch_bytes + row->overhead_bytes;
    row->budget_bytes = budget_of(j);
    row->left_bytes = (int64_t)row->budget_bytes - (int64_t)row->total_bytes;
    row->verdict = row->total_bytes <= row->budget_bytes ? EDGELLM_PLAN_FITS
                   : row->total_bytes <= j->d->usable_bytes ? EDGELLM_PLAN_TIGHT
                                                            : EDGELLM_PLAN_NO_FIT;
    row->max_ctx = max_ctx_within(j, &w, row->budget_bytes);
    uint64_t kv_read = edgellm_plan_model_kv_bytes(j->m, j->n_ctx, j->kv_type);
    row->read_bytes_per_token = w.read_bytes + kv_read;
    double steps = edgellm_plan_batch_steps_per_s(j->m, j->d, w.read_bytes, w.dec_params, w.batch_params, j->n_ctx,
                                                  j->kv_type, j->batch, j->eff);
    row->decode_tps = steps * p->calibration;
    row->decode_tps_total = row->decode_tps * j->batch;
    double pp_ms = edgellm_plan_prefill_ms(j->m, j->d, w.read_bytes, w.pp_params, 512, j->eff);
    row->prefill_tps = pp_ms > 0 ? 512.0 / (pp_ms / 1000.0) * p->calibration : 0.0;
    row->ttft_ms = edgellm_plan_prefill_ms(j->m, j->d, w.read_bytes, w.pp_params, p->prompt_tokens, j->eff) /
                   p->calibration;
    find_quality(p, row->type, &row->quality);
}

/* a better quality than b? */
static bool better_quality(const edgellm_plan_row *a, const edgellm_plan_row *b)
{
    if (!isnan(a->quality.kld) && !isnan(b->quality.kld) && a->quality.kld != b->quality.kld)
        return a->quality.kld < b->quality.kld;
    return a->bpw > b->bpw;
}

/* ------------------------------------------------------------ recommendation ---- */

static bool makeable(const edgellm_plan_report *r, int i);

static size_t appendf(char *buf, size_t size, size_t len, const char *fmt, ...) EDGELLM_PRINTF(4, 5);
static size_t appendf(char *buf, size_t size, size_t len, const char *fmt, ...)
{
    if (len >= size) return len;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
    return k > 0 ? EDGELLM_MIN(len + (size_t)k, size) : len;
}


/* Longest prompt whose prefill fits the first-token budget (0: not even one token). */
static int max_prompt_within(const plan_job *j, const edgellm_plan_weights *w, double budget_ms, double calibration)
{
    int lo = 0, hi = 1 << 20;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        double ms = edgellm_plan_prefill_ms(j->m, j->d, w->read_bytes, w->pp_params, mid, j->eff) / calibration;
        if (ms <= budget_ms) lo = mid;
        else hi = mid;
    }
    return lo;
}

static void recommend_realtime(const plan_job *j, const edgellm_plan_params *p, const edgellm_plan_recipe *recipes,
                               edgellm_plan_report *r)
{
    int pick = -1, fastest = -1, quickest = -1, n_fit = 0, n_ttft_ok = 0;
    for (int i = 0; i < r->n_rows; i++) {
        const edgellm_plan_row *row = &r->rows[i];
        if (row->verdict != EDGELLM_PLAN_FITS || row->needs_original || !makeable(r, i)) continue;
        n_fit++;
        if (fastest < 0 || row->decode_tps > r->rows[fastest].decode_tps) fastest = i;
        if (quickest < 0 || row->ttft_ms < r->rows[quickest].ttft_ms) quickest = i;
        n_ttft_ok += row->ttft_ms <= r->latency_ms;
        if (row->ttft_ms > r->latency_ms || row->decode_tps < r->reading_tps) continue;
        if (pick < 0 || better_quality(row, &r->rows[pick])) pick = i;
    }
    r->realtime_pick = pick;
    if (pick >= 0) {
        const edgellm_plan_row *row = &r->rows[pick];
        snprintf(r->realtime_why, sizeof r->realtime_why,
                 "%s: the best quality that fits (%.2f of %.2f GiB) and meets the latency: first token in %.0f ms "
                 "(budget %.0f ms, %d-token prompt), then %.1f tok/s (reading speed %.1f).",
                 row->type, row->total_bytes / GIB_D, row->budget_bytes / GIB_D, row->ttft_ms, r->latency_ms,
                 r->prompt_tokens, row->decode_tps, r->reading_tps);
    } else if (n_fit > 0) {
        /* name the row nearest to the constraint that fails: the first token when no row
         * meets it (the quickest to it), else the reading speed (the fastest decoder) */
        const int near = n_ttft_ok == 0 ? quickest : fastest;
        const edgellm_plan_row *row = &r->rows[near];
        edgellm_plan_weights w;
        edgellm_plan_recipe_weights_isa(&recipes[near], j->t, j->n, j->m->n_layer, j->m->tied_embeddings,
                                    edgellm_plan_device_is_arm(j->d), &w);
        int max_prompt = max_prompt_within(j, &w, r->latency_ms, p->calibration);
        size_t len = (size_t)snprintf(r->realtime_why, sizeof r->realtime_why,
                                      "nothing meets the latency: %s that fits, %s, needs %.0f ms to the first "
                                      "token (budget %.0f ms for %d tokens) and decodes %.1f tok/s (need %.1f).",
                                      n_ttft_ok == 0 ? "the quickest to the first token" : "the fastest decoder",
                                      row->type, row->ttft_ms, r->latency_ms, r->prompt_tokens, row->decode_tps,
                                      r->reading_tps);
        if (row->decode_tps >= r->reading_tps && max_prompt > 0)
            appendf(r->realtime_why, sizeof r->realtime_why, len,
                    " It answers within %.0f ms for prompts up to %d tokens; else use a smaller model or relax "
                    "--latency-ms.", r->latency_ms, max_prompt);
        else
            appendf(r->realtime_why, sizeof r->realtime_why, len,
                    " Use a smaller model or shorter context, or relax --latency-ms.");
    } else {
        snprintf(r->realtime_why, sizeof r->realtime_why,
                 "no precision fits this device with a %.0f %% safety margin (see advice).", r->safety_margin * 100);
    }
}

static void recommend_offline(const plan_job *j, const edgellm_plan_params *p, const edgellm_plan_recipe *recipes,
                              edgellm_plan_report *r)
{
    int pick = -1;
    for (int i = 0; i < r->n_rows; i++)
        if (r->rows[i].verdict == EDGELLM_PLAN_FITS && !r->rows[i].needs_original && makeable(r, i) &&
            (pick < 0 || better_quality(&r->rows[i], &r->rows[pick])))
            pick = i;
    r->offline_pick = pick;
    r->offline_batch = 0;
    if (pick < 0) {
        snprintf(r->offline_why, sizeof r->offline_why,
                 "no precision fits this device with a %.0f %% safety margin (see advice).", r->safety_margin * 100);
        return;
    }
    edgellm_plan_weights w;
    edgellm_plan_recipe_weights_isa(&recipes[pick], j->t, j->n, j->m->n_layer, j->m->tied_embeddings,
                                    edgellm_plan_device_is_arm(j->d), &w);
    uint64_t budget = budget_of(j);
    /* b sequences decoded together (as `--batch` rows are: EDGELLM_PLAN_BATCH_MODEL): the
     * batch that fits and gives the most tokens per second in total, the smallest of
     * equals; where compute already bounds one sequence, batching gains little and b stays
     * small */
    const double alone = edgellm_plan_batch_steps_per_s(j->m, j->d, w.read_bytes, w.dec_params, w.batch_params,
                                                        j->n_ctx, j->kv_type, 1, j->eff) * p->calibration;
    int b = 1, fits = 1;
    double best = alone;
    for (int k = 2; k <= EDGELLM_PLAN_MAX_BATCH; k++) {
        if (total_at(j, &w, j->n_ctx, k) > budget) break;
        fits = k;
        const double total = k * p->calibration *
                             edgellm_plan_batch_steps_per_s(j->m, j->d, w.read_bytes, w.dec_params, w.batch_params,
                                                            j->n_ctx, j->kv_type, k, j->eff);
        if (total > best * 1.0001) { best = total; b = k; }
    }
    r->offline_batch = b;
    r->offline_batch_tps = best;
    const edgellm_plan_row *row = &r->rows[pick];
    if (b == 1 && fits > 1)
        snprintf(r->offline_why, sizeof r->offline_why,
                 "%s: the best quality that fits (%.2f of %.2f GiB), %.1f tok/s; batching would not be faster "
                 "(compute bounds it, not memory).",
                 row->type, row->total_bytes / GIB_D, row->budget_bytes / GIB_D, alone);
    else if (b > 1)
        snprintf(r->offline_why, sizeof r->offline_why,
                 "%s: the best quality that fits (%.2f of %.2f GiB). Decode %d sequences together (run "
                 "--batch-file -b %d, or serve -np %d): %.1f tok/s in total (%.1f alone)%s.",
                 row->type, row->total_bytes / GIB_D, row->budget_bytes / GIB_D, b, b, b, r->offline_batch_tps, alone,
                 b >= 4    ? ", the guide's batch of 4-8"
                 : fits >= 4 ? "; a batch of 4-8 fits but is not faster (compute bounds it, not memory)"
                             : "; memory allows no batch of 4-8");
    else
        snprintf(r->offline_why, sizeof r->offline_why,
                 "%s: the best quality that fits (%.2f of %.2f GiB), %.1f tok/s; memory leaves no room to batch.",
                 row->type, row->total_bytes / GIB_D, row->budget_bytes / GIB_D, alone);
}

/* Nothing fits: shorter context, a Q8_0 KV cache, or a smaller catalogue model. */
static void advise(const plan_job *j, const edgellm_plan_params *p, const edgellm_plan_recipe *recipes,
                   edgellm_plan_report *r)
{
    int any_fit = 0, smallest = 0;
    for (int i = 0; i < r->n_rows; i++) {
        if (r->rows[i].needs_original) continue;
        any_fit |= r->rows[i].verdict == EDGELLM_PLAN_FITS;
        if (r->rows[i].total_bytes < r->rows[smallest].total_bytes) smallest = i;
    }
    r->advice[0] = 0;
    if (any_fit || r->n_rows == 0) return;
    const edgellm_plan_row *s = &r->rows[smallest];
    size_t len = 0;
    len = appendf(r->advice, sizeof r->advice, len,
                  "Nothing fits: the smallest, %s, needs %.2f GiB of a %.2f GiB budget (%.2f GiB usable - %.0f %%).",
                  s->type, s->total_bytes / GIB_D, s->budget_bytes / GIB_D, j->d->usable_bytes / GIB_D,
                  j->margin * 100);
    if (s->verdict == EDGELLM_PLAN_TIGHT)
        len = appendf(r->advice, sizeof r->advice, len, " It fits only inside the safety margin (tight).");
    if (s->max_ctx > 0)
        len = appendf(r->advice, sizeof r->advice, len,
                      " Shorter context: %s fits up to %d positions (run/serve -c %d).", s->type, s->max_ctx,
                      s->max_ctx);
    if (j->kv_type != EDGELLM_TYPE_Q8_0) {
        plan_job q8 = *j;
        q8.kv_type = EDGELLM_TYPE_Q8_0;
        edgellm_plan_weights w;
        edgellm_plan_recipe_weights_isa(&recipes[smallest], j->t, j->n, j->m->n_layer, j->m->tied_embeddings,
                                    edgellm_plan_device_is_arm(j->d), &w);
        if (j->m->head_dim % 32 == 0) {   /* what `run --kv-type q8_0` accepts (whole blocks per head) */
            uint64_t tot = total_at(&q8, &w, j->n_ctx, j->batch);
            len = appendf(r->advice, sizeof r->advice, len,
                          " A Q8_0 KV cache (run/serve --kv-type q8_0) %s (%.2f GiB).",
                          tot <= s->budget_bytes ? "makes it fit" : "is not enough", tot / GIB_D);
        }
    }
    /* the largest catalogue model that fits at Q4_K_M with the same settings */
    edgellm_plan_recipe q4;
    edgellm_plan_recipe_from_name("Q4_K_M", &q4, NULL);
    const edgellm_plan_model *best = NULL;
    uint64_t best_params = 0, best_total = 0;
    for (int i = 0; i < edgellm_model_catalog_n; i++) {
        edgellm_plan_model cm;
        if (edgellm_plan_model_at(i, &cm) != EDGELLM_OK || cm.n_params >= j->m->n_params) continue;
        size_t n = edgellm_plan_shape_tensors(&cm, NULL, 0);
        edgellm_plan_tensor *t = edgellm_malloc(n * sizeof *t);
        if (!t) break;
        edgellm_plan_shape_tensors(&cm, t, n);
        plan_job cj = *j;
        cj.m = &cm;
        cj.t = t;
        cj.n = n;
        cj.n_ctx = cm.n_ctx_train > 0 ? EDGELLM_MIN(j->n_ctx, cm.n_ctx_train) : j->n_ctx;
        edgellm_plan_weights w;
        edgellm_plan_recipe_weights_isa(&q4, t, n, cm.n_layer, cm.tied_embeddings,
                                    edgellm_plan_device_is_arm(j->d), &w);
        uint64_t tot = total_at(&cj, &w, cj.n_ctx, j->batch);
        edgellm_free(t);
        if (tot <= s->budget_bytes && cm.n_params > best_params) {
            best = &edgellm_model_catalog[i].m;
            best_params = cm.n_params;
            best_total = tot;
        }
    }
    if (best)
        len = appendf(r->advice, sizeof r->advice, len,
                      " Smaller model: %s fits at Q4_K_M (%.2f GiB; edgellm plan --model %s --device %s).",
                      best->name, best_total / GIB_D, best->name, j->d->name);
    else
        len = appendf(r->advice, sizeof r->advice, len, " No catalogue model fits this device at Q4_K_M.");
    (void)p;
}

/* ------------------------------------------------------------- command lines ---- */

/* `edgellm quantize` flags that make a precision, or 0 when quantize cannot make it (Q2_K,
 * Q3_K, BF16: plan sizes them, edgellm does not write them). */
static int quantize_flags(const char *type, char *buf, size_t size)
{
    int bits, group;
    char kind[8] = "";
    if (sscanf(type, "I%d_G%d_%7s", &bits, &group, kind) == 3) {
        snprintf(buf, size, "--type i%d --group %d%s", bits, group, !strcmp(kind, "ASYM") ? " --asym" : "");
        return 1;
    }
    static const char *const made[] = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q4_K", "Q5_K",
                                       "Q6_K", "Q4_K_M", "Q5_K_M", "F16", "F32"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++)
        if (name_eq(type, made[i])) {
            size_t n = (size_t)snprintf(buf, size, "--type %s", made[i]);
            for (size_t k = 7; k < n && k < size; k++)   /* the type name in lower case */
                buf[k] = (char)(buf[k] >= 'A' && buf[k] <= 'Z' ? buf[k] + 32 : buf[k]);
            return 1;
        }
    return 0;
}

/* Whether edgellm can give a row: the file's own precision, or one `edgellm quantize` makes. */
static bool makeable(const edgellm_plan_report *r, int i)
{
    char buf[64];
    return (r->model.from_file && i == 0) || quantize_flags(r->rows[i].type, buf, sizeof buf);
}

/* run's and serve's --kv-type for the plan's cache ("" for F32, their default). */
static const char *kv_flag(int kv_type)
{
    return kv_type == EDGELLM_TYPE_F16 ? " --kv-type f16" : kv_type == EDGELLM_TYPE_Q8_0 ? " --kv-type q8_0" : "";
}

/* The commands that give row `i`: quantize when needed, then run (batch: run --batch-file
 * and serve -np). */
static void command_for(const edgellm_plan_report *r, const char *model_path, int i, int batch, char *out,
                        size_t size)
{
    out[0] = 0;
    if (i < 0) return;
    const edgellm_plan_row *row = &r->rows[i];
    char file[320], src[280], flags[64];
    size_t len = 0;
    if (r->model.from_file) snprintf(src, sizeof src, "%s", model_path);
    else snprintf(src, sizeof src, "%s-f16.gguf", r->model.name[0] ? r->model.name : "model");
    if ((r->model.from_file && i == 0) || (!r->model.from_file && name_eq(row->type, "F16"))) {
        snprintf(file, sizeof file, "%s", src);   /* the file itself, or the F16 source */
    } else {
        if (!quantize_flags(row->type, flags, sizeof flags)) return;
        char base[280];
        snprintf(base, sizeof base, "%s", src);
        size_t n = strlen(base);
        if (n > 5 && name_eq(base + n - 5, ".gguf")) base[n - 5] = 0;
        snprintf(file, sizeof file, "%.270s-%s.gguf", base, row->type);
        for (char *c = strrchr(file, '-') + 1; *c && *c != '.'; c++) *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
        len = appendf(out, size, len, "edgellm quantize %s %s %s && ", src, file, flags);
    }
    const int t = r->device.n_big_cores > 0 ? r->device.n_big_cores : 1;
    if (batch > 1)
        appendf(out, size, len,
                "edgellm run -m %s --batch-file prompts.jsonl -b %d -c %d%s -t %d "
                "(a server: edgellm serve -m %s -np %d -c %d%s -t %d)",
                file, batch, r->n_ctx, kv_flag(r->kv_type), t, file, batch, r->n_ctx, kv_flag(r->kv_type), t);
    else
        appendf(out, size, len, "edgellm run -m %s -c %d%s -t %d -p PROMPT", file, r->n_ctx,
                kv_flag(r->kv_type), t);
}

/* The arithmetic behind row k (params.explain): bytes per token, bandwidth, efficiency,
 * FLOPs and kernel cost weights, the decode and prefill times they give, and the memory
 * margin. */
static void explain_row(const plan_job *j, const edgellm_plan_params *p, const edgellm_plan_recipe *rc, int k,
                        edgellm_plan_report *r)
{
    const edgellm_plan_row *row = &r->rows[k];
    const int arm = edgellm_plan_device_is_arm(j->d);
    edgellm_plan_weights w;
    edgellm_plan_recipe_weights_isa(rc, j->t, j->n, j->m->n_layer, j->m->tied_embeddings, arm, &w);
    const double kv = (double)edgellm_plan_model_kv_bytes(j->m, j->n_ctx, j->kv_type);
    const double bw = j->d->bw_gbps * j->eff;
    const int cores = j->d->n_big_cores > 0 ? j->d->n_big_cores : EDGELLM_MAX(1, j->d->n_little_cores);
    const double gflops = j->d->n_big_cores > 0 ? j->d->n_big_cores * j->d->gflops_big
                                                : j->d->n_little_cores * j->d->gflops_little;
    const double t_stream = ((double)w.read_bytes + kv) / (bw * 1e9);
    const double t_rows = edgellm_plan_rows_per_token(j->m) * EDGELLM_PLAN_ROW_OVERHEAD_S / cores;
    const double t_sync = cores > 1 ? j->m->n_layer * EDGELLM_PLAN_SYNC_OVERHEAD_S : 0.0;
    const double f_dec = edgellm_plan_flops_per_token(j->m, w.dec_params, j->n_ctx);
    const double t_cmp = f_dec / (gflops * 1e9);
    char *b = r->explanation;
    const size_t size = sizeof r->explanation;
    size_t len = appendf(b, size, 0, "%s on %s (%s kernel costs, relative to Q4_0 prefill):\n", row->type,
                         j->d->name, arm ? "ARM" : "x86");
    /* the cost weight of each type the recipe uses, by multiply-adds */
    int seen[32], n_seen = 0;
    for (size_t i = 0; i < j->n && n_seen < 32; i++) {
        if (j->t[i].role == EDGELLM_PT_NORM || j->t[i].role == EDGELLM_PT_TOKEN_EMBD) continue;
        const int ty = edgellm_plan_tensor_type(rc, &j->t[i], j->m->n_layer);
        int dup = 0;
        for (int s2 = 0; s2 < n_seen; s2++) dup |= seen[s2] == ty;
        if (dup) continue;
        seen[n_seen++] = ty;
        double share = 0, pp, dec;
        for (size_t i2 = 0; i2 < j->n; i2++)
            if (j->t[i2].role != EDGELLM_PT_NORM && j->t[i2].role != EDGELLM_PT_TOKEN_EMBD &&
                edgellm_plan_tensor_type(rc, &j->t[i2], j->m->n_layer) == ty)
                share += (double)j->t[i2].ne0 * (double)j->t[i2].n_rows;
        edgellm_plan_kernel_cost_isa(ty, arm, &pp, &dec);
        len = appendf(b, size, len, "  %-12s %5.1f %% of the matrix weights, cost prefill %.2f, decode %.2f\n",
                      edgellm_type_name(ty), 100.0 * share / (double)(w.matmul_params ? w.matmul_params : 1), pp, dec);
    }
    len = appendf(b, size, len,
                  "  decode, per token at position %d:\n"
                  "    read    %.1f MB weights + %.1f MB KV = %.1f MB / (%.1f GB/s x %.2f = %.1f GB/s) = %.2f ms\n"
                  "    rows    %.0f weight rows x %.0f ns / %d cores = %.2f ms;"
                  "  hand-offs %d layers x %.0f us = %.2f ms\n"
                  "    compute %.2f GFLOP (2 x %.3g weights x cost, + attention) / (%d cores x %.0f GFLOP/s)"
                  " = %.2f ms\n"
                  "    = max(%.2f, %.2f) ms -> %.1f tok/s (x%.2f calibration)\n",
                  j->n_ctx, w.read_bytes / 1e6, kv / 1e6, (w.read_bytes + kv) / 1e6, j->d->bw_gbps, j->eff, bw,
                  1e3 * t_stream, edgellm_plan_rows_per_token(j->m), EDGELLM_PLAN_ROW_OVERHEAD_S * 1e9, cores,
                  1e3 * t_rows, t_sync > 0 ? j->m->n_layer : 0, EDGELLM_PLAN_SYNC_OVERHEAD_S * 1e6, 1e3 * t_sync,
                  f_dec / 1e9, (double)w.matmul_params, cores, gflops / cores, 1e3 * t_cmp,
                  1e3 * (t_stream + t_rows + t_sync), 1e3 * t_cmp, row->decode_tps, p->calibration);
    const double f_pp = 512 * edgellm_plan_flops_per_token(j->m, w.pp_params, 256.0);
    len = appendf(b, size, len,
                  "  prefill: 512 tokens x %.2f GFLOP (prefill costs) / %.0f GFLOP/s = %.0f ms, weights streamed once "
                  "per 512 = %.0f ms, + %d layers x %.0f us -> %.1f tok/s; the %d-token first-token prompt: %.0f ms\n",
                  f_pp / 512 / 1e9, gflops, 1e3 * f_pp / (gflops * 1e9), 1e3 * w.read_bytes / (bw * 1e9),
                  j->m->n_layer, EDGELLM_PLAN_LAYER_OVERHEAD_S * 1e6, row->prefill_tps, r->prompt_tokens, row->ttft_ms);
    appendf(b, size, len,
            "  memory: %.1f MB weights + %.1f MB KV + %.1f MB other = %.1f MB; budget = %.1f MB usable x (1 - %.2f "
            "margin) = %.1f MB -> %s\n",
            row->weight_bytes / 1e6, row->kv_bytes / 1e6, (row->scratch_bytes + row->overhead_bytes) / 1e6,
            row->total_bytes / 1e6, j->d->usable_bytes / 1e6, j->margin, row->budget_bytes / 1e6,
            row->verdict == EDGELLM_PLAN_FITS ? "fits" : row->verdict == EDGELLM_PLAN_TIGHT ? "tight" : "does not fit");
}

/* ------------------------------------------------------------------ the plan ---- */

static bool looks_like_file(const char *s)
{
    struct stat st;
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && name_eq(s + n - 5, ".gguf")) || stat(s, &st) == 0;
}

static edgellm_status resolve_device(const edgellm_plan_params *p, edgellm_plan_device *d, edgellm_error *err)
{
    const char *name = p->device ? p->device : "phone-mid";
    for (int i = 0; i < p->n_extra_devices; i++)
        if (name_eq(p->extra_devices[i].name, name)) { *d = p->extra_devices[i]; return EDGELLM_OK; }
    if (name_eq(name, "host")) return edgellm_plan_host_device(p->host_bench_ms, d, err);
    edgellm_status rc = edgellm_plan_find_device(name, d, err);
    if (rc == EDGELLM_ERR_NOT_FOUND && p->n_extra_devices > 0 && err) {
        size_t len = strlen(err->msg);
        for (int i = 0; i < p->n_extra_devices; i++)
            len = appendf(err->msg, sizeof err->msg, len, "%s%s", i ? ", " : "; from the device file: ",
                          p->extra_devices[i].name);
    }
    return rc;
}

edgellm_status edgellm_plan(const edgellm_plan_params *pp, edgellm_plan_report *r, edgellm_error *err)
{
    if (!r) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "plan: report is NULL");
    memset(r, 0, sizeof *r);
    r->realtime_pick = r->offline_pick = -1;
    edgellm_plan_params p = pp ? *pp : edgellm_plan_default_params();
    if (p.n_ctx < 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "context length %d: must be > 0", p.n_ctx);
    if (p.batch < 1) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "batch %d: must be >= 1", p.batch);
    if (p.kv_type != EDGELLM_TYPE_F16 && p.kv_type != EDGELLM_TYPE_Q8_0 && p.kv_type != EDGELLM_TYPE_F32)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "KV cache type %s: use f16, q8_0 or f32",
                            edgellm_type_name(p.kv_type));
    if (!(p.safety_margin >= 0.0 && p.safety_margin < 1.0))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "safety margin %g: must be in [0, 1)", p.safety_margin);
    if (!(p.calibration > 0.0)) p.calibration = 1.0;
    if (!(p.latency_ms > 0.0)) p.latency_ms = 200.0;
    if (!(p.reading_tps > 0.0)) p.reading_tps = 5.0;

    /* candidate recipes first: a bad --types name is a command-line error, reported before
     * anything is measured */
    edgellm_plan_recipe recipes[EDGELLM_PLAN_MAX_CANDIDATES - 1];   /* one row stays for the file's own */
    int n_rec = 0;
    for (int i = 0; i < edgellm_plan_default_n_types; i++)
        edgellm_plan_recipe_from_name(edgellm_plan_default_types[i], &recipes[n_rec++], NULL);
    if (p.types && *p.types) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s", p.types);
        for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
            edgellm_plan_recipe rc;
            edgellm_status st = edgellm_plan_recipe_from_name(tok, &rc, err);
            if (st != EDGELLM_OK) return st;
            int dup = 0;
            for (int k = 0; k < n_rec; k++) dup |= name_eq(recipes[k].name, rc.name);
            if (dup) continue;
            if (n_rec >= EDGELLM_PLAN_MAX_CANDIDATES - 1)
                return edgellm_fail(err, EDGELLM_ERR_MISUSE, "too many precisions (at most %d)",
                                    EDGELLM_PLAN_MAX_CANDIDATES - 1);
            recipes[n_rec++] = rc;
        }
    }

    /* the model and its tensor list */
    edgellm_plan_tensor *tensors = NULL;
    size_t n_tensors = 0;
    edgellm_status rc = EDGELLM_OK;
    if (p.shape) {
        r->model = *p.shape;
    } else {
        const char *name = p.model ? p.model : "llama-3.2-3b";
        if (looks_like_file(name) && edgellm_plan_find_model(name, &r->model, NULL) != EDGELLM_OK)
            rc = edgellm_plan_gguf_tensors(name, &r->model, &tensors, &n_tensors, err);
        else
            rc = edgellm_plan_find_model(name, &r->model, err);
        if (rc != EDGELLM_OK) return rc;
    }
    edgellm_plan_model *m = &r->model;
    if (m->n_layer <= 0 || m->n_embd <= 0 || m->n_head <= 0 || m->n_head_kv <= 0 || m->head_dim <= 0 ||
        m->n_ff <= 0 || m->n_vocab <= 0 || m->n_head % m->n_head_kv != 0) {
        /* from a file, the file is at fault (exit 1), not the command line */
        rc = edgellm_fail(err, m->from_file ? EDGELLM_ERR_FORMAT : EDGELLM_ERR_MISUSE,
                          "model %s: incomplete or inconsistent shape", m->name);
        goto done;
    }
    if (!tensors && m->n_layer > EDGELLM_PLAN_MAX_LAYERS) {   /* a shape from the API, unchecked */
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "model %s: n_layer %d is more than %d", m->name, m->n_layer,
                          EDGELLM_PLAN_MAX_LAYERS);
        goto done;
    }
    if (!tensors) {
        n_tensors = edgellm_plan_shape_tensors(m, NULL, 0);
        tensors = edgellm_malloc(n_tensors * sizeof *tensors);
        if (!tensors) { rc = edgellm_fail_nomem(err, m->name); goto done; }
        edgellm_plan_shape_tensors(m, tensors, n_tensors);
        if (!m->n_params)
            for (size_t i = 0; i < n_tensors; i++) m->n_params += (uint64_t)tensors[i].ne0 * (uint64_t)tensors[i].n_rows;
    }

    /* settings */
    int n_ctx = p.n_ctx;
    if (n_ctx == 0) n_ctx = m->n_ctx_train > 0 ? EDGELLM_MIN(m->n_ctx_train, 4096) : 4096;
    if (p.prompt_tokens <= 0) p.prompt_tokens = EDGELLM_MIN(64, n_ctx);   /* the first-token prompt */
    else if (p.prompt_tokens > n_ctx) {
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE,
                          "a first-token prompt of %d tokens does not fit n_ctx %d: lower --prompt or raise --ctx",
                          p.prompt_tokens, n_ctx);
        goto done;
    }
    if (p.kv_type == EDGELLM_TYPE_Q8_0 && m->head_dim % 32 != 0) {   /* as edgellm_ctx_new requires */
        rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "a Q8_0 KV cache needs head_dim (%d) to be a multiple of 32",
                          m->head_dim);
        goto done;
    }

    /* the device (may run the bandwidth benchmark) */
    if ((rc = resolve_device(&p, &r->device, err)) != EDGELLM_OK) goto done;
    if (r->device.usable_bytes > r->device.ram_bytes && r->device.ram_bytes) r->device.usable_bytes = r->device.ram_bytes;
    if ((rc = edgellm_plan_check_device(&r->device, err)) != EDGELLM_OK) goto done;

    r->n_ctx = n_ctx;
    r->kv_type = p.kv_type;
    r->batch = p.batch;
    r->prompt_tokens = p.prompt_tokens;
    r->scenario = p.scenario;
    r->latency_ms = p.latency_ms;
    r->reading_tps = p.reading_tps;
    r->safety_margin = p.safety_margin;
    r->calibration = p.calibration;
    r->efficiency = edgellm_plan_efficiency(&r->device);

    plan_job job = {m, &r->device, tensors, n_tensors, n_ctx, p.kv_type, p.batch, p.safety_margin, r->efficiency};

    /* rows: the file's own precision first (exact bytes), then the candidates */
    edgellm_plan_recipe used[EDGELLM_PLAN_MAX_CANDIDATES];
    int n_used = 0;
    if (m->from_file) {
        memset(&used[0], 0, sizeof used[0]);
        snprintf(used[0].name, sizeof used[0].name, "%s", m->file_label);
        used[0].file = 1;
        used[0].more_bits = used[0].output = -1;
        n_used = 1;
    }
    for (int k = 0; k < n_rec; k++) {
        if (m->from_file && name_eq(recipes[k].name, m->file_label)) continue;
        used[n_used++] = recipes[k];
    }
    for (int k = 0; k < n_used; k++) fill_row(&job, &p, &used[k], &r->rows[k]);
    share_measured_quality(&job, &p, used, n_used, r->rows);
    r->n_rows = n_used;
    /* an already quantized file cannot give back bits it does not have: candidates above
     * its bits per weight need the original weights (requantizing only loses more) */
    if (m->from_file && n_used > 0 && r->rows[0].bpw < 15.5)
        for (int k = 1; k < n_used; k++) {
            edgellm_plan_row *row = &r->rows[k];
            row->needs_original = row->bpw > r->rows[0].bpw + 0.05;
            /* the rest would be made by requantizing the file: a published figure (from the
             * original weights) understates that loss, so none is shown unless measured */
            if (!row->needs_original && !measured(&p, row->type)) {
                row->quality.delta_ppl_pct = row->quality.kld = row->quality.top1_pct = NAN;
                snprintf(row->quality.source, sizeof row->quality.source,
                         "requantized from the file's %.24s: more loss than a published figure; "
                         "measure with edgellm eval", r->rows[0].type);
            }
        }

    recommend_realtime(&job, &p, used, r);
    recommend_offline(&job, &p, used, r);
    advise(&job, &p, used, r);
    command_for(r, p.model ? p.model : "", r->realtime_pick, 1, r->realtime_cmd, sizeof r->realtime_cmd);
    command_for(r, p.model ? p.model : "", r->offline_pick, r->offline_batch, r->offline_cmd, sizeof r->offline_cmd);
    edgellm_plan_low_memory(r);
    command_for(r, p.model ? p.model : "", r->lowmem_pick, 1, r->lowmem_cmd, sizeof r->lowmem_cmd);
    char *prompt = strstr(r->lowmem_cmd, " -p PROMPT");
    if (prompt && r->lowmem_pick >= 0)
        snprintf(prompt, sizeof r->lowmem_cmd - (size_t)(prompt - r->lowmem_cmd), " --mem-budget %lluM -p PROMPT",
                 (unsigned long long)(r->rows[r->lowmem_pick].lowmem_budget_bytes >> 20));
    if (p.explain) {
        int k = -1;
        for (int i = 0; *p.explain && i < r->n_rows; i++)
            if (name_eq(r->rows[i].type, p.explain)) k = i;
        if (*p.explain && k < 0) {
            rc = edgellm_fail(err, EDGELLM_ERR_MISUSE, "--explain %s: no such row (add it with --types)", p.explain);
            goto done;
        }
        if (k < 0) k = r->realtime_pick >= 0 ? r->realtime_pick : r->offline_pick >= 0 ? r->offline_pick : 0;
        if (r->n_rows > 0) explain_row(&job, &p, &used[k], k, r);
    }
done:
    edgellm_free(tensors);
    return rc;
}
