/*
 * fuzz_util.h — small helpers shared by the libFuzzer targets in fuzz/ (see fuzz/run.sh).
 *
 * Targets are built by fuzz/CMakeLists.txt with clang -fsanitize=fuzzer,address,undefined;
 * each defines LLVMFuzzerTestOneInput and never exits on bad input: only a sanitizer
 * report, a crash, a hang, a leak or a FUZZ_ASSERT is a finding.
 */
#ifndef EDGELLM_FUZZ_UTIL_H
#define EDGELLM_FUZZ_UTIL_H

#include "edgellm_tools.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* An oracle violation: print and abort, so libFuzzer saves the input as a crash. */
#define FUZZ_ASSERT(cond, ...) do { if (!(cond)) { fprintf(stderr, "FUZZ_ASSERT %s:%d: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fprintf(stderr, "\n"); abort(); } } while (0)

/* Every status a parser may return on bad input; anything else is a bug. */
static inline int fuzz_status_ok(edgellm_status s)
{
    return s == EDGELLM_OK || s == EDGELLM_ERR_IO || s == EDGELLM_ERR_FORMAT || s == EDGELLM_ERR_NOMEM ||
           s == EDGELLM_ERR_MISUSE || s == EDGELLM_ERR_UNSUPPORTED || s == EDGELLM_ERR_NUMERIC ||
           s == EDGELLM_ERR_NOT_FOUND || s == EDGELLM_ERR_CTX_FULL;
}

/* FUZZ_VERBOSE=1 in the environment: print every status (to check that seeds get deep). */
static inline void fuzz_trace(const char *what, edgellm_status s, const edgellm_error *err)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "  %-10s %-24s %s\n", what, edgellm_status_name(s), s ? err->msg : "");
}

/* A failed call must leave a message. */
static inline void fuzz_check_error(edgellm_status s, const edgellm_error *err)
{
    FUZZ_ASSERT(fuzz_status_ok(s), "status %d", (int)s);
    if (s != EDGELLM_OK) FUZZ_ASSERT(err->msg[0] != 0, "status %s without a message", edgellm_status_name(s));
}

/* An in-memory file (memfd) holding data[0..size), reused across runs: its path is
 * /proc/self/fd/N. Returns the path (static storage), NULL on failure. */
static inline const char *fuzz_memfile(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("edgellm-fuzz", 0);
        if (fd < 0) return NULL;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0) return NULL;
    size_t off = 0;
    while (off < size) {
        ssize_t w = pwrite(fd, data + off, size - off, (off_t)off);
        if (w <= 0) return NULL;
        off += (size_t)w;
    }
    return path;
}

/* The shared fixtures folder: $EDGELLM_SHARED, else the compile-time default. */
static inline const char *fuzz_shared_dir(void)
{
    const char *s = getenv("EDGELLM_SHARED");
#ifdef EDGELLM_SHARED_DEFAULT
    if (!s) s = EDGELLM_SHARED_DEFAULT;
#endif
    return s ? s : "../shared";
}

#endif
