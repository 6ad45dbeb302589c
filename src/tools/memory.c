/*
 * memory.c — residency of the mapped weights: a low-memory mode that keeps at most a
 * window of layers resident while a context decodes, a warm-up that faults the weights in
 * before the first request, locking them in RAM, and dropping a file from the page cache.
 *
 * Low-memory mode. The weights are a read-only private file mapping (gguf_read.c). Pages of
 * it that a pass touched count in the process's RSS (RssFile) until released:
 * madvise(MADV_DONTNEED) on such a mapping drops the pages from the process (the next access
 * faults them in again from the page cache or the file; Linux madvise(2)), and
 * madvise(MADV_WILLNEED) starts reading the next layer ahead. The forward pass calls the
 * context's layer hook before each layer (model.h); the hook keeps the last `window` layers
 * resident, releasing the oldest, and releases the token-embedding table (read a row per
 * token) at the start of each pass. The output head (read whole for every token) and the
 * norms stay resident. So RssFile stays near fixed + window x largest layer; the cost is a
 * page fault per page per pass — minor while the file stays in the page cache, a read from
 * storage when memory pressure evicts it (the case the mode is for).
 */
#include "../common/common.h"
#include "../model/model.h"
#include "edgellm_tools.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct { uintptr_t a, b; } span;   /* page-aligned [a, b) */

#define MEM_MAX_SPANS 16   /* tensors of one layer, at most */

typedef struct {
    span s[MEM_MAX_SPANS];
    int n;
    uint64_t bytes;
} layer_spans;

struct edgellm_membudget {
    edgellm_ctx *ctx;
    int n_layer, window;
    layer_spans *layers;     /* [n_layer]                                           */
    layer_spans embd;        /* token_embd, when it is not the output head          */
    int *fifo, head, count;  /* resident layers, oldest first (ring of n_layer)     */
    unsigned char *resident; /* [n_layer]                                           */
    edgellm_membudget_info info;
};

static uintptr_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uintptr_t)p : 4096;
}

static void add_span(layer_spans *l, const void *data, uint64_t bytes)
{
    if (!data || !bytes || l->n == MEM_MAX_SPANS) return;
    const uintptr_t ps = page_size(), a = (uintptr_t)data & ~(ps - 1), b = ((uintptr_t)data + bytes + ps - 1) & ~(ps - 1);
    l->s[l->n++] = (span){a, b};
    l->bytes += bytes;
}

/* A matrix in the mapping (in a plain or a stored layout: ne1 rows of row_bytes either
 * way); one repacked or unpacked at load lies in owned memory and is left out. */
static void add_tensor(layer_spans *l, const edgellm_model *m, const edgellm_tensor *t)
{
    if (t->data && !edgellm_model_owns(m, t->data)) add_span(l, t->data, (uint64_t)t->ne1 * t->row_bytes);
}

static void advise(const layer_spans *l, int advice)
{
    for (int i = 0; i < l->n; i++) (void)madvise((void *)l->s[i].a, l->s[i].b - l->s[i].a, advice);
}

static void hook(void *user, int il)
{
    edgellm_membudget *b = user;
    if (il >= b->n_layer) return;
    if (il == 0 && b->embd.n) {   /* this pass's rows are read: let the table go */
        advise(&b->embd, MADV_DONTNEED);
        b->info.n_released++;
    }
    if (il + 1 < b->n_layer) advise(&b->layers[il + 1], MADV_WILLNEED);
    if (b->resident[il]) return;
    b->resident[il] = 1;
    b->fifo[(b->head + b->count++) % b->n_layer] = il;
    while (b->count > b->window) {
        const int old = b->fifo[b->head];
        b->head = (b->head + 1) % b->n_layer;
        b->count--;
        b->resident[old] = 0;
        advise(&b->layers[old], MADV_DONTNEED);
        b->info.n_released++;
    }
}

edgellm_status edgellm_membudget_attach(edgellm_ctx *c, uint64_t budget_bytes, edgellm_membudget **out,
                                        edgellm_error *err)
{
    if (!c || !out) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "mem-budget: NULL context");
    *out = NULL;
    if (c->layer_hook) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "mem-budget: the context already has one");
    const edgellm_model *m = c->model;
    if (m->repack_buf)   /* owned memory: MADV_DONTNEED would zero it, not page it out */
        return edgellm_fail(err, EDGELLM_ERR_UNSUPPORTED,
                            "mem-budget: %d matrices (%.1f MiB) were %s at load into memory the budget "
                            "cannot release; %s", m->n_repacked + m->n_unpacked, m->repack_bytes / 1048576.0,
                            m->n_unpacked ? "unpacked from the file's stored layout" : "repacked",
                            m->n_unpacked ? "this CPU has no kernel for the layout: use a file in the plain layout "
                                            "(edgellm quantize --layout plain)"
                                          : "load the model with repacking off (EDGELLM_REPACK=0, --no-repack)");
    const int L = m->hp.n_layer;
    edgellm_membudget *b = calloc(1, sizeof *b);
    if (!b || !(b->layers = calloc((size_t)L, sizeof *b->layers)) || !(b->fifo = calloc((size_t)L, sizeof *b->fifo)) ||
        !(b->resident = calloc((size_t)L, 1))) {
        if (b) { free(b->layers); free(b->fifo); free(b); }
        return edgellm_fail(err, EDGELLM_ERR_NOMEM, "mem-budget: out of memory");
    }
    uint64_t max_layer = 0;
    for (int il = 0; il < L; il++) {
        const edgellm_layer *y = &m->layers[il];
        layer_spans *l = &b->layers[il];
        const edgellm_tensor *mats[EDGELLM_LAYER_N_MATRICES] = EDGELLM_LAYER_MATRICES(y);
        for (int k = 0; k < EDGELLM_LAYER_N_MATRICES; k++) add_tensor(l, m, mats[k]);
        if (l->bytes > max_layer) max_layer = l->bytes;
    }
    uint64_t fixed = (uint64_t)m->output.ne1 * m->output.row_bytes;   /* read whole every token */
    if (!m->tied_output) add_tensor(&b->embd, m, &m->token_embd);
    fixed += (uint64_t)m->hp.n_embd * sizeof(float) * (2 * (uint64_t)L + 1);   /* norms */
    const uint64_t slack = 64 * page_size();   /* embedding rows of a pass, page rounding */
    if (budget_bytes < fixed + max_layer + slack) {
        free(b->layers); free(b->fifo); free(b->resident); free(b);
        return edgellm_fail(err, EDGELLM_ERR_MISUSE, "mem-budget: %.1f MiB is below the output head and norms (%.1f "
                            "MiB) + one layer (%.1f MiB) + %.1f MiB: raise it", budget_bytes / 1048576.0,
                            fixed / 1048576.0, max_layer / 1048576.0, slack / 1048576.0);
    }
    uint64_t w = (budget_bytes - fixed - slack) / (max_layer ? max_layer : 1);
    b->window = w > (uint64_t)L ? L : (int)w;
    b->n_layer = L;
    b->ctx = c;
    b->info = (edgellm_membudget_info){.size = sizeof b->info, .budget_bytes = budget_bytes, .fixed_bytes = fixed,
                                       .layer_bytes_max = max_layer, .window_layers = b->window, .n_layer = L};
    /* drop what loading touched, so the budget holds from the first pass */
    for (int il = 0; il < L; il++) advise(&b->layers[il], MADV_DONTNEED);
    advise(&b->embd, MADV_DONTNEED);
    c->layer_hook_user = b;
    c->layer_hook = hook;
    *out = b;
    return EDGELLM_OK;
}

void edgellm_membudget_get_info(const edgellm_membudget *b, edgellm_membudget_info *out)
{
    if (!b || !out || !out->size) return;
    const size_t n = out->size < sizeof b->info ? out->size : sizeof b->info;
    memcpy(out, &b->info, n);
    out->size = n;
}

void edgellm_membudget_detach(edgellm_membudget *b)
{
    if (!b) return;
    if (b->ctx && b->ctx->layer_hook_user == b) {
        b->ctx->layer_hook = NULL;
        b->ctx->layer_hook_user = NULL;
    }
    free(b->layers);
    free(b->fifo);
    free(b->resident);
    free(b);
}

/* ---- warm-up, locking, page cache ---- */

/* The memory a forward pass reads, as exact byte ranges (not page-aligned: some are heap
 * allocations, read only inside them): every matrix in the mapping, a repacked one's owned
 * copy instead (m->repack_buf: the mapping's pages of those tensors are never touched,
 * include/edgellm_tools.h), the norm and bias vectors. NULL (out of memory) or an array of
 * *n spans to free(). */
static span *weight_spans(const edgellm_model *m, int *n)
{
    const int L = m->hp.n_layer;
    const int cap = (EDGELLM_LAYER_N_MATRICES + 5) * L + 4;   /* per layer: matrices, 2 norms, 3 biases */
    span *s = malloc(sizeof *s * (size_t)cap);
    *n = 0;
    if (!s) return NULL;
#define WS_ADD(d_, n_) do { if ((d_) && (n_) > 0 && *n < cap) \
        s[(*n)++] = (span){(uintptr_t)(d_), (uintptr_t)(d_) + (uintptr_t)(n_)}; } while (0)
#define WS_TENSOR(t_) do { if ((t_)->data && !edgellm_model_owns(m, (t_)->data)) WS_ADD((t_)->data, (uint64_t)(t_)->ne1 * (t_)->row_bytes); } while (0)
    const uint64_t E = (uint64_t)m->hp.n_embd * sizeof(float), KV = (uint64_t)m->hp.kv_dim * sizeof(float);
    WS_TENSOR(&m->token_embd);
    if (!m->tied_output) WS_TENSOR(&m->output);
    WS_ADD(m->output_norm, E);
    if (m->repack_buf) WS_ADD(m->repack_buf, m->repack_bytes);
    for (int il = 0; il < L; il++) {
        const edgellm_layer *y = &m->layers[il];
        WS_ADD(y->attn_norm, E);
        WS_ADD(y->ffn_norm, E);
        WS_ADD(y->bq, E);
        WS_ADD(y->bk, KV);
        WS_ADD(y->bv, KV);
        const edgellm_tensor *mats[EDGELLM_LAYER_N_MATRICES] = EDGELLM_LAYER_MATRICES(y);
        for (int k = 0; k < EDGELLM_LAYER_N_MATRICES; k++) WS_TENSOR(mats[k]);
    }
#undef WS_TENSOR
#undef WS_ADD
    return s;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

edgellm_status edgellm_warmup(edgellm_ctx *c, double *ms, edgellm_error *err)
{
    if (ms) *ms = 0;
    if (!c) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "warm-up: NULL context");
    for (int s = 0; s < c->n_seq; s++)
        if (c->seqs[s].n) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "warm-up: the context is not empty");
    const double t0 = now_ms();
    if (!c->layer_hook) {   /* a memory budget would release them again: skip the faulting */
        int n = 0;
        span *sp = weight_spans(c->model, &n);
        if (!sp) return edgellm_fail(err, EDGELLM_ERR_NOMEM, "warm-up: out of memory");
        const uintptr_t ps = page_size();
        for (int i = 0; i < n; i++) {
            const uintptr_t a = sp[i].a & ~(ps - 1), b = (sp[i].b + ps - 1) & ~(ps - 1);
            (void)madvise((void *)a, b - a, MADV_WILLNEED);
        }
        volatile unsigned char sink = 0;
        for (int i = 0; i < n; i++) {   /* one byte of every page, inside the range */
            for (uintptr_t p = sp[i].a; p < sp[i].b; p = (p & ~(ps - 1)) + ps) sink ^= *(const volatile unsigned char *)p;
        }
        (void)sink;
        free(sp);
    }
    const edgellm_tokenizer *tok = c->model->tok;
    int32_t t = tok ? edgellm_token_bos(tok) : -1;
    if (t < 0) t = 0;
    edgellm_status st = edgellm_decode(c, &t, 1, NULL, err);   /* kernels, scratch, thread pool */
    edgellm_ctx_reset(c);
    if (ms) *ms = now_ms() - t0;
    return st;
}

edgellm_status edgellm_model_mlock(const edgellm_model *m, edgellm_error *err)
{
    if (!m) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "mlock: NULL model");
    int n = 0;
    span *sp = weight_spans(m, &n);
    if (!sp) return edgellm_fail(err, EDGELLM_ERR_NOMEM, "mlock: out of memory");
    const uintptr_t ps = page_size();
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {   /* mlock works on whole pages */
        sp[i].a &= ~(ps - 1);
        sp[i].b = (sp[i].b + ps - 1) & ~(ps - 1);
        bytes += sp[i].b - sp[i].a;
    }
    struct rlimit rl;
    const double need = bytes / 1048576.0;
    edgellm_status rc = EDGELLM_OK;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && bytes > rl.rlim_cur && geteuid() != 0)
        rc = edgellm_fail(err, EDGELLM_ERR_NOMEM, "%s: --mlock needs %.1f MiB locked but RLIMIT_MEMLOCK is %.1f MiB: "
                          "raise it (ulimit -l, or memlock in /etc/security/limits.conf, LimitMEMLOCK= for a "
                          "systemd service) or run without --mlock", m->path, need, rl.rlim_cur / 1048576.0);
    for (int i = 0; i < n && !rc; i++)
        if (mlock((const void *)sp[i].a, sp[i].b - sp[i].a)) {
            rc = edgellm_fail(err, EDGELLM_ERR_NOMEM, "%s: mlock of %.1f MiB failed: %s (RLIMIT_MEMLOCK %s)", m->path,
                              need, strerror(errno), rl.rlim_cur == RLIM_INFINITY ? "unlimited" : "too low?");
            for (int k = 0; k < i; k++) (void)munlock((const void *)sp[k].a, sp[k].b - sp[k].a);
        }
    free(sp);
    return rc;
}

edgellm_status edgellm_file_drop_cache(const char *path, double *resident_frac, edgellm_error *err)
{
    if (resident_frac) *resident_frac = -1;
    if (!path) return edgellm_fail(err, EDGELLM_ERR_MISUSE, "drop cache: NULL path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return edgellm_fail(err, EDGELLM_ERR_IO, "%s: not a regular file", path);
    }
    (void)fsync(fd);   /* dirty pages (a file just written) are not dropped until written back */
    int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    if (resident_frac && st.st_size > 0) {   /* what stayed (pages mapped elsewhere, dirty ones) */
        const size_t len = (size_t)st.st_size, ps = page_size(), n = (len + ps - 1) / ps;
        void *map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        unsigned char *vec = map != MAP_FAILED ? malloc(n) : NULL;
        if (vec && mincore(map, len, vec) == 0) {
            size_t in = 0;
            for (size_t i = 0; i < n; i++) in += vec[i] & 1;
            *resident_frac = (double)in / (double)n;
        }
        free(vec);
        if (map != MAP_FAILED) munmap(map, len);
    }
    close(fd);
    if (rc) return edgellm_fail(err, EDGELLM_ERR_IO, "%s: posix_fadvise: %s", path, strerror(rc));
    return EDGELLM_OK;
}

edgellm_status edgellm_proc_memory(edgellm_proc_mem *out, int reset_peak)
{
    if (!out || !out->size) return EDGELLM_ERR_MISUSE;
    edgellm_proc_mem r = {.size = sizeof r, .rss_anon_bytes = UINT64_MAX, .rss_file_bytes = UINT64_MAX,
                          .swap_bytes = UINT64_MAX, .peak_rss_bytes = UINT64_MAX, .rss_bytes = UINT64_MAX};
    FILE *f = fopen("/proc/self/status", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "RssAnon: %llu", &kb) == 1) r.rss_anon_bytes = kb * 1024;
            else if (sscanf(line, "RssFile: %llu", &kb) == 1) r.rss_file_bytes = kb * 1024;
            else if (sscanf(line, "VmSwap: %llu", &kb) == 1) r.swap_bytes = kb * 1024;
            else if (sscanf(line, "VmHWM: %llu", &kb) == 1) r.peak_rss_bytes = kb * 1024;
            else if (sscanf(line, "VmRSS: %llu", &kb) == 1) r.rss_bytes = kb * 1024;
        }
        fclose(f);
    }
    if (reset_peak) {
        FILE *c = fopen("/proc/self/clear_refs", "w");
        r.peak_reset = c && fputs("5", c) >= 0;
        if (c && fclose(c)) r.peak_reset = 0;
    }
    memcpy(out, &r, out->size < sizeof r ? out->size : sizeof r);
    return f ? EDGELLM_OK : EDGELLM_ERR_IO;
}
