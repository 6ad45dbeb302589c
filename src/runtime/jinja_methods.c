/*
 * jinja_methods.c — what templates call: Python's str, dict and list methods
 * (https://docs.python.org/3/library/stdtypes.html), Jinja's globals (range, dict,
 * namespace; jinja2/defaults.py, with the sandbox's 100000-element cap on range) and
 * transformers' (raise_exception, strftime_now), loop.cycle / loop.changed, printf-style
 * `%` formatting and markupsafe's escape.
 *
 * Methods are looked up by name and bound to their object (a JV_FUNC); Python methods
 * edgellm does not implement (str.format, str.encode, ...) still exist, so `is defined`
 * answers as in Python, and calling one is an EDGELLM_ERR_UNSUPPORTED error. Methods that
 * modify a list or dict are refused as ImmutableSandboxedEnvironment refuses them.
 */
#include "jinja_int.h"
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum {
    JF_RANGE = 1, JF_NAMESPACE, JF_DICT, JF_RAISE, JF_STRFTIME, JF_UNSUPPORTED,
    JF_LOOP_CYCLE, JF_LOOP_CHANGED,
    JF_DICT_GET, JF_DICT_ITEMS, JF_DICT_KEYS, JF_DICT_VALUES,
    JF_LIST_COUNT, JF_LIST_INDEX,
    JF_S_STRIP, JF_S_LSTRIP, JF_S_RSTRIP, JF_S_STARTSWITH, JF_S_ENDSWITH, JF_S_SPLIT, JF_S_RSPLIT,
    JF_S_UPPER, JF_S_LOWER, JF_S_TITLE, JF_S_CAPITALIZE, JF_S_REPLACE, JF_S_FIND, JF_S_RFIND, JF_S_INDEX,
    JF_S_RINDEX, JF_S_COUNT, JF_S_JOIN, JF_S_SPLITLINES, JF_S_CENTER, JF_S_LJUST, JF_S_RJUST, JF_S_ZFILL,
    JF_S_ISSPACE, JF_S_ISDIGIT, JF_S_ISALPHA, JF_S_ISALNUM, JF_S_ISLOWER, JF_S_ISUPPER, JF_S_ISASCII,
    JF_S_ISDECIMAL, JF_S_ISNUMERIC, JF_S_ISTITLE,
    JF_S_REMOVEPREFIX, JF_S_REMOVESUFFIX, JF_S_PARTITION, JF_S_RPARTITION
};

/* ------------------------------------------------------------- arguments ---- */
void edgellm_jinja_bind(jctx *c, const char *what, const char *const *names, int np, const jv *args, int n_args,
                        const char *const *kw, const jv *kwv, int n_kw, jv *out, bool *given)
{
    for (int i = 0; i < np; i++) { out[i] = jv_undef(); given[i] = false; }
    if (n_args > np) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s() takes at most %d argument(s) (%d given)", what, np, n_args);
    for (int i = 0; i < n_args; i++) { out[i] = args[i]; given[i] = true; }
    for (int k = 0; k < n_kw; k++) {
        int i = 0;
        while (i < np && strcmp(names[i], kw[k])) i++;
        if (i == np) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s() got an unexpected keyword argument '%s'", what, kw[k]);
        if (given[i]) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s() got multiple values for argument '%s'", what, kw[k]);
        out[i] = kwv[k];
        given[i] = true;
    }
}

int64_t edgellm_jinja_arg_int(jctx *c, const char *what, jv v)
{
    if (v.t == JV_INT) return v.u.i;
    if (v.t == JV_BOOL) return v.u.b;
    if (v.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &v);
    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s: '%s' object cannot be interpreted as an integer", what,
                        edgellm_jinja_type_name(&v));
}

const jstr *edgellm_jinja_arg_str(jctx *c, const char *what, jv v)
{
    if (v.t == JV_STR) return v.u.s;
    if (v.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &v);
    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s: must be str, not %s", what, edgellm_jinja_type_name(&v));
}

static void no_kw(jctx *c, const char *what, int n_kw)
{
    if (n_kw) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s() takes no keyword arguments", what);
}

static void nargs(jctx *c, const char *what, int n, int lo, int hi)
{
    if (n < lo || n > hi)
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s() takes %d to %d arguments (%d given)", what, lo, hi, n);
}

/* ------------------------------------------------------------- string ops ---- */
/* Walks the spans of s alongside byte offsets that only grow. */
typedef struct { const jstr *s; int k; } span_cursor;

static bool tainted_at(span_cursor *sc, size_t i)
{
    while (sc->k < sc->s->n_spans && sc->s->spans[sc->k].e <= i) sc->k++;
    return sc->k < sc->s->n_spans && sc->s->spans[sc->k].b <= i;
}

static void put_cp(jctx *c, jbuf *b, uint32_t cp, bool taint)
{
    char u[4];
    edgellm_jinja_buf_put(c, b, u, edgellm_jinja_u8_put(u, cp), taint);
}

jstr *edgellm_jinja_substr(jctx *c, const jstr *s, size_t from, size_t to)
{
    jbuf b;
    edgellm_jinja_buf_init(&b);
    edgellm_jinja_buf_put_str(c, &b, s, from, to);
    return edgellm_jinja_buf_finish(c, &b);
}

/* Code points of s, decoded once for the context-dependent rules. */
static uint32_t *decode(jctx *c, const jstr *s, size_t **offs, size_t *n)
{
    size_t cnt = edgellm_jinja_u8_count(s->p, s->len);
    uint32_t *cps = edgellm_jinja_alloc(c, (cnt + 1) * sizeof *cps);
    size_t *o = edgellm_jinja_alloc(c, (cnt + 1) * sizeof *o);
    size_t i = 0;
    for (size_t k = 0; k < cnt; k++) {
        o[k] = i;
        i = edgellm_jinja_u8_next(s->p, s->len, i, &cps[k]);
    }
    o[cnt] = s->len;
    *offs = o;
    *n = cnt;
    return cps;
}

/* CPython's handle_capital_sigma: U+03A3 lowers to final U+03C2 after a cased letter
 * (case-ignorables skipped) when no cased letter follows. */
static uint32_t lower_sigma(const uint32_t *cp, size_t n, size_t i)
{
    size_t j = i;
    while (j > 0 && edgellm_jinja_case_ignorable(cp[j - 1])) j--;
    bool final = j > 0 && edgellm_jinja_cased(cp[j - 1]);
    if (final) {
        j = i + 1;
        while (j < n && edgellm_jinja_case_ignorable(cp[j])) j++;
        final = j == n || !edgellm_jinja_cased(cp[j]);
    }
    return final ? 0x3C2 : 0x3C3;
}

jstr *edgellm_jinja_case(jctx *c, const jstr *s, jcase mode)
{
    size_t n, *offs;
    uint32_t *cp = decode(c, s, &offs, &n);
    jbuf b;
    edgellm_jinja_buf_init(&b);
    span_cursor sc = {s, 0};
    bool prev_cased = false;
    for (size_t i = 0; i < n; i++) {
        uint32_t m[3];
        int k;
        bool lower;
        switch (mode) {
        case JCASE_UPPER: lower = false; break;
        case JCASE_LOWER: lower = true; break;
        case JCASE_CAPITALIZE: lower = i > 0; break;
        default: lower = prev_cased; break;   /* str.title */
        }
        if (mode == JCASE_UPPER) k = edgellm_jinja_upper(cp[i], m);
        else if (!lower) k = edgellm_jinja_title(cp[i], m);
        else if (cp[i] == 0x3A3) { m[0] = lower_sigma(cp, n, i); k = 1; }
        else k = edgellm_jinja_lower(cp[i], m);
        bool t = tainted_at(&sc, offs[i]);
        for (int j = 0; j < k; j++) put_cp(c, &b, m[j], t);
        prev_cased = edgellm_jinja_cased(cp[i]);
    }
    return edgellm_jinja_buf_finish(c, &b);
}

static bool in_chars(uint32_t cp, const jstr *chars)
{
    if (!chars) return edgellm_jinja_isspace(cp);
    for (size_t i = 0; i < chars->len;) {
        uint32_t x;
        i = edgellm_jinja_u8_next(chars->p, chars->len, i, &x);
        if (x == cp) return true;
    }
    return false;
}

static size_t prev_cp(const jstr *s, size_t end, uint32_t *cp)
{
    size_t b = end - 1;
    while (b > 0 && ((unsigned char)s->p[b] & 0xC0) == 0x80) b--;
    edgellm_jinja_u8_next(s->p, s->len, b, cp);
    return b;
}

jstr *edgellm_jinja_strip(jctx *c, const jstr *s, int which, const jstr *chars)
{
    size_t from = 0, to = s->len;
    if (which & 1)
        while (from < to) {
            uint32_t cp;
            size_t j = edgellm_jinja_u8_next(s->p, s->len, from, &cp);
            if (!in_chars(cp, chars)) break;
            from = j;
        }
    if (which & 2)
        while (to > from) {
            uint32_t cp;
            size_t b = prev_cp(s, to, &cp);
            if (!in_chars(cp, chars)) break;
            to = b;
        }
    if (from == 0 && to == s->len) return (jstr *)s;
    return edgellm_jinja_substr(c, s, from, to);
}

jstr *edgellm_jinja_replace(jctx *c, const jstr *s, const jstr *old, const jstr *rep, int64_t count)
{
    jbuf b;
    edgellm_jinja_buf_init(&b);
    if (count < 0) count = INT64_MAX;
    size_t i = 0;
    if (!old->len) {   /* "ab".replace("", "-") == "-a-b-" */
        for (; count > 0; count--) {
            edgellm_jinja_buf_put_str(c, &b, rep, 0, rep->len);
            if (i >= s->len) break;
            uint32_t cp;
            size_t j = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
            edgellm_jinja_buf_put_str(c, &b, s, i, j);
            i = j;
        }
        edgellm_jinja_buf_put_str(c, &b, s, i, s->len);
    } else {
        for (; count > 0; count--) {
            const char *hit = memmem(s->p + i, s->len - i, old->p, old->len);
            if (!hit) break;
            size_t h = (size_t)(hit - s->p);
            edgellm_jinja_buf_put_str(c, &b, s, i, h);
            edgellm_jinja_buf_put_str(c, &b, rep, 0, rep->len);
            i = h + old->len;
        }
        edgellm_jinja_buf_put_str(c, &b, s, i, s->len);
    }
    return edgellm_jinja_str_taint_all(c, edgellm_jinja_buf_finish(c, &b), edgellm_jinja_str_tainted(old));
}

static jv split(jctx *c, const jstr *s, const jstr *sep, int64_t maxsplit, bool from_right)
{
    if (sep && !sep->len) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "empty separator");
    if (maxsplit < 0) maxsplit = INT64_MAX;
    jv *parts = edgellm_jinja_alloc(c, (s->len + 2) * sizeof(jv));
    size_t np = 0;
    if (!from_right) {
        size_t i = 0;
        if (!sep) {
            while (maxsplit-- > 0) {
                uint32_t cp;
                while (i < s->len && (edgellm_jinja_u8_next(s->p, s->len, i, &cp), edgellm_jinja_isspace(cp)))
                    i = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
                if (i >= s->len) break;
                size_t j = i;
                while (i < s->len && (edgellm_jinja_u8_next(s->p, s->len, i, &cp), !edgellm_jinja_isspace(cp)))
                    i = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
                parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, j, i));
            }
            uint32_t cp;
            while (i < s->len && (edgellm_jinja_u8_next(s->p, s->len, i, &cp), edgellm_jinja_isspace(cp)))
                i = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
            if (i < s->len) parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, i, s->len));
        } else {
            while (maxsplit-- > 0) {
                const char *hit = memmem(s->p + i, s->len - i, sep->p, sep->len);
                if (!hit) break;
                size_t h = (size_t)(hit - s->p);
                parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, i, h));
                i = h + sep->len;
            }
            parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, i, s->len));
        }
    } else {
        size_t e = s->len;
        if (!sep) {
            while (maxsplit-- > 0) {
                uint32_t cp;
                while (e > 0 && (prev_cp(s, e, &cp), edgellm_jinja_isspace(cp))) e = prev_cp(s, e, &cp);
                if (!e) break;
                size_t j = e;
                while (e > 0 && (prev_cp(s, e, &cp), !edgellm_jinja_isspace(cp))) e = prev_cp(s, e, &cp);
                parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, e, j));
            }
            uint32_t cp;
            while (e > 0 && (prev_cp(s, e, &cp), edgellm_jinja_isspace(cp))) e = prev_cp(s, e, &cp);
            if (e) parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, 0, e));
        } else {
            while (maxsplit-- > 0) {
                size_t h = SIZE_MAX;
                for (size_t k = e; k >= sep->len; k--)
                    if (!memcmp(s->p + k - sep->len, sep->p, sep->len)) { h = k - sep->len; break; }
                if (h == SIZE_MAX) break;
                parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, h + sep->len, e));
                e = h;
            }
            parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, 0, e));
        }
        for (size_t k = 0; k < np / 2; k++) {   /* collected right to left */
            jv t = parts[k];
            parts[k] = parts[np - 1 - k];
            parts[np - 1 - k] = t;
        }
    }
    jlist *l = edgellm_jinja_list_new(c, np, JL_LIST);
    if (np) memcpy(l->items, parts, np * sizeof(jv));
    return edgellm_jinja_listv(l);
}

static bool is_line_break(uint32_t cp)
{
    return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
           cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

static jv splitlines(jctx *c, const jstr *s, bool keepends)
{
    jv *parts = edgellm_jinja_alloc(c, (s->len + 1) * sizeof(jv));
    size_t np = 0, i = 0, start = 0;
    while (i < s->len) {
        uint32_t cp;
        size_t j = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
        if (is_line_break(cp)) {
            size_t eol = j;
            if (cp == '\r' && j < s->len && s->p[j] == '\n') eol = j + 1;
            parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, start, keepends ? eol : i));
            start = i = eol;
        } else i = j;
    }
    if (start < s->len) parts[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, start, s->len));
    jlist *l = edgellm_jinja_list_new(c, np, JL_LIST);
    if (np) memcpy(l->items, parts, np * sizeof(jv));
    return edgellm_jinja_listv(l);
}

/* Python's slice-style start/end arguments of find/startswith/count to byte offsets. */
static void sub_range(jctx *c, const jstr *s, const jv *a, int n, size_t *from, size_t *to)
{
    int64_t len = (int64_t)edgellm_jinja_u8_count(s->p, s->len);
    int64_t b = 0, e = len;
    if (n > 0 && a[0].t != JV_NONE) b = edgellm_jinja_arg_int(c, "slice index", a[0]);
    if (n > 1 && a[1].t != JV_NONE) e = edgellm_jinja_arg_int(c, "slice index", a[1]);
    if (b < 0) b = b + len < 0 ? 0 : b + len;
    if (e < 0) e = e + len < 0 ? 0 : e + len;
    if (b > len) b = len + 1;   /* past the end: nothing matches, not even "" */
    if (e > len) e = len;
    size_t i = 0, k = 0;
    *from = *to = SIZE_MAX;
    for (;; k++) {
        if ((int64_t)k == b) *from = i;
        if ((int64_t)k == e) *to = i;
        if (i >= s->len) break;
        uint32_t cp;
        i = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
    }
    if (*from == SIZE_MAX || *to == SIZE_MAX || *to < *from) { *from = 1; *to = 0; }
}

static jv find(jctx *c, const jstr *s, const jv *args, int n, bool right, bool raise)
{
    const jstr *sub = edgellm_jinja_arg_str(c, "find", args[0]);
    size_t from, to;
    sub_range(c, s, args + 1, n - 1, &from, &to);
    int64_t r = -1;
    if (to >= from && to - from >= sub->len) {
        if (!right) {
            const char *h = sub->len ? memmem(s->p + from, to - from, sub->p, sub->len) : s->p + from;
            if (h) r = (int64_t)edgellm_jinja_u8_count(s->p, (size_t)(h - s->p));
        } else {
            for (size_t k = to - sub->len + 1; k-- > from;)
                if (!memcmp(s->p + k, sub->p, sub->len)) { r = (int64_t)edgellm_jinja_u8_count(s->p, k); break; }
        }
    }
    if (r < 0 && raise) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "substring not found");
    return jv_int(r);
}

static bool affix(jctx *c, const jstr *s, jv what, const jv *args, int n, bool end)
{
    size_t from, to;
    sub_range(c, s, args, n, &from, &to);
    size_t cnt = 1;
    const jv *cands = &what;
    if (what.t == JV_LIST && what.u.l->kind == JL_TUPLE) {
        cands = what.u.l->items;
        cnt = what.u.l->n;
    }
    for (size_t k = 0; k < cnt; k++) {
        const jstr *p = edgellm_jinja_arg_str(c, end ? "endswith" : "startswith", cands[k]);
        if (to < from || to - from < p->len) continue;
        if (!memcmp(s->p + (end ? to - p->len : from), p->p, p->len)) return true;
    }
    return false;
}

static jv pad(jctx *c, const jstr *s, const jv *args, int n, int mode)   /* 0 center, 1 ljust, 2 rjust */
{
    nargs(c, "pad", n, 1, 2);
    int64_t width = edgellm_jinja_arg_int(c, "width", args[0]);
    uint32_t fill = ' ';
    if (n > 1) {
        const jstr *f = edgellm_jinja_arg_str(c, "fillchar", args[1]);
        if (edgellm_jinja_u8_count(f->p, f->len) != 1)
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "the fill character must be exactly one character long");
        edgellm_jinja_u8_next(f->p, f->len, 0, &fill);
    }
    int64_t len = (int64_t)edgellm_jinja_u8_count(s->p, s->len);
    if (width <= len) return edgellm_jinja_strv((jstr *)s);
    if (width - len > (int64_t)c->lim.max_output_bytes) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "padding too wide");
    int64_t total = width - len, left = mode == 1 ? 0 : mode == 2 ? total : total / 2 + (total & width & 1);
    jbuf b;
    edgellm_jinja_buf_init(&b);
    for (int64_t k = 0; k < left; k++) put_cp(c, &b, fill, false);
    edgellm_jinja_buf_put_str(c, &b, s, 0, s->len);
    for (int64_t k = left; k < total; k++) put_cp(c, &b, fill, false);
    return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
}

/* str.isspace/isalpha/isdigit/isdecimal/isnumeric/isalnum/isascii/islower/isupper/istitle,
 * as CPython's unicodeobject.c computes them. */
static jv classify(jctx *c, const jstr *s, int id)
{
    size_t n = 0;
    bool all = true, cased = false, prev_cased = false;
    for (size_t i = 0; i < s->len && all; n++) {
        uint32_t cp;
        i = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
        unsigned p = edgellm_jinja_props(cp);
        switch (id) {
        case JF_S_ISSPACE: all = edgellm_jinja_isspace(cp); break;
        case JF_S_ISALPHA: all = p & JP_ALPHA; break;
        case JF_S_ISDIGIT: all = p & JP_DIGIT; break;
        case JF_S_ISDECIMAL: all = p & JP_DECIMAL; break;
        case JF_S_ISNUMERIC: all = p & JP_NUMERIC; break;
        case JF_S_ISALNUM: all = p & (JP_ALPHA | JP_DECIMAL | JP_DIGIT | JP_NUMERIC); break;
        case JF_S_ISASCII: all = cp < 0x80; break;
        case JF_S_ISLOWER:
            if (p & (JP_UPPER | JP_TITLE)) all = false;
            else cased |= (p & JP_LOWER) != 0;
            break;
        case JF_S_ISUPPER:
            if (p & (JP_LOWER | JP_TITLE)) all = false;
            else cased |= (p & JP_UPPER) != 0;
            break;
        case JF_S_ISTITLE:
            if (p & (JP_UPPER | JP_TITLE)) {
                if (prev_cased) all = false;
                prev_cased = cased = true;
            } else if (p & JP_LOWER) {
                if (!prev_cased) all = false;
                prev_cased = cased = true;
            } else prev_cased = false;
            break;
        }
    }
    if (id == JF_S_ISASCII) return jv_bool(all);
    if (id == JF_S_ISLOWER || id == JF_S_ISUPPER || id == JF_S_ISTITLE) return jv_bool(all && cased);
    return jv_bool(all && n > 0);
}

static jv partition(jctx *c, const jstr *s, const jstr *sep, bool right)
{
    if (!sep->len) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "empty separator");
    size_t h = SIZE_MAX;
    if (!right) {
        const char *p = memmem(s->p, s->len, sep->p, sep->len);
        if (p) h = (size_t)(p - s->p);
    } else
        for (size_t k = s->len; k >= sep->len; k--)
            if (!memcmp(s->p + k - sep->len, sep->p, sep->len)) { h = k - sep->len; break; }
    jlist *l = edgellm_jinja_list_new(c, 3, JL_TUPLE);
    jstr *empty = edgellm_jinja_str_new(c, "", 0, false);
    if (h == SIZE_MAX) {
        l->items[0] = edgellm_jinja_strv(right ? empty : (jstr *)s);
        l->items[1] = edgellm_jinja_strv(empty);
        l->items[2] = edgellm_jinja_strv(right ? (jstr *)s : empty);
    } else {
        l->items[0] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, 0, h));
        l->items[1] = edgellm_jinja_strv((jstr *)sep);
        l->items[2] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, h + sep->len, s->len));
    }
    return edgellm_jinja_listv(l);
}

static jv str_method(jctx *c, int id, const jstr *s, const jv *a, int n, const char *const *kw, const jv *kwv, int nkw)
{
    switch (id) {
    case JF_S_STRIP: case JF_S_LSTRIP: case JF_S_RSTRIP: {
        no_kw(c, "strip", nkw);
        nargs(c, "strip", n, 0, 1);
        const jstr *chars = n && a[0].t != JV_NONE ? edgellm_jinja_arg_str(c, "strip arg", a[0]) : NULL;
        return edgellm_jinja_strv(edgellm_jinja_strip(c, s, id == JF_S_STRIP ? 3 : id == JF_S_LSTRIP ? 1 : 2, chars));
    }
    case JF_S_STARTSWITH: case JF_S_ENDSWITH:
        no_kw(c, "startswith", nkw);
        nargs(c, id == JF_S_STARTSWITH ? "startswith" : "endswith", n, 1, 3);
        return jv_bool(affix(c, s, a[0], a + 1, n - 1, id == JF_S_ENDSWITH));
    case JF_S_SPLIT: case JF_S_RSPLIT: {
        static const char *const names[] = {"sep", "maxsplit"};
        jv p[2];
        bool g[2];
        edgellm_jinja_bind(c, "split", names, 2, a, n, kw, kwv, nkw, p, g);
        const jstr *sep = g[0] && p[0].t != JV_NONE ? edgellm_jinja_arg_str(c, "split", p[0]) : NULL;
        int64_t maxsplit = g[1] ? edgellm_jinja_arg_int(c, "maxsplit", p[1]) : -1;
        return split(c, s, sep, maxsplit, id == JF_S_RSPLIT);
    }
    case JF_S_UPPER: case JF_S_LOWER: case JF_S_TITLE: case JF_S_CAPITALIZE:
        no_kw(c, "upper", nkw);
        nargs(c, "upper", n, 0, 0);
        return edgellm_jinja_strv(edgellm_jinja_case(c, s, id == JF_S_UPPER ? JCASE_UPPER : id == JF_S_LOWER ? JCASE_LOWER
                                                          : id == JF_S_TITLE ? JCASE_TITLE_WORDS : JCASE_CAPITALIZE));
    case JF_S_REPLACE: {
        no_kw(c, "replace", nkw);
        nargs(c, "replace", n, 2, 3);
        int64_t count = n > 2 ? edgellm_jinja_arg_int(c, "replace count", a[2]) : -1;
        return edgellm_jinja_strv(edgellm_jinja_replace(c, s, edgellm_jinja_arg_str(c, "replace arg 1", a[0]),
                                                        edgellm_jinja_arg_str(c, "replace arg 2", a[1]), count));
    }
    case JF_S_FIND: case JF_S_RFIND: case JF_S_INDEX: case JF_S_RINDEX:
        no_kw(c, "find", nkw);
        nargs(c, "find", n, 1, 3);
        return find(c, s, a, n, id == JF_S_RFIND || id == JF_S_RINDEX, id == JF_S_INDEX || id == JF_S_RINDEX);
    case JF_S_COUNT: {
        no_kw(c, "count", nkw);
        nargs(c, "count", n, 1, 3);
        const jstr *sub = edgellm_jinja_arg_str(c, "count", a[0]);
        size_t from, to;
        sub_range(c, s, a + 1, n - 1, &from, &to);
        if (to < from) return jv_int(0);
        if (!sub->len) return jv_int((int64_t)edgellm_jinja_u8_count(s->p + from, to - from) + 1);
        int64_t cnt = 0;
        for (size_t i = from; i + sub->len <= to;) {
            const char *h = memmem(s->p + i, to - i, sub->p, sub->len);
            if (!h) break;
            cnt++;
            i = (size_t)(h - s->p) + sub->len;
        }
        return jv_int(cnt);
    }
    case JF_S_JOIN: {
        no_kw(c, "join", nkw);
        nargs(c, "join", n, 1, 1);
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, a[0], &cnt);
        jbuf b;
        edgellm_jinja_buf_init(&b);
        for (size_t i = 0; i < cnt; i++) {
            if (items[i].t != JV_STR)
                edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "sequence item %zu: expected str instance, %s found", i,
                                    edgellm_jinja_type_name(&items[i]));
            if (i) edgellm_jinja_buf_put_str(c, &b, s, 0, s->len);
            edgellm_jinja_buf_put_str(c, &b, items[i].u.s, 0, items[i].u.s->len);
        }
        return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
    }
    case JF_S_SPLITLINES: {
        static const char *const names[] = {"keepends"};
        jv p[1];
        bool g[1];
        edgellm_jinja_bind(c, "splitlines", names, 1, a, n, kw, kwv, nkw, p, g);
        return splitlines(c, s, g[0] && edgellm_jinja_truthy(c, p[0]));
    }
    case JF_S_CENTER: case JF_S_LJUST: case JF_S_RJUST:
        no_kw(c, "center", nkw);
        return pad(c, s, a, n, id == JF_S_CENTER ? 0 : id == JF_S_LJUST ? 1 : 2);
    case JF_S_ZFILL: {
        no_kw(c, "zfill", nkw);
        nargs(c, "zfill", n, 1, 1);
        int64_t width = edgellm_jinja_arg_int(c, "zfill", a[0]), len = (int64_t)edgellm_jinja_u8_count(s->p, s->len);
        if (width <= len) return edgellm_jinja_strv((jstr *)s);
        if (width - len > (int64_t)c->lim.max_output_bytes) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "padding too wide");
        jbuf b;
        edgellm_jinja_buf_init(&b);
        size_t at = s->len && (s->p[0] == '+' || s->p[0] == '-') ? 1 : 0;
        edgellm_jinja_buf_put_str(c, &b, s, 0, at);
        for (int64_t k = len; k < width; k++) edgellm_jinja_buf_putc(c, &b, '0');
        edgellm_jinja_buf_put_str(c, &b, s, at, s->len);
        return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
    }
    case JF_S_ISSPACE: case JF_S_ISDIGIT: case JF_S_ISALPHA: case JF_S_ISALNUM: case JF_S_ISLOWER: case JF_S_ISUPPER:
    case JF_S_ISASCII: case JF_S_ISDECIMAL: case JF_S_ISNUMERIC: case JF_S_ISTITLE:
        no_kw(c, "is", nkw);
        nargs(c, "is", n, 0, 0);
        return classify(c, s, id);
    case JF_S_REMOVEPREFIX: case JF_S_REMOVESUFFIX: {
        no_kw(c, "removeprefix", nkw);
        nargs(c, "removeprefix", n, 1, 1);
        const jstr *p = edgellm_jinja_arg_str(c, "removeprefix", a[0]);
        if (p->len > s->len) return edgellm_jinja_strv((jstr *)s);
        if (id == JF_S_REMOVEPREFIX && !memcmp(s->p, p->p, p->len))
            return edgellm_jinja_strv(edgellm_jinja_substr(c, s, p->len, s->len));
        if (id == JF_S_REMOVESUFFIX && p->len && !memcmp(s->p + s->len - p->len, p->p, p->len))
            return edgellm_jinja_strv(edgellm_jinja_substr(c, s, 0, s->len - p->len));
        return edgellm_jinja_strv((jstr *)s);
    }
    case JF_S_PARTITION: case JF_S_RPARTITION:
        no_kw(c, "partition", nkw);
        nargs(c, "partition", n, 1, 1);
        return partition(c, s, edgellm_jinja_arg_str(c, "partition", a[0]), id == JF_S_RPARTITION);
    }
    edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "unsupported str method");
}

/* ---------------------------------------------------------------- methods ---- */
static const struct { const char *name; int id; } STR_METHODS[] = {
    {"strip", JF_S_STRIP}, {"lstrip", JF_S_LSTRIP}, {"rstrip", JF_S_RSTRIP}, {"startswith", JF_S_STARTSWITH},
    {"endswith", JF_S_ENDSWITH}, {"split", JF_S_SPLIT}, {"rsplit", JF_S_RSPLIT}, {"upper", JF_S_UPPER},
    {"lower", JF_S_LOWER}, {"title", JF_S_TITLE}, {"capitalize", JF_S_CAPITALIZE}, {"replace", JF_S_REPLACE},
    {"find", JF_S_FIND}, {"rfind", JF_S_RFIND}, {"index", JF_S_INDEX}, {"rindex", JF_S_RINDEX},
    {"count", JF_S_COUNT}, {"join", JF_S_JOIN}, {"splitlines", JF_S_SPLITLINES}, {"center", JF_S_CENTER},
    {"ljust", JF_S_LJUST}, {"rjust", JF_S_RJUST}, {"zfill", JF_S_ZFILL}, {"isspace", JF_S_ISSPACE},
    {"isdigit", JF_S_ISDIGIT}, {"isalpha", JF_S_ISALPHA}, {"isalnum", JF_S_ISALNUM}, {"islower", JF_S_ISLOWER},
    {"isupper", JF_S_ISUPPER}, {"isascii", JF_S_ISASCII}, {"removeprefix", JF_S_REMOVEPREFIX},
    {"removesuffix", JF_S_REMOVESUFFIX}, {"partition", JF_S_PARTITION}, {"rpartition", JF_S_RPARTITION},
    /* Python str methods edgellm does not implement: defined, but refused when called */
    {"casefold", JF_UNSUPPORTED}, {"encode", JF_UNSUPPORTED}, {"expandtabs", JF_UNSUPPORTED},
    {"format", JF_UNSUPPORTED}, {"format_map", JF_UNSUPPORTED}, {"isdecimal", JF_S_ISDECIMAL},
    {"isidentifier", JF_UNSUPPORTED}, {"isnumeric", JF_S_ISNUMERIC}, {"isprintable", JF_UNSUPPORTED},
    {"istitle", JF_S_ISTITLE}, {"maketrans", JF_UNSUPPORTED}, {"swapcase", JF_UNSUPPORTED},
    {"translate", JF_UNSUPPORTED},
};

static jv bound(jctx *c, int id, jv self)
{
    jfunc *f = edgellm_jinja_alloc(c, sizeof *f);
    f->id = id;
    f->self = self;
    jv v = {.t = JV_FUNC};
    v.u.fn = f;
    return v;
}

static jv unsupported_fn(jctx *c, const char *qualname)
{
    return bound(c, JF_UNSUPPORTED, edgellm_jinja_cstr(c, qualname));
}

bool edgellm_jinja_method(jctx *c, jv self, const char *name, jv *out)
{
    if (self.t == JV_STR) {
        for (size_t i = 0; i < sizeof STR_METHODS / sizeof STR_METHODS[0]; i++)
            if (!strcmp(STR_METHODS[i].name, name)) {
                if (STR_METHODS[i].id == JF_UNSUPPORTED) {
                    char q[40];
                    snprintf(q, sizeof q, "str.%s", name);
                    *out = unsupported_fn(c, q);
                } else *out = bound(c, STR_METHODS[i].id, self);
                return true;
            }
        return false;
    }
    if (self.t == JV_DICT) {
        int id = !strcmp(name, "get") ? JF_DICT_GET : !strcmp(name, "items") ? JF_DICT_ITEMS
               : !strcmp(name, "keys") ? JF_DICT_KEYS : !strcmp(name, "values") ? JF_DICT_VALUES : 0;
        if (id) *out = bound(c, id, self);
        return id != 0;
    }
    if (self.t == JV_LIST && (self.u.l->kind == JL_LIST || self.u.l->kind == JL_TUPLE)) {
        int id = !strcmp(name, "count") ? JF_LIST_COUNT : !strcmp(name, "index") ? JF_LIST_INDEX : 0;
        if (id) *out = bound(c, id, self);
        return id != 0;
    }
    if (self.t == JV_LOOP) {
        int id = !strcmp(name, "cycle") ? JF_LOOP_CYCLE : !strcmp(name, "changed") ? JF_LOOP_CHANGED : 0;
        if (id) *out = bound(c, id, self);
        return id != 0;
    }
    return false;
}

bool edgellm_jinja_global(jctx *c, const char *name, jv *out)
{
    static const struct { const char *name; int id; } G[] = {
        {"range", JF_RANGE}, {"namespace", JF_NAMESPACE}, {"dict", JF_DICT}, {"raise_exception", JF_RAISE},
        {"strftime_now", JF_STRFTIME}, {"lipsum", JF_UNSUPPORTED}, {"cycler", JF_UNSUPPORTED},
        {"joiner", JF_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof G / sizeof G[0]; i++)
        if (!strcmp(G[i].name, name)) {
            *out = G[i].id == JF_UNSUPPORTED ? unsupported_fn(c, name) : bound(c, G[i].id, jv_undef());
            return true;
        }
    return false;
}

/* ------------------------------------------------------------------ globals ---- */
static jv make_range(jctx *c, const jv *a, int n, int nkw)
{
    no_kw(c, "range", nkw);
    nargs(c, "range", n, 1, 3);
    int64_t start = 0, stop, step = 1;
    if (n == 1) stop = edgellm_jinja_arg_int(c, "range", a[0]);
    else {
        start = edgellm_jinja_arg_int(c, "range", a[0]);
        stop = edgellm_jinja_arg_int(c, "range", a[1]);
        if (n == 3) step = edgellm_jinja_arg_int(c, "range", a[2]);
    }
    if (step == 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "range() arg 3 must not be zero");
    double cnt_d = step > 0 ? ((double)stop - (double)start) / (double)step : ((double)start - (double)stop) / (double)-step;
    int64_t cnt = cnt_d <= 0 ? 0 : (int64_t)ceil(cnt_d);
    if (cnt > 100000)   /* jinja2/sandbox.py MAX_RANGE */
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    jlist *l = edgellm_jinja_list_new(c, (size_t)cnt, JL_RANGE);
    for (int64_t k = 0; k < cnt; k++) l->items[k] = jv_int(start + k * step);
    l->r_start = start;
    l->r_stop = stop;
    l->r_step = step;
    return edgellm_jinja_listv(l);
}

/* dict(mapping or pairs, **kw): Python's dict() constructor. */
static jdict *make_dict(jctx *c, const char *what, const jv *a, int n, const char *const *kw, const jv *kwv, int nkw)
{
    if (n > 1) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s expected at most 1 argument, got %d", what, n);
    jdict *d = edgellm_jinja_dict_new(c, 4);
    if (n == 1) {
        if (a[0].t == JV_DICT || a[0].t == JV_NS) {
            for (size_t i = 0; i < a[0].u.d->n; i++) edgellm_jinja_dict_set(c, d, a[0].u.d->keys[i], a[0].u.d->vals[i]);
        } else {
            size_t cnt;
            const jv *items = edgellm_jinja_iter(c, a[0], &cnt);
            for (size_t i = 0; i < cnt; i++) {
                size_t m;
                const jv *kv = edgellm_jinja_iter(c, items[i], &m);
                if (m != 2)
                    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "dictionary update sequence element #%zu has length %zu; 2 is required", i, m);
                edgellm_jinja_dict_set(c, d, kv[0], kv[1]);
            }
        }
    }
    for (int k = 0; k < nkw; k++) edgellm_jinja_dict_set(c, d, edgellm_jinja_cstr(c, kw[k]), kwv[k]);
    return d;
}

/* --------------------------------------------------------------- strftime ---- */
static const char *const WDAY[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
static const char *const MONTH[] = {"January", "February", "March", "April", "May", "June", "July",
                                    "August", "September", "October", "November", "December"};

static int days_before_year(int y) { y--; return y * 365 + y / 4 - y / 100 + y / 400; }
static bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

edgellm_status edgellm_jinja_date_init(jctx *c)
{
    const char *d = c->vars->date;
    if (!d) {
        time_t now = time(NULL);
        struct tm tm;
        if (!localtime_r(&now, &tm)) return EDGELLM_ERR_MISUSE;
        c->year = tm.tm_year + 1900;
        c->mon = tm.tm_mon + 1;
        c->mday = tm.tm_mday;
        c->hour = tm.tm_hour;
        c->min = tm.tm_min;
        c->sec = tm.tm_sec;
    } else {
        int y, mo, dd, h = 0, mi = 0, s = 0, n = 0;
        char sep;
        if (sscanf(d, "%4d-%2d-%2d%n", &y, &mo, &dd, &n) != 3 || n != 10)
            edgellm_jinja_fail(&c->f, EDGELLM_ERR_MISUSE, 0, 0, "date '%s': expected YYYY-MM-DD[ HH:MM[:SS]]", d);
        if (d[n]) {
            int m = 0;
            if (sscanf(d + n, "%c%2d:%2d%n", &sep, &h, &mi, &m) != 3 || (sep != ' ' && sep != 'T'))
                edgellm_jinja_fail(&c->f, EDGELLM_ERR_MISUSE, 0, 0, "date '%s': expected YYYY-MM-DD[ HH:MM[:SS]]", d);
            n += m;
            if (d[n] == ':') {
                m = 0;
                if (sscanf(d + n, ":%2d%n", &s, &m) != 1)
                    edgellm_jinja_fail(&c->f, EDGELLM_ERR_MISUSE, 0, 0, "date '%s': expected YYYY-MM-DD[ HH:MM[:SS]]", d);
                n += m;
            }
            if (d[n]) edgellm_jinja_fail(&c->f, EDGELLM_ERR_MISUSE, 0, 0, "date '%s': expected YYYY-MM-DD[ HH:MM[:SS]]", d);
        }
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        if (y < 1 || mo < 1 || mo > 12 || dd < 1 || dd > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || s > 59)
            edgellm_jinja_fail(&c->f, EDGELLM_ERR_MISUSE, 0, 0, "date '%s' is not a valid date and time", d);
        c->year = y;
        c->mon = mo;
        c->mday = dd;
        c->hour = h;
        c->min = mi;
        c->sec = s;
    }
    static const int cum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    c->yday = cum[c->mon - 1] + c->mday - 1 + (c->mon > 2 && leap(c->year));
    c->wday = (days_before_year(c->year) + c->yday + 1) % 7;   /* 0001-01-01 was a Monday */
    return EDGELLM_OK;
}

/* C-locale strftime for the directives chat templates use (Python passes them to libc). */
static jv strftime_now(jctx *c, const jv *a, int n, int nkw)
{
    no_kw(c, "strftime_now", nkw);
    nargs(c, "strftime_now", n, 1, 1);
    const jstr *f = edgellm_jinja_arg_str(c, "strftime_now", a[0]);
    jbuf b;
    edgellm_jinja_buf_init(&b);
    for (size_t i = 0; i < f->len; i++) {
        if (f->p[i] != '%' || i + 1 >= f->len) {
            edgellm_jinja_buf_putc(c, &b, f->p[i]);
            continue;
        }
        char k = f->p[++i];
        bool nopad = false;
        if (k == '-' && i + 1 < f->len) { nopad = true; k = f->p[++i]; }
        char tmp[32];
        const char *out = tmp;
        int v = -1, width = 2;
        switch (k) {
        case 'a': snprintf(tmp, sizeof tmp, "%.3s", WDAY[c->wday]); break;
        case 'A': out = WDAY[c->wday]; break;
        case 'b': case 'h': snprintf(tmp, sizeof tmp, "%.3s", MONTH[c->mon - 1]); break;
        case 'B': out = MONTH[c->mon - 1]; break;
        case 'd': v = c->mday; break;
        case 'e': snprintf(tmp, sizeof tmp, nopad ? "%d" : "%2d", c->mday); break;
        case 'm': v = c->mon; break;
        case 'y': v = c->year % 100; break;
        case 'Y': snprintf(tmp, sizeof tmp, "%d", c->year); break;
        case 'H': v = c->hour; break;
        case 'I': v = c->hour % 12 ? c->hour % 12 : 12; break;
        case 'M': v = c->min; break;
        case 'S': v = c->sec; break;
        case 'p': out = c->hour < 12 ? "AM" : "PM"; break;
        case 'j': v = c->yday + 1; width = 3; break;
        case 'w': snprintf(tmp, sizeof tmp, "%d", c->wday); break;
        case 'u': snprintf(tmp, sizeof tmp, "%d", c->wday ? c->wday : 7); break;
        case 'F': snprintf(tmp, sizeof tmp, "%d-%02d-%02d", c->year, c->mon, c->mday); break;
        case 'D': snprintf(tmp, sizeof tmp, "%02d/%02d/%02d", c->mon, c->mday, c->year % 100); break;
        case 'T': snprintf(tmp, sizeof tmp, "%02d:%02d:%02d", c->hour, c->min, c->sec); break;
        case 'R': snprintf(tmp, sizeof tmp, "%02d:%02d", c->hour, c->min); break;
        case '%': out = "%"; break;
        default:
            edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "strftime_now: the directive %%%s%c is not supported",
                                nopad ? "-" : "", k);
        }
        if (v >= 0 && nopad) snprintf(tmp, sizeof tmp, "%d", v);
        else if (v >= 0) snprintf(tmp, sizeof tmp, "%0*d", width, v);
        edgellm_jinja_buf_put(c, &b, out, strlen(out), false);
    }
    return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
}

/* --------------------------------------------------------- %-formatting ---- */
jstr *edgellm_jinja_escape(jctx *c, const jstr *s)
{
    jbuf b;
    edgellm_jinja_buf_init(&b);
    span_cursor sc = {s, 0};
    for (size_t i = 0; i < s->len; i++) {
        const char *e = NULL;
        switch (s->p[i]) {
        case '&': e = "&amp;"; break;
        case '<': e = "&lt;"; break;
        case '>': e = "&gt;"; break;
        case '"': e = "&#34;"; break;
        case '\'': e = "&#39;"; break;
        default: break;
        }
        bool t = tainted_at(&sc, i);
        if (e) edgellm_jinja_buf_put(c, &b, e, strlen(e), t);
        else edgellm_jinja_buf_put(c, &b, s->p + i, 1, t);
    }
    return edgellm_jinja_buf_finish(c, &b);
}

/* snprintf of a double with '.' whatever LC_NUMERIC says. */
static void fmt_double(char *buf, size_t size, const char *spec, double v)
{
    snprintf(buf, size, spec, v);
    const char *dp = localeconv()->decimal_point;
    if (!dp || (dp[0] == '.' && !dp[1])) return;
    char *p = strstr(buf, dp);
    if (p) {
        size_t dl = strlen(dp);
        *p = '.';
        memmove(p + 1, p + dl, strlen(p + dl) + 1);
    }
}

jv edgellm_jinja_str_format(jctx *c, jv fmtv, jv args)
{
    const jstr *fmt = fmtv.u.s;
    const jv *items = &args;
    size_t n_items = 1, next = 0;
    bool mapping = args.t == JV_DICT;
    /* CPython: a non-tuple argument with __getitem__ (dict, list) is not "all converted"-checked */
    bool subscriptable = mapping || (args.t == JV_LIST && args.u.l->kind != JL_TUPLE && args.u.l->kind != JL_GEN &&
                                     args.u.l->kind != JL_ITEMS && args.u.l->kind != JL_KEYS && args.u.l->kind != JL_VALUES);
    if (args.t == JV_LIST && args.u.l->kind == JL_TUPLE) {
        items = args.u.l->items;
        n_items = args.u.l->n;
    }
    jbuf b;
    edgellm_jinja_buf_init(&b);
    size_t lit = 0;
    for (size_t i = 0; i < fmt->len; i++) {
        if (fmt->p[i] != '%') continue;
        edgellm_jinja_buf_put_str(c, &b, fmt, lit, i);
        size_t j = i + 1;
        if (j >= fmt->len) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "incomplete format");
        jv arg = jv_undef();
        bool have = false;
        if (fmt->p[j] == '(') {
            size_t k = j + 1;
            while (k < fmt->len && fmt->p[k] != ')') k++;
            if (k >= fmt->len) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "incomplete format key");
            if (!mapping) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "format requires a mapping");
            jv *v = edgellm_jinja_dict_get(c, args.u.d, edgellm_jinja_str(c, fmt->p + j + 1, k - j - 1));
            if (!v) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "KeyError: '%.*s'", (int)(k - j - 1), fmt->p + j + 1);
            arg = *v;
            have = true;
            j = k + 1;
        }
        char flags[8];
        int nf = 0;
        while (j < fmt->len && strchr("-+ #0", fmt->p[j]) && nf < 7) flags[nf++] = fmt->p[j++];
        flags[nf] = 0;
        int width = -1, prec = -1;
        if (j < fmt->len && fmt->p[j] == '*') edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "'*' widths in %% formats are not supported");
        while (j < fmt->len && fmt->p[j] >= '0' && fmt->p[j] <= '9') width = (width < 0 ? 0 : width) * 10 + (fmt->p[j++] - '0');
        if (j < fmt->len && fmt->p[j] == '.') {
            prec = 0;
            j++;
            while (j < fmt->len && fmt->p[j] >= '0' && fmt->p[j] <= '9') prec = prec * 10 + (fmt->p[j++] - '0');
        }
        if (width > 100000 || prec > 1000) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "format width too large");
        while (j < fmt->len && strchr("hlL", fmt->p[j])) j++;
        if (j >= fmt->len) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "incomplete format");
        char type = fmt->p[j];
        lit = j + 1;
        i = j;
        if (type == '%') {
            edgellm_jinja_buf_putc(c, &b, '%');
            continue;
        }
        if (!have) {
            if (mapping) arg = args;
            else {
                if (next >= n_items) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "not enough arguments for format string");
                arg = items[next++];
            }
        }
        jbuf piece;
        edgellm_jinja_buf_init(&piece);
        char num[1200], spec[32];
        switch (type) {
        case 's': case 'r': case 'a': {
            const jstr *s;
            if (type == 's') s = edgellm_jinja_to_str(c, arg);
            else {
                jbuf r;
                edgellm_jinja_buf_init(&r);
                edgellm_jinja_repr(c, &r, arg);
                s = edgellm_jinja_buf_finish(c, &r);
            }
            if (prec >= 0) {
                size_t cut = 0, k = 0;
                while (cut < s->len && (int)k < prec) { uint32_t cp; cut = edgellm_jinja_u8_next(s->p, s->len, cut, &cp); k++; }
                s = edgellm_jinja_substr(c, s, 0, cut);
            }
            edgellm_jinja_buf_put_str(c, &piece, s, 0, s->len);
            break;
        }
        case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': {
            /* Python's integer formatting: sign, "0x"/"0o" prefix for '#', at least `prec`
             * digits, then width (zeros after the prefix with '0', spaces otherwise) */
            char digits[400];
            bool neg = false;
            if (type == 'c') {
                int64_t v;
                if (arg.t == JV_STR && edgellm_jinja_u8_count(arg.u.s->p, arg.u.s->len) == 1) {
                    edgellm_jinja_buf_put_str(c, &piece, arg.u.s, 0, arg.u.s->len);
                    break;
                }
                if (arg.t != JV_INT && arg.t != JV_BOOL)
                    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%%c requires int or char");
                v = arg.t == JV_INT ? arg.u.i : arg.u.b;
                if (v < 0 || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
                    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%%c arg not in range(0x110000)");
                put_cp(c, &piece, (uint32_t)v, false);
                break;
            }
            if (arg.t == JV_FLOAT && (type == 'd' || type == 'i' || type == 'u')) {
                if (!isfinite(arg.u.f)) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "cannot convert float %s to integer", isnan(arg.u.f) ? "NaN" : "infinity");
                double tr = trunc(arg.u.f);
                neg = tr < 0;
                fmt_double(digits, sizeof digits, "%.0f", fabs(tr));   /* the double's exact integer */
            } else if (arg.t == JV_INT || arg.t == JV_BOOL) {
                int64_t v = arg.t == JV_INT ? arg.u.i : arg.u.b;
                neg = v < 0;
                uint64_t m = neg ? 0 - (uint64_t)v : (uint64_t)v;
                snprintf(digits, sizeof digits, type == 'x' ? "%llx" : type == 'X' ? "%llX" : type == 'o' ? "%llo" : "%llu",
                         (unsigned long long)m);
            } else
                edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%%%c format: %s is required, not %s", type,
                                    type == 'x' || type == 'X' || type == 'o' ? "an integer" : "a real number",
                                    edgellm_jinja_type_name(&arg));
            const char *sign = neg ? "-" : strchr(flags, '+') ? "+" : strchr(flags, ' ') ? " " : "";
            const char *prefix = !strchr(flags, '#') ? "" : type == 'x' ? "0x" : type == 'X' ? "0X" : type == 'o' ? "0o" : "";
            int nd = (int)strlen(digits), zeros = prec > nd ? prec - nd : 0;
            int len = (int)strlen(sign) + (int)strlen(prefix) + zeros + nd;
            bool left = strchr(flags, '-') != NULL, zero_pad = !left && strchr(flags, '0');
            if (width > len && zero_pad) zeros += width - len;
            else if (width > len && !left) for (int k = len; k < width; k++) edgellm_jinja_buf_putc(c, &piece, ' ');
            edgellm_jinja_buf_put(c, &piece, sign, strlen(sign), false);
            edgellm_jinja_buf_put(c, &piece, prefix, strlen(prefix), false);
            for (int k = 0; k < zeros; k++) edgellm_jinja_buf_putc(c, &piece, '0');
            edgellm_jinja_buf_put(c, &piece, digits, (size_t)nd, false);
            if (width > len && left) for (int k = len; k < width; k++) edgellm_jinja_buf_putc(c, &piece, ' ');
            width = -1;   /* applied */
            break;
        }
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
            if (!(arg.t == JV_FLOAT || arg.t == JV_INT || arg.t == JV_BOOL))
                edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "must be real number, not %s", edgellm_jinja_type_name(&arg));
            double v = arg.t == JV_FLOAT ? arg.u.f : arg.t == JV_INT ? (double)arg.u.i : arg.u.b;
            if (!isfinite(v)) {   /* Python: inf, nan (sign and case per type), space-padded */
                const char *w = isnan(v) ? "nan" : v < 0 ? "-inf" : strchr(flags, '+') ? "+inf" : strchr(flags, ' ') ? " inf" : "inf";
                snprintf(num, sizeof num, "%s", w);
                if (type >= 'A' && type <= 'Z')
                    for (char *q = num; *q; q++) *q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
                edgellm_jinja_buf_put(c, &piece, num, strlen(num), false);
                break;
            }
            snprintf(spec, sizeof spec, "%%%s%d.%d%c", flags, width < 0 ? 0 : width, prec >= 0 ? prec : 6, type);
            fmt_double(num, sizeof num, spec, v);
            edgellm_jinja_buf_put(c, &piece, num, strlen(num), false);
            width = -1;   /* applied */
            break;
        }
        default: edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "unsupported format character '%c'", type);
        }
        jstr *p = edgellm_jinja_buf_finish(c, &piece);
        int64_t len = (int64_t)edgellm_jinja_u8_count(p->p, p->len);
        bool left = strchr(flags, '-') != NULL;
        if (!left) for (int64_t k = len; k < width; k++) edgellm_jinja_buf_putc(c, &b, ' ');
        edgellm_jinja_buf_put_str(c, &b, p, 0, p->len);
        if (left) for (int64_t k = len; k < width; k++) edgellm_jinja_buf_putc(c, &b, ' ');
    }
    edgellm_jinja_buf_put_str(c, &b, fmt, lit, fmt->len);
    if (!subscriptable && next < n_items) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "not all arguments converted during string formatting");
    return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
}

/* ---------------------------------------------------------------- calling ---- */
jv edgellm_jinja_call(jctx *c, jv fn, const jv *a, int n, const char *const *kw, const jv *kwv, int nkw)
{
    if (fn.t == JV_MACRO) return edgellm_jinja_call_macro(c, fn.u.m, a, n, kw, kwv, nkw);
    if (fn.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &fn);
    if (fn.t != JV_FUNC) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' object is not callable", edgellm_jinja_type_name(&fn));
    int id = fn.u.fn->id;
    jv self = fn.u.fn->self;
    switch (id) {
    case JF_UNSUPPORTED:
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "%s() is not supported", self.u.s->p);
    case JF_RANGE: return make_range(c, a, n, nkw);
    case JF_NAMESPACE: case JF_DICT: {
        jv v = {.t = id == JF_DICT ? JV_DICT : JV_NS};
        v.u.d = make_dict(c, id == JF_DICT ? "dict" : "namespace", a, n, kw, kwv, nkw);
        return v;
    }
    case JF_RAISE: {
        no_kw(c, "raise_exception", nkw);
        nargs(c, "raise_exception", n, 1, 1);
        const jstr *m = edgellm_jinja_to_str(c, a[0]);
        edgellm_jinja_rfail(c, EDGELLM_ERR_MISUSE, "%s", m->p);
    }
    case JF_STRFTIME: return strftime_now(c, a, n, nkw);
    case JF_LOOP_CYCLE:
        no_kw(c, "cycle", nkw);
        if (!n) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "no items for cycling given");
        return a[self.u.loop->index0 % n];
    case JF_LOOP_CHANGED: {
        no_kw(c, "changed", nkw);
        jloop *l = self.u.loop;
        jlist *t = edgellm_jinja_list_new(c, (size_t)n, JL_TUPLE);
        if (n) memcpy(t->items, a, (size_t)n * sizeof(jv));
        jv now = edgellm_jinja_listv(t);
        bool changed = !l->changed_set || !edgellm_jinja_eq(c, l->changed_last, now);
        l->changed_last = now;
        l->changed_set = true;
        return jv_bool(changed);
    }
    case JF_DICT_GET: {
        no_kw(c, "get", nkw);
        nargs(c, "get", n, 1, 2);
        jv *v = edgellm_jinja_dict_get(c, self.u.d, a[0]);
        return v ? *v : n > 1 ? a[1] : jv_none();
    }
    case JF_DICT_ITEMS: case JF_DICT_KEYS: case JF_DICT_VALUES: {
        no_kw(c, "items", nkw);
        nargs(c, "items", n, 0, 0);
        const jdict *d = self.u.d;
        jlist *l = edgellm_jinja_list_new(c, d->n, id == JF_DICT_ITEMS ? JL_ITEMS : id == JF_DICT_KEYS ? JL_KEYS : JL_VALUES);
        for (size_t i = 0; i < d->n; i++) {
            if (id == JF_DICT_KEYS) l->items[i] = d->keys[i];
            else if (id == JF_DICT_VALUES) l->items[i] = d->vals[i];
            else {
                jlist *p = edgellm_jinja_list_new(c, 2, JL_TUPLE);
                p->items[0] = d->keys[i];
                p->items[1] = d->vals[i];
                l->items[i] = edgellm_jinja_listv(p);
            }
        }
        return edgellm_jinja_listv(l);
    }
    case JF_LIST_COUNT: case JF_LIST_INDEX: {
        no_kw(c, "count", nkw);
        nargs(c, id == JF_LIST_COUNT ? "count" : "index", n, 1, id == JF_LIST_COUNT ? 1 : 1);
        const jlist *l = self.u.l;
        int64_t cnt = 0;
        for (size_t i = 0; i < l->n; i++)
            if (edgellm_jinja_eq(c, l->items[i], a[0])) {
                if (id == JF_LIST_INDEX) return jv_int((int64_t)i);
                cnt++;
            }
        if (id == JF_LIST_INDEX) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "value is not in list");
        return jv_int(cnt);
    }
    default: return str_method(c, id, self.u.s, a, n, kw, kwv, nkw);
    }
}
