/* sys.c — clock, CPU topology and a memory hint. */
#define _POSIX_C_SOURCE 200809L
#include "common.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <signal.h>
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

int edgellm_usable_cpus(int *ids, int cap)
{
    int n = 0;
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0) {
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &mask)) {
                if (n < cap) ids[n] = c;
                n++;
            }
        if (n > 0) return n;
    }
#endif
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < online && c < cap; c++) ids[c] = (int)c;
    return online > 0 ? (int)online : -1;
}

#define MAX_CPUS 1024   /* CPUs looked at by number (CPU_SETSIZE on Linux) */

/* Physical cores this process may run on: distinct (physical id, core id) pairs in
 * /proc/cpuinfo on Linux among the CPUs it may use (edgellm_usable_cpus: taskset, container
 * cpusets; /proc/cpuinfo still lists the whole machine, and two threads on one CPU, or on
 * the two SMT siblings of one core, mostly take turns); without core ids (as on many ARM
 * kernels), the number of usable CPUs. llama.cpp defaults to physical cores the same way. */
int edgellm_n_physical_cores(void)
{
    int ids[MAX_CPUS];
    const int usable = edgellm_usable_cpus(ids, MAX_CPUS);
    const int n = usable > 0 ? usable : 1;
    bool allowed[MAX_CPUS] = {false};
    for (int i = 0; i < n && i < MAX_CPUS; i++) allowed[ids[i]] = true;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return n;
    char line[256];
    int proc = -1, phys = -1, seen = 0;
    long pairs[MAX_CPUS];
    while (fgets(line, sizeof line, f)) {
        int v;
        if (sscanf(line, "processor : %d", &v) == 1) {
            proc = v;
            phys = -1;
        } else if (sscanf(line, "physical id : %d", &v) == 1) {
            phys = v;
        } else if (sscanf(line, "core id : %d", &v) == 1) {
            if (usable > 0 && (proc < 0 || proc >= MAX_CPUS || !allowed[proc])) continue;
            long key = (long)phys * 65536 + v;
            int dup = 0;
            for (int i = 0; i < seen; i++) if (pairs[i] == key) { dup = 1; break; }
            if (!dup && seen < MAX_CPUS) pairs[seen++] = key;
        }
    }
    fclose(f);
    return seen > 0 && seen <= n ? seen : n;
}

void edgellm_hint_no_huge_pages(const void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_NOHUGEPAGE)
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = (uintptr_t)p & ~(page - 1), e = ((uintptr_t)p + n + page - 1) & ~(page - 1);
    if (p && n && e > a) (void)madvise((void *)a, (size_t)(e - a), MADV_NOHUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
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

void edgellm_block_async_signals(sigset_t *old)
{
    /* every signal but the synchronous ones (a fault in this thread itself) and the
     * profilers' timers (SIGPROF, SIGVTALRM: sampling must still work) */
    sigset_t all;
    sigfillset(&all);
    static const int sync_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, SIGPROF, SIGVTALRM};
    for (size_t i = 0; i < sizeof sync_sigs / sizeof sync_sigs[0]; i++) sigdelset(&all, sync_sigs[i]);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

void edgellm_restore_signals(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

int edgellm_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
    /* the new thread starts with the creator's signal mask: asynchronous signals blocked
     * for the moment of the creation */
    sigset_t old;
    edgellm_block_async_signals(&old);
    const int rc = pthread_create(t, NULL, fn, arg);
    edgellm_restore_signals(&old);
    return rc;
}
