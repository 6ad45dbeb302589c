/* test_soak.c — soak's statistics against synthetic series of known slope, its verdict on
 * synthetic rows, and short real runs: files written, a leak injected through the test hook
 * flagged, the governor and simulated device recorded. */
#include "test_util.h"
#include <stddef.h>

static void test_fit(void)
{
    double x[50], y[50];
    for (int i = 0; i < 50; i++) {   /* exact line */
        x[i] = i * 10.0;
        y[i] = 5 + 0.3 * x[i];
    }
    edgellm_soak_trend t = edgellm_soak_fit(x, y, 50);
    CHECK_NEAR(t.slope, 0.3, 1e-12);
    CHECK_NEAR(t.lo, 0.3, 1e-9);
    CHECK_NEAR(t.hi, 0.3, 1e-9);
    CHECK_EQ(t.n, 50);
    /* with noise (a fixed pseudo-random sequence, sd ~ 3): the interval holds the true slope
     * and is about 2 x 1.96 x sd / sqrt(sxx) wide */
    uint64_t s = 42;
    double sxx = 0;
    for (int i = 0; i < 50; i++) {
        double u = 0;
        for (int k = 0; k < 12; k++) {   /* Irwin-Hall: ~ N(0, 1) */
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            u += (double)(s >> 11) / 9007199254740992.0;
        }
        y[i] = 5 - 0.02 * x[i] + 3 * (u - 6);
        sxx += (x[i] - 245) * (x[i] - 245);
    }
    t = edgellm_soak_fit(x, y, 50);
    CHECK(t.lo < -0.02 && t.hi > -0.02);
    const double half = (t.hi - t.lo) / 2, expect = 2.011 * 3 / sqrt(sxx);
    CHECK(half > expect * 0.6 && half < expect * 1.5);
    /* NaN points are skipped; fewer than 3 points: no interval */
    y[3] = NAN;
    t = edgellm_soak_fit(x, y, 50);
    CHECK_EQ(t.n, 49);
    t = edgellm_soak_fit(x, y, 2);
    CHECK(isfinite(t.slope) && isnan(t.lo));
    t = edgellm_soak_fit(x, y, 1);
    CHECK(isnan(t.slope));
}

static void test_quantile(void)
{
    double v[] = {5, 1, 4, 2, 3};
    CHECK_NEAR(edgellm_soak_quantile(v, 5, 0.5), 3, 1e-12);
    CHECK_NEAR(edgellm_soak_quantile(v, 5, 0.95), 4.8, 1e-12);   /* numpy.percentile(.., 95) */
    CHECK_NEAR(edgellm_soak_quantile(v, 5, 0.0), 1, 1e-12);
    double w[] = {7};
    CHECK_NEAR(edgellm_soak_quantile(w, 1, 0.95), 7, 1e-12);
    CHECK(isnan(edgellm_soak_quantile(w, 0, 0.5)));
}

/* rows of a 10-minute run: tok/s slope, RssAnon growth, fds given */
static void synth_rows(edgellm_soak_report *r, int n, double tok0, double tok_slope_per_s, double rss_mib_per_s, int fd_every)
{
    r->rows = calloc((size_t)n, sizeof *r->rows);
    r->n_rows = n;
    r->trip_c = NAN;
    for (int i = 0; i < n; i++) {
        edgellm_soak_row *w = &r->rows[i];
        w->t_s = 10.0 * (i + 1);
        w->tok_s = tok0 + tok_slope_per_s * w->t_s + ((i % 3) - 1) * 0.05;
        w->n_tokens = (int)lround(w->tok_s * 10);
        w->itl_p50_ms = 1000.0 / w->tok_s;
        w->ttft_p50_ms = 80 + (i % 2);
        w->rss_anon_mib = 300 + rss_mib_per_s * w->t_s + (i % 2) * 0.01;
        w->n_fds = 5 + (fd_every ? i / fd_every : 0);
        w->temp_c = NAN;
        w->gov_level = -1;
    }
}

static void test_analyze(void)
{
    edgellm_soak_params p = edgellm_soak_default_params();
    edgellm_soak_report r = {.size = sizeof r};
    synth_rows(&r, 60, 20, 0, 0, 0);   /* steady */
    edgellm_soak_analyze(&r, &p);
    CHECK(r.pass);
    CHECK(!strcmp(r.verdict, "pass"));
    CHECK_NEAR(r.retention, 1.0, 0.02);
    CHECK(r.tok_s_pct_per_10min.lo < 0 && r.tok_s_pct_per_10min.hi > 0);
    CHECK(fabs(r.rss_anon_mib_per_h.slope) < 1);
    edgellm_soak_report_free(&r);

    /* 20 -> 10 tok/s over 10 minutes: -50 % of the first; slope as % of the mean (15) per 10 min */
    synth_rows(&r, 60, 20, -10.0 / 600, 0, 0);
    edgellm_soak_analyze(&r, &p);
    CHECK(!r.pass);
    CHECK(strstr(r.verdict, "retention") != NULL);
    CHECK(strstr(r.verdict, "latency drift") != NULL);
    CHECK_NEAR(r.tok_s_pct_per_10min.slope, -10.0 / 15.1 * 100, 3);
    CHECK(r.retention < 0.6);
    edgellm_soak_report_free(&r);

    /* 1 MiB per minute of anonymous memory: 60 MiB/h, a leak; an fd every 10 rows */
    synth_rows(&r, 60, 20, 0, 1.0 / 60, 10);
    edgellm_soak_analyze(&r, &p);
    CHECK(!r.pass);
    CHECK(strstr(r.verdict, "leak: RssAnon") != NULL);
    CHECK(strstr(r.verdict, "fd leak") != NULL);
    CHECK_NEAR(r.rss_anon_mib_per_h.slope, 60, 0.5);
    CHECK(r.rss_anon_mib_per_h.lo < 60 && r.rss_anon_mib_per_h.hi > 60);
    /* the files */
    char dir[512];
    snprintf(dir, sizeof dir, "%s/synth", test_tmpdir());
    CHECK_OK(edgellm_soak_write(&r, dir, &_e));
    char path[600];
    size_t n = 0;
    snprintf(path, sizeof path, "%s/soak.svg", dir);
    char *svg = read_file(path, &n);
    CHECK(svg && strstr(svg, "<svg") && strstr(svg, "<polyline") && strstr(svg, "</svg>\n"));
    free(svg);
    snprintf(path, sizeof path, "%s/soak.csv", dir);
    char *csv = read_file(path, &n);
    int lines = 0;
    for (size_t i = 0; csv && i < n; i++) lines += csv[i] == '\n';
    CHECK_EQ(lines, 61);
    free(csv);
    snprintf(path, sizeof path, "%s/soak.json", dir);
    char *json = read_file(path, &n);
    CHECK(json && strstr(json, "\"pass\": false") && strstr(json, "\"rss_anon_mib_per_h\""));
    free(json);
    edgellm_soak_report_free(&r);
}

static void test_soak_run(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    edgellm_soak_params p = edgellm_soak_default_params();
    p.duration_s = 4;
    p.interval_s = 0.5;
    p.n_predict = 24;
    p.n_ctx = 512;
    p.n_threads = 1;
    p.max_rss_mib_per_h = 2000;   /* a 4 s run: allocator warm-up alone is tens of MiB/h */
    edgellm_soak_report r = {.size = sizeof r};
    CHECK_OK(edgellm_soak(model, &p, &r, &_e));
    fprintf(stderr, "  clean: %d rows, %lld requests, %lld tokens, RssAnon %.1f -> %.1f MiB, %+.0f MiB/h [%.0f, %.0f], "
                    "fds %d -> %d; %s\n", r.n_rows, r.n_requests, r.n_tokens, r.rss_anon_first_mib, r.rss_anon_last_mib,
            r.rss_anon_mib_per_h.slope, r.rss_anon_mib_per_h.lo, r.rss_anon_mib_per_h.hi, r.fds_first, r.fds_last,
            r.verdict);
    CHECK(r.n_rows >= 6 && r.n_rows <= 10);
    CHECK(r.n_requests > 3);
    CHECK(r.n_tokens > 20);
    CHECK(isfinite(r.rows[1].itl_p50_ms) && r.rows[1].itl_p95_ms >= r.rows[1].itl_p50_ms);
    CHECK(r.rows[1].rss_anon_mib > 0 && r.rows[1].n_fds > 0);
    if (!RSS_SANITIZED) CHECK(strstr(r.verdict, "leak") == NULL);   /* ASan's quarantine grows RssAnon */
    CHECK(strstr(r.verdict, "fd leak") == NULL);
    CHECK(r.fds_last == r.fds_first);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/run", test_tmpdir());
    CHECK_OK(edgellm_soak_write(&r, dir, &_e));
    edgellm_soak_report_free(&r);

    /* a deliberate leak: 256 KiB per request */
    p.leak_bytes_per_request = 256 << 10;
    edgellm_soak_report l = {.size = sizeof l};
    CHECK_OK(edgellm_soak(model, &p, &l, &_e));
    fprintf(stderr, "  leaking: %lld requests, RssAnon %.1f -> %.1f MiB, %+.0f MiB/h; %s\n", l.n_requests,
            l.rss_anon_first_mib, l.rss_anon_last_mib, l.rss_anon_mib_per_h.slope, l.verdict);
    CHECK(!l.pass);
    CHECK(strstr(l.verdict, "leak: RssAnon") != NULL);
    CHECK(l.rss_anon_last_mib - l.rss_anon_first_mib > 0.2 * (l.n_requests * 0.25) * 0.5);
    edgellm_soak_report_free(&l);
}

/* Through the governor on a simulated device: temperature and level recorded per row. */
static void test_soak_governed(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    char root[512];
    snprintf(root, sizeof root, "%s/simdev", test_tmpdir());
    edgellm_simdev_params sp = edgellm_simdev_default_params();
    sp.root = root;
    sp.tau_s = 60;   /* stays near its start over the run */
    sp.start_c = 65;
    edgellm_simdev *d = NULL;
    CHECK_OK(edgellm_simdev_start(&sp, &d, &_e));
    edgellm_gov_policy gp = edgellm_gov_default_policy(2);
    gp.sysfs_root = root;
    gp.poll_s = 0.1;
    edgellm_governor *g = NULL;
    CHECK_OK(edgellm_governor_new(&gp, &g, &_e));
    edgellm_soak_params p = edgellm_soak_default_params();
    p.duration_s = 3;
    p.interval_s = 0.5;
    p.n_predict = 16;
    p.n_ctx = 512;
    p.n_threads = 2;
    p.governor = g;
    p.simdev = d;
    edgellm_soak_report r = {.size = sizeof r};
    CHECK_OK(edgellm_soak(model, &p, &r, &_e));
    CHECK(r.n_rows >= 4);
    CHECK(isfinite(r.rows[0].temp_c));
    CHECK(r.rows[0].gov_level >= EDGELLM_GOV_WARM);   /* started at 65 C */
    CHECK(r.rows[0].n_threads == 1);                    /* warm: 3/4 of 2 threads */
    CHECK_NEAR(r.trip_c, 70, 1e-9);
    CHECK(isfinite(r.max_temp_c));
    edgellm_soak_report_free(&r);
    edgellm_governor_free(g);
    edgellm_simdev_stop(d);
}

int main(void)
{
    RUN(test_fit);
    RUN(test_quantile);
    RUN(test_analyze);
    RUN(test_soak_run);
    RUN(test_soak_governed);
    return test_summary();
}
