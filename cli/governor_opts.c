/* governor_opts.c — the governor's command-line options (governor_opts.h). */
#include "governor_opts.h"
#include "commands.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef EDGELLM_HAVE_CJSON
#include <cjson/cJSON.h>
#endif

const cli_choice cli_gov_levels[] = {
    {"nominal", EDGELLM_GOV_NOMINAL}, {"warm", EDGELLM_GOV_WARM}, {"hot", EDGELLM_GOV_HOT},
    {"critical", EDGELLM_GOV_CRITICAL}, {NULL, 0},
};

const cli_choice cli_sim_loads[] = {{"cpu", 0}, {"declared", 1}, {NULL, 0}};

void cli_gov_opts_init(cli_gov_opts *o)
{
    const edgellm_gov_policy p = edgellm_gov_default_policy(0);
    const edgellm_simdev_params sp = edgellm_simdev_default_params();
    *o = (cli_gov_opts){.hysteresis_c = p.hysteresis_c, .battery_pct = p.battery_low_pct,
                        .unknown_level = p.unknown_level, .sim_tau_s = sp.tau_s, .sim_k = sp.k_c_per_cpu};
    for (int i = 0; i < 3; i++) {
        o->temps[i] = p.enter_c[i + 1];
        o->tok_s[i] = p.action[i + 1].max_tok_s;
    }
}

int cli_parse_three(const char *opt, const char *value, void *dst, char *msg, size_t msg_size)
{
    double v[3];
    const char *p = value;
    for (int i = 0; i < 3; i++) {
        char *end;
        v[i] = strtod(p, &end);
        if (end == p || !isfinite(v[i]) || v[i] < 0 || (i < 2 ? *end != ',' : *end != 0)) {
            snprintf(msg, msg_size, "%s expects three non-negative numbers A,B,C, got '%s'", opt, value);
            return 1;
        }
        p = end + 1;
    }
    memcpy(dst, v, sizeof v);
    return 0;
}

static void log_line(void *user, const char *line)
{
    fprintf(stderr, "edgellm %s: %s\n", (const char *)user, line);
}

#ifdef EDGELLM_HAVE_CJSON
/* Up to 3 numbers of array key (warm, hot, critical) into dst[1..3]; 0 on a bad value. */
static int json_three(const cJSON *root, const char *key, double *dst, char *msg, size_t size)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!a) return 1;
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != 3) {
        snprintf(msg, size, "\"%s\" must be an array of 3 numbers (warm, hot, critical)", key);
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0) {
            snprintf(msg, size, "\"%s\"[%d] must be a non-negative number", key, i);
            return 0;
        }
        dst[i + 1] = v->valuedouble;
    }
    return 1;
}

static int json_level(const cJSON *root, const char *key, int *dst, char *msg, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return 1;
    for (int i = 0; cJSON_IsString(v) && cli_gov_levels[i].name; i++)
        if (!strcmp(v->valuestring, cli_gov_levels[i].name)) { *dst = cli_gov_levels[i].value; return 1; }
    snprintf(msg, size, "\"%s\" must be one of nominal, warm, hot, critical", key);
    return 0;
}

static int json_num(const cJSON *root, const char *key, double *dst, char *msg, size_t size)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return 1;
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0) { *dst = v->valuedouble; return 1; }
    snprintf(msg, size, "\"%s\" must be a non-negative number", key);
    return 0;
}
#endif

/* The policy file over p (keys in docs/governor.md); strings it names stay in *owned. */
static int read_policy(const char *cmd, const char *path, edgellm_gov_policy *p, char **light)
{
    edgellm_error err = {0};
#ifndef EDGELLM_HAVE_CJSON
    (void)p;
    (void)light;
    fprintf(stderr, "edgellm %s: %s: built without cJSON (libcjson-dev): no policy files\n", cmd, path);
    return 1;
#else
    size_t len = 0;
    free(*light);
    *light = NULL;
    char *text = cli_read_text(path, &len, &err);
    if (!text) { cli_print_error(cmd, &err); return 1; }
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    char msg[256] = "";
    int ok = root && cJSON_IsObject(root);
    if (!ok) snprintf(msg, sizeof msg, "not a JSON object");
    double thr[4], tok[4], headroom[4];
    for (int i = 0; i < 4; i++) {
        thr[i] = (double)p->action[i].n_threads;
        tok[i] = p->action[i].max_tok_s;
        headroom[i] = p->enter_headroom[i];
    }
    double poll = p->poll_s, pause_max = p->pause_max_s;
    ok = ok && json_three(root, "enter_c", p->enter_c, msg, sizeof msg) &&
         json_three(root, "enter_headroom", headroom, msg, sizeof msg) && json_three(root, "threads", thr, msg, sizeof msg) &&
         json_three(root, "max_tok_s", tok, msg, sizeof msg) &&
         json_num(root, "hysteresis_c", &p->hysteresis_c, msg, sizeof msg) &&
         json_num(root, "hysteresis_headroom", &p->hysteresis_headroom, msg, sizeof msg) &&
         json_num(root, "battery_low_pct", &p->battery_low_pct, msg, sizeof msg) &&
         json_level(root, "battery_level", &p->battery_level, msg, sizeof msg) &&
         json_level(root, "unknown_level", &p->unknown_level, msg, sizeof msg) &&
         json_num(root, "poll_s", &poll, msg, sizeof msg) && json_num(root, "pause_max_s", &pause_max, msg, sizeof msg);
    int pause_from = -1, light_from = -1;
    if (ok && !json_level(root, "pause_from", &pause_from, msg, sizeof msg)) ok = 0;
    if (ok && !json_level(root, "light_model_from", &light_from, msg, sizeof msg)) ok = 0;
    const cJSON *lm = ok ? cJSON_GetObjectItemCaseSensitive(root, "light_model") : NULL;
    if (lm && !cJSON_IsString(lm)) { ok = 0; snprintf(msg, sizeof msg, "\"light_model\" must be a file name"); }
    if (ok && lm && !(*light = strdup(lm->valuestring))) ok = 0;
    if (ok) {
        for (int i = 1; i < 4; i++) {
            p->action[i].n_threads = (int)thr[i];
            p->action[i].max_tok_s = tok[i];
            p->enter_headroom[i] = headroom[i];
            if (pause_from >= 0) p->action[i].pause = i >= pause_from;
            if (light_from >= 0) p->action[i].light_model = i >= light_from;
        }
        p->poll_s = poll;
        p->pause_max_s = pause_max;
        if (*light) p->light_model_path = *light;
    }
    cJSON_Delete(root);
    if (!ok) fprintf(stderr, "edgellm %s: %s: %s\n", cmd, path, msg[0] ? msg : "out of memory");
    return !ok;
#endif
}

int cli_gov_start(const char *cmd, const cli_gov_opts *o, int app_threads, edgellm_governor **g, edgellm_simdev **d)
{
    *g = NULL;
    *d = NULL;
    edgellm_error err = {0};
    if (o->sim_dir) {
        edgellm_simdev_params sp = edgellm_simdev_default_params();
        sp.root = o->sim_dir;
        sp.tau_s = o->sim_tau_s;
        sp.k_c_per_cpu = o->sim_k;
        sp.declared_load = o->sim_load;
        if (edgellm_simdev_start(&sp, d, &err) != EDGELLM_OK) { cli_print_error(cmd, &err); return 1; }
    }
    if (!o->enabled && !o->n_given && !o->policy_file) return 0;
    edgellm_gov_policy p = edgellm_gov_default_policy(app_threads);
    p.sysfs_root = o->sim_dir ? o->sim_dir : o->sysfs_root;
    for (int i = 0; i < 3; i++) {
        p.enter_c[i + 1] = o->temps[i];
        p.action[i + 1].max_tok_s = o->tok_s[i];
    }
    p.hysteresis_c = o->hysteresis_c;
    p.battery_low_pct = o->battery_pct;
    p.unknown_level = o->unknown_level;
    p.light_model_path = o->light_model;
    p.log = log_line;
    p.log_user = (void *)cmd;
    static char *light_from_file;   /* lives as long as the process: the governor borrows it */
    if (o->policy_file) {
        if (o->n_given > (o->light_model ? 1 : 0) + (o->sysfs_root ? 1 : 0)) {
            fprintf(stderr, "edgellm %s: give --gov-policy or the --gov-* options, not both\n", cmd);
            edgellm_simdev_stop(*d);
            *d = NULL;
            return 1;
        }
        if (read_policy(cmd, o->policy_file, &p, &light_from_file)) {
            edgellm_simdev_stop(*d);
            *d = NULL;
            return 1;
        }
        if (o->light_model) p.light_model_path = o->light_model;
    }
    if (edgellm_governor_new(&p, g, &err) != EDGELLM_OK) {
        cli_print_error(cmd, &err);
        edgellm_simdev_stop(*d);
        *d = NULL;
        return 1;
    }
    return 0;
}

void cli_gov_stop(edgellm_governor *g, edgellm_simdev *d)
{
    edgellm_governor_free(g);
    edgellm_simdev_stop(d);
}

/* "300M", "1.5G", "512MiB", "4096K", bytes -> bytes (K/M/G/T powers of 1024) */
int cli_parse_size(const char *opt, const char *value, void *dst, char *msg, size_t msg_size)
{
    char *end;
    double v = strtod(value, &end);
    double k = 1;
    if (end != value && *end) {
        const char *u = "KMGT", *q = strchr(u, *end >= 'a' ? *end - 32 : *end);
        if (q && *end) {
            for (const char *x = u; x <= q; x++) k *= 1024;
            end++;
            if (!strcmp(end, "iB") || !strcmp(end, "B") || !strcmp(end, "ib") || !strcmp(end, "b")) end += strlen(end);
        }
    }
    if (end == value || *end || !(v > 0) || v * k > 1e18) {
        snprintf(msg, msg_size, "%s expects a size such as 300M, 1.5G or 800MiB, got '%s'", opt, value);
        return 1;
    }
    *(uint64_t *)dst = (uint64_t)(v * k);
    return 0;
}
