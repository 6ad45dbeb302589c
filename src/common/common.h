/*
 * common.h — internal helpers shared by every layer: error reporting, the allocation
 * wrapper (with a test hook that fails the Nth call), overflow-checked arithmetic,
 * half/bfloat16 conversion and a monotonic clock. Not part of the public API.
 */
#ifndef EDGELLM_COMMON_H
#define EDGELLM_COMMON_H

#include "edgellm.h"
#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#  define EDGELLM_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#  define EDGELLM_PRINTF(a, b)
#endif

/* Sized structs (edgellm.h conventions): *dst holds the defaults, dst_size bytes, its first
 * field `size`; src (may be NULL: keep the defaults) is the caller's struct. Copies the
 * first min(src->size, dst_size) bytes of src over dst and sets dst's size to dst_size.
 * EDGELLM_ERR_MISUSE "WHAT: size is 0 ..." when src->size is smaller than the size field. */
edgellm_status edgellm_sized_in(void *dst, size_t dst_size, const void *src, const char *what, edgellm_error *err);
/* Write a result: copies all but the size field of src (src_size bytes) into the first
 * dst->size bytes of dst. false (nothing written) when dst->size is smaller than the field. */
bool edgellm_sized_out(void *dst, const void *src, size_t src_size);

/* Log a message through the callback of edgellm_log_set (nothing when none is set or the
 * level is above its max). src/common/log.c. */
void edgellm_log(edgellm_log_level level, const char *fmt, ...) EDGELLM_PRINTF(2, 3);
/* True when a message of this level would be delivered (skip building costly ones). */
bool edgellm_log_enabled(edgellm_log_level level);

/* Fill err (may be NULL) with code and a printf-style message; returns code. */
edgellm_status edgellm_fail(edgellm_error *err, edgellm_status code, const char *fmt, ...)
    EDGELLM_PRINTF(3, 4);
/* Shorthand for an allocation failure while working on `what`. */
edgellm_status edgellm_fail_nomem(edgellm_error *err, const char *what);

/* Every allocation in the library goes through these. */
void *edgellm_malloc(size_t n);
void *edgellm_calloc(size_t count, size_t size);
void *edgellm_realloc(void *p, size_t n);
void  edgellm_free(void *p);
char *edgellm_strdup(const char *s);
char *edgellm_strndup(const char *s, size_t n);
/* Test hooks: fail the nth allocation from now (0 = never); live allocation count. */
void  edgellm_test_alloc_fail_at(long n);
long  edgellm_test_live_allocs(void);

/* Overflow-checked arithmetic: return false (and leave *r unspecified) on overflow. */
static inline bool edgellm_add_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_add_overflow(a, b, r); }
static inline bool edgellm_mul_u64(uint64_t a, uint64_t b, uint64_t *r) { return !__builtin_mul_overflow(a, b, r); }
static inline bool edgellm_mul_size(size_t a, size_t b, size_t *r) { return !__builtin_mul_overflow(a, b, r); }

/* IEEE half <-> float (exact for all halfs, round-to-nearest-even for floats). */
float    edgellm_f16_to_f32(uint16_t h);
uint16_t edgellm_f32_to_f16(float f);
/* bfloat16 <-> float (round-to-nearest-even, NaN kept quiet). */
static inline float edgellm_bf16_to_f32(uint16_t b) { uint32_t u = (uint32_t)b << 16; float f; memcpy(&f, &u, 4); return f; }
uint16_t edgellm_f32_to_bf16(float f);

/* Monotonic time in milliseconds. */
double edgellm_time_ms(void);
/* Ask the kernel to back the whole 2 MiB-aligned pages inside [p, p+n) with transparent huge
 * pages (Linux madvise MADV_HUGEPAGE; a no-op elsewhere, and only a hint: nothing fails).
 * For large buffers filled at once (membw): one page fault per 2 MiB instead of per 4 KiB;
 * for the GGUF mapping (gguf_read.c): 2 MiB page-cache folios where the file system has them.
 * Touched, such a page is resident whole; with the kernel's THP defrag=madvise a first
 * touch may compact memory first (a stall: not for latency-critical paths, see kv_cache.c). */
void edgellm_hint_huge_pages(void *p, size_t n);
/* The opposite for the pages of [p, p+n) (rounded out to whole pages; madvise
 * MADV_NOHUGEPAGE): no 2 MiB mapping may then cover any of them, so touching a neighbour
 * does not make them resident (the mapping's pages of weights the loader copied elsewhere).
 * A hint: nothing fails. */
void edgellm_hint_no_huge_pages(const void *p, size_t n);

/* Physical core count (falls back to logical CPUs), at most the CPUs this process may run
 * on (its affinity mask: taskset, container cpusets): the default thread count. */
int edgellm_n_physical_cores(void);

/* pthread_create for edgellm's worker threads (thread pool, bandwidth probe): the thread
 * blocks every asynchronous signal (SIGINT, SIGTERM, SIGHUP, ...; not the synchronous
 * SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT, nor the profilers' SIGPROF and
 * SIGVTALRM), so a process-directed signal
 * reaches the application's own threads and its handler never runs on a worker while
 * another thread goes on (edgellm_remove_temp_files relies on that). Returns
 * pthread_create's result. */
int edgellm_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);
/* Block the asynchronous signals (as edgellm_thread_create's workers) on the calling thread
 * for a few instructions that must not be split by a handler (create a temporary, then
 * register it); *old receives the mask to restore with edgellm_restore_signals. */
void edgellm_block_async_signals(sigset_t *old);
void edgellm_restore_signals(const sigset_t *old);

/* The CPUs this process may run on: its affinity mask where the OS has one, else the online
 * CPUs 0 .. n-1. Returns how many (<= 0 when unknown) and writes the first min(that, cap)
 * CPU numbers, ascending, to ids (may be NULL when cap is 0). */
int edgellm_usable_cpus(int *ids, int cap);

/* A temporary file (is_dir false) or folder being written, for edgellm_remove_temp_files
 * (edgellm.h) to remove if a signal stops the process: register once it exists, unregister
 * (the returned slot) once it is renamed into place or removed. Returns the slot, or -1
 * when the path is not registered (too long, or every slot taken: the caller's own cleanup
 * still runs; only a signal would then leave it). Thread-safe. src/common/tmpfiles.c. */
int edgellm_tmp_register(const char *path, bool is_dir);
void edgellm_tmp_unregister(int slot);
/* Remove every registered temporary (edgellm_remove_temp_files, edgellm_tools.h): files
 * first, then folders. Async-signal-safe. */
void edgellm_tmp_remove_all(void);

/* A file written whole or not at all: every writer of an output file (GGUF, saved logits,
 * logits dumps, JSON results, reports) writes "TARGET.tmp.PID", registered with
 * edgellm_tmp_register before it exists, and renames it onto TARGET only once all of it is
 * written and flushed; on any failure, or a signal (edgellm_remove_temp_files), TARGET is
 * untouched and no temporary stays. TARGET is PATH, or for a symbolic link (a chain, a
 * dangling one included) the file it names: the link stays a link. The temporary is
 * created with O_EXCL | O_NOFOLLOW (a file or link planted at its name is never written
 * through) and takes the permissions of the file it replaces. A PATH that exists and is no
 * regular file (/dev/null, a FIFO), or that leads through /proc (/dev/stdout, /dev/fd/N:
 * a descriptor's file, even when that is a regular file) is written in place: there is
 * nothing to replace, and renaming onto it would replace the device node or the link.
 * PATH "-" is standard output (written in place, through a duplicate of descriptor 1).
 * Usage: open, write to o.f, then commit (or discard on the writer's own error).
 * src/common/tmpfiles.c. */
typedef struct {
    FILE *f;                 /* open for writing (NULL once closed)                      */
    int slot;                /* edgellm_tmp_register's slot, or -1                        */
    bool in_place;           /* PATH is a device or pipe: no temporary, no rename         */
    const char *path;        /* PATH as given, for messages                               */
    char target[4096];       /* the file renamed onto                                     */
    char tmp[4096];          /* "TARGET.tmp.PID" while it exists, else ""                 */
} edgellm_out_file;
/* Create the temporary for PATH (fopen mode, e.g. "wb"). EDGELLM_ERR_IO "PATH: cannot write
 * it (its temporary TMP: reason)", "PATH: cannot write it: reason" (a link loop, in place)
 * or "PATH: is a directory"; EDGELLM_ERR_MISUSE for an empty path or one too long. On
 * failure nothing is left open or registered. */
edgellm_status edgellm_out_open(edgellm_out_file *o, const char *path, const char *mode, edgellm_error *err);
/* Whether edgellm_out_open(PATH) would succeed, without creating anything, for a check
 * before long work: 0, or the errno it would fail with (EISDIR, ELOOP, EINVAL for an empty
 * path; EACCES / ENOENT / EROFS for the target's folder, where the temporary and the rename
 * go, or for PATH itself when it is written in place). */
int edgellm_out_check(const char *path);
/* Check the stream's error flag, flush, fsync (EINVAL/EROFS ignored: not every file
 * system syncs), close and rename onto the target. EDGELLM_ERR_IO "PATH: write failed:
 * reason" or "PATH: cannot rename TMP into place: reason", the temporary then removed.
 * Unregisters in every case. */
edgellm_status edgellm_out_commit(edgellm_out_file *o, edgellm_error *err);
/* Close (if still open) and remove the temporary, unregister: the writer's own error path.
 * Harmless after a failed open or a commit. */
void edgellm_out_discard(edgellm_out_file *o);
/* True when paths a and b name the same file: equal strings, or both exist with the same
 * (st_dev, st_ino) (links and hard links followed); never for a device, pipe or socket
 * (writing /dev/null destroys nothing). For "output is the input" checks. */
bool edgellm_same_file(const char *a, const char *b);

/* Little-endian loads from an unaligned byte pointer. */
static inline uint16_t edgellm_rd_u16(const void *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t edgellm_rd_u32(const void *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t edgellm_rd_u64(const void *p) { uint64_t v; memcpy(&v, p, 8); return v; }

#define EDGELLM_MIN(a, b) ((a) < (b) ? (a) : (b))
#define EDGELLM_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
