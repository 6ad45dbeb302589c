/* test_governor.c — sensors read from fake sysfs trees (scripted values, NaN, garbage,
 * missing files), the governor's levels with hysteresis, battery and headroom rules, its
 * duty cycle and log, and the simulated device heating under load and cooling at rest. */
#include "test_util.h"
#include <time.h>

static void put(const char *root, const char *rel, const char *text)
{
    char path[1024], dir[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(dir, sizeof dir, "mkdir -p '%.900s'", path);
    *strrchr(dir, '/') = 0;
    strcat(dir, "'");
    if (system(dir) != 0) { fprintf(stderr, "mkdir failed\n"); exit(1); }
    if (write_file(path, text, strlen(text))) { fprintf(stderr, "cannot write %s\n", path); exit(1); }
}

static const char *fresh_root(const char *name)
{
    static char root[512];
    snprintf(root, sizeof root, "%s/%s", test_tmpdir(), name);
    return root;
}

static void set_temp(const char *root, double c)
{
    char v[32];
    snprintf(v, sizeof v, "%lld\n", (long long)(c * 1000));
    put(root, "class/thermal/thermal_zone0/temp", v);
}

static void test_sensors_read(void)
{
    const char *root = fresh_root("s1");
    put(root, "class/thermal/thermal_zone0/type", "cpu-thermal\n");
    put(root, "class/thermal/thermal_zone0/temp", "45500\n");
    put(root, "class/thermal/thermal_zone0/trip_point_0_type", "passive\n");
    put(root, "class/thermal/thermal_zone0/trip_point_0_temp", "75000\n");
    put(root, "class/thermal/thermal_zone0/trip_point_1_type", "critical\n");
    put(root, "class/thermal/thermal_zone0/trip_point_1_temp", "95000\n");
    put(root, "class/thermal/thermal_zone1/type", "gpu-thermal\n");
    put(root, "class/thermal/thermal_zone1/temp", "52000\n");
    put(root, "class/power_supply/AC/type", "Mains\n");
    put(root, "class/power_supply/BAT0/type", "Battery\n");
    put(root, "class/power_supply/BAT0/capacity", "57\n");
    put(root, "class/power_supply/BAT0/status", "Discharging\n");
    put(root, "class/power_supply/BAT0/current_now", "500000\n");
    put(root, "class/power_supply/BAT0/voltage_now", "4000000\n");
    put(root, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "1000000\n");
    put(root, "devices/system/cpu/cpu0/cpufreq/scaling_max_freq", "2000000\n");
    put(root, "devices/system/cpu/cpu1/cpufreq/scaling_cur_freq", "2000000\n");
    put(root, "devices/system/cpu/cpu1/cpufreq/scaling_max_freq", "2000000\n");
    edgellm_sensors s = {.size = sizeof s};
    CHECK_OK(edgellm_sensors_read(root, &s, &_e));
    CHECK_NEAR(s.temp_c, 52.0, 1e-9);
    CHECK(!strcmp(s.temp_zone, "gpu-thermal"));
    CHECK_EQ(s.n_zones, 2);
    CHECK_EQ(s.n_zones_bad, 0);
    CHECK_NEAR(s.trip_hot_c, 75.0, 1e-9);
    CHECK_NEAR(s.trip_crit_c, 95.0, 1e-9);
    CHECK_NEAR(s.battery_pct, 57, 1e-9);
    CHECK_EQ(s.charging, 0);
    CHECK_NEAR(s.power_w, 2.0, 1e-9);
    CHECK_NEAR(s.cpu_freq_ratio, 0.75, 1e-9);
    /* the root from the environment */
    setenv(EDGELLM_SYSFS_ROOT_ENV, root, 1);
    edgellm_sensors s2 = {.size = sizeof s2};
    CHECK_OK(edgellm_sensors_read(NULL, &s2, &_e));
    CHECK_NEAR(s2.temp_c, 52.0, 1e-9);
    unsetenv(EDGELLM_SYSFS_ROOT_ENV);
    /* a short struct (an older caller) gets only its bytes */
    edgellm_sensors s3 = {.size = offsetof(edgellm_sensors, temp_zone)};
    s3.temp_zone[0] = 'x';
    CHECK_OK(edgellm_sensors_read(root, &s3, &_e));
    CHECK_NEAR(s3.temp_c, 52.0, 1e-9);
    CHECK(s3.temp_zone[0] == 'x');
    CHECK(edgellm_sensors_read(root, NULL, NULL) == EDGELLM_ERR_MISUSE);
}

/* NaN, garbage, empty, out-of-range and missing sensors are unknown, never cool. */
static void test_sensors_bad(void)
{
    const char *bad[] = {"nan\n", "NaN", "garbage\n", "", "45x\n", "999999999\n", "-1000000\n", "45 000\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char name[16];
        snprintf(name, sizeof name, "bad%zu", i);
        const char *root = fresh_root(name);
        put(root, "class/thermal/thermal_zone0/type", "cpu\n");
        put(root, "class/thermal/thermal_zone0/temp", bad[i]);
        put(root, "class/power_supply/BAT0/type", "Battery\n");
        put(root, "class/power_supply/BAT0/capacity", i % 2 ? "101\n" : "nan\n");
        put(root, "class/power_supply/BAT0/status", "Weird\n");
        edgellm_sensors s = {.size = sizeof s};
        CHECK_OK(edgellm_sensors_read(root, &s, &_e));
        CHECK(isnan(s.temp_c));
        CHECK_EQ(s.n_zones, 1);
        CHECK_EQ(s.n_zones_bad, 1);
        CHECK(isnan(s.battery_pct));
        CHECK_EQ(s.charging, -1);
    }
    /* a missing tree: everything unknown, no error */
    edgellm_sensors s = {.size = sizeof s};
    CHECK_OK(edgellm_sensors_read(fresh_root("does-not-exist"), &s, &_e));
    CHECK(isnan(s.temp_c) && isnan(s.battery_pct) && isnan(s.cpu_freq_ratio) && isnan(s.power_w));
    CHECK_EQ(s.n_zones, 0);
    /* one bad zone beside a good one: the good one counts, the bad one is reported */
    const char *root = fresh_root("mixed");
    put(root, "class/thermal/thermal_zone0/temp", "nan\n");
    put(root, "class/thermal/thermal_zone1/temp", "41000\n");
    CHECK_OK(edgellm_sensors_read(root, &s, &_e));
    CHECK_NEAR(s.temp_c, 41.0, 1e-9);
    CHECK_EQ(s.n_zones_bad, 1);
}

typedef struct { char lines[32][512]; int n; } log_buf;
static void collect(void *user, const char *line)
{
    log_buf *b = user;
    if (b->n < 32) snprintf(b->lines[b->n++], sizeof b->lines[0], "%s", line);
}

static int level_at(edgellm_governor *g, const char *root, double c)
{
    set_temp(root, c);
    edgellm_gov_state st = {.size = sizeof st};
    edgellm_governor_poll(g, 1, &st);
    return st.level;
}

static void test_levels_hysteresis(void)
{
    const char *root = fresh_root("lv");
    set_temp(root, 40);
    log_buf lb = {0};
    edgellm_gov_policy p = edgellm_gov_default_policy(4);
    p.sysfs_root = root;
    p.poll_s = 0;
    p.log = collect;
    p.log_user = &lb;
    edgellm_governor *g = NULL;
    CHECK_OK(edgellm_governor_new(&p, &g, &_e));
    /* enter at 60 / 70 / 80, leave 3 C below */
    const struct { double c; int level; } script[] = {
        {40, 0}, {59.9, 0}, {60, 1}, {58, 1}, {57.1, 1}, {56.9, 0}, {65, 1}, {71, 2}, {68, 2},
        {66.9, 1}, {85, 3}, {78, 3}, {76.9, 2}, {50, 0}, {90, 3}, {30, 0},
    };
    int changes = 0, prev = 0;
    for (size_t i = 0; i < sizeof script / sizeof script[0]; i++) {
        const int l = level_at(g, root, script[i].c);
        if (l != script[i].level) fprintf(stderr, "  at %.1f C: level %d, want %d\n", script[i].c, l, script[i].level);
        CHECK_EQ(l, script[i].level);
        changes += l != prev;
        prev = l;
    }
    edgellm_gov_state st = {.size = sizeof st};
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.n_changes, changes);
    CHECK_NEAR(st.max_temp_c, 90, 1e-9);
    /* one line per change (plus "temperature known" at the start) */
    CHECK_EQ(lb.n, changes + 1);
    CHECK(strstr(lb.lines[0], "temperature known") != NULL);
    CHECK(strstr(lb.lines[1], "nominal -> warm") != NULL && strstr(lb.lines[1], "60.0 C") != NULL);
    /* the actions of a level */
    level_at(g, root, 72);
    CHECK_EQ(edgellm_governor_threads(g, 4), 1);
    CHECK(!strcmp(edgellm_governor_model(g, "big.gguf"), "big.gguf"));   /* no light model set */
    CHECK_EQ(edgellm_governor_admit(g), 1);
    level_at(g, root, 61);
    CHECK_EQ(edgellm_governor_threads(g, 4), 3);
    CHECK_EQ(edgellm_governor_threads(g, 2), 2);   /* never more than the application asked */
    edgellm_governor_free(g);

    p.light_model_path = "small.gguf";
    p.log = NULL;
    set_temp(root, 81);
    CHECK_OK(edgellm_governor_new(&p, &g, &_e));
    CHECK(!strcmp(edgellm_governor_model(g, "big.gguf"), "small.gguf"));
    CHECK_EQ(edgellm_governor_admit(g), 0);   /* critical pauses */
    edgellm_governor_free(g);

    /* levels out of order are refused */
    p.enter_c[2] = 55;
    CHECK(edgellm_governor_new(&p, &g, NULL) == EDGELLM_ERR_MISUSE);
}

/* Unknown temperature: reported, and the policy's unknown_level applies. */
static void test_unknown(void)
{
    const char *root = fresh_root("unk");
    put(root, "class/thermal/thermal_zone0/temp", "nan\n");
    log_buf lb = {0};
    edgellm_gov_policy p = edgellm_gov_default_policy(4);
    p.sysfs_root = root;
    p.poll_s = 0;
    p.log = collect;
    p.log_user = &lb;
    p.unknown_level = EDGELLM_GOV_WARM;
    edgellm_governor *g = NULL;
    CHECK_OK(edgellm_governor_new(&p, &g, &_e));
    edgellm_gov_state st = {.size = sizeof st};
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_WARM);
    CHECK(!strcmp(st.reason, "unknown"));
    CHECK(lb.n >= 1 && strstr(lb.lines[0], "temperature unknown") != NULL);
    /* a fed headroom takes over */
    edgellm_governor_set_headroom(g, 0.9);
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_HOT);
    CHECK(!strcmp(st.reason, "headroom"));
    edgellm_governor_set_headroom(g, 0.82);   /* within the hysteresis of hot (0.85 - 0.05) */
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_HOT);
    edgellm_governor_set_headroom(g, 0.5);
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_NOMINAL);
    /* the sensor comes back */
    set_temp(root, 62);
    edgellm_governor_set_headroom(g, NAN);
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_WARM);
    CHECK(!strcmp(st.reason, "temperature"));
    int found = 0;
    for (int i = 0; i < lb.n; i++) found |= strstr(lb.lines[i], "temperature known") != NULL;
    CHECK(found);
    edgellm_governor_free(g);
}

static void test_battery(void)
{
    const char *root = fresh_root("bat");
    set_temp(root, 40);
    put(root, "class/power_supply/battery/type", "Battery\n");
    put(root, "class/power_supply/battery/capacity", "15\n");
    put(root, "class/power_supply/battery/status", "Discharging\n");
    edgellm_gov_policy p = edgellm_gov_default_policy(4);
    p.sysfs_root = root;
    p.poll_s = 0;
    edgellm_governor *g = NULL;
    CHECK_OK(edgellm_governor_new(&p, &g, &_e));
    edgellm_gov_state st = {.size = sizeof st};
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_WARM);
    CHECK(!strcmp(st.reason, "battery"));
    put(root, "class/power_supply/battery/status", "Charging\n");
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_NOMINAL);
    put(root, "class/power_supply/battery/status", "Discharging\n");
    set_temp(root, 75);   /* hotter than the battery rule asks: temperature wins */
    edgellm_governor_poll(g, 1, &st);
    CHECK_EQ(st.level, EDGELLM_GOV_HOT);
    CHECK(!strcmp(st.reason, "temperature"));
    edgellm_governor_free(g);
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The duty cycle: at most max_tok_s tokens per second. */
static void test_duty_cycle(void)
{
    const char *root = fresh_root("duty");
    set_temp(root, 72);
    edgellm_gov_policy p = edgellm_gov_default_policy(2);
    p.sysfs_root = root;
    p.action[EDGELLM_GOV_HOT].max_tok_s = 20;
    edgellm_governor *g = NULL;
    CHECK_OK(edgellm_governor_new(&p, &g, &_e));
    CHECK_EQ(edgellm_governor_admit(g), 1);
    const double t0 = mono();
    for (int i = 0; i < 11; i++) edgellm_governor_between_tokens(g);
    const double dt = mono() - t0;
    CHECK(dt >= 0.49);   /* 10 intervals of 1/20 s */
    CHECK(dt < 2.0);
    edgellm_gov_state st = {.size = sizeof st};
    edgellm_governor_poll(g, 0, &st);
    CHECK(st.slept_s >= 0.45);
    edgellm_governor_free(g);
}

/* Pause: between_tokens waits until the level drops (here: pause_max_s). */
static void test_pause(void)
{
    const char *root = fresh_root("pause");
    set_temp(root, 85);
    edgellm_gov_policy p = edgellm_gov_default_policy(2);
    p.sysfs_root = root;
    p.poll_s = 0.05;
    p.pause_max_s = 0.3;
    edgellm_governor *g = NULL;
    CHECK_OK(edgellm_governor_new(&p, &g, &_e));
    const double t0 = mono();
    edgellm_governor_between_tokens(g);
    const double dt = mono() - t0;
    CHECK(dt >= 0.29 && dt < 1.5);
    edgellm_governor_free(g);
}

static volatile double sink;
static void burn(double seconds)
{
    const double t0 = mono();
    double x = 1;
    while (mono() - t0 < seconds)
        for (int i = 0; i < 100000; i++) x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* The simulated device heats while this process computes and cools while it sleeps; the
 * governor reads it through the tree. */
static void test_simdev(void)
{
    const char *root = fresh_root("sim");
    edgellm_simdev_params sp = edgellm_simdev_default_params();
    sp.root = root;
    sp.tau_s = 0.5;
    sp.k_c_per_cpu = 40;
    sp.trip_c = 31;   /* any heating throttles */
    sp.throttle_span_c = 10;
    edgellm_simdev *d = NULL;
    CHECK_OK(edgellm_simdev_start(&sp, &d, &_e));
    CHECK_NEAR(edgellm_simdev_temp(d), 30, 1e-9);
    struct timespec c0, c1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    burn(1.5);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    /* the CPU this process got (a shared machine gives less than one CPU): the model's
     * steady state is 30 + 40 x busy, reached to 1 - e^-3 after 1.5 s */
    const double busy = ((c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9) / 1.5;
    const double hot = edgellm_simdev_temp(d);
    fprintf(stderr, "  simdev: after 1.5 s of compute (%.2f CPUs) %.1f C (model: %.1f C), speed %.2f\n", busy, hot,
            30 + 40 * busy * 0.95, edgellm_simdev_speed(d));
    CHECK(busy > 0.05);
    CHECK(hot > 30 + 40 * busy * 0.6);
    CHECK(hot < 30 + 40 * busy * 1.3 + 1);
    CHECK(edgellm_simdev_speed(d) < 1.0);
    edgellm_sensors s = {.size = sizeof s};
    CHECK_OK(edgellm_sensors_read(root, &s, &_e));
    CHECK(s.temp_c > 30 + 40 * busy * 0.5);
    CHECK_NEAR(s.trip_hot_c, 31, 1e-9);
    CHECK(s.cpu_freq_ratio < 1.0);
    struct timespec ts = {1, 500000000};
    nanosleep(&ts, NULL);
    const double cool = edgellm_simdev_temp(d);
    fprintf(stderr, "  simdev: after 1.5 s idle %.1f C\n", cool);
    CHECK(cool < 30 + (hot - 30) * 0.3);
    edgellm_simdev_stop(d);
}

/* Declared load: the caller says how many CPUs compute; the model follows exactly. */
static void test_simdev_declared(void)
{
    const char *root = fresh_root("simdecl");
    edgellm_simdev_params sp = edgellm_simdev_default_params();
    sp.root = root;
    sp.tau_s = 0.5;
    sp.k_c_per_cpu = 20;
    sp.declared_load = 1;
    edgellm_simdev *d = NULL;
    CHECK_OK(edgellm_simdev_start(&sp, &d, &_e));
    edgellm_simdev_set_load(d, 2);
    struct timespec ts = {1, 0};
    nanosleep(&ts, NULL);
    const double hot = edgellm_simdev_temp(d);   /* 30 + 40 (1 - e^-2) = 64.6, less a tick */
    fprintf(stderr, "  declared 2 CPUs for 1 s: %.1f C (model 64.6)\n", hot);
    CHECK(hot > 58 && hot < 66);
    edgellm_simdev_set_load(d, 0);
    nanosleep(&ts, NULL);
    const double cool = edgellm_simdev_temp(d);
    CHECK(cool < 30 + (hot - 30) * 0.2);
    edgellm_simdev_stop(d);
}

/* The CLI: run logs the level from a fake tree and keeps the duty cycle; soak writes its
 * report on a simulated device through the governor. */
static void test_cli(void)
{
    NEED_SHARED(model, "models/stories260K/stories260K.gguf");
    const char *root = fresh_root("cli");
    set_temp(root, 72);
    char cmd[2048], out[600];
    snprintf(out, sizeof out, "%s/run.err", test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s run -m %s -p Once -n 6 --temp 0 -t 2 --sysfs-root %s --gov-tok-s 0,20,20 "
                              ">/dev/null 2>%s", EDGELLM_CLI, model, root, out);
    const double t0 = mono();
    CHECK_EQ(system(cmd), 0);
    const double dt = mono() - t0;
    size_t n = 0;
    char *err = read_file(out, &n);
    CHECK(err && strstr(err, "governor: nominal -> hot: temp 72.0 C") != NULL);
    free(err);
    CHECK(dt >= 0.2);   /* 6 tokens at 20 tok/s at most */
    char rep[512];
    snprintf(rep, sizeof rep, "%s/rep", test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s soak -m %s --duration 3s --interval 1s -n 16 -t 1 --sim-device %s/simcli --governor "
                              "--report %s >%s 2>&1", EDGELLM_CLI, model, test_tmpdir(), rep, out);
    const int st = system(cmd);   /* 0 pass, 1 a flag (a 3 s run on a shared machine may raise one) */
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) <= 1);
    err = read_file(out, &n);
    CHECK(err && strstr(err, "verdict  ") != NULL && strstr(err, "temperature              max"));
    free(err);
    snprintf(out, sizeof out, "%s/soak.svg", rep);
    err = read_file(out, &n);
    CHECK(err && strstr(err, "</svg>"));
    free(err);
    /* chat: the level is logged and the answer paced */
    snprintf(out, sizeof out, "%s/chat.err", test_tmpdir());
    snprintf(cmd, sizeof cmd, "printf 'hello\\n' | %s chat -m %s --chat-template chatml -n 4 --temp 0 -t 2 "
                              "--sysfs-root %s >/dev/null 2>%s", EDGELLM_CLI, model, root, out);
    CHECK_EQ(system(cmd), 0);
    err = read_file(out, &n);
    CHECK(err && strstr(err, "edgellm chat: governor: nominal -> hot") != NULL);
    free(err);
    /* a policy file: hot from 50 C */
    char pol[600];
    snprintf(pol, sizeof pol, "%s/policy.json", test_tmpdir());
    const char *js = "{\"enter_c\": [40, 50, 90], \"hysteresis_c\": 2, \"max_tok_s\": [0, 30, 1], "
                     "\"threads\": [2, 1, 1], \"pause_from\": \"critical\", \"unknown_level\": \"warm\"}";
    CHECK_EQ(write_file(pol, js, strlen(js)), 0);
    snprintf(out, sizeof out, "%s/pol.err", test_tmpdir());
    snprintf(cmd, sizeof cmd, "%s run -m %s -p Once -n 3 --temp 0 -t 2 --sysfs-root %s --gov-policy %s >/dev/null 2>%s",
             EDGELLM_CLI, model, root, pol, out);
    CHECK_EQ(system(cmd), 0);
    err = read_file(out, &n);
    CHECK(err && strstr(err, "nominal -> hot") && strstr(err, "max 30.0 tok/s"));
    free(err);
    js = "{\"enter_c\": [40, 50]}";
    CHECK_EQ(write_file(pol, js, strlen(js)), 0);
    CHECK_EQ(WEXITSTATUS(system(cmd)), 1);
    err = read_file(out, &n);
    CHECK(err && strstr(err, "\"enter_c\" must be an array of 3 numbers"));
    free(err);
    /* a command-line error */
    snprintf(cmd, sizeof cmd, "%s soak -m %s --duration 3x >/dev/null 2>&1", EDGELLM_CLI, model);
    CHECK_EQ(WEXITSTATUS(system(cmd)), 2);
}

int main(void)
{
    RUN(test_sensors_read);
    RUN(test_sensors_bad);
    RUN(test_levels_hysteresis);
    RUN(test_unknown);
    RUN(test_battery);
    RUN(test_duty_cycle);
    RUN(test_pause);
    RUN(test_simdev);
    RUN(test_simdev_declared);
    RUN(test_cli);
    return test_summary();
}
