/*
 * soak_write.c — a soak report as files: CSV (RFC 4180, one row per interval), JSON
 * (RFC 8259; NaN written as null) and an SVG 1.1 plot (W3C SVG 1.1: svg, rect, polyline,
 * line, text): panels stacked vertically, one per metric, each a polyline per series over
 * the run's time, with its range labelled. No script, no external resource.
 */
#include "../common/common.h"
#include "edgellm_tools.h"
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

static void json_num(FILE *f, double v)
{
    if (isfinite(v)) fprintf(f, "%.6g", v);
    else fputs("null", f);
}

static void json_trend(FILE *f, const char *name, const edgellm_soak_trend *t)
{
    fprintf(f, "  \"%s\": {\"slope\": ", name);
    json_num(f, t->slope);
    fputs(", \"ci95\": [", f);
    json_num(f, t->lo);
    fputs(", ", f);
    json_num(f, t->hi);
    fprintf(f, "], \"n\": %d},\n", t->n);
}

/* s as a JSON string: quotes, backslashes and control bytes escaped */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        const unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void write_csv(const edgellm_soak_report *r, FILE *f)
{
    fputs("t_s,n_requests,n_tokens,tok_s,ttft_p50_ms,ttft_p95_ms,itl_p50_ms,itl_p95_ms,rss_anon_mib,rss_file_mib,"
          "swap_mib,n_fds,temp_c,gov_level,n_threads,light_model\n", f);
    for (int i = 0; i < r->n_rows; i++) {
        const edgellm_soak_row *w = &r->rows[i];
        const double v[] = {w->tok_s, w->ttft_p50_ms, w->ttft_p95_ms, w->itl_p50_ms, w->itl_p95_ms,
                            w->rss_anon_mib, w->rss_file_mib, w->swap_mib};
        fprintf(f, "%.3f,%d,%d", w->t_s, w->n_requests, w->n_tokens);
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
            if (isfinite(v[k])) fprintf(f, ",%.4g", v[k]);
            else fputs(",", f);
        }
        fprintf(f, ",%d,", w->n_fds);
        if (isfinite(w->temp_c)) fprintf(f, "%.2f", w->temp_c);
        fprintf(f, ",%d,%d,%d\n", w->gov_level, w->n_threads, w->light_model);
    }
}

static void write_json(const edgellm_soak_report *r, FILE *f)
{
    fputs("{\n  \"model\": ", f);
    json_str(f, r->model);
    fprintf(f, ",\n  \"duration_s\": %.3f,\n  \"n_requests\": %lld,\n  \"n_tokens\": %lld,\n", r->duration_s,
            r->n_requests, r->n_tokens);
    fputs("  \"retention\": ", f);
    json_num(f, r->retention);
    fputs(",\n  \"retention_window_s\": ", f);
    json_num(f, r->window_s);
    fputs(",\n", f);
    json_trend(f, "tok_s_pct_per_10min", &r->tok_s_pct_per_10min);
    json_trend(f, "itl_p50_pct_per_10min", &r->itl_pct_per_10min);
    json_trend(f, "ttft_p50_pct_per_10min", &r->ttft_pct_per_10min);
    json_trend(f, "rss_anon_mib_per_h", &r->rss_anon_mib_per_h);
    json_trend(f, "fds_per_h", &r->fds_per_h);
    fputs("  \"rss_anon_first_mib\": ", f);
    json_num(f, r->rss_anon_first_mib);
    fputs(", \"rss_anon_last_mib\": ", f);
    json_num(f, r->rss_anon_last_mib);
    fprintf(f, ",\n  \"fds_first\": %d, \"fds_last\": %d,\n  \"max_temp_c\": ", r->fds_first, r->fds_last);
    json_num(f, r->max_temp_c);
    fputs(", \"trip_c\": ", f);
    json_num(f, r->trip_c);
    fprintf(f, ", \"above_trip_s\": %.1f,\n  \"gov_changes\": %d, \"gov_slept_s\": %.2f,\n  \"pass\": %s,\n",
            r->above_trip_s, r->n_gov_changes, r->gov_slept_s, r->pass ? "true" : "false");
    fputs("  \"verdict\": ", f);
    json_str(f, r->verdict);
    fputs(",\n  \"thresholds\": ", f);
    json_str(f, r->thresholds);
    fputs(",\n  \"rows\": [\n", f);
    for (int i = 0; i < r->n_rows; i++) {
        const edgellm_soak_row *w = &r->rows[i];
        fprintf(f, "    {\"t_s\": %.3f, \"n_requests\": %d, \"n_tokens\": %d, \"tok_s\": ", w->t_s, w->n_requests,
                w->n_tokens);
        json_num(f, w->tok_s);
        const struct { const char *k; double v; } kv[] = {
            {"ttft_p50_ms", w->ttft_p50_ms}, {"ttft_p95_ms", w->ttft_p95_ms}, {"itl_p50_ms", w->itl_p50_ms},
            {"itl_p95_ms", w->itl_p95_ms}, {"rss_anon_mib", w->rss_anon_mib}, {"rss_file_mib", w->rss_file_mib},
            {"swap_mib", w->swap_mib}, {"temp_c", w->temp_c},
        };
        for (size_t k = 0; k < sizeof kv / sizeof kv[0]; k++) {
            fprintf(f, ", \"%s\": ", kv[k].k);
            json_num(f, kv[k].v);
        }
        fprintf(f, ", \"n_fds\": %d, \"gov_level\": %d, \"n_threads\": %d, \"light_model\": %d}%s\n", w->n_fds,
                w->gov_level, w->n_threads, w->light_model, i + 1 < r->n_rows ? "," : "");
    }
    fputs("  ]\n}\n", f);
}

/* ---- SVG ---- */

#define SVG_W 760
#define SVG_PANEL_H 130
#define SVG_LEFT 70
#define SVG_RIGHT 150
#define SVG_TOP 62
#define SVG_GAP 30

typedef struct {
    const char *name;
    size_t off;       /* double field of edgellm_soak_row, or (size_t)-1 with an int field */
    size_t ioff;
    const char *color;
} series;

static double row_value(const edgellm_soak_row *w, const series *s)
{
    if (s->off != (size_t)-1) return *(const double *)((const char *)w + s->off);
    const int v = *(const int *)((const char *)w + s->ioff);
    return v < 0 ? NAN : v;
}

static void svg_panel(const edgellm_soak_report *r, FILE *f, int k, const char *title, const series *ss, int n_series,
                      double t_max, double ref)
{
    const double x0 = SVG_LEFT, x1 = SVG_W - SVG_RIGHT;
    const double y0 = SVG_TOP + k * (SVG_PANEL_H + SVG_GAP), y1 = y0 + SVG_PANEL_H;
    double lo = INFINITY, hi = -INFINITY;
    for (int j = 0; j < n_series; j++)
        for (int i = 0; i < r->n_rows; i++) {
            const double v = row_value(&r->rows[i], &ss[j]);
            if (isfinite(v)) { lo = v < lo ? v : lo; hi = v > hi ? v : hi; }
        }
    if (isfinite(ref)) { lo = ref < lo ? ref : lo; hi = ref > hi ? ref : hi; }
    fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%d\" fill=\"#fafafa\" stroke=\"#999\"/>\n", x0, y0,
            x1 - x0, SVG_PANEL_H);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"13\" font-weight=\"bold\">%s</text>\n", x0, y0 - 6, title);
    if (!isfinite(lo)) {
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"12\" fill=\"#888\">unknown</text>\n", x0 + 10,
                (y0 + y1) / 2);
        return;
    }
    if (hi - lo < 1e-9 * (fabs(hi) + 1)) {   /* a flat series: a band around it */
        const double d = fabs(hi) > 1 ? fabs(hi) * 0.05 : 0.5;
        lo -= d;
        hi += d;
    }
    const double pad = (hi - lo) * 0.08;
    lo -= pad;
    hi += pad;
    if (lo < 0 && lo + pad >= 0) lo = 0;
#define SX(t) (x0 + (t) / (t_max > 0 ? t_max : 1) * (x1 - x0))
#define SY(v) (y1 - ((v) - lo) / (hi - lo) * (y1 - y0))
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.4g</text>\n", x0 - 4, y0 + 10, hi);
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" text-anchor=\"end\">%.4g</text>\n", x0 - 4, y1, lo);
    if (isfinite(ref))
        fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-dasharray=\"5,4\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" fill=\"#d62728\">trip %.0f</text>\n",
                x0, SY(ref), x1, SY(ref), x1 + 4, SY(ref) + 4, ref);
    for (int j = 0; j < n_series; j++) {
        fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.6\" points=\"", ss[j].color);
        for (int i = 0; i < r->n_rows; i++) {
            const double v = row_value(&r->rows[i], &ss[j]);
            if (isfinite(v)) fprintf(f, "%.1f,%.1f ", SX(r->rows[i].t_s), SY(v));
        }
        fputs("\"/>\n", f);
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" fill=\"%s\">%s</text>\n", x1 + 6, y0 + 14 + 14 * j,
                ss[j].color, ss[j].name);
    }
#undef SX
#undef SY
}

void edgellm_soak_svg(const edgellm_soak_report *r, FILE *f)
{
    const series tok[] = {{"tok/s", offsetof(edgellm_soak_row, tok_s), 0, "#1f77b4"}};
    const series ttft[] = {{"TTFT p50", offsetof(edgellm_soak_row, ttft_p50_ms), 0, "#1f77b4"},
                           {"TTFT p95", offsetof(edgellm_soak_row, ttft_p95_ms), 0, "#ff7f0e"}};
    const series itl[] = {{"ITL p50", offsetof(edgellm_soak_row, itl_p50_ms), 0, "#1f77b4"},
                          {"ITL p95", offsetof(edgellm_soak_row, itl_p95_ms), 0, "#ff7f0e"}};
    const series anon[] = {{"RssAnon", offsetof(edgellm_soak_row, rss_anon_mib), 0, "#2ca02c"},
                           {"VmSwap", offsetof(edgellm_soak_row, swap_mib), 0, "#9467bd"}};
    const series file[] = {{"RssFile", offsetof(edgellm_soak_row, rss_file_mib), 0, "#8c564b"}};
    const series fds[] = {{"open fds", (size_t)-1, offsetof(edgellm_soak_row, n_fds), "#7f7f7f"}};
    const series temp[] = {{"temp C", offsetof(edgellm_soak_row, temp_c), 0, "#d62728"}};
    const series level[] = {{"level", (size_t)-1, offsetof(edgellm_soak_row, gov_level), "#e377c2"},
                            {"threads", (size_t)-1, offsetof(edgellm_soak_row, n_threads), "#17becf"}};
    const int n_panels = 8;
    const double t_max = r->n_rows ? r->rows[r->n_rows - 1].t_s : 1;
    const int h = SVG_TOP + n_panels * (SVG_PANEL_H + SVG_GAP) + 10;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
               "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
            SVG_W, h, SVG_W, h);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"%d\" y=\"18\" font-size=\"14\">soak: ", SVG_LEFT);
    for (const char *s = r->model; *s; s++) {   /* XML-escape the file name */
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
    fprintf(f, ", %.0f s, %lld requests, %lld tokens; x axis: seconds (0 .. %.0f)</text>\n", r->duration_s,
            r->n_requests, r->n_tokens, t_max);
    fprintf(f, "<text x=\"%d\" y=\"32\" font-size=\"11\" fill=\"%s\">verdict: ", SVG_LEFT, r->pass ? "#2ca02c" : "#d62728");
    for (const char *s = r->verdict; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else fputc(*s, f);
    }
    fputs("</text>\n", f);
    svg_panel(r, f, 0, "throughput (tok/s)", tok, 1, t_max, NAN);
    svg_panel(r, f, 1, "time to first token (ms)", ttft, 2, t_max, NAN);
    svg_panel(r, f, 2, "inter-token latency (ms)", itl, 2, t_max, NAN);
    svg_panel(r, f, 3, "anonymous memory (MiB)", anon, 2, t_max, NAN);
    svg_panel(r, f, 4, "file-backed RSS (MiB)", file, 1, t_max, NAN);
    svg_panel(r, f, 5, "open file descriptors", fds, 1, t_max, NAN);
    svg_panel(r, f, 6, "temperature (C)", temp, 1, t_max, r->trip_c);
    svg_panel(r, f, 7, "governor level (0 nominal .. 3 critical), threads", level, 2, t_max, NAN);
    fputs("</svg>\n", f);
}

edgellm_status edgellm_soak_write(const edgellm_soak_report *r, const char *dir, edgellm_error *err)
{
    if (!r || !dir) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "soak: NULL report or folder");
    if (mkdir(dir, 0755) && errno != EEXIST) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", dir, strerror(errno));
    static const char *const names[3] = {"soak.csv", "soak.json", "soak.svg"};
    for (int k = 0; k < 3; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[k]);
        FILE *f = fopen(path, "w");
        if (!f) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(errno));
        if (k == 0) write_csv(r, f);
        else if (k == 1) write_json(r, f);
        else edgellm_soak_svg(r, f);
        if (ferror(f) | fclose(f)) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed", path);
    }
    return EDGELLM_OK;
}
