/* store.c — the model store (`edgellm store`, docs/store.md): versions of models on the
 * device, in a folder:
 *
 *   lock                       flock(2): one writer at a time (released when a process dies)
 *   keys/HEX16.pub             trusted Ed25519 public keys (64 hex digits each)
 *   blobs/sha256-HEX           model files, named by their SHA-256
 *   manifests/NAME/V.json      the manifest of NAME@V, as received (signed)
 *   manifests/NAME/V.status    "ok" or "failed: why" once verified
 *   refs/NAME                  "active A\nprevious P\n" (0: none), replaced by rename
 *   tmp/                       files being copied or patched (removed by gc)
 *   downloads/sha256-HEX.part  resumable downloads (+ .ckpt: per-chunk SHA-256)
 *
 * Every file is written to a temporary in its folder, fsynced, renamed over its name and
 * the folder fsynced; an add writes its blob before its manifest and the manifest before
 * its status, gc removes a status before its manifest and a manifest before its blob, so at
 * every instant a status names a manifest and an "ok" status a complete, verified blob.
 * Manifests are signed over a canonical form (fixed field order and spelling, written by
 * canon_manifest below) of their parsed fields, so the bytes that are signed never depend
 * on how a JSON writer spaced them; fields the canonical form does not know are refused.
 * Ed25519: RFC 8032, through libsodium's crypto_sign_detached. SHA-256: FIPS 180-4. */
#include "store.h"
#include "common/common.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if defined(EDGELLM_HAVE_SODIUM) && defined(EDGELLM_HAVE_CJSON)
#define STORE_AVAILABLE 1
#include <cjson/cJSON.h>
#include <sodium.h>
#endif

/* ---- crash points and file primitives -------------------------------------------------- */

static long crash_at = -1, crash_count;

void edgellm_store_crash_point(void)
{
    if (crash_at < 0) {
        const char *e = getenv("EDGELLM_STORE_CRASH_AT");
        crash_at = e && *e ? atol(e) : 0;
    }
    if (crash_at > 0 && ++crash_count == crash_at) kill(getpid(), SIGKILL);
}

bool edgellm_store_write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    edgellm_store_crash_point();
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) { if (w == 0) errno = ENOSPC; return false; }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

bool edgellm_store_fsync(int fd)
{
    edgellm_store_crash_point();
    return fsync(fd) == 0 || errno == EINVAL || errno == EROFS;
}

bool edgellm_store_fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = edgellm_store_fsync(fd);
    close(fd);
    return ok;
}

static void parent_of(const char *path, char *dir, size_t n)
{
    snprintf(dir, n, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, n, ".");
    else if (slash == dir) dir[1] = 0;
    else *slash = 0;
}

bool edgellm_store_rename(const char *from, const char *to)
{
    edgellm_store_crash_point();
    if (rename(from, to) != 0) return false;
    char dir[PATH_MAX];
    parent_of(to, dir, sizeof dir);
    return edgellm_store_fsync_dir(dir);
}

static bool store_unlink(const char *path)
{
    edgellm_store_crash_point();
    if (unlink(path) != 0 && errno != ENOENT) return false;
    char dir[PATH_MAX];
    parent_of(path, dir, sizeof dir);
    return edgellm_store_fsync_dir(dir);
}

bool edgellm_store_is_url(const char *s)
{
    return s && (!strncmp(s, "http://", 7) || !strncmp(s, "https://", 8) || !strncmp(s, "file://", 7));
}

#ifndef STORE_AVAILABLE
/* ---- built without libsodium or cJSON ------------------------------------------------- */
#define NO_STORE(err) \
    edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "store: edgellm was built without libsodium or cJSON " \
                 "(apt-get install libsodium-dev libcjson-dev, then rebuild)")
void edgellm_sha256_init(edgellm_sha256 *h) { (void)h; }
void edgellm_sha256_update(edgellm_sha256 *h, const void *d, size_t n) { (void)h; (void)d; (void)n; }
void edgellm_sha256_final(edgellm_sha256 *h, uint8_t out[32]) { (void)h; memset(out, 0, 32); }
void edgellm_sha256_hex(const uint8_t d[32], char hex[65])
{
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
}
bool edgellm_sha256_parse(const char *hex, uint8_t out[32]) { (void)hex; (void)out; return false; }
edgellm_store_params edgellm_store_default_params(void)
{
    return (edgellm_store_params){.size = sizeof(edgellm_store_params), .smoke_test = 1};
}
edgellm_store_add_params edgellm_store_add_default_params(void)
{
    return (edgellm_store_add_params){.size = sizeof(edgellm_store_add_params)};
}
edgellm_store_publish_params edgellm_store_publish_default_params(void)
{
    return (edgellm_store_publish_params){.size = sizeof(edgellm_store_publish_params), .expires_days = 365,
                                          .gate_max_kld = -1, .gate_min_top1 = -1, .gate_n_ctx = 128,
                                          .gate_chunks = 4};
}
edgellm_status edgellm_store_open(const edgellm_store_params *p, edgellm_store **out, edgellm_error *err)
{
    if (out) *out = NULL;
    return NO_STORE(err);
}
void edgellm_store_close(edgellm_store *s) { (void)s; }
const char *edgellm_store_dir(const edgellm_store *s) { (void)s; return ""; }
edgellm_status edgellm_store_add(edgellm_store *s, const edgellm_store_add_params *p, edgellm_store_entry *o,
                                 edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_activate(edgellm_store *s, const char *n, int64_t v, edgellm_error *err)
{ return NO_STORE(err); }
edgellm_status edgellm_store_rollback(edgellm_store *s, const char *n, edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_resolve(edgellm_store *s, const char *r, int c, edgellm_store_entry *o,
                                     edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_load_model(edgellm_store *s, const char *r, const edgellm_model_params *mp,
                                        edgellm_model **o, edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_list(edgellm_store *s, void (*fn)(void *, const edgellm_store_entry *), void *u,
                                  edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_verify(edgellm_store *s, void (*fn)(void *, const char *), void *u, int *n,
                                    edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_gc(edgellm_store *s, int k, int *n, uint64_t *b, edgellm_error *err)
{ return NO_STORE(err); }
edgellm_status edgellm_store_trust(edgellm_store *s, const char *p, edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_untrust(edgellm_store *s, const char *p, edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_keygen(const char *a, const char *b, edgellm_error *err) { return NO_STORE(err); }
edgellm_status edgellm_store_publish(const edgellm_store_publish_params *p, edgellm_error *err)
{ return NO_STORE(err); }
edgellm_status edgellm_store_manifest_check(const char *t, size_t n, bool *ok, edgellm_error *err)
{
    *ok = false;
    return NO_STORE(err);
}
#else

/* ---- SHA-256 --------------------------------------------------------------------------- */
_Static_assert(sizeof(crypto_hash_sha256_state) <= sizeof(edgellm_sha256), "edgellm_sha256 too small");

void edgellm_sha256_init(edgellm_sha256 *h) { crypto_hash_sha256_init((crypto_hash_sha256_state *)h->opaque); }
void edgellm_sha256_update(edgellm_sha256 *h, const void *d, size_t n)
{
    crypto_hash_sha256_update((crypto_hash_sha256_state *)h->opaque, d, n);
}
void edgellm_sha256_final(edgellm_sha256 *h, uint8_t out[32])
{
    crypto_hash_sha256_final((crypto_hash_sha256_state *)h->opaque, out);
}
void edgellm_sha256_hex(const uint8_t d[32], char hex[65])
{
    static const char x[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) { hex[2 * i] = x[d[i] >> 4]; hex[2 * i + 1] = x[d[i] & 15]; }
    hex[64] = 0;
}
static bool hex_parse(const char *hex, uint8_t *out, size_t n)
{
    if (!hex || strlen(hex) != 2 * n) return false;
    for (size_t i = 0; i < 2 * n; i++) {
        const char c = hex[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0) return false;
        if (i & 1) out[i / 2] |= (uint8_t)v;
        else out[i / 2] = (uint8_t)(v << 4);
    }
    return true;
}
bool edgellm_sha256_parse(const char *hex, uint8_t out[32]) { return hex_parse(hex, out, 32); }
static void hex_of(const uint8_t *d, size_t n, char *hex)
{
    static const char x[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) { hex[2 * i] = x[d[i] >> 4]; hex[2 * i + 1] = x[d[i] & 15]; }
    hex[2 * n] = 0;
}

/* ---- small helpers --------------------------------------------------------------------- */

struct edgellm_store {
    char dir[768];              /* the folder; entries' paths (1024 bytes) have room for it */
    int lock_fd, lock_depth;
    int smoke_test;
    edgellm_progress_fn progress;
    void *progress_user;
};

typedef struct { char *p; size_t n, cap; bool oom; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = edgellm_realloc(b->p, cap);
        if (!q) { b->oom = true; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_printf(sbuf *b, const char *fmt, ...) EDGELLM_PRINTF(2, 3);
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0) sb_put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}
/* A JSON string: '"' and '\\' escaped, bytes below 0x20 as \u00XX, the rest as they are. */
static void sb_str(sbuf *b, const char *s, size_t n)
{
    sb_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') { char e[2] = {'\\', (char)c}; sb_put(b, e, 2); }
        else if (c < 0x20) sb_printf(b, "\\u%04x", c);
        else sb_put(b, (const char *)&s[i], 1);
    }
    sb_put(b, "\"", 1);
}

static bool valid_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 63 || s[0] == '.') return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '.' || s[i] == '_' || s[i] == '-'))
            return false;
    return true;
}
/* A file name inside a published folder: [A-Za-z0-9._@-], not starting with '.' */
static bool valid_file_name(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 1 || n > 150 || s[0] == '.') return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '.' || s[i] == '_' || s[i] == '-' || s[i] == '@'))
            return false;
    return true;
}

static bool mkdir_p(const char *path)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return false;
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return false;
            *p = '/';
        }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

/* Read a whole small file (at most max bytes) NUL-terminated. */
static edgellm_status read_small(const char *path, size_t max, char **out, size_t *len, edgellm_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return edgellm_fail(err, errno == ENOENT ? EDGELLM_ERR_NOT_FOUND : EDGELLM_ERR_IO, "%s: %s", path,
                                    strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > max) {
        close(fd);
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %lld bytes, more than the %zu a manifest may have", path,
                            (long long)st.st_size, max);
    }
    char *buf = edgellm_malloc((size_t)st.st_size + 1);
    if (!buf) { close(fd); return edgellm_fail_nomem(err, path); }
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + n, (size_t)st.st_size - n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *out = buf;
    *len = n;
    return EDGELLM_OK;
}

/* path's bytes into a temporary beside it, fsync, rename, fsync of the folder. */
static edgellm_status atomic_write(const char *path, const void *data, size_t n, int mode, edgellm_error *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp)
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
    bool ok = edgellm_store_write_all(fd, data, n) && edgellm_store_fsync(fd);
    int e = errno;
    close(fd);
    if (!ok) {
        unlink(tmp);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    if (!edgellm_store_rename(tmp, path)) {
        e = errno;
        unlink(tmp);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot rename into place: %s", path, strerror(e));
    }
    return EDGELLM_OK;
}

static int progress(edgellm_progress_fn fn, void *user, double f, const char *what)
{
    return fn ? fn(user, f < 0 ? 0 : f > 1 ? 1 : f, what) : 0;
}

/* SHA-256 and size of a file, read in 1 MiB blocks. */
static edgellm_status hash_file(const char *path, uint8_t sha[32], uint64_t *size, edgellm_progress_fn pf,
                                void *pu, const char *what, edgellm_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return edgellm_fail(err, errno == ENOENT ? EDGELLM_ERR_NOT_FOUND : EDGELLM_ERR_IO, "%s: %s", path,
                                    strerror(errno));
    struct stat st;
    fstat(fd, &st);
    const size_t B = 1 << 20;
    char *buf = edgellm_malloc(B);
    if (!buf) { close(fd); return edgellm_fail_nomem(err, path); }
    edgellm_sha256 h;
    edgellm_sha256_init(&h);
    uint64_t n = 0;
    ssize_t r;
    while ((r = read(fd, buf, B)) != 0) {
        if (r < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            edgellm_free(buf);
            close(fd);
            return edgellm_fail(err, EDGELLM_ERR_IO, "%s: read failed: %s", path, strerror(e));
        }
        edgellm_sha256_update(&h, buf, (size_t)r);
        n += (uint64_t)r;
        if (st.st_size > 0) progress(pf, pu, (double)n / (double)st.st_size, what);
    }
    edgellm_free(buf);
    close(fd);
    edgellm_sha256_final(&h, sha);
    if (size) *size = n;
    return EDGELLM_OK;
}

static const char *fmt_time(int64_t t, char buf[32])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}
static bool parse_time(const char *s, int64_t *out)
{
    struct tm tm = {0};
    int n = 0;
    if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                     &tm.tm_sec, &n) != 6 || n != 20 || s[n])
        return false;
    if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (int64_t)timegm(&tm);
    return true;
}
static int version_number(const char *s)   /* "1.2.3" -> 10203; -1 when it does not parse */
{
    int a, b, c, n = 0;
    if (sscanf(s, "%3d.%3d.%3d%n", &a, &b, &c, &n) != 3 || s[n] || a < 0 || b < 0 || c < 0 || b > 99 || c > 99)
        return -1;
    return a * 10000 + b * 100 + c;
}

/* ---- manifests ------------------------------------------------------------------------- */

typedef struct {
    char *name;
    uint64_t offset, size;   /* offset from the start of the file (bytes) */
    uint8_t sha[32];
} mtensor;

typedef struct {
    char name[160];
    uint64_t size;
    uint8_t sha[32];
} mblob;

typedef struct {
    char name[64];
    int64_t version;
    int64_t created, expires;          /* expires 0: never */
    char min_edgellm[16];
    char file_name[160];
    uint64_t file_size;
    uint8_t file_sha[32];
    int has_patch;
    char patch_name[160];
    uint64_t patch_size;
    uint8_t patch_sha[32], patch_base[32];
    int has_gate;                      /* quality gate: reference logits over a text, thresholds */
    mblob gate_logits, gate_text;
    double gate_max_kld, gate_min_top1;   /* nats; percent */
    int n_tensors;
    mtensor *tensors;
    int has_sig;
    uint8_t key[32], sig[64];
} manifest;

static void manifest_free(manifest *m)
{
    for (int i = 0; i < m->n_tensors; i++) edgellm_free(m->tensors[i].name);
    edgellm_free(m->tensors);
    m->tensors = NULL;
    m->n_tensors = 0;
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v (a finite double). */
static const char *fmt_double(double v, char buf[32])
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    return buf;
}

static void canon_blob(sbuf *b, const mblob *x)
{
    char hex[65];
    sb_printf(b, "{\"name\":");
    sb_str(b, x->name, strlen(x->name));
    edgellm_sha256_hex(x->sha, hex);
    sb_printf(b, ",\"size\":%llu,\"sha256\":\"%s\"}", (unsigned long long)x->size, hex);
}

/* The signed bytes: every field but the signature, in this order and spelling. */
static void canon_manifest(const manifest *m, sbuf *b)
{
    char hex[65], t[32];
    sb_printf(b, "{\"edgellm_manifest\":1,\"name\":");
    sb_str(b, m->name, strlen(m->name));
    sb_printf(b, ",\"version\":%lld,\"created\":\"%s\"", (long long)m->version, fmt_time(m->created, t));
    if (m->expires) sb_printf(b, ",\"expires\":\"%s\"", fmt_time(m->expires, t));
    sb_printf(b, ",\"min_edgellm\":\"%s\",\"file\":{\"name\":", m->min_edgellm);
    sb_str(b, m->file_name, strlen(m->file_name));
    edgellm_sha256_hex(m->file_sha, hex);
    sb_printf(b, ",\"size\":%llu,\"sha256\":\"%s\"}", (unsigned long long)m->file_size, hex);
    if (m->has_patch) {
        sb_printf(b, ",\"patch\":{\"name\":");
        sb_str(b, m->patch_name, strlen(m->patch_name));
        edgellm_sha256_hex(m->patch_sha, hex);
        sb_printf(b, ",\"size\":%llu,\"sha256\":\"%s\"", (unsigned long long)m->patch_size, hex);
        edgellm_sha256_hex(m->patch_base, hex);
        sb_printf(b, ",\"base_sha256\":\"%s\"}", hex);
    }
    if (m->has_gate) {
        char x[32], y[32];
        sb_printf(b, ",\"gate\":{\"logits\":");
        canon_blob(b, &m->gate_logits);
        sb_printf(b, ",\"text\":");
        canon_blob(b, &m->gate_text);
        sb_printf(b, ",\"max_kld\":%s,\"min_top1\":%s}", fmt_double(m->gate_max_kld, x),
                  fmt_double(m->gate_min_top1, y));
    }
    sb_printf(b, ",\"tensors\":[");
    for (int i = 0; i < m->n_tensors; i++) {
        sb_printf(b, "%s\n{\"name\":", i ? "," : "");
        sb_str(b, m->tensors[i].name, strlen(m->tensors[i].name));
        edgellm_sha256_hex(m->tensors[i].sha, hex);
        sb_printf(b, ",\"offset\":%llu,\"size\":%llu,\"sha256\":\"%s\"}", (unsigned long long)m->tensors[i].offset,
                  (unsigned long long)m->tensors[i].size, hex);
    }
    sb_printf(b, "]}");
}

/* The manifest file: the canonical form with the signature as its last field. */
static void manifest_text(const manifest *m, sbuf *b)
{
    canon_manifest(m, b);
    if (m->has_sig && b->p && !b->oom) {
        char k[65], s[129];
        hex_of(m->key, 32, k);
        hex_of(m->sig, 64, s);
        b->n--;   /* the closing brace */
        sb_printf(b, ",\"signature\":{\"key\":\"%s\",\"sig\":\"%s\"}}", k, s);
    }
    sb_put(b, "\n", 1);
}

static edgellm_status bad_field(edgellm_error *err, const char *file, const char *field, const char *fmt, ...)
    EDGELLM_PRINTF(4, 5);
static edgellm_status bad_field(edgellm_error *err, const char *file, const char *field, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: manifest field '%s': %s", file, field, why);
}

static bool json_u64(const cJSON *v, uint64_t max, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < 0 || v->valuedouble > (double)max ||
        v->valuedouble != floor(v->valuedouble) || v->valuedouble > 9007199254740992.0)
        return false;
    *out = (uint64_t)v->valuedouble;
    return true;
}

/* Only these keys may appear in obj. */
static edgellm_status only_keys(const cJSON *obj, const char *const *keys, const char *file, const char *where,
                                edgellm_error *err)
{
    for (const cJSON *c = obj->child; c; c = c->next) {
        int known = 0;
        for (int i = 0; keys[i]; i++) known |= c->string && !strcmp(c->string, keys[i]);
        if (!known) {
            char f[160];
            snprintf(f, sizeof f, "%s%s%.100s", where, *where ? "." : "", c->string ? c->string : "?");
            return bad_field(err, file, f, "not a field of an edgellm manifest");
        }
    }
    return EDGELLM_OK;
}

static edgellm_status get_str(const cJSON *o, const char *key, const char *file, const char *field, char *out,
                              size_t n, bool required, edgellm_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return required ? bad_field(err, file, field, "missing") : EDGELLM_OK;
    if (!cJSON_IsString(v) || !v->valuestring) return bad_field(err, file, field, "not a string");
    if (strlen(v->valuestring) >= n) return bad_field(err, file, field, "longer than %zu bytes", n - 1);
    snprintf(out, n, "%s", v->valuestring);
    return EDGELLM_OK;
}

static edgellm_status get_sha(const cJSON *o, const char *key, const char *file, const char *field, uint8_t out[32],
                              edgellm_error *err)
{
    char hex[80];
    edgellm_status st = get_str(o, key, file, field, hex, sizeof hex, true, err);
    if (st) return st;
    if (!edgellm_sha256_parse(hex, out)) return bad_field(err, file, field, "not 64 lowercase hex digits");
    return EDGELLM_OK;
}

static edgellm_status get_u64(const cJSON *o, const char *key, const char *file, const char *field, uint64_t *out,
                              edgellm_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return bad_field(err, file, field, "missing");
    if (!json_u64(v, UINT64_MAX, out)) return bad_field(err, file, field, "not an integer in [0, 2^53]");
    return EDGELLM_OK;
}

/* o.key: {"name": plain file name, "size": <= max, "sha256": 64 hex digits} */
static edgellm_status get_blob(const cJSON *o, const char *key, const char *file, const char *field, mblob *out,
                               uint64_t max, edgellm_error *err)
{
    static const char *const blobk[] = {"name", "size", "sha256", NULL};
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char f[64];
    if (!cJSON_IsObject(v)) return bad_field(err, file, field, v ? "not an object" : "missing");
    edgellm_status st = only_keys(v, blobk, file, field, err);
    if (st) return st;
    snprintf(f, sizeof f, "%s.name", field);
    if ((st = get_str(v, "name", file, f, out->name, sizeof out->name, true, err))) return st;
    if (!valid_file_name(out->name)) return bad_field(err, file, f, "not a plain file name");
    snprintf(f, sizeof f, "%s.size", field);
    if ((st = get_u64(v, "size", file, f, &out->size, err))) return st;
    if (out->size > max) return bad_field(err, file, f, "above %llu bytes", (unsigned long long)max);
    snprintf(f, sizeof f, "%s.sha256", field);
    return get_sha(v, "sha256", file, f, out->sha, err);
}

/* o.key: a number in [lo, hi] */
static edgellm_status get_double(const cJSON *o, const char *key, const char *file, const char *field, double lo,
                                 double hi, double *out, edgellm_error *err)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) return bad_field(err, file, field, "missing");
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo || v->valuedouble > hi)
        return bad_field(err, file, field, "not a number in [%g, %g]", lo, hi);
    *out = v->valuedouble;
    return EDGELLM_OK;
}

/* Parse text (len bytes) of file into *m. Signature bytes are read, not checked. */
static edgellm_status manifest_parse(const char *text, size_t len, const char *file, manifest *m,
                                     edgellm_error *err)
{
    memset(m, 0, sizeof *m);
    if (memchr(text, 0, len)) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: manifest holds a NUL byte", file);
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!root) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not JSON (near byte %zu)", file,
                                   cJSON_GetErrorPtr() ? (size_t)(cJSON_GetErrorPtr() - text) : (size_t)0);
    edgellm_status st = EDGELLM_OK;
    static const char *const top[] = {"edgellm_manifest", "name", "version", "created", "expires", "min_edgellm",
                                      "file", "patch", "gate", "tensors", "signature", NULL};
    static const char *const filek[] = {"name", "size", "sha256", NULL};
    static const char *const patchk[] = {"name", "size", "sha256", "base_sha256", NULL};
    static const char *const tk[] = {"name", "offset", "size", "sha256", NULL};
    static const char *const sigk[] = {"key", "sig", NULL};
    char tbuf[64];
    uint64_t u;
    const cJSON *v;
    if (!cJSON_IsObject(root)) { st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not a JSON object", file); goto done; }
    if ((st = only_keys(root, top, file, "", err))) goto done;
    v = cJSON_GetObjectItemCaseSensitive(root, "edgellm_manifest");
    if (!v || !json_u64(v, 1000, &u) || u != 1) {
        st = bad_field(err, file, "edgellm_manifest", v ? "not 1 (the only format version edgellm reads)" : "missing");
        goto done;
    }
    if ((st = get_str(root, "name", file, "name", m->name, sizeof m->name, true, err))) goto done;
    if (!valid_name(m->name)) { st = bad_field(err, file, "name", "not 1..63 of [A-Za-z0-9._-]"); goto done; }
    v = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!v || !json_u64(v, UINT64_MAX, &u) || u == 0) {
        st = bad_field(err, file, "version", v ? "not a positive integer" : "missing");
        goto done;
    }
    m->version = (int64_t)u;
    if ((st = get_str(root, "created", file, "created", tbuf, sizeof tbuf, true, err))) goto done;
    if (!parse_time(tbuf, &m->created)) { st = bad_field(err, file, "created", "not YYYY-MM-DDTHH:MM:SSZ"); goto done; }
    tbuf[0] = 0;
    if ((st = get_str(root, "expires", file, "expires", tbuf, sizeof tbuf, false, err))) goto done;
    if (tbuf[0] && !parse_time(tbuf, &m->expires)) {
        st = bad_field(err, file, "expires", "not YYYY-MM-DDTHH:MM:SSZ");
        goto done;
    }
    if ((st = get_str(root, "min_edgellm", file, "min_edgellm", m->min_edgellm, sizeof m->min_edgellm, true, err)))
        goto done;
    if (version_number(m->min_edgellm) < 0) { st = bad_field(err, file, "min_edgellm", "not MAJOR.MINOR.PATCH"); goto done; }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, "file");
    if (!cJSON_IsObject(f)) { st = bad_field(err, file, "file", f ? "not an object" : "missing"); goto done; }
    if ((st = only_keys(f, filek, file, "file", err))) goto done;
    if ((st = get_str(f, "name", file, "file.name", m->file_name, sizeof m->file_name, true, err))) goto done;
    if (!valid_file_name(m->file_name)) { st = bad_field(err, file, "file.name", "not a plain file name"); goto done; }
    if ((st = get_u64(f, "size", file, "file.size", &m->file_size, err))) goto done;
    if ((st = get_sha(f, "sha256", file, "file.sha256", m->file_sha, err))) goto done;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "patch");
    if (p) {
        if (!cJSON_IsObject(p)) { st = bad_field(err, file, "patch", "not an object"); goto done; }
        if ((st = only_keys(p, patchk, file, "patch", err))) goto done;
        m->has_patch = 1;
        if ((st = get_str(p, "name", file, "patch.name", m->patch_name, sizeof m->patch_name, true, err))) goto done;
        if (!valid_file_name(m->patch_name)) { st = bad_field(err, file, "patch.name", "not a plain file name"); goto done; }
        if ((st = get_u64(p, "size", file, "patch.size", &m->patch_size, err))) goto done;
        if ((st = get_sha(p, "sha256", file, "patch.sha256", m->patch_sha, err))) goto done;
        if ((st = get_sha(p, "base_sha256", file, "patch.base_sha256", m->patch_base, err))) goto done;
    }
    const cJSON *gt = cJSON_GetObjectItemCaseSensitive(root, "gate");
    if (gt) {
        static const char *const gatek[] = {"logits", "text", "max_kld", "min_top1", NULL};
        if (!cJSON_IsObject(gt)) { st = bad_field(err, file, "gate", "not an object"); goto done; }
        if ((st = only_keys(gt, gatek, file, "gate", err))) goto done;
        m->has_gate = 1;
        if ((st = get_blob(gt, "logits", file, "gate.logits", &m->gate_logits, EDGELLM_STORE_MAX_GATE_LOGITS, err)) ||
            (st = get_blob(gt, "text", file, "gate.text", &m->gate_text, EDGELLM_STORE_MAX_GATE_TEXT, err)) ||
            (st = get_double(gt, "max_kld", file, "gate.max_kld", 0, 1e6, &m->gate_max_kld, err)) ||
            (st = get_double(gt, "min_top1", file, "gate.min_top1", 0, 100, &m->gate_min_top1, err)))
            goto done;
    }
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(root, "tensors");
    if (!cJSON_IsArray(ts)) { st = bad_field(err, file, "tensors", ts ? "not an array" : "missing"); goto done; }
    const int n = cJSON_GetArraySize(ts);
    if (n > 1000000) { st = bad_field(err, file, "tensors", "more than 1000000 entries"); goto done; }
    m->tensors = n ? edgellm_calloc((size_t)n, sizeof *m->tensors) : NULL;
    if (n && !m->tensors) { st = edgellm_fail_nomem(err, file); goto done; }
    int i = 0;
    for (const cJSON *t = ts->child; t; t = t->next, i++) {
        char field[64], nm[512];
        snprintf(field, sizeof field, "tensors[%d]", i);
        if (!cJSON_IsObject(t)) { st = bad_field(err, file, field, "not an object"); goto done; }
        if ((st = only_keys(t, tk, file, field, err))) goto done;
        snprintf(field, sizeof field, "tensors[%d].name", i);
        if ((st = get_str(t, "name", file, field, nm, sizeof nm, true, err))) goto done;
        m->tensors[i].name = edgellm_strdup(nm);
        m->n_tensors = i + 1;
        if (!m->tensors[i].name) { st = edgellm_fail_nomem(err, file); goto done; }
        snprintf(field, sizeof field, "tensors[%d].offset", i);
        if ((st = get_u64(t, "offset", file, field, &m->tensors[i].offset, err))) goto done;
        snprintf(field, sizeof field, "tensors[%d].size", i);
        if ((st = get_u64(t, "size", file, field, &m->tensors[i].size, err))) goto done;
        if (m->tensors[i].offset > m->file_size || m->tensors[i].size > m->file_size - m->tensors[i].offset) {
            snprintf(field, sizeof field, "tensors[%d]", i);
            st = bad_field(err, file, field, "offset + size beyond file.size");
            goto done;
        }
        snprintf(field, sizeof field, "tensors[%d].sha256", i);
        if ((st = get_sha(t, "sha256", file, field, m->tensors[i].sha, err))) goto done;
    }
    const cJSON *sg = cJSON_GetObjectItemCaseSensitive(root, "signature");
    if (sg) {
        char k[80], s[160];
        if (!cJSON_IsObject(sg)) { st = bad_field(err, file, "signature", "not an object"); goto done; }
        if ((st = only_keys(sg, sigk, file, "signature", err))) goto done;
        if ((st = get_str(sg, "key", file, "signature.key", k, sizeof k, true, err))) goto done;
        if ((st = get_str(sg, "sig", file, "signature.sig", s, sizeof s, true, err))) goto done;
        if (!hex_parse(k, m->key, 32)) { st = bad_field(err, file, "signature.key", "not 64 hex digits"); goto done; }
        if (!hex_parse(s, m->sig, 64)) { st = bad_field(err, file, "signature.sig", "not 128 hex digits"); goto done; }
        m->has_sig = 1;
    }
done:
    cJSON_Delete(root);
    if (st) manifest_free(m);
    return st;
}

edgellm_status edgellm_store_manifest_check(const char *text, size_t len, bool *roundtrip_ok, edgellm_error *err)
{
    manifest a, b;
    *roundtrip_ok = false;
    edgellm_status st = manifest_parse(text, len, "fuzz.json", &a, err);
    if (st) return st;
    sbuf t = {0}, u = {0};
    manifest_text(&a, &t);
    if (!t.oom && manifest_parse(t.p, t.n, "canonical.json", &b, NULL) == EDGELLM_OK) {
        manifest_text(&b, &u);
        *roundtrip_ok = !u.oom && u.n == t.n && !memcmp(u.p, t.p, t.n);
        manifest_free(&b);
    }
    edgellm_free(t.p);
    edgellm_free(u.p);
    manifest_free(&a);
    return EDGELLM_OK;
}

/* ---- the store folder ------------------------------------------------------------------ */

static edgellm_status spath(const edgellm_store *s, char *out, size_t n, edgellm_error *err, const char *fmt, ...)
    EDGELLM_PRINTF(5, 6);
static edgellm_status spath(const edgellm_store *s, char *out, size_t n, edgellm_error *err, const char *fmt, ...)
{
    int k = snprintf(out, n, "%s/", s->dir);
    va_list ap;
    va_start(ap, fmt);
    int m = k >= 0 && (size_t)k < n ? vsnprintf(out + k, n - (size_t)k, fmt, ap) : -1;
    va_end(ap);
    if (m < 0 || (size_t)(k + m) >= n) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", s->dir);
    return EDGELLM_OK;
}

edgellm_store_params edgellm_store_default_params(void)
{
    return (edgellm_store_params){.size = sizeof(edgellm_store_params), .smoke_test = 1};
}
edgellm_store_add_params edgellm_store_add_default_params(void)
{
    return (edgellm_store_add_params){.size = sizeof(edgellm_store_add_params), .chunk_bytes = (uint64_t)4 << 20,
                                      .retries = 5, .connect_timeout_s = 15, .low_speed_time_s = 30};
}
edgellm_store_publish_params edgellm_store_publish_default_params(void)
{
    return (edgellm_store_publish_params){.size = sizeof(edgellm_store_publish_params), .expires_days = 365,
                                          .gate_max_kld = -1, .gate_min_top1 = -1, .gate_n_ctx = 128,
                                          .gate_chunks = 4};
}

edgellm_status edgellm_store_open(const edgellm_store_params *pp, edgellm_store **out, edgellm_error *err)
{
    if (!out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: out is NULL");
    *out = NULL;
    edgellm_store_params p = edgellm_store_default_params();
    if (pp) {
        if (!pp->size) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: params.size is 0");
        memcpy(&p, pp, pp->size < sizeof p ? pp->size : sizeof p);
    }
    if (sodium_init() < 0) return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "store: libsodium failed to start");
    edgellm_store *s = edgellm_calloc(1, sizeof *s);
    if (!s) return edgellm_fail_nomem(err, "store");
    const char *env = getenv("EDGELLM_STORE"), *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
    int k;
    if (p.dir && *p.dir) k = snprintf(s->dir, sizeof s->dir, "%s", p.dir);
    else if (env && *env) k = snprintf(s->dir, sizeof s->dir, "%s", env);
    else if (xdg && *xdg) k = snprintf(s->dir, sizeof s->dir, "%s/edgellm/store", xdg);
    else if (home && *home) k = snprintf(s->dir, sizeof s->dir, "%s/.local/share/edgellm/store", home);
    else { edgellm_free(s); return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: no folder (set EDGELLM_STORE or HOME)"); }
    if (k < 0 || (size_t)k >= sizeof s->dir) { edgellm_free(s); return edgellm_fail(err, EDGELLM_ERR_IO, "store: folder path too long"); }
    while (k > 1 && s->dir[k - 1] == '/') s->dir[--k] = 0;
    if (s->dir[0] != '/') {   /* absolute, so that the paths handed out stay valid after a chdir */
        char cwd[PATH_MAX], rel[sizeof s->dir];
        memcpy(rel, s->dir, sizeof rel);
        if (!getcwd(cwd, sizeof cwd) || snprintf(s->dir, sizeof s->dir, "%s/%s", cwd, rel) >= (int)sizeof s->dir) {
            edgellm_free(s);
            return edgellm_fail(err, EDGELLM_ERR_IO, "store: folder path too long");
        }
    }
    s->lock_fd = -1;
    s->smoke_test = p.smoke_test;
    s->progress = p.progress;
    s->progress_user = p.progress_user;
    static const char *const subs[] = {"", "/blobs", "/manifests", "/refs", "/keys", "/tmp", "/downloads"};
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        char d[PATH_MAX];
        snprintf(d, sizeof d, "%s%s", s->dir, subs[i]);
        if (!mkdir_p(d)) {
            int e = errno;
            edgellm_free(s);
            return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot create the store folder: %s", d, strerror(e));
        }
    }
    *out = s;
    return EDGELLM_OK;
}

void edgellm_store_close(edgellm_store *s)
{
    if (!s) return;
    if (s->lock_fd >= 0) close(s->lock_fd);
    edgellm_free(s);
}

const char *edgellm_store_dir(const edgellm_store *s) { return s ? s->dir : ""; }

static edgellm_status lock(edgellm_store *s, int how, edgellm_error *err)
{
    if (s->lock_depth++) return EDGELLM_OK;
    char p[PATH_MAX];
    if (spath(s, p, sizeof p, err, "lock")) { s->lock_depth--; return EDGELLM_ERR_IO; }
    s->lock_fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (s->lock_fd < 0) {
        s->lock_depth--;
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", p, strerror(errno));
    }
    while (flock(s->lock_fd, how) != 0)
        if (errno != EINTR) {
            int e = errno;
            close(s->lock_fd);
            s->lock_fd = -1;
            s->lock_depth--;
            return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot lock: %s", p, strerror(e));
        }
    return EDGELLM_OK;
}
static void unlock(edgellm_store *s)
{
    if (--s->lock_depth) return;
    close(s->lock_fd);
    s->lock_fd = -1;
}

/* refs/NAME: "active A\nprevious P\n" */
static edgellm_status read_refs(const edgellm_store *s, const char *name, int64_t *active, int64_t *prev,
                                edgellm_error *err)
{
    *active = *prev = 0;
    char p[PATH_MAX], *t;
    size_t n;
    if (spath(s, p, sizeof p, err, "refs/%s", name)) return EDGELLM_ERR_IO;
    edgellm_status st = read_small(p, 4096, &t, &n, err);
    if (st == EDGELLM_ERR_NOT_FOUND) return EDGELLM_OK;
    if (st) return st;
    long long a, b;
    int k = 0;
    if (sscanf(t, "active %lld\nprevious %lld\n%n", &a, &b, &k) != 2 || (size_t)k != n || a < 0 || b < 0) {
        edgellm_free(t);
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not \"active N\\nprevious N\\n\"", p);
    }
    edgellm_free(t);
    *active = a;
    *prev = b;
    return EDGELLM_OK;
}
static edgellm_status write_refs(const edgellm_store *s, const char *name, int64_t active, int64_t prev,
                                 edgellm_error *err)
{
    char p[PATH_MAX], t[96];
    if (spath(s, p, sizeof p, err, "refs/%s", name)) return EDGELLM_ERR_IO;
    int n = snprintf(t, sizeof t, "active %lld\nprevious %lld\n", (long long)active, (long long)prev);
    return atomic_write(p, t, (size_t)n, 0644, err);
}

/* manifests/NAME/V.status: "ok\n" (then the quality gate's result line when the manifest has
 * a gate) or "failed: WHY\n". 1 ok, -1 failed, 0 none; why (n bytes) gets WHY, or the gate's
 * line of an ok version ("" when none). */
static int read_status(const edgellm_store *s, const char *name, int64_t v, char *why, size_t n)
{
    char p[PATH_MAX], *t;
    size_t len;
    edgellm_error e = {0};
    if (why && n) why[0] = 0;
    if (spath(s, p, sizeof p, &e, "manifests/%s/%lld.status", name, (long long)v)) return 0;
    if (read_small(p, 4096, &t, &len, &e)) return 0;
    int r = !strncmp(t, "ok\n", 3) ? 1 : !strncmp(t, "failed: ", 8) ? -1 : 0;
    if (r && why) {
        snprintf(why, n, "%s", t + (r < 0 ? 8 : 3));
        why[strcspn(why, "\n")] = 0;
    }
    edgellm_free(t);
    return r;
}
/* why NULL: "ok" with the gate's line (NULL: none); else "failed: why". */
static edgellm_status write_status(const edgellm_store *s, const char *name, int64_t v, const char *why,
                                   const char *gate, edgellm_error *err)
{
    char p[PATH_MAX], t[600];
    if (spath(s, p, sizeof p, err, "manifests/%s/%lld.status", name, (long long)v)) return EDGELLM_ERR_IO;
    int n = why ? snprintf(t, sizeof t, "failed: %.560s\n", why)
                : snprintf(t, sizeof t, "ok\n%.560s%s", gate ? gate : "", gate ? "\n" : "");
    for (int i = why ? 8 : 3; i < n - 1; i++)
        if (t[i] == '\n') t[i] = ' ';
    return atomic_write(p, t, (size_t)n, 0644, err);
}

static edgellm_status load_manifest(const edgellm_store *s, const char *name, int64_t v, manifest *m, char **text,
                                    size_t *len, edgellm_error *err)
{
    char p[PATH_MAX], *t;
    size_t n;
    if (spath(s, p, sizeof p, err, "manifests/%s/%lld.json", name, (long long)v)) return EDGELLM_ERR_IO;
    edgellm_status st = read_small(p, EDGELLM_STORE_MAX_MANIFEST_BYTES, &t, &n, err);
    if (st) return st;
    st = manifest_parse(t, n, p, m, err);
    if (!st && (strcmp(m->name, name) || m->version != v)) {
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: manifest is of %s@%lld, not of its file name", p, m->name,
                          (long long)m->version);
        manifest_free(m);
    }
    if (st) { edgellm_free(t); return st; }
    if (text) { *text = t; *len = n; }
    else edgellm_free(t);
    return EDGELLM_OK;
}

/* Versions of a name that have a manifest file, ascending (malloc'd; *n). */
static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}
static int64_t *versions_of(const edgellm_store *s, const char *name, int *n)
{
    *n = 0;
    char p[PATH_MAX];
    edgellm_error e;
    if (spath(s, p, sizeof p, &e, "manifests/%s", name)) return NULL;
    DIR *d = opendir(p);
    if (!d) return NULL;
    int64_t *v = NULL;
    int cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long long x = strtoll(de->d_name, &end, 10);
        if (x <= 0 || strcmp(end, ".json") || de->d_name[0] == '0' || de->d_name[0] == '+' || de->d_name[0] == '-')
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            int64_t *q = edgellm_realloc(v, (size_t)cap * sizeof *v);
            if (!q) break;
            v = q;
        }
        v[(*n)++] = x;
    }
    closedir(d);
    if (v) qsort(v, (size_t)*n, sizeof *v, cmp_i64);
    return v;
}

/* Names with a folder under manifests/ or a file under refs/, sorted (malloc'd array of
 * malloc'd strings). */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static char **names_of(const edgellm_store *s, int *n)
{
    *n = 0;
    char **v = NULL;
    int cap = 0;
    for (int k = 0; k < 2; k++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/%s", s->dir, k ? "refs" : "manifests");
        DIR *d = opendir(p);
        if (!d) continue;
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!valid_name(de->d_name) || strstr(de->d_name, ".tmp.")) continue;
            int dup = 0;
            for (int i = 0; i < *n; i++) dup |= !strcmp(v[i], de->d_name);
            if (dup) continue;
            if (*n == cap) {
                cap = cap ? cap * 2 : 16;
                char **q = edgellm_realloc(v, (size_t)cap * sizeof *v);
                if (!q) break;
                v = q;
            }
            if ((v[*n] = edgellm_strdup(de->d_name))) (*n)++;
        }
        closedir(d);
    }
    if (v) qsort(v, (size_t)*n, sizeof *v, cmp_str);
    return v;
}
static void free_names(char **v, int n)
{
    for (int i = 0; i < n; i++) edgellm_free(v[i]);
    edgellm_free(v);
}

/* Trusted keys (keys/HEX16.pub): 1 when key is one of them. */
static bool trusted(const edgellm_store *s, const uint8_t key[32])
{
    char hex[65], p[PATH_MAX], *t;
    size_t n;
    edgellm_error e;
    hex_of(key, 16, hex);
    if (spath(s, p, sizeof p, &e, "keys/%s.pub", hex)) return false;
    if (read_small(p, 4096, &t, &n, &e)) return false;
    uint8_t k[32];
    t[strcspn(t, "\r\n")] = 0;
    bool ok = hex_parse(t, k, 32) && !memcmp(k, key, 32);
    edgellm_free(t);
    return ok;
}

/* 1: signed by a trusted key and the signature holds; 0: unsigned or untrusted key;
 * -1: a signature that does not hold (tampered). */
static int check_signature(const edgellm_store *s, const manifest *m, bool *trusted_key)
{
    *trusted_key = false;
    if (!m->has_sig) return 0;
    sbuf b = {0};
    canon_manifest(m, &b);
    int ok = !b.oom && crypto_sign_verify_detached(m->sig, (const unsigned char *)b.p, b.n, m->key) == 0;
    edgellm_free(b.p);
    if (!ok) return -1;
    *trusted_key = s && trusted(s, m->key);
    return *trusted_key ? 1 : 0;
}

static void fill_entry(const edgellm_store *s, const manifest *m, int64_t active, int64_t prev,
                       edgellm_store_entry *e)
{
    edgellm_store_entry r;
    memset(&r, 0, sizeof r);
    r.size = e->size;
    snprintf(r.name, sizeof r.name, "%s", m->name);
    r.version = m->version;
    r.file_size = m->file_size;
    edgellm_sha256_hex(m->file_sha, r.sha256);
    r.active = active == m->version;
    r.previous = prev == m->version;
    r.verified = read_status(s, m->name, m->version, r.note, sizeof r.note);
    if (r.verified > 0) {
        snprintf(r.gate, sizeof r.gate, "%.399s", r.note);
        r.note[0] = 0;
    }
    bool tk;
    r.signed_by_trusted = check_signature(s, m, &tk) == 1;
    r.created = m->created;
    r.expires = m->expires;
    snprintf(r.path, sizeof r.path, "%s/blobs/sha256-%s", s->dir, r.sha256);
    if (e->size) memcpy(e, &r, e->size < sizeof r ? e->size : sizeof r);
}

/* manifests/NAME/highest: the highest version ever added (gc never lowers it). */
static int64_t highest_seen(const edgellm_store *s, const char *name)
{
    char p[PATH_MAX], *t;
    size_t n;
    edgellm_error e;
    long long v = 0;
    if (spath(s, p, sizeof p, &e, "manifests/%s/highest", name) || read_small(p, 64, &t, &n, &e)) return 0;
    if (sscanf(t, "%lld", &v) != 1 || v < 0) v = 0;
    edgellm_free(t);
    return v;
}

/* ---- verification of a blob ------------------------------------------------------------ */

static bool smoke(const char *path, char *why, size_t n)
{
    edgellm_model_params mp = edgellm_model_default_params();
    mp.n_threads = 1;
    edgellm_model *m = NULL;
    edgellm_ctx *c = NULL;
    edgellm_error e = {0};
    bool ok = false;
    if (edgellm_model_load(path, &mp, &m, &e)) { snprintf(why, n, "does not load: %.300s", e.msg); return false; }
    edgellm_model_info info = {.size = sizeof info};
    edgellm_model_get_info(m, &info);
    edgellm_ctx_params cp = edgellm_ctx_default_params();
    cp.n_ctx = 8;
    cp.n_threads = 1;
    if (edgellm_ctx_new(m, &cp, &c, &e)) { snprintf(why, n, "no context: %.300s", e.msg); goto out; }
    const edgellm_tokenizer *t = edgellm_model_tokenizer(m);
    int32_t tok = t && edgellm_token_bos(t) >= 0 ? edgellm_token_bos(t) : 0;
    for (int step = 0; step < 4; step++) {
        if (edgellm_decode(c, &tok, 1, NULL, &e)) {
            snprintf(why, n, "smoke test: decode failed: %.300s", e.msg);
            goto out;
        }
        const float *l = edgellm_ctx_logits(c);
        int best = 0;
        for (int i = 0; i < info.n_vocab; i++) {
            if (!isfinite(l[i])) { snprintf(why, n, "smoke test: logit %d is not finite", i); goto out; }
            if (l[i] > l[best]) best = i;
        }
        tok = best;
    }
    ok = true;
out:
    edgellm_ctx_free(c);
    edgellm_model_free(m);
    return ok;
}

/* Size, SHA-256, GGUF validation, per-tensor SHA-256 against m; then the smoke test. */
static bool verify_blob(const edgellm_store *s, const char *path, const manifest *m, bool smoke_test, char *why,
                        size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { snprintf(why, n, "%s: %s", path, strerror(errno)); return false; }
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != m->file_size) {
        snprintf(why, n, "%s: %lld bytes, the manifest's file.size says %llu", path, (long long)st.st_size,
                 (unsigned long long)m->file_size);
        close(fd);
        return false;
    }
    const uint8_t *map = m->file_size ? mmap(NULL, m->file_size, PROT_READ, MAP_SHARED, fd, 0) : NULL;
    close(fd);
    if (m->file_size && map == MAP_FAILED) { snprintf(why, n, "%s: cannot map: %s", path, strerror(errno)); return false; }
    bool ok = false;
    edgellm_gguf_meta *g = NULL;
    edgellm_sha256 h;
    uint8_t d[32];
    edgellm_sha256_init(&h);
    for (uint64_t off = 0; off < m->file_size;) {
        size_t k = m->file_size - off < (64u << 20) ? (size_t)(m->file_size - off) : (64u << 20);
        edgellm_sha256_update(&h, map + off, k);
        off += k;
        progress(s->progress, s->progress_user, 0.8 * (double)off / (double)m->file_size, "verifying");
    }
    edgellm_sha256_final(&h, d);
    if (memcmp(d, m->file_sha, 32)) {
        char hex[65];
        edgellm_sha256_hex(d, hex);
        snprintf(why, n, "%s: SHA-256 %s does not match the manifest's file.sha256", path, hex);
        goto out;
    }
    edgellm_error e = {0};
    if (edgellm_gguf_meta_open(path, &g, &e)) { snprintf(why, n, "%s", e.msg); goto out; }
    const int64_t nt = edgellm_gguf_meta_n_tensors(g);
    if (nt != m->n_tensors) {
        snprintf(why, n, "%s: %lld tensors, the manifest lists %d", path, (long long)nt, m->n_tensors);
        goto out;
    }
    const uint64_t base = edgellm_gguf_meta_data_offset(g);
    for (int64_t i = 0; i < nt; i++) {
        edgellm_gguf_tensor_info ti;
        edgellm_gguf_meta_tensor(g, i, &ti);
        const mtensor *mt = &m->tensors[i];
        if (ti.name_len != strlen(mt->name) || memcmp(ti.name, mt->name, ti.name_len) || base + ti.offset != mt->offset ||
            ti.size_bytes != mt->size) {
            snprintf(why, n, "%s: tensor %lld is not the manifest's tensors[%lld] (%s)", path, (long long)i,
                     (long long)i, mt->name);
            goto out;
        }
        edgellm_sha256_init(&h);
        edgellm_sha256_update(&h, map + mt->offset, mt->size);
        edgellm_sha256_final(&h, d);
        if (memcmp(d, mt->sha, 32)) {
            snprintf(why, n, "%s: tensor %s: SHA-256 does not match the manifest's tensors[%lld].sha256", path,
                     mt->name, (long long)i);
            goto out;
        }
    }
    ok = true;
out:
    edgellm_gguf_meta_close(g);
    if (m->file_size) munmap((void *)map, m->file_size);
    if (ok && smoke_test) {
        progress(s->progress, s->progress_user, 0.9, "smoke test");
        char w[400];
        if (!smoke(path, w, sizeof w)) { snprintf(why, n, "%s: %s", path, w); ok = false; }
    }
    progress(s->progress, s->progress_user, 1.0, "verified");
    return ok;
}

/* A manifest of a local GGUF file (unsigned): size, SHA-256 and per-tensor SHA-256. */
static edgellm_status manifest_from_file(const char *path, const char *name, int64_t version, manifest *m,
                                         edgellm_progress_fn pf, void *pu, edgellm_error *err)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    m->version = version;
    m->created = (int64_t)time(NULL);
    snprintf(m->min_edgellm, sizeof m->min_edgellm, "%s", EDGELLM_VERSION);
    snprintf(m->file_name, sizeof m->file_name, "%s@%lld.gguf", name, (long long)version);
    edgellm_gguf_meta *g = NULL;
    edgellm_status st = edgellm_gguf_meta_open(path, &g, err);
    if (st) return st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0) close(fd);
        edgellm_gguf_meta_close(g);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(errno));
    }
    m->file_size = (uint64_t)sb.st_size;
    const uint8_t *map = m->file_size ? mmap(NULL, m->file_size, PROT_READ, MAP_SHARED, fd, 0) : NULL;
    close(fd);
    if (map == MAP_FAILED) { edgellm_gguf_meta_close(g); return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot map", path); }
    edgellm_sha256 h;
    edgellm_sha256_init(&h);
    for (uint64_t off = 0; off < m->file_size;) {
        size_t k = m->file_size - off < (64u << 20) ? (size_t)(m->file_size - off) : (64u << 20);
        edgellm_sha256_update(&h, map + off, k);
        off += k;
        progress(pf, pu, 0.5 * (double)off / (double)m->file_size, "hashing");
    }
    edgellm_sha256_final(&h, m->file_sha);
    const int64_t nt = edgellm_gguf_meta_n_tensors(g);
    const uint64_t base = edgellm_gguf_meta_data_offset(g);
    m->tensors = nt ? edgellm_calloc((size_t)nt, sizeof *m->tensors) : NULL;
    if (nt && !m->tensors) st = edgellm_fail_nomem(err, path);
    for (int64_t i = 0; !st && i < nt; i++) {
        edgellm_gguf_tensor_info ti;
        edgellm_gguf_meta_tensor(g, i, &ti);
        if (memchr(ti.name, 0, ti.name_len) || ti.name_len > 400) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: tensor %lld: name holds a NUL byte or is too long", path,
                              (long long)i);
            break;
        }
        mtensor *t = &m->tensors[i];
        t->name = edgellm_strndup(ti.name, ti.name_len);
        m->n_tensors = (int)i + 1;
        if (!t->name) { st = edgellm_fail_nomem(err, path); break; }
        t->offset = base + ti.offset;
        t->size = ti.size_bytes;
        edgellm_sha256_init(&h);
        edgellm_sha256_update(&h, map + t->offset, t->size);
        edgellm_sha256_final(&h, t->sha);
        progress(pf, pu, 0.5 + 0.5 * (double)(i + 1) / (double)nt, "hashing tensors");
    }
    if (m->file_size) munmap((void *)map, m->file_size);
    edgellm_gguf_meta_close(g);
    if (st) manifest_free(m);
    return st;
}

/* ---- add ------------------------------------------------------------------------------- */

/* Copy src into a temporary under tmp/, hashing; on success *tmp_out names it (fsynced). */
static edgellm_status copy_in(edgellm_store *s, const char *src, char *tmp_out, size_t tn, uint8_t sha[32],
                              uint64_t *size, uint64_t cap, const char *field, edgellm_error *err)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return edgellm_fail(err, errno == ENOENT ? EDGELLM_ERR_NOT_FOUND : EDGELLM_ERR_IO, "%s: %s", src,
                                    strerror(errno));
    struct stat st;
    if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(in);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", src);
    }
    if ((uint64_t)st.st_size != cap) {
        close(in);
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %lld bytes, the manifest's %s says %llu", src,
                            (long long)st.st_size, field, (unsigned long long)cap);
    }
    if (spath(s, tmp_out, tn, err, "tmp/add.XXXXXX")) { close(in); return EDGELLM_ERR_IO; }
    int out = mkstemp(tmp_out);
    if (out < 0) {
        close(in);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot create: %s", tmp_out, strerror(errno));
    }
    const size_t B = 1 << 20;
    char *buf = edgellm_malloc(B);
    edgellm_sha256 h;
    edgellm_sha256_init(&h);
    uint64_t n = 0;
    edgellm_status rc = buf ? EDGELLM_OK : edgellm_fail_nomem(err, src);
    while (!rc) {
        ssize_t r = read(in, buf, B);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: read failed: %s", src, strerror(errno)); break; }
        if (r == 0) break;
        if (n + (uint64_t)r > cap) {
            rc = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: longer than the manifest's %s %llu", src, field,
                              (unsigned long long)cap);
            break;
        }
        edgellm_sha256_update(&h, buf, (size_t)r);
        if (!edgellm_store_write_all(out, buf, (size_t)r))
            rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", tmp_out, strerror(errno));
        n += (uint64_t)r;
        progress(s->progress, s->progress_user, cap ? (double)n / (double)cap : 1.0, "copying");
    }
    edgellm_free(buf);
    close(in);
    if (!rc && !edgellm_store_fsync(out)) rc = edgellm_fail(err, EDGELLM_ERR_IO, "%s: fsync failed", tmp_out);
    close(out);
    if (rc) { unlink(tmp_out); return rc; }
    edgellm_sha256_final(&h, sha);
    *size = n;
    return EDGELLM_OK;
}

/* Put the verified-by-hash file tmp at blobs/sha256-HEX (m's hash), or remove it when the
 * blob exists already. */
static edgellm_status place_blob(edgellm_store *s, const char *tmp, const char *blob, edgellm_error *err)
{
    (void)s;
    struct stat st;
    if (stat(blob, &st) == 0) { unlink(tmp); return EDGELLM_OK; }
    if (!edgellm_store_rename(tmp, blob)) {
        int e = errno;
        unlink(tmp);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot rename into place: %s", blob, strerror(e));
    }
    return EDGELLM_OK;
}

/* "http://h/dir/x.json" + "y.gguf" -> "http://h/dir/y.gguf"; a local path likewise. */
static void sibling(const char *base, const char *name, char *out, size_t n)
{
    const char *slash = strrchr(base, '/');
    if (!slash) snprintf(out, n, "%s", name);
    else snprintf(out, n, "%.*s/%s", (int)(slash - base), base, name);
}

/* Bring a quality gate's blob x (field "gate.logits" or "gate.text") into blobs/: from
 * beside the manifest (a file or a URL, downloaded with the same resume and size cap as a
 * model), checked against its size and SHA-256. */
static edgellm_status bring_gate_blob(edgellm_store *s, const edgellm_store_add_params *p, const mblob *x,
                                      const char *field, edgellm_error *err)
{
    char hex[65], blob[PATH_MAX], src[PATH_MAX], tmp[PATH_MAX], f[64];
    struct stat sb;
    edgellm_sha256_hex(x->sha, hex);
    edgellm_status st = spath(s, blob, sizeof blob, err, "blobs/sha256-%s", hex);
    if (st || stat(blob, &sb) == 0) return st;
    sibling(p->manifest, x->name, src, sizeof src);
    if (edgellm_store_is_url(src)) {
        if ((st = spath(s, tmp, sizeof tmp, err, "downloads/sha256-%s.part", hex))) return st;
        edgellm_fetch_opts fo = {.chunk_bytes = p->chunk_bytes, .retries = p->retries,
                                 .connect_timeout_s = p->connect_timeout_s, .low_speed_time_s = p->low_speed_time_s,
                                 .progress = s->progress, .progress_user = s->progress_user};
        if ((st = edgellm_store_fetch(src, tmp, x->size, x->sha, &fo, err))) return st;
        if ((st = place_blob(s, tmp, blob, err))) return st;
        char ck[PATH_MAX + 8];
        snprintf(ck, sizeof ck, "%s.ckpt", tmp);
        store_unlink(ck);
        return EDGELLM_OK;
    }
    uint8_t d[32];
    uint64_t n;
    snprintf(f, sizeof f, "%s.size", field);
    if ((st = copy_in(s, src, tmp, sizeof tmp, d, &n, x->size, f, err))) return st;
    if (memcmp(d, x->sha, 32)) {
        unlink(tmp);
        char dh[65];
        edgellm_sha256_hex(d, dh);
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: SHA-256 %s does not match the manifest's %s.sha256", src, dh,
                            field);
    }
    st = place_blob(s, tmp, blob, err);
    if (st) unlink(tmp);
    return st;
}

/* The quality gate of m: eval compare (edgellm_eval_compare, the saved-logits file's layout)
 * of the model at path against the gate's reference logits over its text, both blobs of
 * the store. true when KLD <= max_kld and top-1 >= min_top1; line gets the figures and the
 * verdict, or why the comparison could not run. */
static bool run_gate(const edgellm_store *s, const char *path, const manifest *m, char *line, size_t n)
{
    char lh[65], th[65], lp[PATH_MAX], tp[PATH_MAX], *text = NULL;
    size_t tl = 0;
    edgellm_error e = {0};
    edgellm_sha256_hex(m->gate_logits.sha, lh);
    edgellm_sha256_hex(m->gate_text.sha, th);
    if (spath(s, lp, sizeof lp, &e, "blobs/sha256-%s", lh) || spath(s, tp, sizeof tp, &e, "blobs/sha256-%s", th) ||
        read_small(tp, (size_t)EDGELLM_STORE_MAX_GATE_TEXT, &text, &tl, &e)) {
        snprintf(line, n, "quality gate: %.300s", e.msg);
        return false;
    }
    progress(s->progress, s->progress_user, 0.95, "quality gate");
    edgellm_model_params mp = edgellm_model_default_params();
    edgellm_model *model = NULL;
    edgellm_eval_compare_result r;
    memset(&r, 0, sizeof r);
    bool ok = false;
    if (edgellm_model_load(path, &mp, &model, &e) ||
        edgellm_eval_compare(model, NULL, lp, text, tl, NULL, &r, &e)) {
        snprintf(line, n, "quality gate: eval compare failed: %.300s", e.msg);
    } else {
        const bool kld_ok = r.n_kld_inf == 0 && r.kld_mean <= m->gate_max_kld;
        const bool top1_ok = r.top1_pct >= m->gate_min_top1;
        ok = kld_ok && top1_ok;
        snprintf(line, n,
                 "quality gate %s: KLD %.6g nats (max_kld %g)%s, top-1 %.2f %% (min_top1 %g)%s, %lld positions",
                 ok ? "passed" : "failed", r.kld_mean, m->gate_max_kld, kld_ok ? "" : " too high", r.top1_pct,
                 m->gate_min_top1, top1_ok ? "" : " too low", (long long)r.model.n_scored);
    }
    edgellm_model_free(model);
    edgellm_free(text);
    return ok;
}

static edgellm_status read_manifest_src(const char *src, double ct, char **text, size_t *len, edgellm_error *err)
{
    if (edgellm_store_is_url(src))
        return edgellm_store_fetch_small(src, EDGELLM_STORE_MAX_MANIFEST_BYTES, text, len, ct, err);
    return read_small(src, EDGELLM_STORE_MAX_MANIFEST_BYTES, text, len, err);
}

edgellm_status edgellm_store_add(edgellm_store *s, const edgellm_store_add_params *pp, edgellm_store_entry *out,
                                 edgellm_error *err)
{
    if (!s || !pp || !pp->size) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store add: NULL store or params");
    edgellm_store_add_params p = edgellm_store_add_default_params();
    memcpy(&p, pp, pp->size < sizeof p ? pp->size : sizeof p);
    if (p.name && !valid_name(p.name))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store add: name '%s' is not 1..63 of [A-Za-z0-9._-]", p.name);
    if (!p.chunk_bytes) p.chunk_bytes = (uint64_t)4 << 20;
    manifest m;
    memset(&m, 0, sizeof m);
    char *text = NULL;
    size_t text_len = 0;
    char mname[PATH_MAX] = "", tmp[PATH_MAX] = "", blob[PATH_MAX], hex[65];
    edgellm_status st = lock(s, LOCK_EX, err);
    if (st) return st;
    /* 1. the manifest */
    if (p.manifest) {
        snprintf(mname, sizeof mname, "%s", p.manifest);
        if ((st = read_manifest_src(p.manifest, p.connect_timeout_s, &text, &text_len, err))) goto done;
        if ((st = manifest_parse(text, text_len, p.manifest, &m, err))) goto done;
        if (p.name && strcmp(p.name, m.name)) {
            st = bad_field(err, p.manifest, "name", "'%s', not the --name given ('%s')", m.name, p.name);
            goto done;
        }
        if (p.version && p.version != m.version) {
            st = bad_field(err, p.manifest, "version", "%lld, not the version given (%lld)", (long long)m.version,
                           (long long)p.version);
            goto done;
        }
        bool tk;
        int sig = check_signature(s, &m, &tk);
        if (sig < 0) {
            st = bad_field(err, p.manifest, "signature", "does not match the manifest (tampered or corrupt)");
            goto done;
        }
        if (sig == 0 && !p.allow_unsigned) {
            st = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: manifest field 'signature': %s; trust the publisher's "
                              "key with 'edgellm store trust KEY.pub', or pass --allow-unsigned", p.manifest,
                              m.has_sig ? "signed by a key the store does not trust" : "missing");
            goto done;
        }
        if (m.expires && m.expires < (int64_t)time(NULL)) {
            char t[32];
            st = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: manifest field 'expires': expired at %s (a frozen "
                              "or replayed manifest is refused)", p.manifest, fmt_time(m.expires, t));
            goto done;
        }
        if (version_number(m.min_edgellm) > EDGELLM_VERSION_NUMBER) {
            st = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: manifest field 'min_edgellm': needs edgellm %s, this "
                              "is %s", p.manifest, m.min_edgellm, EDGELLM_VERSION);
            goto done;
        }
    } else {
        const char *src = p.source;
        if (!src || edgellm_store_is_url(src) || p.patch) {
            st = edgellm_fail(err, EDGELLM_ERR_MISUSE, "store add: a URL or a patch needs --manifest");
            goto done;
        }
        if (!p.name || p.version <= 0 || !p.allow_unsigned) {
            st = edgellm_fail(err, EDGELLM_ERR_MISUSE, "store add: %s: without --manifest give --name, --version and "
                              "--allow-unsigned (the file is then trusted as it is)", src);
            goto done;
        }
        snprintf(mname, sizeof mname, "%s", src);
        if ((st = manifest_from_file(src, p.name, p.version, &m, s->progress, s->progress_user, err))) goto done;
        sbuf b = {0};
        manifest_text(&m, &b);
        if (b.oom) { edgellm_free(b.p); st = edgellm_fail_nomem(err, src); goto done; }
        text = b.p;
        text_len = b.n;
    }
    /* 2. rollback protection: above every installed version, or the same manifest again */
    {
        int nv;
        int64_t *vs = versions_of(s, m.name, &nv);
        int64_t top = nv ? vs[nv - 1] : 0;
        edgellm_free(vs);
        const int64_t seen = highest_seen(s, m.name);
        if (seen > top) top = seen;   /* a version gc removed stays refused */
        if (m.version < top) {
            st = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: manifest field 'version': %s@%lld is older than the "
                              "installed %lld (rollback refused; 'edgellm store rollback' switches back)", mname,
                              m.name, (long long)m.version, (long long)top);
            goto done;
        }
        if (m.version == top) {
            manifest old;
            char *ot = NULL;
            size_t ol = 0;
            edgellm_error e2 = {0};
            if (load_manifest(s, m.name, top, &old, &ot, &ol, &e2) == EDGELLM_OK) {
                sbuf a = {0}, b = {0};
                canon_manifest(&old, &a);
                canon_manifest(&m, &b);
                bool same = !a.oom && !b.oom && a.n == b.n && !memcmp(a.p, b.p, a.n);
                edgellm_free(a.p);
                edgellm_free(b.p);
                manifest_free(&old);
                edgellm_free(ot);
                if (!same) {
                    st = edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: manifest field 'version': %s@%lld is already "
                                      "installed with other contents (versions are never replaced)", mname, m.name,
                                      (long long)m.version);
                    goto done;
                }
            }
        }
    }
    /* 3. the blob */
    edgellm_sha256_hex(m.file_sha, hex);
    if ((st = spath(s, blob, sizeof blob, err, "blobs/sha256-%s", hex))) goto done;
    struct stat sb;
    if (stat(blob, &sb) != 0) {
        char base_blob[PATH_MAX] = "", patch_src[PATH_MAX] = "";
        if (p.patch) snprintf(patch_src, sizeof patch_src, "%s", p.patch);
        else if (m.has_patch && p.manifest && !p.source) {
            char bh[65];
            edgellm_sha256_hex(m.patch_base, bh);
            if ((st = spath(s, base_blob, sizeof base_blob, err, "blobs/sha256-%s", bh))) goto done;
            if (stat(base_blob, &sb) == 0) sibling(p.manifest, m.patch_name, patch_src, sizeof patch_src);
        }
        if (patch_src[0]) {
            /* a patch: fetched (resumable) when it is a URL, applied to its base */
            char local[PATH_MAX];
            snprintf(local, sizeof local, "%s", patch_src);
            if (edgellm_store_is_url(patch_src)) {
                if (!m.has_patch) {
                    st = edgellm_fail(err, EDGELLM_ERR_MISUSE, "store add: a patch URL needs a manifest with a patch");
                    goto done;
                }
                char ph[65];
                edgellm_sha256_hex(m.patch_sha, ph);
                if ((st = spath(s, local, sizeof local, err, "downloads/sha256-%s.part", ph))) goto done;
                edgellm_fetch_opts fo = {.chunk_bytes = p.chunk_bytes, .retries = p.retries,
                                         .connect_timeout_s = p.connect_timeout_s,
                                         .low_speed_time_s = p.low_speed_time_s, .progress = s->progress,
                                         .progress_user = s->progress_user};
                if ((st = edgellm_store_fetch(patch_src, local, m.patch_size, m.patch_sha, &fo, err))) goto done;
            }
            if (!base_blob[0]) {
                /* an explicit patch names its base by SHA-256 in its header: find it among the blobs */
                FILE *pf = fopen(local, "rb");
                unsigned char hdr[8 + 8 + 32];
                if (!pf || fread(hdr, 1, sizeof hdr, pf) != sizeof hdr || memcmp(hdr, "ELPATCH1", 8)) {
                    if (pf) fclose(pf);
                    st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not an edgellm patch (magic)", local);
                    goto done;
                }
                fclose(pf);
                char bh[65];
                edgellm_sha256_hex(hdr + 16, bh);
                if ((st = spath(s, base_blob, sizeof base_blob, err, "blobs/sha256-%s", bh))) goto done;
                if (stat(base_blob, &sb) != 0) {
                    st = edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "%s: its base (SHA-256 %s) is not in the store", local,
                                      bh);
                    goto done;
                }
            }
            if ((st = spath(s, tmp, sizeof tmp, err, "tmp/patched.%ld", (long)getpid()))) goto done;
            if ((st = edgellm_delta_apply(base_blob, local, tmp, s->progress, s->progress_user, err))) goto done;
            uint8_t d[32];
            uint64_t n;
            if ((st = hash_file(tmp, d, &n, NULL, NULL, NULL, err))) goto done;
            if (n != m.file_size || memcmp(d, m.file_sha, 32)) {
                st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the patched file does not match %s's file.sha256",
                                  patch_src, mname);
                goto done;
            }
            if ((st = place_blob(s, tmp, blob, err))) goto done;
            if (edgellm_store_is_url(patch_src)) store_unlink(local), unlink(strcat(local, ".ckpt"));
        } else {
            char src[PATH_MAX];
            if (p.source) snprintf(src, sizeof src, "%s", p.source);
            else sibling(p.manifest, m.file_name, src, sizeof src);
            if (edgellm_store_is_url(src)) {
                char part[PATH_MAX];
                if ((st = spath(s, part, sizeof part, err, "downloads/sha256-%s.part", hex))) goto done;
                edgellm_fetch_opts fo = {.chunk_bytes = p.chunk_bytes, .retries = p.retries,
                                         .connect_timeout_s = p.connect_timeout_s,
                                         .low_speed_time_s = p.low_speed_time_s, .progress = s->progress,
                                         .progress_user = s->progress_user};
                if ((st = edgellm_store_fetch(src, part, m.file_size, m.file_sha, &fo, err))) goto done;
                if ((st = place_blob(s, part, blob, err))) goto done;
                char ck[PATH_MAX + 8];
                snprintf(ck, sizeof ck, "%s.ckpt", part);
                store_unlink(ck);
            } else {
                uint8_t d[32];
                uint64_t n;
                if ((st = copy_in(s, src, tmp, sizeof tmp, d, &n, m.file_size, "file.size", err))) goto done;
                if (memcmp(d, m.file_sha, 32)) {
                    unlink(tmp);
                    char dh[65];
                    edgellm_sha256_hex(d, dh);
                    st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: SHA-256 %s does not match %s's file.sha256", src,
                                      dh, mname);
                    goto done;
                }
                if ((st = place_blob(s, tmp, blob, err))) goto done;
            }
        }
    }
    /* 3b. the quality gate's reference logits and text */
    if (m.has_gate) {
        if (!p.manifest) {
            st = edgellm_fail(err, EDGELLM_ERR_MISUSE, "store add: a quality gate needs its manifest");
            goto done;
        }
        if ((st = bring_gate_blob(s, &p, &m.gate_logits, "gate.logits", err)) ||
            (st = bring_gate_blob(s, &p, &m.gate_text, "gate.text", err)))
            goto done;
    }
    /* 4. the manifest, then the verification's result */
    {
        char dir[PATH_MAX], mp[PATH_MAX];
        if ((st = spath(s, dir, sizeof dir, err, "manifests/%s", m.name))) goto done;
        if (!mkdir_p(dir)) { st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", dir, strerror(errno)); goto done; }
        if ((st = spath(s, mp, sizeof mp, err, "manifests/%s/%lld.json", m.name, (long long)m.version))) goto done;
        char *cur = NULL;
        size_t cl = 0;
        edgellm_error e2;
        bool same = read_small(mp, EDGELLM_STORE_MAX_MANIFEST_BYTES, &cur, &cl, &e2) == EDGELLM_OK && cl == text_len &&
                    !memcmp(cur, text, cl);
        edgellm_free(cur);
        if (!same && (st = atomic_write(mp, text, text_len, 0644, err))) goto done;
        if (highest_seen(s, m.name) < m.version) {
            char hp[PATH_MAX], t[32];
            int tn = snprintf(t, sizeof t, "%lld\n", (long long)m.version);
            if ((st = spath(s, hp, sizeof hp, err, "manifests/%s/highest", m.name)) ||
                (st = atomic_write(hp, t, (size_t)tn, 0644, err)))
                goto done;
        }
    }
    char why[512] = "";
    const int prior = read_status(s, m.name, m.version, NULL, 0);
    if (prior == 0) {
        bool ok = verify_blob(s, blob, &m, s->smoke_test, why, sizeof why);
        char gate[400] = "";
        if (ok && m.has_gate) {
            ok = run_gate(s, blob, &m, gate, sizeof gate);
            if (!ok) snprintf(why, sizeof why, "%s", gate);
        }
        if ((st = write_status(s, m.name, m.version, ok ? NULL : why, gate[0] ? gate : NULL, err))) goto done;
        if (!ok) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s@%lld failed verification and stays inactive: %s", m.name,
                              (long long)m.version, why);
            goto done;
        }
    } else if (prior < 0) {
        read_status(s, m.name, m.version, why, sizeof why);
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s@%lld failed verification earlier and stays inactive: %s",
                          m.name, (long long)m.version, why);
        goto done;
    }
    if (p.activate && (st = edgellm_store_activate(s, m.name, m.version, err))) goto done;
    if (out) {
        int64_t a, b;
        edgellm_error e2;
        if (read_refs(s, m.name, &a, &b, &e2)) a = b = 0;
        fill_entry(s, &m, a, b, out);
    }
done:
    if (tmp[0]) unlink(tmp);
    unlock(s);
    manifest_free(&m);
    edgellm_free(text);
    return st;
}

/* ---- activate, rollback, resolve ------------------------------------------------------- */

static edgellm_status parse_ref(const char *ref, char *name, size_t n, int64_t *v, edgellm_error *err)
{
    const char *at = ref ? strchr(ref, '@') : NULL;
    *v = 0;
    if (!ref) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: NULL model reference");
    snprintf(name, n, "%.*s", at ? (int)(at - ref) : (int)strlen(ref), ref);
    if (!valid_name(name)) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: '%s' is not NAME or NAME@VERSION", ref);
    if (at) {
        char *end;
        long long x = strtoll(at + 1, &end, 10);
        if (x <= 0 || *end || !at[1]) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: '%s': bad version", ref);
        *v = x;
    }
    return EDGELLM_OK;
}

edgellm_status edgellm_store_activate(edgellm_store *s, const char *name, int64_t version, edgellm_error *err)
{
    if (!s || !valid_name(name) || version <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store activate: bad name or version");
    edgellm_status st = lock(s, LOCK_EX, err);
    if (st) return st;
    manifest m;
    int64_t a, b;
    char why[512];
    if ((st = load_manifest(s, name, version, &m, NULL, NULL, err))) {
        if (st == EDGELLM_ERR_NOT_FOUND)
            edgellm_fail(err, st, "store: %s@%lld is not in the store", name, (long long)version);
        goto out;
    }
    char blob[PATH_MAX], hex[65];
    struct stat sb;
    edgellm_sha256_hex(m.file_sha, hex);
    manifest_free(&m);
    const int ok = read_status(s, name, version, why, sizeof why);
    if (ok != 1) {
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "store: %s@%lld %s%s", name, (long long)version,
                          ok < 0 ? "failed verification: " : "is not verified (run 'edgellm store add' again)",
                          ok < 0 ? why : "");
        goto out;
    }
    if ((st = spath(s, blob, sizeof blob, err, "blobs/sha256-%s", hex))) goto out;
    if (stat(blob, &sb) != 0) { st = edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "%s: missing", blob); goto out; }
    if ((st = read_refs(s, name, &a, &b, err))) goto out;
    if (a != version) st = write_refs(s, name, version, a ? a : b, err);
out:
    unlock(s);
    return st;
}

edgellm_status edgellm_store_rollback(edgellm_store *s, const char *name, edgellm_error *err)
{
    if (!s || !valid_name(name)) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store rollback: bad name");
    edgellm_status st = lock(s, LOCK_EX, err);
    if (st) return st;
    int64_t a, b;
    if (!(st = read_refs(s, name, &a, &b, err))) {
        if (!b) st = edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "store: %s has no previous version to roll back to", name);
        else if (read_status(s, name, b, NULL, 0) != 1)
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "store: %s@%lld (previous) is not verified", name, (long long)b);
        else st = write_refs(s, name, b, a, err);
    }
    unlock(s);
    return st;
}

static edgellm_status resolve(edgellm_store *s, const char *ref, int check, edgellm_store_entry *out,
                              edgellm_model_params const *mp, edgellm_model **model, edgellm_error *err)
{
    char name[64];
    int64_t v, a, b;
    edgellm_status st = parse_ref(ref, name, sizeof name, &v, err);
    if (st) return st;
    if ((st = read_refs(s, name, &a, &b, err))) return st;
    const bool is_active = !v;
    if (!v) v = a;
    if (!v) return edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "store: %s has no active version in %s", name, s->dir);
    char note[512] = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        manifest m;
        if ((st = load_manifest(s, name, v, &m, NULL, NULL, err))) return st;
        edgellm_store_entry e = {.size = sizeof e};
        fill_entry(s, &m, v, b, &e);
        manifest_free(&m);
        char why[1200] = "";
        struct stat sb;
        if (stat(e.path, &sb) != 0 || (uint64_t)sb.st_size != e.file_size)
            snprintf(why, sizeof why, "%s: missing or not %llu bytes", e.path, (unsigned long long)e.file_size);
        else if (check && !model) {
            edgellm_gguf_meta *g = NULL;
            edgellm_error e2 = {0};
            if (edgellm_gguf_meta_open(e.path, &g, &e2)) snprintf(why, sizeof why, "%s", e2.msg);
            edgellm_gguf_meta_close(g);
        } else if (model) {
            edgellm_error e2 = {0};
            if (edgellm_model_load(e.path, mp, model, &e2)) snprintf(why, sizeof why, "%s", e2.msg);
        }
        if (!why[0]) {
            snprintf(e.note, sizeof e.note, "%s", note);
            if (out && out->size) memcpy(out, &e, out->size < sizeof e ? out->size : sizeof e);
            return EDGELLM_OK;
        }
        if (!is_active || attempt) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "store: %s@%lld: %s", name, (long long)v, why);
        /* the active version fails: record it, roll back */
        edgellm_error e3 = {0};
        if (lock(s, LOCK_EX, &e3)) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "store: %s@%lld: %s", name, (long long)v, why);
        int64_t a2, b2;
        bool rolled = false;
        char w[600];
        snprintf(w, sizeof w, "failed after activation: %.500s", why);
        if (!read_refs(s, name, &a2, &b2, &e3) && a2 == v && b2 && read_status(s, name, b2, NULL, 0) == 1) {
            write_status(s, name, v, w, NULL, &e3);
            rolled = write_refs(s, name, b2, 0, &e3) == EDGELLM_OK;
        }
        unlock(s);
        if (!rolled) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "store: %s@%lld: %s", name, (long long)v, why);
        snprintf(note, sizeof note, "%s@%lld failed (%.300s); rolled back to %s@%lld", name, (long long)v, why, name,
                 (long long)b2);
        v = b2;
        b = 0;
    }
    return st;
}

edgellm_status edgellm_store_resolve(edgellm_store *s, const char *ref, int check, edgellm_store_entry *out,
                                     edgellm_error *err)
{
    if (!s) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: NULL store");
    return resolve(s, ref, check, out, NULL, NULL, err);
}

edgellm_status edgellm_store_load_model(edgellm_store *s, const char *ref, const edgellm_model_params *mp,
                                        edgellm_model **out, edgellm_error *err)
{
    if (!s || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store: NULL store or out");
    *out = NULL;
    return resolve(s, ref, 1, NULL, mp, out, err);
}

/* ---- list, verify, gc, keys ------------------------------------------------------------ */

edgellm_status edgellm_store_list(edgellm_store *s, void (*fn)(void *, const edgellm_store_entry *), void *user,
                                  edgellm_error *err)
{
    if (!s || !fn) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store list: NULL argument");
    int nn;
    char **names = names_of(s, &nn);
    for (int i = 0; i < nn; i++) {
        int64_t a, b;
        edgellm_error e2;
        if (read_refs(s, names[i], &a, &b, &e2)) a = b = 0;
        int nv;
        int64_t *vs = versions_of(s, names[i], &nv);
        for (int j = 0; j < nv; j++) {
            manifest m;
            edgellm_store_entry e = {.size = sizeof e};
            if (load_manifest(s, names[i], vs[j], &m, NULL, NULL, &e2)) {
                snprintf(e.name, sizeof e.name, "%s", names[i]);
                e.version = vs[j];
                e.verified = -1;
                snprintf(e.note, sizeof e.note, "%s", e2.msg);
            } else {
                fill_entry(s, &m, a, b, &e);
                manifest_free(&m);
            }
            fn(user, &e);
        }
        edgellm_free(vs);
    }
    free_names(names, nn);
    return EDGELLM_OK;
}

static void problem(int *n, void (*fn)(void *, const char *), void *user, const char *fmt, ...) EDGELLM_PRINTF(4, 5);
static void problem(int *n, void (*fn)(void *, const char *), void *user, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    (*n)++;
    if (fn) fn(user, line);
}

edgellm_status edgellm_store_verify(edgellm_store *s, void (*fn)(void *, const char *), void *user, int *n_problems,
                                    edgellm_error *err)
{
    if (!s) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store verify: NULL store");
    edgellm_status st = lock(s, LOCK_SH, err);
    if (st) return st;
    int np = 0, nn;
    char **names = names_of(s, &nn);
    for (int i = 0; i < nn; i++) {
        const char *name = names[i];
        int64_t a = 0, b = 0;
        edgellm_error e2 = {0};
        if (read_refs(s, name, &a, &b, &e2)) problem(&np, fn, user, "%s", e2.msg);
        int nv;
        int64_t *vs = versions_of(s, name, &nv);
        for (int j = 0; j < nv; j++) {
            manifest m;
            char mp[PATH_MAX];
            snprintf(mp, sizeof mp, "%s/manifests/%s/%lld.json", s->dir, name, (long long)vs[j]);
            if (load_manifest(s, name, vs[j], &m, NULL, NULL, &e2)) { problem(&np, fn, user, "%s", e2.msg); continue; }
            bool tk;
            if (check_signature(s, &m, &tk) < 0)
                problem(&np, fn, user, "%s: manifest field 'signature': does not match the manifest", mp);
            const int ok = read_status(s, name, vs[j], NULL, 0);
            char hex[65], blob[PATH_MAX];
            edgellm_sha256_hex(m.file_sha, hex);
            snprintf(blob, sizeof blob, "%s/blobs/sha256-%s", s->dir, hex);
            struct stat sb;
            if (ok == 1 && stat(blob, &sb) != 0) problem(&np, fn, user, "%s: missing (needed by %s@%lld)", blob, name,
                                                         (long long)vs[j]);
            else if (ok == 1) {
                char why[600];
                if (!verify_blob(s, blob, &m, false, why, sizeof why)) problem(&np, fn, user, "%s", why);
            }
            for (int g = 0; ok == 1 && m.has_gate && g < 2; g++) {
                const mblob *x = g ? &m.gate_text : &m.gate_logits;
                edgellm_sha256_hex(x->sha, hex);
                snprintf(blob, sizeof blob, "%s/blobs/sha256-%s", s->dir, hex);
                if (stat(blob, &sb) != 0)
                    problem(&np, fn, user, "%s: missing (the gate.%s of %s@%lld)", blob, g ? "text" : "logits", name,
                            (long long)vs[j]);
                else if ((uint64_t)sb.st_size != x->size)
                    problem(&np, fn, user, "%s: %lld bytes, %s@%lld's gate.%s.size says %llu", blob,
                            (long long)sb.st_size, name, (long long)vs[j], g ? "text" : "logits",
                            (unsigned long long)x->size);
            }
            manifest_free(&m);
        }
        for (int k = 0; k < 2; k++) {
            const int64_t v = k ? b : a;
            if (!v) continue;
            int found = 0;
            for (int j = 0; j < nv; j++) found |= vs[j] == v;
            if (!found) problem(&np, fn, user, "%s/refs/%s: %s %lld has no manifest", s->dir, name,
                                k ? "previous" : "active", (long long)v);
            else if (!k && read_status(s, name, v, NULL, 0) != 1)
                problem(&np, fn, user, "%s/refs/%s: active %lld is not verified", s->dir, name, (long long)v);
        }
        edgellm_free(vs);
    }
    free_names(names, nn);
    /* blobs whose name is not their hash */
    char bd[PATH_MAX];
    snprintf(bd, sizeof bd, "%s/blobs", s->dir);
    DIR *d = opendir(bd);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        uint8_t want[32], got[32];
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", bd, de->d_name) >= (int)sizeof p) {
            problem(&np, fn, user, "%s: a name too long for a path (%.64s...)", bd, de->d_name);
            continue;
        }
        if (strncmp(de->d_name, "sha256-", 7) || !edgellm_sha256_parse(de->d_name + 7, want)) {
            if (!strstr(de->d_name, ".tmp.")) problem(&np, fn, user, "%s: not a blob name", p);
            continue;
        }
        edgellm_error e2;
        if (hash_file(p, got, NULL, NULL, NULL, NULL, &e2)) problem(&np, fn, user, "%s", e2.msg);
        else if (memcmp(want, got, 32)) problem(&np, fn, user, "%s: SHA-256 does not match its name (corrupt)", p);
    }
    if (d) closedir(d);
    unlock(s);
    if (n_problems) *n_problems = np;
    if (np) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "store verify: %d problem%s in %s", np, np == 1 ? "" : "s",
                                s->dir);
    return EDGELLM_OK;
}

static void remove_tree_files(const char *dir, int *n, uint64_t *bytes)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= (int)sizeof p) continue;
        struct stat sb;
        if (lstat(p, &sb) == 0 && !S_ISDIR(sb.st_mode) && store_unlink(p)) {
            (*n)++;
            *bytes += (uint64_t)sb.st_size;
        }
    }
    closedir(d);
}

edgellm_status edgellm_store_gc(edgellm_store *s, int keep, int *n_removed, uint64_t *bytes_freed,
                                edgellm_error *err)
{
    if (!s || keep < 0) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store gc: NULL store or negative keep");
    edgellm_status st = lock(s, LOCK_EX, err);
    if (st) return st;
    int nr = 0;
    uint64_t freed = 0;
    int nn;
    char **names = names_of(s, &nn);
    /* every blob a remaining manifest names is kept */
    int nkeep = 0, cap = 0;
    char (*keep_hex)[65] = NULL;
    for (int i = 0; i < nn; i++) {
        int64_t a = 0, b = 0;
        edgellm_error e2;
        read_refs(s, names[i], &a, &b, &e2);
        int nv;
        int64_t *vs = versions_of(s, names[i], &nv);
        int kept = 0;
        for (int j = nv - 1; j >= 0; j--) {
            const bool pinned = vs[j] == a || vs[j] == b;
            char mp[PATH_MAX], sp[PATH_MAX];
            snprintf(mp, sizeof mp, "%s/manifests/%s/%lld.json", s->dir, names[i], (long long)vs[j]);
            snprintf(sp, sizeof sp, "%s/manifests/%s/%lld.status", s->dir, names[i], (long long)vs[j]);
            if (pinned || kept < keep) {
                kept += !pinned;
                manifest m;
                if (!load_manifest(s, names[i], vs[j], &m, NULL, NULL, &e2)) {
                    if (nkeep + 3 > cap) {
                        cap = cap ? 2 * cap : 16;
                        void *q = edgellm_realloc(keep_hex, (size_t)cap * sizeof *keep_hex);
                        if (!q) { manifest_free(&m); st = edgellm_fail_nomem(err, "store gc"); break; }
                        keep_hex = q;
                    }
                    edgellm_sha256_hex(m.file_sha, keep_hex[nkeep++]);
                    if (m.has_gate) {
                        edgellm_sha256_hex(m.gate_logits.sha, keep_hex[nkeep++]);
                        edgellm_sha256_hex(m.gate_text.sha, keep_hex[nkeep++]);
                    }
                    if (m.has_patch) { /* nothing: patches are not kept in blobs */ }
                    manifest_free(&m);
                }
                continue;
            }
            struct stat sb;
            if (stat(mp, &sb) == 0) freed += (uint64_t)sb.st_size;
            if (!store_unlink(sp) || !store_unlink(mp)) {
                st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot remove: %s", mp, strerror(errno));
                break;
            }
            nr++;
        }
        edgellm_free(vs);
        if (st) break;
    }
    free_names(names, nn);
    if (!st) {
        char bd[PATH_MAX];
        snprintf(bd, sizeof bd, "%s/blobs", s->dir);
        DIR *d = opendir(bd);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            if (de->d_name[0] == '.') continue;
            bool needed = false;
            for (int k = 0; k < nkeep && !needed; k++)
                needed = !strncmp(de->d_name, "sha256-", 7) && !strcmp(de->d_name + 7, keep_hex[k]);
            if (needed) continue;
            char p[PATH_MAX];
            if (snprintf(p, sizeof p, "%s/%s", bd, de->d_name) >= (int)sizeof p) continue;
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISREG(sb.st_mode) && store_unlink(p)) {
                nr++;
                freed += (uint64_t)sb.st_size;
            }
        }
        if (d) closedir(d);
        char td[PATH_MAX];
        snprintf(td, sizeof td, "%s/tmp", s->dir);
        remove_tree_files(td, &nr, &freed);
    }
    edgellm_free(keep_hex);
    unlock(s);
    if (n_removed) *n_removed = nr;
    if (bytes_freed) *bytes_freed = freed;
    return st;
}

static edgellm_status read_key_file(const char *path, uint8_t *key, size_t n, edgellm_error *err)
{
    char *t;
    size_t len;
    edgellm_status st = read_small(path, 4096, &t, &len, err);
    if (st) return st;
    t[strcspn(t, "\r\n")] = 0;
    bool ok = hex_parse(t, key, n);
    sodium_memzero(t, len);
    edgellm_free(t);
    if (!ok) return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not %zu hex digits (an edgellm store key file)", path,
                                 2 * n);
    return EDGELLM_OK;
}

edgellm_status edgellm_store_trust(edgellm_store *s, const char *pub_path, edgellm_error *err)
{
    if (!s || !pub_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store trust: NULL argument");
    uint8_t k[32];
    edgellm_status st = read_key_file(pub_path, k, 32, err);
    if (st) return st;
    char hex[65], p[PATH_MAX], id[33];
    hex_of(k, 32, hex);
    hex_of(k, 16, id);
    if ((st = lock(s, LOCK_EX, err))) return st;
    if (!(st = spath(s, p, sizeof p, err, "keys/%s.pub", id))) {
        hex[64] = '\n';
        st = atomic_write(p, hex, 65, 0644, err);
    }
    unlock(s);
    return st;
}

edgellm_status edgellm_store_untrust(edgellm_store *s, const char *pub_path, edgellm_error *err)
{
    if (!s || !pub_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store trust --remove: NULL argument");
    uint8_t k[32];
    edgellm_status st = read_key_file(pub_path, k, 32, err);
    if (st) return st;
    char p[PATH_MAX], id[33];
    hex_of(k, 16, id);
    if ((st = lock(s, LOCK_EX, err))) return st;
    if (!trusted(s, k))
        st = edgellm_fail(err, EDGELLM_ERR_NOT_FOUND, "store trust --remove: %s: the store does not trust this key",
                          pub_path);
    else if (!(st = spath(s, p, sizeof p, err, "keys/%s.pub", id)) && !store_unlink(p))
        st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot remove: %s", p, strerror(errno));
    unlock(s);
    return st;
}

edgellm_status edgellm_store_keygen(const char *secret_path, const char *pub_path, edgellm_error *err)
{
    if (!secret_path || !pub_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store keygen: NULL path");
    if (sodium_init() < 0) return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "store: libsodium failed to start");
    uint8_t pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
    crypto_sign_keypair(pk, sk);
    char skh[2 * crypto_sign_SECRETKEYBYTES + 2], pkh[2 * crypto_sign_PUBLICKEYBYTES + 2];
    hex_of(sk, sizeof sk, skh);
    hex_of(pk, sizeof pk, pkh);
    strcat(skh, "\n");
    strcat(pkh, "\n");
    edgellm_status st = atomic_write(secret_path, skh, strlen(skh), 0600, err);
    if (!st) st = atomic_write(pub_path, pkh, strlen(pkh), 0644, err);
    sodium_memzero(sk, sizeof sk);
    sodium_memzero(skh, sizeof skh);
    return st;
}

/* Copy a file (publish's model) with fsync and rename into place. */
static edgellm_status copy_file(const char *src, const char *dst, edgellm_error *err)
{
    if (edgellm_path_same_file(src, dst)) return EDGELLM_OK;
    edgellm_output *o = NULL;
    edgellm_status st = edgellm_output_open(dst, "wb", &o, err);
    if (st) return st;
    FILE *in = fopen(src, "rb");
    if (!in) { edgellm_output_discard(o); return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", src, strerror(errno)); }
    char buf[1 << 16];
    size_t r;
    while ((r = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, r, edgellm_output_stream(o));
    int bad = ferror(in);
    fclose(in);
    if (bad) { edgellm_output_discard(o); return edgellm_fail(err, EDGELLM_ERR_IO, "%s: read failed", src); }
    return edgellm_output_commit(o, err);
}

/* publish's quality gate: OUT/NAME@V.logits (saved from gate_ref over gate_text, or a copy
 * of gate_logits) and OUT/NAME@V.gate.txt into m, after checking that the model passes it. */
static edgellm_status publish_gate(const edgellm_store_publish_params *p, manifest *m, edgellm_error *err)
{
    char lp[PATH_MAX], tp[PATH_MAX], *text = NULL, line[400];
    size_t tl = 0;
    edgellm_model *ref = NULL, *model = NULL;
    snprintf(m->gate_logits.name, sizeof m->gate_logits.name, "%s@%lld.logits", p->name, (long long)p->version);
    snprintf(m->gate_text.name, sizeof m->gate_text.name, "%s@%lld.gate.txt", p->name, (long long)p->version);
    snprintf(lp, sizeof lp, "%s/%s", p->out_dir, m->gate_logits.name);
    snprintf(tp, sizeof tp, "%s/%s", p->out_dir, m->gate_text.name);
    edgellm_status st = read_small(p->gate_text, (size_t)EDGELLM_STORE_MAX_GATE_TEXT, &text, &tl, err);
    if (!st) st = copy_file(p->gate_text, tp, err);
    if (!st && p->gate_ref) {
        edgellm_model_params mp = edgellm_model_default_params();
        edgellm_eval_params ep = edgellm_eval_default_params();
        ep.n_ctx = p->gate_n_ctx;
        ep.max_chunks = p->gate_chunks;
        ep.text_name = p->gate_text;
        if (!(st = edgellm_model_load(p->gate_ref, &mp, &ref, err)))
            st = edgellm_eval_save_logits(ref, text, tl, &ep, lp, NULL, err);
    } else if (!st) {
        st = copy_file(p->gate_logits, lp, err);
    }
    if (!st) st = hash_file(lp, m->gate_logits.sha, &m->gate_logits.size, NULL, NULL, NULL, err);
    if (!st) st = hash_file(tp, m->gate_text.sha, &m->gate_text.size, NULL, NULL, NULL, err);
    if (!st && m->gate_logits.size > EDGELLM_STORE_MAX_GATE_LOGITS)
        st = edgellm_fail(err, EDGELLM_ERR_MISUSE, "%s: %llu bytes, above the %llu a gate's logits may have", lp,
                          (unsigned long long)m->gate_logits.size, (unsigned long long)EDGELLM_STORE_MAX_GATE_LOGITS);
    if (!st) {
        m->has_gate = 1;
        m->gate_max_kld = p->gate_max_kld;
        m->gate_min_top1 = p->gate_min_top1;
        /* the published model must pass its own gate (else no device would ever activate it) */
        edgellm_model_params mp = edgellm_model_default_params();
        edgellm_eval_compare_result r;
        if (!(st = edgellm_model_load(p->model, &mp, &model, err)) &&
            !(st = edgellm_eval_compare(model, NULL, lp, text, tl, NULL, &r, err))) {
            const bool ok = r.n_kld_inf == 0 && r.kld_mean <= m->gate_max_kld && r.top1_pct >= m->gate_min_top1;
            snprintf(line, sizeof line, "KLD %.6g nats (max %g), top-1 %.2f %% (min %g)", r.kld_mean, m->gate_max_kld,
                     r.top1_pct, m->gate_min_top1);
            if (!ok) st = edgellm_fail(err, EDGELLM_ERR_MISUSE, "store publish: %s fails its own quality gate: %s",
                                       p->model, line);
        }
    }
    edgellm_model_free(ref);
    edgellm_model_free(model);
    edgellm_free(text);
    return st;
}

edgellm_status edgellm_store_publish(const edgellm_store_publish_params *pp, edgellm_error *err)
{
    if (!pp || !pp->size) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store publish: NULL params");
    edgellm_store_publish_params p = edgellm_store_publish_default_params();
    memcpy(&p, pp, pp->size < sizeof p ? pp->size : sizeof p);
    if (!p.model || !p.secret_key || !p.out_dir || !valid_name(p.name) || p.version <= 0)
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store publish: model, key, output folder, a valid name and a "
                            "positive version are required");
    if ((p.gate_ref || p.gate_logits) &&
        (!p.gate_text || (p.gate_ref && p.gate_logits) || !(p.gate_max_kld >= 0 && p.gate_max_kld <= 1e6) ||
         !(p.gate_min_top1 >= 0 && p.gate_min_top1 <= 100)))
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "store publish: a quality gate needs one of gate_ref and "
                            "gate_logits, gate_text, gate_max_kld in [0, 1e6] nats and gate_min_top1 in [0, 100] %%");
    if (sodium_init() < 0) return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "store: libsodium failed to start");
    uint8_t sk[crypto_sign_SECRETKEYBYTES];
    edgellm_status st = read_key_file(p.secret_key, sk, sizeof sk, err);
    if (st) return st;
    if (!mkdir_p(p.out_dir)) {
        sodium_memzero(sk, sizeof sk);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot create: %s", p.out_dir, strerror(errno));
    }
    manifest m;
    if ((st = manifest_from_file(p.model, p.name, p.version, &m, p.progress, p.progress_user, err))) {
        sodium_memzero(sk, sizeof sk);
        return st;
    }
    if (p.expires_days > 0) m.expires = m.created + (int64_t)(p.expires_days * 86400.0);
    char path[PATH_MAX];
    if (p.previous) {
        m.has_patch = 1;
        snprintf(m.patch_name, sizeof m.patch_name, "%s@%lld.patch", p.name, (long long)p.version);
        snprintf(path, sizeof path, "%s/%s", p.out_dir, m.patch_name);
        if (!(st = edgellm_delta_create(p.previous, p.model, path, NULL, err)) &&
            !(st = hash_file(path, m.patch_sha, &m.patch_size, NULL, NULL, NULL, err)))
            st = hash_file(p.previous, m.patch_base, NULL, NULL, NULL, NULL, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/%s", p.out_dir, m.file_name);
        st = copy_file(p.model, path, err);
    }
    if (!st && (p.gate_ref || p.gate_logits)) st = publish_gate(&p, &m, err);
    sbuf b = {0};
    if (!st) {
        canon_manifest(&m, &b);
        if (b.oom) st = edgellm_fail_nomem(err, "manifest");
        else {
            crypto_sign_detached(m.sig, NULL, (const unsigned char *)b.p, b.n, sk);
            crypto_sign_ed25519_sk_to_pk(m.key, sk);
            m.has_sig = 1;
        }
        edgellm_free(b.p);
        b = (sbuf){0};
    }
    sodium_memzero(sk, sizeof sk);
    if (!st) {
        manifest_text(&m, &b);
        if (b.oom) st = edgellm_fail_nomem(err, "manifest");
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/%s@%lld.json", p.out_dir, p.name, (long long)p.version);
        st = atomic_write(path, b.p, b.n, 0644, err);
    }
    if (!st) {
        snprintf(path, sizeof path, "%s/%s.json", p.out_dir, p.name);
        st = atomic_write(path, b.p, b.n, 0644, err);
    }
    edgellm_free(b.p);
    manifest_free(&m);
    return st;
}
#endif
