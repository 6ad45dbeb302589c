/* store_delta.c — per-tensor patches between two GGUF files (`edgellm delta`, `store add
 * --patch`), compressed with libzstd (RFC 8878 frames).
 *
 * A patch, all integers little-endian:
 *   "ELPATCH1"  u64 new_size  u8[32] old_sha256  u64 old_size  u8[32] new_sha256      (88 bytes)
 *   then operations, each producing the next bytes of NEW, until 'E':
 *     'C' u64 old_offset u64 len                      copy len bytes of OLD
 *     'D' u64 len u64 zlen u8[zlen]                   a zstd frame of len bytes
 *     'X' u64 old_offset u64 len u64 zlen u8[zlen]    a zstd frame of len bytes, XORed with
 *                                                     OLD[old_offset ..] (a changed tensor of
 *                                                     the same name, type and shape)
 *     'H' u64 prefix u64 len u64 zlen u8[zlen]       a zstd frame of len bytes compressed with
 *                                                     OLD[0 .. prefix) as its prefix dictionary
 *                                                     (NEW's header against OLD's)
 *     'E'                                             the end; nothing may follow
 * NEW's header region (metadata, tensor table) is 'C' when identical to OLD's, else 'H';
 * the padding between tensors is 'D'; each tensor is 'C' when OLD has one of the same name
 * and bytes, else the smaller of 'X' and 'D'. */
#include "store.h"
#include "common/common.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(EDGELLM_HAVE_ZSTD) && defined(EDGELLM_HAVE_SODIUM)
#include <zstd.h>

#define PATCH_HDR 88
#define PATCH_CHUNK ((size_t)1 << 20)   /* decompression window of patch apply (bytes) */
#define PATCH_MAX_NEW ((uint64_t)1 << 40)
#define ZLEVEL 3

typedef struct { const uint8_t *p; uint64_t n; } mapping;

static edgellm_status map_file(const char *path, mapping *m, edgellm_error *err)
{
    m->p = NULL;
    m->n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return edgellm_fail(err, errno == ENOENT ? EDGELLM_ERR_NOT_FOUND : EDGELLM_ERR_IO, "%s: %s", path,
                                    strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) { close(fd); return edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", path); }
    m->n = (uint64_t)st.st_size;
    if (m->n) {
        void *p = mmap(NULL, m->n, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) { close(fd); return edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot map: %s", path, strerror(errno)); }
        m->p = p;
    }
    close(fd);
    return EDGELLM_OK;
}
static void unmap_file(mapping *m)
{
    if (m->p) munmap((void *)m->p, m->n);
    m->p = NULL;
}

static void sha_of(const uint8_t *p, uint64_t n, uint8_t out[32])
{
    edgellm_sha256 h;
    edgellm_sha256_init(&h);
    for (uint64_t off = 0; off < n;) {
        size_t k = n - off < (64u << 20) ? (size_t)(n - off) : (64u << 20);
        edgellm_sha256_update(&h, p + off, k);
        off += k;
    }
    edgellm_sha256_final(&h, out);
}

static void put_u64(uint8_t *b, uint64_t v)
{
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get_u64(const uint8_t *b)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)b[i] << (8 * i);
    return v;
}

typedef struct { uint64_t off, size; int64_t idx; } region;
static int cmp_region(const void *a, const void *b)
{
    const region *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* zstd of n bytes into a malloc'd buffer (*zn bytes). */
static uint8_t *zcompress(const uint8_t *p, size_t n, size_t *zn)
{
    size_t cap = ZSTD_compressBound(n);
    uint8_t *z = edgellm_malloc(cap ? cap : 1);
    if (!z) return NULL;
    size_t r = ZSTD_compress(z, cap, p, n, ZLEVEL);
    if (ZSTD_isError(r)) { edgellm_free(z); return NULL; }
    *zn = r;
    return z;
}

/* zstd of n bytes with prefix[0..pn) as the dictionary (RFC 8878 section 5, raw content). */
static int window_log(uint64_t n)
{
    int w = 10;
    while (w < 27 && ((uint64_t)1 << w) < n) w++;
    return w;
}
static uint8_t *zcompress_prefix(const uint8_t *p, size_t n, const uint8_t *prefix, size_t pn, size_t *zn)
{
    size_t cap = ZSTD_compressBound(n);
    uint8_t *z = edgellm_malloc(cap ? cap : 1);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    size_t r = (size_t)-1;
    if (z && c) {
        ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, ZLEVEL);
        ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, window_log((uint64_t)pn + n));
        ZSTD_CCtx_refPrefix(c, prefix, pn);
        r = ZSTD_compress2(c, z, cap, p, n);
    }
    ZSTD_freeCCtx(c);
    if (!z || ZSTD_isError(r)) { edgellm_free(z); return NULL; }
    *zn = r;
    return z;
}

static bool emit_data(FILE *f, char kind, uint64_t old_off, const uint8_t *z, size_t zn, uint64_t len)
{
    uint8_t h[25];
    size_t hn = 0;
    h[hn++] = (uint8_t)kind;
    if (kind == 'X' || kind == 'H') { put_u64(h + hn, old_off); hn += 8; }
    put_u64(h + hn, len);
    hn += 8;
    put_u64(h + hn, zn);
    hn += 8;
    return fwrite(h, 1, hn, f) == hn && fwrite(z, 1, zn, f) == zn;
}

static bool emit_literal(FILE *f, const uint8_t *p, uint64_t n, uint64_t *pb)
{
    if (!n) return true;
    size_t zn;
    uint8_t *z = zcompress(p, (size_t)n, &zn);
    if (!z) return false;
    bool ok = emit_data(f, 'D', 0, z, zn, n);
    *pb += 17 + zn;
    edgellm_free(z);
    return ok;
}

edgellm_status edgellm_delta_create(const char *old_path, const char *new_path, const char *out_path,
                                    edgellm_delta_report *report, edgellm_error *err)
{
    if (!old_path || !new_path || !out_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "delta: NULL path");
    edgellm_delta_report r = {.size = sizeof r};
    edgellm_gguf_meta *go = NULL, *gn = NULL;
    mapping mo = {0}, mn = {0};
    region *regs = NULL;
    edgellm_output *out = NULL;
    edgellm_status st;
    if ((st = edgellm_gguf_meta_open(old_path, &go, err)) || (st = edgellm_gguf_meta_open(new_path, &gn, err)) ||
        (st = map_file(old_path, &mo, err)) || (st = map_file(new_path, &mn, err)))
        goto out;
    if ((st = edgellm_output_open(out_path, "wb", &out, err))) goto out;
    FILE *f = edgellm_output_stream(out);
    uint8_t hdr[PATCH_HDR];
    memcpy(hdr, "ELPATCH1", 8);
    put_u64(hdr + 8, mn.n);
    sha_of(mo.p, mo.n, hdr + 16);
    put_u64(hdr + 48, mo.n);
    sha_of(mn.p, mn.n, hdr + 56);
    fwrite(hdr, 1, sizeof hdr, f);
    uint64_t pb = PATCH_HDR;
    const int64_t nt = edgellm_gguf_meta_n_tensors(gn), nto = edgellm_gguf_meta_n_tensors(go);
    const uint64_t base_n = edgellm_gguf_meta_data_offset(gn), base_o = edgellm_gguf_meta_data_offset(go);
    regs = edgellm_calloc((size_t)(nt ? nt : 1), sizeof *regs);
    if (!regs) { st = edgellm_fail_nomem(err, new_path); goto out; }
    for (int64_t i = 0; i < nt; i++) {
        edgellm_gguf_tensor_info ti;
        edgellm_gguf_meta_tensor(gn, i, &ti);
        regs[i] = (region){base_n + ti.offset, ti.size_bytes, i};
    }
    qsort(regs, (size_t)nt, sizeof *regs, cmp_region);
    r.n_tensors = (int)nt;
    /* the header region: copied when identical */
    uint64_t pos = 0, lit_start = 0;
    bool ok = true;
    const uint64_t hdr_end = nt ? regs[0].off : mn.n;
    if (hdr_end <= mo.n && !memcmp(mn.p, mo.p, hdr_end) && hdr_end) {
        uint8_t c[17] = {'C'};
        put_u64(c + 1, 0);
        put_u64(c + 9, hdr_end);
        ok = fwrite(c, 1, 17, f) == 17;
        pb += 17;
        lit_start = hdr_end;
    } else if (hdr_end) {
        const uint64_t old_hdr = nto ? base_o : mo.n;   /* OLD's header region as the dictionary */
        size_t zn;
        uint8_t *z = zcompress_prefix(mn.p, (size_t)hdr_end, mo.p, (size_t)(old_hdr < mo.n ? old_hdr : mo.n), &zn);
        if (!z) { st = edgellm_fail_nomem(err, new_path); goto out; }
        ok = emit_data(f, 'H', old_hdr < mo.n ? old_hdr : mo.n, z, zn, hdr_end);
        pb += 25 + zn;
        edgellm_free(z);
        lit_start = hdr_end;
    }
    pos = hdr_end;
    for (int64_t k = 0; ok && k < nt; k++) {
        const region *rg = &regs[k];
        if (rg->off < pos) continue;   /* overlapping tensors: carried as literal bytes */
        edgellm_gguf_tensor_info tn, to;
        edgellm_gguf_meta_tensor(gn, rg->idx, &tn);
        int64_t match = -1;
        for (int64_t j = 0; j < nto && match < 0; j++) {
            edgellm_gguf_meta_tensor(go, j, &to);
            if (to.name_len == tn.name_len && !memcmp(to.name, tn.name, tn.name_len)) match = j;
        }
        const uint8_t *np = mn.p + rg->off;
        uint64_t oo = 0;
        bool same_shape = false;
        if (match >= 0) {
            oo = base_o + to.offset;
            same_shape = to.type == tn.type && to.size_bytes == tn.size_bytes && !memcmp(to.ne, tn.ne, sizeof tn.ne) &&
                         oo + to.size_bytes <= mo.n;
        }
        if (same_shape && !memcmp(np, mo.p + oo, rg->size)) {
            ok = emit_literal(f, mn.p + lit_start, rg->off - lit_start, &pb);
            uint8_t c[17] = {'C'};
            put_u64(c + 1, oo);
            put_u64(c + 9, rg->size);
            ok = ok && fwrite(c, 1, 17, f) == 17;
            pb += 17;
            r.n_copied++;
            lit_start = pos = rg->off + rg->size;
            continue;
        }
        if (same_shape && rg->size) {
            uint8_t *x = edgellm_malloc((size_t)rg->size);
            if (!x) { st = edgellm_fail_nomem(err, new_path); goto out; }
            for (uint64_t i = 0; i < rg->size; i++) x[i] = np[i] ^ mo.p[oo + i];
            size_t zx, zd;
            uint8_t *z1 = zcompress(x, (size_t)rg->size, &zx);
            edgellm_free(x);
            uint8_t *z2 = z1 ? zcompress(np, (size_t)rg->size, &zd) : NULL;
            if (!z1 || !z2) { edgellm_free(z1); edgellm_free(z2); st = edgellm_fail_nomem(err, new_path); goto out; }
            if (zx < zd) {
                ok = emit_literal(f, mn.p + lit_start, rg->off - lit_start, &pb) && emit_data(f, 'X', oo, z1, zx, rg->size);
                pb += 25 + zx;
                r.n_xor++;
                lit_start = rg->off + rg->size;
            } else r.n_literal++;   /* stays in the literal run */
            edgellm_free(z1);
            edgellm_free(z2);
        } else r.n_literal++;
        pos = rg->off + rg->size;
    }
    ok = ok && emit_literal(f, mn.p + lit_start, mn.n - lit_start, &pb);
    ok = ok && fputc('E', f) != EOF;
    pb += 1;
    if (!ok) { st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed", out_path); goto out; }
    st = edgellm_output_commit(out, err);
    out = NULL;
    r.old_bytes = mo.n;
    r.new_bytes = mn.n;
    r.patch_bytes = pb;
    if (!st && report && report->size) memcpy(report, &r, report->size < sizeof r ? report->size : sizeof r);
out:
    if (out) edgellm_output_discard(out);
    edgellm_free(regs);
    unmap_file(&mo);
    unmap_file(&mn);
    edgellm_gguf_meta_close(go);
    edgellm_gguf_meta_close(gn);
    return st;
}

static bool read_exact(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

edgellm_status edgellm_delta_apply(const char *old_path, const char *patch_path, const char *out_path,
                                   edgellm_progress_fn progress, void *pu, edgellm_error *err)
{
    if (!old_path || !patch_path || !out_path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "delta: NULL path");
    mapping mo = {0};
    int pf = -1, of = -1;
    uint8_t *buf = NULL, *zb = NULL;
    char tmp[PATH_MAX];
    tmp[0] = 0;
    edgellm_status st = map_file(old_path, &mo, err);
    if (st) return st;
    pf = open(patch_path, O_RDONLY | O_CLOEXEC);
    if (pf < 0) { st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", patch_path, strerror(errno)); goto out; }
    struct stat ps;
    fstat(pf, &ps);
    uint64_t left = (uint64_t)ps.st_size;
    uint8_t hdr[PATCH_HDR];
    if (left < PATCH_HDR || !read_exact(pf, hdr, sizeof hdr) || memcmp(hdr, "ELPATCH1", 8)) {
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: not an edgellm patch (field 'magic')", patch_path);
        goto out;
    }
    left -= PATCH_HDR;
    const uint64_t new_size = get_u64(hdr + 8), old_size = get_u64(hdr + 48);
    if (new_size > PATCH_MAX_NEW) {
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'new_size' %llu is beyond 1 TiB", patch_path,
                          (unsigned long long)new_size);
        goto out;
    }
    uint8_t d[32];
    sha_of(mo.p, mo.n, d);
    if (old_size != mo.n || memcmp(d, hdr + 16, 32)) {
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'old_sha256': %s is not the file this patch applies to",
                          patch_path, old_path);
        goto out;
    }
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", out_path, (long)getpid()) >= (int)sizeof tmp) {
        tmp[0] = 0;
        st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: path too long", out_path);
        goto out;
    }
    unlink(tmp);
    of = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (of < 0) { st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", tmp, strerror(errno)); tmp[0] = 0; goto out; }
    edgellm_sha256 h;
    edgellm_sha256_init(&h);
    uint64_t done = 0;
    for (;;) {
        uint8_t op;
        if (!left || !read_exact(pf, &op, 1)) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: truncated (no 'E' operation after %llu bytes of output)",
                              patch_path, (unsigned long long)done);
            goto out;
        }
        left--;
        if (op == 'E') break;
        uint8_t a[24];
        const size_t an = op == 'C' ? 16 : op == 'D' ? 16 : op == 'X' || op == 'H' ? 24 : 0;
        if (!an) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'op': unknown operation 0x%02x at output byte %llu",
                              patch_path, op, (unsigned long long)done);
            goto out;
        }
        if (left < an || !read_exact(pf, a, an)) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: truncated operation", patch_path);
            goto out;
        }
        left -= an;
        uint64_t src = 0, len, zlen = 0;
        if (op == 'C') { src = get_u64(a); len = get_u64(a + 8); }
        else if (op == 'D') { len = get_u64(a); zlen = get_u64(a + 8); }
        else { src = get_u64(a); len = get_u64(a + 8); zlen = get_u64(a + 16); }
        if (len > new_size - done) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'len': output would exceed new_size %llu", patch_path,
                              (unsigned long long)new_size);
            goto out;
        }
        if ((op == 'C' || op == 'X') && (src > mo.n || len > mo.n - src)) {
            st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'old_offset': %llu + %llu is beyond %s", patch_path,
                              (unsigned long long)src, (unsigned long long)len, old_path);
            goto out;
        }
        if (op == 'C') {
            edgellm_sha256_update(&h, mo.p + src, (size_t)len);
            if (!edgellm_store_write_all(of, mo.p + src, (size_t)len)) {
                st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
                goto out;
            }
        } else {
            if (zlen > left || zlen > ZSTD_compressBound((size_t)len) + 64) {
                st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'zlen': %llu bytes %s", patch_path,
                                  (unsigned long long)zlen, zlen > left ? "beyond the end of the patch" :
                                  "more than the data can take");
                goto out;
            }
            /* The data is decompressed through a fixed window (PATCH_CHUNK bytes), never into
             * a buffer of the declared len: a hostile patch of a few bytes cannot make this
             * allocate what its 'len' field claims. */
            if (op == 'H' && src > mo.n) {   /* src: the length of OLD's prefix used as the dictionary */
                st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'prefix': %llu is beyond %s", patch_path,
                                  (unsigned long long)src, old_path);
                goto out;
            }
            edgellm_free(zb);
            zb = edgellm_malloc(zlen ? (size_t)zlen : 1);
            if (!buf) buf = edgellm_malloc(PATCH_CHUNK);
            if (!buf || !zb) { st = edgellm_fail_nomem(err, patch_path); goto out; }
            if (!read_exact(pf, zb, (size_t)zlen)) {
                st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: truncated data", patch_path);
                goto out;
            }
            left -= zlen;
            ZSTD_DCtx *dc = ZSTD_createDCtx();
            if (!dc) { st = edgellm_fail_nomem(err, patch_path); goto out; }
            ZSTD_DCtx_setParameter(dc, ZSTD_d_windowLogMax, 27);
            if (op == 'H') ZSTD_DCtx_refPrefix(dc, mo.p, (size_t)src);
            ZSTD_inBuffer in = {zb, (size_t)zlen, 0};
            uint64_t got = 0;
            size_t r = 1;
            const char *why = NULL;
            while (r != 0) {
                ZSTD_outBuffer outb = {buf, PATCH_CHUNK, 0};
                r = ZSTD_decompressStream(dc, &outb, &in);
                if (ZSTD_isError(r)) { why = ZSTD_getErrorName(r); break; }
                if (outb.pos > len - got) { why = "more data than its 'len'"; break; }
                if (op == 'X')
                    for (size_t i = 0; i < outb.pos; i++) buf[i] ^= mo.p[src + got + i];
                edgellm_sha256_update(&h, buf, outb.pos);
                if (outb.pos && !edgellm_store_write_all(of, buf, outb.pos)) {
                    ZSTD_freeDCtx(dc);
                    st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: write failed: %s", tmp, strerror(errno));
                    goto out;
                }
                got += outb.pos;
                if (r != 0 && in.pos == in.size && outb.pos < outb.size) { why = "truncated frame"; break; }
            }
            ZSTD_freeDCtx(dc);
            if (!why && (got != len || in.pos != in.size)) why = "wrong length";
            if (why) {
                st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'data' at output byte %llu: %s", patch_path,
                                  (unsigned long long)done, why);
                goto out;
            }
        }
        done += len;
        if (progress) progress(pu, new_size ? (double)done / (double)new_size : 1.0, "patching");
    }
    if (left) {
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: %llu bytes after the 'E' operation", patch_path,
                          (unsigned long long)left);
        goto out;
    }
    edgellm_sha256_final(&h, d);
    if (done != new_size || memcmp(d, hdr + 56, 32)) {
        st = edgellm_fail(err, EDGELLM_ERR_FORMAT, "%s: field 'new_sha256': the result (%llu bytes) does not match",
                          patch_path, (unsigned long long)done);
        goto out;
    }
    if (!edgellm_store_fsync(of)) { st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: fsync failed", tmp); goto out; }
    close(of);
    of = -1;
    if (!edgellm_store_rename(tmp, out_path)) {
        st = edgellm_fail(err, EDGELLM_ERR_IO, "%s: cannot rename into place: %s", out_path, strerror(errno));
        goto out;
    }
    tmp[0] = 0;
out:
    if (of >= 0) close(of);
    if (tmp[0]) unlink(tmp);
    if (pf >= 0) close(pf);
    edgellm_free(buf);
    edgellm_free(zb);
    unmap_file(&mo);
    return st;
}

#else
edgellm_status edgellm_delta_create(const char *old_path, const char *new_path, const char *out_path,
                                    edgellm_delta_report *report, edgellm_error *err)
{
    return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED, "delta: edgellm was built without libzstd or libsodium "
                        "(apt-get install libzstd-dev libsodium-dev, then rebuild)");
}
edgellm_status edgellm_delta_apply(const char *old_path, const char *patch_path, const char *out_path,
                                   edgellm_progress_fn progress, void *pu, edgellm_error *err)
{
    return edgellm_delta_create(old_path, patch_path, out_path, NULL, err);
}
#endif
