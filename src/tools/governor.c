/*
 * governor.c — device sensors read from Linux sysfs, and the thermal/battery governor:
 * levels entered by temperature, fed headroom or battery, left with hysteresis, and the
 * actions of a level (threads, a tokens-per-second duty cycle, a lighter model, a pause).
 *
 * sysfs files (Documentation/driver-api/thermal/sysfs-api.rst, Documentation/ABI/testing/
 * sysfs-class-power, Documentation/admin-guide/pm/cpufreq.rst in the Linux tree):
 *   class/thermal/thermal_zoneN/temp              millidegrees C, one integer
 *   class/thermal/thermal_zoneN/type              zone name
 *   class/thermal/thermal_zoneN/trip_point_K_temp / _type (passive, hot, critical, active)
 *   class/power_supply/NAME/type                  "Battery" for a battery
 *   class/power_supply/NAME/capacity              percent
 *   class/power_supply/NAME/status                Charging, Discharging, Not charging, Full, Unknown
 *   class/power_supply/NAME/power_now             microwatts (or current_now uA x voltage_now uV)
 *   devices/system/cpu/cpuN/cpufreq/scaling_cur_freq, scaling_max_freq   kHz
 * A value that cannot be read, does not parse as a whole number, or lies outside a plausible
 * range is unknown (NAN); the governor never takes an unknown temperature for a cool one.
 */
#include "../common/common.h"
#include "edgellm_tools.h"
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- reading sysfs ---- */

/* The first line of ROOT/rel (at most size-1 bytes, trailing whitespace removed); 0 when
 * it cannot be read or is empty. */
static int read_line(const char *root, const char *rel, char *buf, size_t size)
{
    char path[1024];
    if (snprintf(path, sizeof path, "%s/%s", root, rel) >= (int)sizeof path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = 0;
    char *nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    n = strlen(buf);
    while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r')) buf[--n] = 0;
    return n > 0;
}

/* A whole decimal integer (optional sign, nothing after it): 1 and *out, else 0. */
static int read_int(const char *root, const char *rel, long long *out)
{
    char buf[64], *end;
    if (!read_line(root, rel, buf, sizeof buf)) return 0;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno || end == buf || *end) return 0;
    *out = v;
    return 1;
}

static int name_has_prefix_num(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(name, prefix, n) || !name[n]) return 0;
    for (const char *p = name + n; *p; p++)
        if (*p < '0' || *p > '9') return 0;
    return 1;
}

/* Plausible temperature range, C: outside it a reading is a broken sensor. */
#define TEMP_MIN_C (-60.0)
#define TEMP_MAX_C 200.0

static void read_thermal(const char *root, edgellm_sensors *s)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/class/thermal", root);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!name_has_prefix_num(e->d_name, "thermal_zone")) continue;
        s->n_zones++;
        char rel[512], type[32] = "";
        long long mc;
        snprintf(rel, sizeof rel, "class/thermal/%s/type", e->d_name);
        if (!read_line(root, rel, type, sizeof type)) snprintf(type, sizeof type, "%.31s", e->d_name);
        snprintf(rel, sizeof rel, "class/thermal/%s/temp", e->d_name);
        const double c = read_int(root, rel, &mc) ? mc / 1000.0 : NAN;
        if (!(c >= TEMP_MIN_C && c <= TEMP_MAX_C)) s->n_zones_bad++;
        else if (isnan(s->temp_c) || c > s->temp_c) {
            s->temp_c = c;
            snprintf(s->temp_zone, sizeof s->temp_zone, "%s", type);
        }
        for (int k = 0; k < 32; k++) {
            char tt[32];
            long long tm;
            snprintf(rel, sizeof rel, "class/thermal/%s/trip_point_%d_type", e->d_name, k);
            if (!read_line(root, rel, tt, sizeof tt)) break;
            snprintf(rel, sizeof rel, "class/thermal/%s/trip_point_%d_temp", e->d_name, k);
            if (!read_int(root, rel, &tm)) continue;
            const double tc = tm / 1000.0;
            if (!(tc >= TEMP_MIN_C && tc <= TEMP_MAX_C)) continue;
            double *dst = !strcmp(tt, "critical") ? &s->trip_crit_c
                        : (!strcmp(tt, "passive") || !strcmp(tt, "hot")) ? &s->trip_hot_c : NULL;
            if (dst && (isnan(*dst) || tc < *dst)) *dst = tc;
        }
    }
    closedir(d);
}

static void read_battery(const char *root, edgellm_sensors *s)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/class/power_supply", root);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char best[256] = "";
    while ((e = readdir(d))) {   /* the first battery by name, for a stable choice */
        if (e->d_name[0] == '.') continue;
        char rel[512], type[32];
        snprintf(rel, sizeof rel, "class/power_supply/%.200s/type", e->d_name);
        if (!read_line(root, rel, type, sizeof type) || strcmp(type, "Battery")) continue;
        if (!best[0] || strcmp(e->d_name, best) < 0) snprintf(best, sizeof best, "%s", e->d_name);
    }
    closedir(d);
    if (!best[0]) return;
    char rel[512], st[32];
    long long v, i, u;
    snprintf(rel, sizeof rel, "class/power_supply/%s/capacity", best);
    if (read_int(root, rel, &v) && v >= 0 && v <= 100) s->battery_pct = (double)v;
    snprintf(rel, sizeof rel, "class/power_supply/%s/status", best);
    if (read_line(root, rel, st, sizeof st)) {
        if (!strcmp(st, "Charging") || !strcmp(st, "Full")) s->charging = 1;
        else if (!strcmp(st, "Discharging") || !strcmp(st, "Not charging")) s->charging = 0;
    }
    snprintf(rel, sizeof rel, "class/power_supply/%s/power_now", best);
    if (read_int(root, rel, &v)) s->power_w = fabs((double)v) / 1e6;
    else {
        char rel2[512];
        snprintf(rel, sizeof rel, "class/power_supply/%s/current_now", best);
        snprintf(rel2, sizeof rel2, "class/power_supply/%s/voltage_now", best);
        if (read_int(root, rel, &i) && read_int(root, rel2, &u)) s->power_w = fabs((double)i) * (double)u / 1e12;
    }
}

static void read_cpufreq(const char *root, edgellm_sensors *s)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/devices/system/cpu", root);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    double sum = 0;
    int n = 0;
    while ((e = readdir(d))) {
        if (!name_has_prefix_num(e->d_name, "cpu")) continue;
        char rel[512];
        long long cur, max;
        snprintf(rel, sizeof rel, "devices/system/cpu/%s/cpufreq/scaling_cur_freq", e->d_name);
        if (!read_int(root, rel, &cur)) continue;
        snprintf(rel, sizeof rel, "devices/system/cpu/%s/cpufreq/scaling_max_freq", e->d_name);
        if (!read_int(root, rel, &max) || max <= 0 || cur < 0) continue;
        double r = (double)cur / (double)max;
        sum += r > 1 ? 1 : r;
        n++;
    }
    closedir(d);
    if (n) s->cpu_freq_ratio = sum / n;
}

static const char *sysfs_root(const char *root)
{
    if (root && *root) return root;
    const char *env = getenv(EDGELLM_SYSFS_ROOT_ENV);
    return env && *env ? env : "/sys";
}

edgellm_status edgellm_sensors_read(const char *root, edgellm_sensors *out, edgellm_error *err)
{
    if (!out || out->size == 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "sensors: NULL or size 0");
    edgellm_sensors s = {.size = sizeof s, .temp_c = NAN, .trip_hot_c = NAN, .trip_crit_c = NAN,
                         .battery_pct = NAN, .charging = -1, .power_w = NAN, .cpu_freq_ratio = NAN};
    root = sysfs_root(root);
    read_thermal(root, &s);
    read_battery(root, &s);
    read_cpufreq(root, &s);
    const size_t n = out->size < sizeof s ? out->size : sizeof s;
    memcpy(out, &s, n);
    out->size = n;
    return EDGELLM_OK;
}

/* ---- the governor ---- */

const char *edgellm_gov_level_name(int level)
{
    static const char *const names[] = {"nominal", "warm", "hot", "critical"};
    return level >= 0 && level < EDGELLM_GOV_N_LEVELS ? names[level] : "?";
}

edgellm_gov_policy edgellm_gov_default_policy(int n_threads)
{
    if (n_threads <= 0) n_threads = 4;
    edgellm_gov_policy p = {
        .size = sizeof p,
        .enter_c = {NAN, 60, 70, 80},
        .hysteresis_c = 3,
        .enter_headroom = {NAN, 0.7, 0.85, 1.0},
        .hysteresis_headroom = 0.05,
        .battery_low_pct = 20,
        .battery_level = EDGELLM_GOV_WARM,
        .unknown_level = EDGELLM_GOV_NOMINAL,
        .poll_s = 1,
        .pause_max_s = 30,
    };
    int warm = n_threads * 3 / 4;
    p.action[EDGELLM_GOV_WARM].n_threads = warm < 1 ? 1 : warm;
    p.action[EDGELLM_GOV_HOT] = (edgellm_gov_action){.n_threads = 1, .max_tok_s = 4, .light_model = 1};
    p.action[EDGELLM_GOV_CRITICAL] = (edgellm_gov_action){.n_threads = 1, .max_tok_s = 4, .light_model = 1, .pause = 1};
    return p;
}

struct edgellm_governor {
    edgellm_gov_policy p;
    pthread_mutex_t lock;            /* guards headroom (set from any thread)        */
    double headroom;                 /* NAN: none fed                                */
    int level_t, level_h;            /* levels by temperature and by headroom        */
    int level;
    const char *reason;
    edgellm_sensors s;
    double last_poll;                /* monotonic s; -inf: never                     */
    double last_token;               /* monotonic s of the previous between_tokens; 0 */
    int temp_known;                  /* -1 before the first poll                     */
    int n_changes;
    double slept_s, max_temp_c;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    if (s <= 0) return;
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static void gov_log(edgellm_governor *g, const char *fmt, ...)
{
    if (!g->p.log) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    g->p.log(g->p.log_user, line);
}

/* Move level cur by value v against thresholds enter[1..3] with hysteresis: up while v
 * reaches the next level's threshold, down while v is below the current one's less hyst. */
static int step_level(int cur, double v, const double *enter, double hyst)
{
    while (cur < EDGELLM_GOV_N_LEVELS - 1 && !isnan(enter[cur + 1]) && v >= enter[cur + 1]) cur++;
    while (cur > 0 && (isnan(enter[cur]) || v < enter[cur] - hyst)) cur--;
    return cur;
}

edgellm_status edgellm_governor_new(const edgellm_gov_policy *policy, edgellm_governor **out, edgellm_error *err)
{
    if (!out || !policy || policy->size == 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "governor: NULL policy");
    *out = NULL;
    edgellm_gov_policy p = edgellm_gov_default_policy(0);
    memcpy(&p, policy, policy->size < sizeof p ? policy->size : sizeof p);
    p.size = sizeof p;
    for (int l = 2; l < EDGELLM_GOV_N_LEVELS; l++)
        for (int k = 1; k < l; k++)
            if (!isnan(p.enter_c[l]) && !isnan(p.enter_c[k]) && p.enter_c[l] <= p.enter_c[k])
                return edgellm_fail(err, EDGELLM_ERR_MISUSE, "governor: level temperatures must increase (%s %.1f C "
                                    "<= %s %.1f C)", edgellm_gov_level_name(l), p.enter_c[l],
                                    edgellm_gov_level_name(k), p.enter_c[k]);
    if (!(p.hysteresis_c >= 0) || !(p.hysteresis_headroom >= 0) || !(p.poll_s >= 0) || !(p.pause_max_s >= 0))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "governor: hysteresis, poll and pause times must be >= 0");
    if (p.battery_level < 0 || p.battery_level >= EDGELLM_GOV_N_LEVELS || p.unknown_level < 0 ||
        p.unknown_level >= EDGELLM_GOV_N_LEVELS)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "governor: battery_level / unknown_level out of range");
    for (int l = 0; l < EDGELLM_GOV_N_LEVELS; l++)
        if (p.action[l].n_threads < 0 || !(p.action[l].max_tok_s >= 0))
            return edgellm_fail(err, EDGELLM_ERR_MISUSE, "governor: %s: threads and tok/s must be >= 0",
                                edgellm_gov_level_name(l));
    edgellm_governor *g = calloc(1, sizeof *g);
    if (!g) return edgellm_fail(err, EDGELLM_ERR_NOMEM, "governor: out of memory");
    g->p = p;
    pthread_mutex_init(&g->lock, NULL);
    g->headroom = NAN;
    g->reason = "start";
    g->last_poll = -INFINITY;
    g->temp_known = -1;
    g->max_temp_c = NAN;
    edgellm_governor_poll(g, 1, NULL);
    *out = g;
    return EDGELLM_OK;
}

void edgellm_governor_free(edgellm_governor *g)
{
    if (!g) return;
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void edgellm_governor_set_headroom(edgellm_governor *g, double headroom)
{
    if (!g) return;
    pthread_mutex_lock(&g->lock);
    g->headroom = headroom;
    pthread_mutex_unlock(&g->lock);
}

static void describe_action(const edgellm_gov_action *a, int has_light, char *buf, size_t size)
{
    int n = a->n_threads ? snprintf(buf, size, "threads %d", a->n_threads) : snprintf(buf, size, "threads as asked");
    if (a->max_tok_s > 0 && n < (int)size) n += snprintf(buf + n, size - n, ", max %.1f tok/s", a->max_tok_s);
    if (a->light_model && has_light && n < (int)size) n += snprintf(buf + n, size - n, ", light model");
    if (a->pause && n < (int)size) snprintf(buf + n, size - n, ", paused");
}

int edgellm_governor_poll(edgellm_governor *g, int force, edgellm_gov_state *out)
{
    if (!g) return 0;
    const double t = now_s();
    int changed = 0;
    if (force || t - g->last_poll >= g->p.poll_s) {
        g->last_poll = t;
        edgellm_sensors s = {.size = sizeof s};
        edgellm_sensors_read(g->p.sysfs_root, &s, NULL);
        pthread_mutex_lock(&g->lock);
        const double h = g->headroom;
        pthread_mutex_unlock(&g->lock);
        const int known = !isnan(s.temp_c);
        if (known != g->temp_known) {
            if (known) gov_log(g, "governor: temperature known: %.1f C (%s)", s.temp_c, s.temp_zone);
            else gov_log(g, "governor: temperature unknown (%d thermal zone%s, %d unreadable)%s", s.n_zones,
                         s.n_zones == 1 ? "" : "s", s.n_zones_bad,
                         isnan(h) ? "; no headroom fed either" : "; using the fed headroom");
            g->temp_known = known;
        }
        if (known && (isnan(g->max_temp_c) || s.temp_c > g->max_temp_c)) g->max_temp_c = s.temp_c;
        g->s = s;
        g->level_t = known ? step_level(g->level_t, s.temp_c, g->p.enter_c, g->p.hysteresis_c) : 0;
        g->level_h = !isnan(h) ? step_level(g->level_h, h, g->p.enter_headroom, g->p.hysteresis_headroom) : 0;
        int level = 0;
        const char *reason = "temperature";
        if (!known && isnan(h)) { level = g->p.unknown_level; reason = "unknown"; }
        if (known && g->level_t > level) { level = g->level_t; reason = "temperature"; }
        if (!isnan(h) && g->level_h > level) { level = g->level_h; reason = "headroom"; }
        const int low_batt = g->p.battery_low_pct > 0 && !isnan(s.battery_pct) && s.battery_pct < g->p.battery_low_pct &&
                             s.charging == 0;
        if (low_batt && g->p.battery_level > level) { level = g->p.battery_level; reason = "battery"; }
        if (level != g->level) {
            char act[128], why[160];
            describe_action(&g->p.action[level], g->p.light_model_path != NULL, act, sizeof act);
            if (!strcmp(reason, "battery"))
                snprintf(why, sizeof why, "battery %.0f %% < %.0f %%, not charging", s.battery_pct, g->p.battery_low_pct);
            else if (!strcmp(reason, "headroom")) snprintf(why, sizeof why, "headroom %.2f", h);
            else if (!strcmp(reason, "unknown")) snprintf(why, sizeof why, "temperature and headroom unknown");
            else if (known) snprintf(why, sizeof why, "temp %.1f C (%s)", s.temp_c, s.temp_zone);
            else snprintf(why, sizeof why, "temperature unknown");
            gov_log(g, "governor: %s -> %s: %s; %s", edgellm_gov_level_name(g->level), edgellm_gov_level_name(level),
                    why, act);
            g->level = level;
            g->reason = reason;
            g->n_changes++;
            changed = 1;
        }
    }
    if (out && out->size) {
        edgellm_gov_state st = {.size = sizeof st, .level = g->level, .reason = g->reason, .sensors = g->s,
                                .action = g->p.action[g->level], .n_changes = g->n_changes,
                                .slept_s = g->slept_s, .max_temp_c = g->max_temp_c,
                                .pause_max_s = g->p.pause_max_s};
        pthread_mutex_lock(&g->lock);
        st.headroom = g->headroom;
        pthread_mutex_unlock(&g->lock);
        memcpy(out, &st, out->size < sizeof st ? out->size : sizeof st);
    }
    return changed;
}

double edgellm_governor_between_tokens(edgellm_governor *g)
{
    if (!g) return 0;
    edgellm_governor_poll(g, 0, NULL);
    double slept = 0;
    const double t0 = now_s();
    /* paused: wait for the level to drop, polling at least every 0.25 s */
    while (g->p.action[g->level].pause && now_s() - t0 < g->p.pause_max_s) {
        double step = g->p.poll_s > 0 && g->p.poll_s < 0.25 ? g->p.poll_s : 0.25;
        sleep_s(step);
        edgellm_governor_poll(g, 0, NULL);
    }
    const double cap = g->p.action[g->level].max_tok_s;
    if (cap > 0 && g->last_token > 0) {
        const double wait = g->last_token + 1.0 / cap - now_s();
        if (wait > 0) sleep_s(wait);
    }
    const double t1 = now_s();
    slept = t1 - t0;
    g->slept_s += slept;
    g->last_token = t1;
    return slept;
}

int edgellm_governor_admit(edgellm_governor *g)
{
    if (!g) return 1;
    edgellm_governor_poll(g, 0, NULL);
    g->last_token = 0;   /* the duty cycle starts again with each request */
    return !g->p.action[g->level].pause;
}

int edgellm_governor_threads(edgellm_governor *g, int app_threads)
{
    if (!g) return app_threads;
    const int n = g->p.action[g->level].n_threads;
    return n > 0 && (app_threads <= 0 || n < app_threads) ? n : app_threads;
}

const char *edgellm_governor_model(edgellm_governor *g, const char *default_path)
{
    if (!g || !g->p.action[g->level].light_model || !g->p.light_model_path) return default_path;
    return g->p.light_model_path;
}
