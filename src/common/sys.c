/* sys.c — clock, CPU topology and a memory hint. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#include <sys/mman.h>
#endif

double edgellm_time_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int physical_cores(void);

/* CPUs in this process's affinity mask, or 0 when unknown. */
static int affinity_cpus(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
#endif
    return 0;
}

/* Physical cores: distinct (physical id, core id) pairs in /proc/cpuinfo on Linux;
 * otherwise the online CPU count. llama.cpp defaults to physical cores the same way. Capped
 * by the affinity mask: under `taskset -c 0` or a one-CPU cpuset, /proc/cpuinfo still lists
 * the whole machine, and two threads on one CPU only take turns. */
int edgellm_n_physical_cores(void)
{
    const int phys = physical_cores(), mask = affinity_cpus();
    return mask > 0 && mask < phys ? mask : phys;
}

static int physical_cores(void)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int n_logical = online > 0 ? (int)online : 1;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return n_logical;
    char line[256];
    int phys = -1, seen = 0;
    long pairs[1024];
    while (fgets(line, sizeof line, f)) {
        int v;
        if (sscanf(line, "physical id : %d", &v) == 1) phys = v;
        else if (sscanf(line, "core id : %d", &v) == 1) {
            long key = (long)phys * 65536 + v;
            int dup = 0;
            for (int i = 0; i < seen; i++) if (pairs[i] == key) { dup = 1; break; }
            if (!dup && seen < 1024) pairs[seen++] = key;
        }
    }
    fclose(f);
    if (seen <= 0 || seen > n_logical) return n_logical;
    return seen;
}

void edgellm_hint_huge_pages(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
    if (p && e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}
