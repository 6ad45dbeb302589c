/* alloc.c — the one allocation wrapper. A test hook fails the Nth call so that every
 * failure path can be exercised (SQLite's approach, https://www.sqlite.org/testing.html);
 * a live-block counter lets tests prove that failure paths leak nothing. */
#include "common.h"
#include <stdatomic.h>
#include <stdlib.h>

static _Atomic long fail_countdown = 0;  /* 0: never fail */
static _Atomic long live_blocks = 0;

void edgellm_test_alloc_fail_at(long n) { atomic_store(&fail_countdown, n); }
long edgellm_test_live_allocs(void) { return atomic_load(&live_blocks); }

static bool should_fail(void)
{
    long c = atomic_load(&fail_countdown);
    if (c <= 0) return false;
    return atomic_fetch_sub(&fail_countdown, 1) == 1;
}

void *edgellm_malloc(size_t n)
{
    if (should_fail()) return NULL;
    void *p = malloc(n ? n : 1);
    if (p) atomic_fetch_add(&live_blocks, 1);
    return p;
}

void *edgellm_calloc(size_t count, size_t size)
{
    if (should_fail()) return NULL;
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p) atomic_fetch_add(&live_blocks, 1);
    return p;
}

void *edgellm_realloc(void *p, size_t n)
{
    if (!p) return edgellm_malloc(n);
    if (should_fail()) return NULL;
    return realloc(p, n ? n : 1);
}

void edgellm_free(void *p)
{
    if (!p) return;
    atomic_fetch_sub(&live_blocks, 1);
    free(p);
}

char *edgellm_strndup(const char *s, size_t n)
{
    char *d = edgellm_malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

char *edgellm_strdup(const char *s) { return edgellm_strndup(s, strlen(s)); }
