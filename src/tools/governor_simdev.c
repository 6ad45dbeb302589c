/*
 * governor_simdev.c — a simulated device: a fake sysfs tree whose thermal zone follows a
 * first-order (lumped RC) thermal model driven by this process's CPU time, so that the
 * governor can be shown and tested on a machine without thermal zones.
 *
 * Model, per update of dt seconds (exact solution of dT/dt = (T_ss - T) / tau over dt with
 * T_ss held constant): T_ss = ambient + k x busy, busy = CPU seconds of the process
 * (CLOCK_PROCESS_CPUTIME_ID, all threads) per wall second over dt, and
 * T += (T_ss - T) x (1 - exp(-dt / tau)); or, with declared_load, busy = the CPUs the caller
 * says it computes on, integrated over dt (a device running the workload alone). Throttling above the trip point: speed =
 * max(min_speed, 1 - (T - trip) / span), published as scaling_cur_freq = speed x max.
 * Files are replaced by rename, so a reader sees an old or a new value, never half of one.
 */
#include "../common/common.h"
#include "edgellm_tools.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SIMDEV_MAX_FREQ_KHZ 2000000LL
#define SIMDEV_STEP_S 0.1

struct edgellm_simdev {
    edgellm_simdev_params p;
    char root[768];
    pthread_t thread;
    atomic_int stop;
    pthread_mutex_t lock;
    double temp_c, speed;
    double load, load_since, load_integral;   /* declared CPUs, since when, CPU-seconds */
};

edgellm_simdev_params edgellm_simdev_default_params(void)
{
    return (edgellm_simdev_params){.size = sizeof(edgellm_simdev_params), .ambient_c = 30, .k_c_per_cpu = 30,
                                   .tau_s = 30, .trip_c = 70, .throttle_span_c = 15, .min_speed = 0.4,
                                   .start_c = NAN};
}

static int mkdirs(const char *path)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buf, 0755) && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

/* Write "text\n" to ROOT/rel through a temporary file and rename. */
static int put(const char *root, const char *rel, const char *text)
{
    char path[1024], tmp[1100];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "%s\n", text);
    if (fclose(f)) return -1;
    return rename(tmp, path);
}

static void publish(edgellm_simdev *d, double temp, double speed)
{
    char v[64];
    snprintf(v, sizeof v, "%lld", (long long)llround(temp * 1000));
    put(d->root, "class/thermal/thermal_zone0/temp", v);
    snprintf(v, sizeof v, "%lld", (long long)llround(speed * SIMDEV_MAX_FREQ_KHZ));
    put(d->root, "devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", v);
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU-seconds so far: the process's, or the declared load's integral. */
static double used_s(edgellm_simdev *d)
{
    if (!d->p.declared_load) return cpu_s();
    pthread_mutex_lock(&d->lock);
    const double t = wall_s(), v = d->load_integral + d->load * (t - d->load_since);
    pthread_mutex_unlock(&d->lock);
    return v;
}

void edgellm_simdev_set_load(edgellm_simdev *d, double cpus)
{
    if (!d) return;
    pthread_mutex_lock(&d->lock);
    const double t = wall_s();
    d->load_integral += d->load * (t - d->load_since);
    d->load_since = t;
    d->load = cpus > 0 ? cpus : 0;
    pthread_mutex_unlock(&d->lock);
}

static void *simdev_main(void *arg)
{
    edgellm_simdev *d = arg;
    double w0 = wall_s(), c0 = used_s(d);
    while (!atomic_load(&d->stop)) {
        struct timespec ts = {0, (long)(SIMDEV_STEP_S * 1e9)};
        nanosleep(&ts, NULL);
        const double w1 = wall_s(), c1 = used_s(d), dt = w1 - w0;
        if (dt <= 0) continue;
        const double busy = (c1 - c0) / dt;
        w0 = w1;
        c0 = c1;
        pthread_mutex_lock(&d->lock);
        const double tss = d->p.ambient_c + d->p.k_c_per_cpu * busy;
        d->temp_c += (tss - d->temp_c) * (1 - exp(-dt / d->p.tau_s));
        double sp = 1 - (d->temp_c - d->p.trip_c) / d->p.throttle_span_c;
        d->speed = sp > 1 ? 1 : sp < d->p.min_speed ? d->p.min_speed : sp;
        const double t = d->temp_c, s = d->speed;
        pthread_mutex_unlock(&d->lock);
        publish(d, t, s);
    }
    return NULL;
}

edgellm_status edgellm_simdev_start(const edgellm_simdev_params *params, edgellm_simdev **out, edgellm_error *err)
{
    if (!out || !params || params->size == 0 || !params->root)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "simdev: NULL params or root");
    *out = NULL;
    edgellm_simdev_params p = edgellm_simdev_default_params();
    memcpy(&p, params, params->size < sizeof p ? params->size : sizeof p);
    if (!(p.tau_s > 0) || !(p.throttle_span_c > 0) || !(p.min_speed > 0 && p.min_speed <= 1))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "simdev: tau, throttle span must be > 0, min_speed in (0, 1]");
    edgellm_simdev *d = calloc(1, sizeof *d);
    if (!d) return edgellm_fail(err, EDGELLM_ERR_NOMEM, "simdev: out of memory");
    d->p = p;
    snprintf(d->root, sizeof d->root, "%s", p.root);
    d->p.root = d->root;
    d->temp_c = isnan(p.start_c) ? p.ambient_c : p.start_c;
    d->speed = 1;
    char dir[1024], v[64];
    snprintf(dir, sizeof dir, "%s/class/thermal/thermal_zone0", d->root);
    int bad = mkdirs(dir);
    snprintf(dir, sizeof dir, "%s/devices/system/cpu/cpu0/cpufreq", d->root);
    bad |= mkdirs(dir);
    bad |= put(d->root, "class/thermal/thermal_zone0/type", "simdev-cpu");
    snprintf(v, sizeof v, "%lld", (long long)llround(p.trip_c * 1000));
    bad |= put(d->root, "class/thermal/thermal_zone0/trip_point_0_temp", v);
    bad |= put(d->root, "class/thermal/thermal_zone0/trip_point_0_type", "passive");
    snprintf(v, sizeof v, "%lld", SIMDEV_MAX_FREQ_KHZ);
    bad |= put(d->root, "devices/system/cpu/cpu0/cpufreq/scaling_max_freq", v);
    if (bad) {
        free(d);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot write the simulated sysfs tree: %s", p.root,
                            strerror(errno));
    }
    publish(d, d->temp_c, d->speed);
    pthread_mutex_init(&d->lock, NULL);
    d->load_since = wall_s();
    if (pthread_create(&d->thread, NULL, simdev_main, d)) {
        pthread_mutex_destroy(&d->lock);
        free(d);
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "simdev: cannot start its thread");
    }
    *out = d;
    return EDGELLM_OK;
}

void edgellm_simdev_stop(edgellm_simdev *d)
{
    if (!d) return;
    atomic_store(&d->stop, 1);
    pthread_join(d->thread, NULL);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

double edgellm_simdev_temp(edgellm_simdev *d)
{
    if (!d) return NAN;
    pthread_mutex_lock(&d->lock);
    double t = d->temp_c;
    pthread_mutex_unlock(&d->lock);
    return t;
}

double edgellm_simdev_speed(edgellm_simdev *d)
{
    if (!d) return 1;
    pthread_mutex_lock(&d->lock);
    double s = d->speed;
    pthread_mutex_unlock(&d->lock);
    return s;
}
