/* store.h — internals shared by the model store's files: store.c (layout, manifests,
 * signatures, add/activate/rollback/verify/gc), store_fetch.c (downloads, libcurl) and
 * store_delta.c (patches, libzstd). Public API: include/edgellm_tools.h. */
#ifndef EDGELLM_TOOLS_STORE_H
#define EDGELLM_TOOLS_STORE_H
#include "edgellm_tools.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EDGELLM_STORE_MAX_MANIFEST_BYTES ((size_t)16 << 20)   /* a manifest, downloaded or read */
#define EDGELLM_STORE_MAX_GATE_LOGITS ((uint64_t)4 << 30)     /* a quality gate's saved logits */
#define EDGELLM_STORE_MAX_GATE_TEXT ((uint64_t)64 << 20)      /* its text (read into memory)   */

/* A crash point of the kill -9 harness: every write, fsync, rename and unlink of the store
 * counts one; when the count reaches $EDGELLM_STORE_CRASH_AT the process kills itself with
 * SIGKILL (tests/test_store.c sweeps every point). Nothing happens when it is unset. */
void edgellm_store_crash_point(void);

/* Write all of buf to fd (a crash point). false with errno set on failure. */
bool edgellm_store_write_all(int fd, const void *buf, size_t n);
/* fsync fd (a crash point); EINVAL/EROFS count as success. */
bool edgellm_store_fsync(int fd);
/* fsync the folder path (after a rename or unlink in it). */
bool edgellm_store_fsync_dir(const char *path);
/* rename(2) then fsync of to's folder (crash points). */
bool edgellm_store_rename(const char *from, const char *to);

/* SHA-256 (FIPS 180-4) through libsodium; opaque state storage big enough for it. */
typedef struct { _Alignas(16) unsigned char opaque[128]; } edgellm_sha256;
void edgellm_sha256_init(edgellm_sha256 *h);
void edgellm_sha256_update(edgellm_sha256 *h, const void *data, size_t n);
void edgellm_sha256_final(edgellm_sha256 *h, uint8_t out[32]);
void edgellm_sha256_hex(const uint8_t d[32], char hex[65]);
bool edgellm_sha256_parse(const char *hex, uint8_t out[32]);   /* 64 lowercase hex digits */

/* Download url to part_path (resumed from it and its checkpoint file part_path".ckpt"),
 * checking that it is exactly expected_size bytes (never more) with SHA-256 sha. On
 * success the file part_path is complete, verified and fsynced. */
typedef struct {
    uint64_t chunk_bytes;
    int retries;
    double connect_timeout_s, low_speed_time_s;
    edgellm_progress_fn progress;
    void *progress_user;
    uint64_t refetched_bytes;    /* out: bytes fetched again that had been fetched before   */
    uint64_t resumed_from;       /* out: verified bytes kept from an earlier attempt         */
} edgellm_fetch_opts;
edgellm_status edgellm_store_fetch(const char *url, const char *part_path, uint64_t expected_size,
                                   const uint8_t sha[32], edgellm_fetch_opts *o, edgellm_error *err);
/* Fetch a small document (a manifest) of at most max_bytes into a malloc'd buffer. */
edgellm_status edgellm_store_fetch_small(const char *url, size_t max_bytes, char **out, size_t *len,
                                         double connect_timeout_s, edgellm_error *err);
/* For the fuzz target (fuzz/fuzz_store.c): parse a manifest of len bytes; when it parses,
 * write its canonical form, parse that again and set *roundtrip_ok to whether both parses
 * agree. EDGELLM_ERR_FORMAT (with err naming the field) when it does not parse. */
edgellm_status edgellm_store_manifest_check(const char *text, size_t len, bool *roundtrip_ok, edgellm_error *err);
/* 1 for http://, https:// and file:// */
bool edgellm_store_is_url(const char *s);

#endif
