/* log.c — the log callback (edgellm_log_set, edgellm.h) and the version calls. The library
 * never prints: what it has to say goes to the application's callback, or nowhere. */
#include "common.h"
#include <stdarg.h>
#include <stdatomic.h>

/* The callback, its user pointer and level, swapped together under a mutex; the level is
 * also kept in an atomic so that edgellm_log_enabled costs one load on hot paths. */
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static edgellm_log_fn log_fn;
static void *log_user;
static atomic_int log_max = -1;   /* -1: no callback */

void edgellm_log_set(edgellm_log_fn fn, void *user, edgellm_log_level max_level)
{
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    atomic_store(&log_max, fn ? (int)max_level : -1);
    pthread_mutex_unlock(&log_lock);
}

bool edgellm_log_enabled(edgellm_log_level level) { return (int)level <= atomic_load(&log_max); }

void edgellm_log(edgellm_log_level level, const char *fmt, ...)
{
    if (!edgellm_log_enabled(level)) return;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* delivered under the lock: once edgellm_log_set returns, the old callback is never
     * called again (its user data may be freed); messages are delivered one at a time */
    pthread_mutex_lock(&log_lock);
    if (log_fn && (int)level <= atomic_load(&log_max)) log_fn(level, msg, log_user);
    pthread_mutex_unlock(&log_lock);
}

const char *edgellm_version(void) { return EDGELLM_VERSION; }
int edgellm_version_number(void) { return EDGELLM_VERSION_NUMBER; }

edgellm_status edgellm_sized_in(void *dst, size_t dst_size, const void *src, const char *what, edgellm_error *err)
{
    if (!src) return EDGELLM_OK;
    size_t n;
    memcpy(&n, src, sizeof n);
    if (n < sizeof n)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: size is %zu: start from the default parameters (or set "
                            "size = sizeof the struct)", what, n);
    memcpy(dst, src, EDGELLM_MIN(n, dst_size));
    memcpy(dst, &dst_size, sizeof dst_size);
    return EDGELLM_OK;
}

bool edgellm_sized_out(void *dst, const void *src, size_t src_size)
{
    size_t n;
    memcpy(&n, dst, sizeof n);
    if (n < sizeof n) return false;
    n = EDGELLM_MIN(n, src_size);
    memcpy((char *)dst + sizeof n, (const char *)src + sizeof n, n - sizeof n);
    return true;
}
