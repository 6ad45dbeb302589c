/* governor_opts.c — the governor's command-line options (governor_opts.h). */
#include "governor_opts.h"
#include "commands.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    if (!o->enabled && !o->n_given) return 0;
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
