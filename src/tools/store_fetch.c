/* store_fetch.c — downloads of the model store through libcurl (http, https, file URLs),
 * resumable across retries, kill -9 and reboots.
 *
 * A download of a blob goes to PART, with PART.ckpt beside it: a header line binding it to
 * the expected size, SHA-256 and chunk size, then one line per complete chunk with that
 * chunk's SHA-256, appended (and fsynced, after the chunk's bytes were) as each chunk
 * completes. A new attempt re-hashes the chunks the checkpoint lists, keeps the prefix that
 * matches, truncates the rest (at most one chunk is fetched again) and asks the server for
 * the remainder (an HTTP Range request; a server that answers 200 instead of 206 restarts
 * it from zero). The manifest's size is a hard cap: a server that sends one byte more ends
 * the transfer (TUF's endless-data attack). The whole file's SHA-256 is checked at the end;
 * a mismatch removes the download. */
#include "store.h"
#include "common/common.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#if defined(EDGELLM_HAVE_CURL) && defined(EDGELLM_HAVE_SODIUM)
#include <curl/curl.h>
#include <pthread.h>

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static void common_opts(CURL *c, const char *url, double connect_timeout_s, double low_speed_time_s)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https,file");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)(connect_timeout_s > 0 ? connect_timeout_s * 1000 : 15000));
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)(low_speed_time_s > 0 ? low_speed_time_s : 30));
    curl_easy_setopt(c, CURLOPT_USERAGENT, "edgellm/" EDGELLM_VERSION);
}

typedef struct { char *p; size_t n, max; bool over; } membuf;

static size_t mem_write(char *d, size_t sz, size_t nm, void *u)
{
    membuf *b = u;
    size_t n = sz * nm;
    if (b->n + n > b->max) { b->over = true; return 0; }
    char *q = edgellm_realloc(b->p, b->n + n + 1);
    if (!q) return 0;
    b->p = q;
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
    return n;
}

edgellm_status edgellm_store_fetch_small(const char *url, size_t max_bytes, char **out, size_t *len,
                                         double connect_timeout_s, edgellm_error *err)
{
    pthread_once(&curl_once, curl_start);
    *out = NULL;
    CURL *c = curl_easy_init();
    if (!c) return edgellm_fail_nomem(err, url);
    membuf b = {.max = max_bytes};
    common_opts(c, url, connect_timeout_s, 30);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, mem_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    CURLcode rc = curl_easy_perform(c);
    curl_easy_cleanup(c);
    if (b.over) {
        edgellm_free(b.p);
        return edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: more than %zu bytes (not a manifest)", url, max_bytes);
    }
    if (rc != CURLE_OK) {
        edgellm_free(b.p);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", url, curl_easy_strerror(rc));
    }
    if (!b.p && !(b.p = edgellm_calloc(1, 1))) return edgellm_fail_nomem(err, url);
    *out = b.p;
    *len = b.n;
    return EDGELLM_OK;
}

typedef struct {
    int fd, ck_fd;
    const char *part, *url;
    uint64_t size, have, chunk;
    edgellm_sha256 whole, piece;
    uint64_t piece_have;
    bool http, first, over, io_error, restart;
    int io_errno;
    CURL *c;
    edgellm_fetch_opts *o;
} fetch;

static bool ck_line(fetch *f, const uint8_t d[32])
{
    char line[66];
    edgellm_sha256_hex(d, line);
    line[64] = '\n';
    return edgellm_store_write_all(f->ck_fd, line, 65) && edgellm_store_fsync(f->ck_fd);
}

static bool ck_reset(fetch *f, const uint8_t sha[32])
{
    char hdr[160], hex[65];
    edgellm_sha256_hex(sha, hex);
    int n = snprintf(hdr, sizeof hdr, "edgellm-download size %llu chunk %llu sha256 %s\n", (unsigned long long)f->size,
                     (unsigned long long)f->chunk, hex);
    return ftruncate(f->ck_fd, 0) == 0 && lseek(f->ck_fd, 0, SEEK_SET) == 0 &&
           edgellm_store_write_all(f->ck_fd, hdr, (size_t)n) && edgellm_store_fsync(f->ck_fd);
}

static size_t part_write(char *d, size_t sz, size_t nm, void *u)
{
    fetch *f = u;
    size_t n = sz * nm;
    if (f->first) {
        f->first = false;
        long code = 0;
        curl_easy_getinfo(f->c, CURLINFO_RESPONSE_CODE, &code);
        if (f->http && f->have > 0 && code == 200) { f->restart = true; return 0; }   /* Range ignored */
    }
    if (n > f->size - f->have) { f->over = true; return 0; }
    for (size_t off = 0; off < n;) {
        uint64_t room = f->chunk - f->piece_have;
        size_t k = n - off < room ? n - off : (size_t)room;
        if (!edgellm_store_write_all(f->fd, d + off, k)) { f->io_error = true; f->io_errno = errno; return 0; }
        edgellm_sha256_update(&f->whole, d + off, k);
        edgellm_sha256_update(&f->piece, d + off, k);
        f->piece_have += k;
        f->have += k;
        off += k;
        if (f->piece_have == f->chunk || f->have == f->size) {
            uint8_t h[32];
            edgellm_sha256_final(&f->piece, h);
            if (!edgellm_store_fsync(f->fd) || !ck_line(f, h)) { f->io_error = true; f->io_errno = errno; return 0; }
            edgellm_sha256_init(&f->piece);
            f->piece_have = 0;
        }
    }
    if (f->o->progress) f->o->progress(f->o->progress_user, (double)f->have / (double)(f->size ? f->size : 1),
                                       "downloading");
    return n;
}

/* Keep the verified chunks of an earlier attempt: returns the bytes kept. */
static uint64_t resume_state(fetch *f, const uint8_t sha[32])
{
    char *t = NULL;
    struct stat st;
    uint64_t kept = 0, on_disk = 0;
    if (fstat(f->fd, &st) == 0) on_disk = (uint64_t)st.st_size;
    if (fstat(f->ck_fd, &st) == 0 && st.st_size > 0 && st.st_size < (64 << 20) &&
        (t = edgellm_malloc((size_t)st.st_size + 1))) {
        ssize_t r = pread(f->ck_fd, t, (size_t)st.st_size, 0);
        t[r > 0 ? r : 0] = 0;
        char want[160], hex[65];
        edgellm_sha256_hex(sha, hex);
        snprintf(want, sizeof want, "edgellm-download size %llu chunk %llu sha256 %s\n", (unsigned long long)f->size,
                 (unsigned long long)f->chunk, hex);
        size_t wl = strlen(want);
        if (r > 0 && (size_t)r >= wl && !memcmp(t, want, wl)) {
            const char *line = t + wl;
            char *buf = edgellm_malloc((size_t)f->chunk);
            while (buf && (size_t)(line - t) + 65 <= (size_t)r && line[64] == '\n' && kept < f->size) {
                char lh[65];
                memcpy(lh, line, 64);
                lh[64] = 0;
                uint8_t want_d[32], got[32];
                uint64_t len = f->size - kept < f->chunk ? f->size - kept : f->chunk;
                if (!edgellm_sha256_parse(lh, want_d) || kept + len > on_disk ||
                    pread(f->fd, buf, (size_t)len, (off_t)kept) != (ssize_t)len)
                    break;
                edgellm_sha256 h;
                edgellm_sha256_init(&h);
                edgellm_sha256_update(&h, buf, (size_t)len);
                edgellm_sha256_final(&h, got);
                if (memcmp(got, want_d, 32)) break;
                edgellm_sha256_update(&f->whole, buf, (size_t)len);
                kept += len;
                line += 65;
            }
            edgellm_free(buf);
        }
        edgellm_free(t);
    }
    f->o->resumed_from = kept;
    f->o->refetched_bytes += on_disk > kept ? on_disk - kept : 0;
    return kept;
}

edgellm_status edgellm_store_fetch(const char *url, const char *part, uint64_t size, const uint8_t sha[32],
                                   edgellm_fetch_opts *o, edgellm_error *err)
{
    pthread_once(&curl_once, curl_start);
    fetch f = {.part = part, .url = url, .size = size, .o = o, .chunk = o->chunk_bytes ? o->chunk_bytes : 4u << 20};
    f.http = !strncmp(url, "http", 4);
    char ck[PATH_MAX];
    snprintf(ck, sizeof ck, "%s.ckpt", part);
    f.fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    f.ck_fd = f.fd >= 0 ? open(ck, O_RDWR | O_CREAT | O_CLOEXEC, 0644) : -1;
    if (f.fd < 0 || f.ck_fd < 0) {
        int e = errno;
        if (f.fd >= 0) close(f.fd);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", f.fd < 0 ? part : ck, strerror(e));
    }
    edgellm_status st = EDGELLM_OK;
    edgellm_sha256_init(&f.whole);
    edgellm_sha256_init(&f.piece);
    f.have = resume_state(&f, sha);
    /* drop what the checkpoint does not vouch for, and rewrite the checkpoint to match */
    if (ftruncate(f.fd, (off_t)f.have) != 0 || !edgellm_store_fsync(f.fd)) {
        st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot truncate: %s", part, strerror(errno));
        goto out;
    }
    {
        uint64_t n_chunks = (f.have + f.chunk - 1) / f.chunk;
        char hdr_keep[160];
        char hex[65];
        edgellm_sha256_hex(sha, hex);
        int hl = snprintf(hdr_keep, sizeof hdr_keep, "edgellm-download size %llu chunk %llu sha256 %s\n",
                          (unsigned long long)f.size, (unsigned long long)f.chunk, hex);
        off_t ck_len = (off_t)hl + (off_t)n_chunks * 65;
        struct stat sb;
        if (f.have == 0) {
            if (!ck_reset(&f, sha)) { st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", ck, strerror(errno)); goto out; }
        } else if (fstat(f.ck_fd, &sb) == 0 && sb.st_size != ck_len) {
            if (ftruncate(f.ck_fd, ck_len) != 0 || !edgellm_store_fsync(f.ck_fd)) {
                st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", ck, strerror(errno));
                goto out;
            }
        }
        lseek(f.ck_fd, 0, SEEK_END);
        lseek(f.fd, 0, SEEK_END);
    }
    /* free space for the rest */
    {
        struct statvfs vf;
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", part);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        if (statvfs(slash ? dir : ".", &vf) == 0) {
            uint64_t avail = (uint64_t)vf.f_bavail * (uint64_t)vf.f_frsize;
            if (avail < size - f.have) {
                st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %llu bytes to download, %llu free on %s", url,
                                  (unsigned long long)(size - f.have), (unsigned long long)avail, slash ? dir : ".");
                goto out;
            }
        }
    }
    for (int attempt = 0; f.have < size; attempt++) {
        f.c = curl_easy_init();
        if (!f.c) { st = edgellm_fail_nomem(err, url); goto out; }
        common_opts(f.c, url, o->connect_timeout_s, o->low_speed_time_s);
        curl_easy_setopt(f.c, CURLOPT_WRITEFUNCTION, part_write);
        curl_easy_setopt(f.c, CURLOPT_WRITEDATA, &f);
        curl_easy_setopt(f.c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)f.have);
        f.first = true;
        f.restart = f.over = f.io_error = false;
        CURLcode rc = curl_easy_perform(f.c);
        curl_easy_cleanup(f.c);
        f.c = NULL;
        if (f.over) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: the server sends more than the manifest's size of %llu "
                              "bytes (refused)", url, (unsigned long long)size);
            goto discard;
        }
        if (f.io_error) {
            st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", part, strerror(f.io_errno));
            goto out;
        }
        if (rc == CURLE_RANGE_ERROR && f.have > 0) f.restart = true;   /* libcurl saw a 200 to a Range */
        if (f.restart) {   /* the server ignored the Range: start over */
            o->refetched_bytes += f.have;
            f.have = 0;
            f.piece_have = 0;
            edgellm_sha256_init(&f.whole);
            edgellm_sha256_init(&f.piece);
            if (ftruncate(f.fd, 0) != 0 || lseek(f.fd, 0, SEEK_SET) != 0 || !ck_reset(&f, sha)) {
                st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", part, strerror(errno));
                goto out;
            }
            if (attempt < o->retries) continue;
        }
        if (f.have >= size) break;
        if (attempt >= o->retries) {
            st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s after %d attempts (%llu of %llu bytes kept; run the same "
                              "command again to resume)", url, rc == CURLE_OK ? "transfer ended early" :
                              curl_easy_strerror(rc), attempt + 1, (unsigned long long)f.have,
                              (unsigned long long)size);
            goto out;
        }
        double wait_s = 0.25 * (double)(1 << (attempt < 5 ? attempt : 5));
        if (wait_s > 4) wait_s = 4;
        struct timespec ts = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
        nanosleep(&ts, NULL);
    }
    {
        uint8_t d[32];
        edgellm_sha256_final(&f.whole, d);
        if (memcmp(d, sha, 32)) {
            char hex[65];
            edgellm_sha256_hex(d, hex);
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: downloaded bytes have SHA-256 %s, not the manifest's "
                              "(removed)", url, hex);
            goto discard;
        }
        if (!edgellm_store_fsync(f.fd)) st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: fsync failed", part);
    }
    goto out;
discard:
    unlink(part);
    unlink(ck);
out:
    close(f.fd);
    close(f.ck_fd);
    return st;
}

#else
edgellm_status edgellm_store_fetch_small(const char *url, size_t max_bytes, char **out, size_t *len,
                                         double connect_timeout_s, edgellm_error *err)
{
    *out = NULL;
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "%s: edgellm was built without libcurl (apt-get install "
                        "libcurl4-openssl-dev, then rebuild): download the file and add it by path", url);
}
edgellm_status edgellm_store_fetch(const char *url, const char *part, uint64_t size, const uint8_t sha[32],
                                   edgellm_fetch_opts *o, edgellm_error *err)
{
    return edgellm_store_fetch_small(url, 0, &(char *){NULL}, &(size_t){0}, 0, err);
}
#endif
