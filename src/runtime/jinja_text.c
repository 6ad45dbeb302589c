/*
 * jinja_text.c — the Jinja engine's plumbing: the arena every parse and render allocates
 * from, error reporting (longjmp to the entry point), UTF-8 helpers, and strings that carry
 * "spans" (byte ranges that came from message text, see jinja_int.h).
 *
 * Span bookkeeping: a jbuf collects bytes with a taint flag per append; adjacent tainted
 * appends merge into one span, so a string built from pieces ends with the minimal sorted
 * list of disjoint, non-adjacent spans.
 */
#include "jinja_int.h"
#include <stdarg.h>

/* ------------------------------------------------------------------ arena ---- */
struct jchunk {
    jchunk *next;
    size_t  cap, used;
    _Alignas(max_align_t) unsigned char data[];
};

void edgellm_jinja_arena_init(jarena *a, size_t limit)
{
    a->head = NULL;
    a->total = 0;
    a->limit = limit;
    a->at_limit = false;
}

void edgellm_jinja_arena_free(jarena *a)
{
    jchunk *c = a->head;
    while (c) {
        jchunk *next = c->next;
        edgellm_free(c);
        c = next;
    }
    a->head = NULL;
    a->total = 0;
}

void *edgellm_jinja_arena_alloc(jarena *a, size_t n)
{
    const size_t align = _Alignof(max_align_t);
    if (n > SIZE_MAX / 2) {
        a->at_limit = true;
        return NULL;
    }
    n = (n + align - 1) & ~(align - 1);
    if (n == 0) n = align;
    jchunk *c = a->head;
    if (c && c->cap - c->used >= n) {
        void *p = c->data + c->used;
        c->used += n;
        return p;
    }
    size_t cap = 16384;
    if (c && c->cap < (1u << 20)) cap = c->cap * 2;
    if (cap < n) cap = n;
    size_t bytes = sizeof(jchunk) + cap;
    if (a->total + bytes > a->limit || a->total + bytes < a->total) {
        a->at_limit = true;
        return NULL;
    }
    jchunk *nc = edgellm_malloc(bytes);
    a->at_limit = false;
    if (!nc) return NULL;
    a->total += bytes;
    nc->cap = cap;
    nc->used = n;
    /* keep filling the current chunk when the new one is a large one-off */
    if (c && cap == n && c->cap - c->used > 256) {
        nc->next = c->next;
        c->next = nc;
    } else {
        nc->next = c;
        a->head = nc;
    }
    return nc->data;
}

/* ------------------------------------------------------------------ errors ---- */
void edgellm_jinja_fail(jfail *f, edgellm_status code, uint32_t line, uint32_t col, const char *fmt, ...)
{
    char msg[sizeof f->err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line) edgellm_fail(f->err, code, "%s:%u:%u: %s", f->name, (unsigned)line, (unsigned)col, msg);
    else edgellm_fail(f->err, code, "%s: %s", f->name, msg);
    f->status = code;
    longjmp(f->jb, 1);
}

void edgellm_jinja_rfail(jctx *c, edgellm_status code, const char *fmt, ...)
{
    char msg[sizeof c->f.err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    edgellm_jinja_fail(&c->f, code, c->line, c->col, "%s", msg);
}

void *edgellm_jinja_alloc(jctx *c, size_t n)
{
    void *p = edgellm_jinja_arena_alloc(&c->arena, n);
    if (p) return p;
    if (c->arena.at_limit)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "memory limit reached (%zu bytes)", c->arena.limit);
    edgellm_jinja_rfail(c, EDGELLM_ERR_NOMEM, "out of memory");
}

/* ------------------------------------------------------------------ UTF-8 ---- */
size_t edgellm_jinja_u8_next(const char *p, size_t len, size_t i, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)p;
    unsigned char b = s[i];
    if (b < 0x80 || i + 1 >= len) { *cp = b; return i + 1; }
    if (b < 0xE0) { *cp = ((uint32_t)(b & 0x1F) << 6) | (s[i + 1] & 0x3F); return i + 2; }
    if (b < 0xF0 || i + 3 > len) {
        *cp = ((uint32_t)(b & 0x0F) << 12) | ((uint32_t)(s[i + 1] & 0x3F) << 6) | (s[i + 2] & 0x3F);
        return i + 3;
    }
    *cp = ((uint32_t)(b & 0x07) << 18) | ((uint32_t)(s[i + 1] & 0x3F) << 12) | ((uint32_t)(s[i + 2] & 0x3F) << 6) |
          (s[i + 3] & 0x3F);
    return i + 4;
}

size_t edgellm_jinja_u8_count(const char *p, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) n += ((unsigned char)p[i] & 0xC0) != 0x80;
    return n;
}

size_t edgellm_jinja_u8_put(char *d, uint32_t cp)
{
    unsigned char *o = (unsigned char *)d;
    if (cp < 0x80) { o[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) { o[0] = (unsigned char)(0xC0 | (cp >> 6)); o[1] = (unsigned char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. */
bool edgellm_jinja_u8_valid(const char *p, size_t len)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < len) {
        unsigned char b = s[i];
        if (b < 0x80) { i++; continue; }
        int n;
        uint32_t cp, min;
        if (b >= 0xC2 && b <= 0xDF) { n = 1; cp = b & 0x1F; min = 0x80; }
        else if (b >= 0xE0 && b <= 0xEF) { n = 2; cp = b & 0x0F; min = 0x800; }
        else if (b >= 0xF0 && b <= 0xF4) { n = 3; cp = b & 0x07; min = 0x10000; }
        else return false;
        if (len - i <= (size_t)n) return false;
        for (int k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += (size_t)n + 1;
    }
    return true;
}

/* Python's str.isspace (Py_UNICODE_ISSPACE): bidirectional classes WS, B, S or category Zs. */
bool edgellm_jinja_isspace(uint32_t cp)
{
    if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20);
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* ---------------------------------------------------------------- strings ---- */
jstr *edgellm_jinja_str_new(jctx *c, const char *p, size_t len, bool from_message)
{
    if (len > c->arena.limit) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "memory limit reached (%zu bytes)", c->arena.limit);
    jstr *s = edgellm_jinja_alloc(c, sizeof *s + len + 1);
    s->p = (char *)(s + 1);
    if (len) memcpy(s->p, p, len);
    s->p[len] = 0;
    s->len = len;
    s->n_spans = 0;
    s->spans = NULL;
    if (from_message && len) {
        s->spans = edgellm_jinja_alloc(c, sizeof *s->spans);
        s->spans[0].b = 0;
        s->spans[0].e = len;
        s->n_spans = 1;
    }
    return s;
}

jv edgellm_jinja_str(jctx *c, const char *p, size_t len)
{
    jv v = {.t = JV_STR};
    v.u.s = edgellm_jinja_str_new(c, p, len, false);
    return v;
}

jv edgellm_jinja_cstr(jctx *c, const char *s)
{
    return edgellm_jinja_str(c, s, strlen(s));
}

void edgellm_jinja_buf_init(jbuf *b)
{
    memset(b, 0, sizeof *b);
}

static void buf_reserve(jctx *c, jbuf *b, size_t extra)
{
    if (b->cap - b->len > extra) return;
    size_t need = b->len + extra + 1;
    if (need < b->len) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "string too long");
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "string too long");
        cap *= 2;
    }
    char *p = edgellm_jinja_alloc(c, cap);
    if (b->len) memcpy(p, b->p, b->len);
    b->p = p;
    b->cap = cap;
}

static void buf_span(jctx *c, jbuf *b, size_t beg, size_t end)
{
    if (beg == end) return;
    if (b->n_spans && b->spans[b->n_spans - 1].e == beg) {
        b->spans[b->n_spans - 1].e = end;
        return;
    }
    if (b->n_spans == b->cap_spans) {
        int cap = b->cap_spans ? b->cap_spans * 2 : 4;
        jspan *s = edgellm_jinja_alloc(c, (size_t)cap * sizeof *s);
        if (b->n_spans) memcpy(s, b->spans, (size_t)b->n_spans * sizeof *s);
        b->spans = s;
        b->cap_spans = cap;
    }
    b->spans[b->n_spans].b = beg;
    b->spans[b->n_spans].e = end;
    b->n_spans++;
}

void edgellm_jinja_buf_put(jctx *c, jbuf *b, const char *p, size_t len, bool tainted)
{
    if (!len) return;
    buf_reserve(c, b, len);
    memcpy(b->p + b->len, p, len);
    if (tainted) buf_span(c, b, b->len, b->len + len);
    b->len += len;
}

void edgellm_jinja_buf_putc(jctx *c, jbuf *b, char ch)
{
    buf_reserve(c, b, 1);
    b->p[b->len++] = ch;
}

void edgellm_jinja_buf_put_str(jctx *c, jbuf *b, const jstr *s, size_t from, size_t to)
{
    if (to <= from) return;
    size_t base = b->len;
    edgellm_jinja_buf_put(c, b, s->p + from, to - from, false);
    for (int i = 0; i < s->n_spans; i++) {
        size_t sb = s->spans[i].b > from ? s->spans[i].b : from;
        size_t se = s->spans[i].e < to ? s->spans[i].e : to;
        if (sb < se) buf_span(c, b, base + sb - from, base + se - from);
    }
}

jstr *edgellm_jinja_buf_finish(jctx *c, jbuf *b)
{
    jstr *s = edgellm_jinja_alloc(c, sizeof *s);
    if (!b->p) {
        b->p = edgellm_jinja_alloc(c, 1);
        b->cap = 1;
    }
    buf_reserve(c, b, 0);
    b->p[b->len] = 0;
    s->p = b->p;
    s->len = b->len;
    s->spans = b->spans;
    s->n_spans = b->n_spans;
    return s;
}

jstr *edgellm_jinja_str_taint_all(jctx *c, jstr *s, bool tainted)
{
    if (!tainted || !s->len || (s->n_spans == 1 && s->spans[0].b == 0 && s->spans[0].e == s->len)) return s;
    jstr *t = edgellm_jinja_alloc(c, sizeof *t);
    *t = *s;
    t->spans = edgellm_jinja_alloc(c, sizeof *t->spans);
    t->spans[0].b = 0;
    t->spans[0].e = s->len;
    t->n_spans = 1;
    return t;
}
