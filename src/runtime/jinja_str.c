/*
 * jinja_str.c — Python's str methods as templates call them (strip, split, replace, find,
 * startswith, upper/lower/title/capitalize with CPython's full Unicode case mappings and
 * final-sigma rule, center/ljust/rjust/zfill, isdigit and kin, partition, splitlines;
 * https://docs.python.org/3/library/stdtypes.html#string-methods), and markupsafe's HTML
 * escape. Every result keeps the spans of the text it came from, character by character.
 */
#include "jinja_int.h"

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
    edgellm_jinja_nargs(c, "pad", n, 1, 2);
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

jv edgellm_jinja_str_method(jctx *c, int id, const jstr *s, const jv *a, int n, const char *const *kw, const jv *kwv,
                              int nkw)
{
    switch (id) {
    case JF_S_STRIP: case JF_S_LSTRIP: case JF_S_RSTRIP: {
        edgellm_jinja_no_kw(c, "strip", nkw);
        edgellm_jinja_nargs(c, "strip", n, 0, 1);
        const jstr *chars = n && a[0].t != JV_NONE ? edgellm_jinja_arg_str(c, "strip arg", a[0]) : NULL;
        return edgellm_jinja_strv(edgellm_jinja_strip(c, s, id == JF_S_STRIP ? 3 : id == JF_S_LSTRIP ? 1 : 2, chars));
    }
    case JF_S_STARTSWITH: case JF_S_ENDSWITH:
        edgellm_jinja_no_kw(c, "startswith", nkw);
        edgellm_jinja_nargs(c, id == JF_S_STARTSWITH ? "startswith" : "endswith", n, 1, 3);
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
        edgellm_jinja_no_kw(c, "upper", nkw);
        edgellm_jinja_nargs(c, "upper", n, 0, 0);
        return edgellm_jinja_strv(edgellm_jinja_case(c, s, id == JF_S_UPPER ? JCASE_UPPER : id == JF_S_LOWER ? JCASE_LOWER
                                                          : id == JF_S_TITLE ? JCASE_TITLE_WORDS : JCASE_CAPITALIZE));
    case JF_S_REPLACE: {
        edgellm_jinja_no_kw(c, "replace", nkw);
        edgellm_jinja_nargs(c, "replace", n, 2, 3);
        int64_t count = n > 2 ? edgellm_jinja_arg_int(c, "replace count", a[2]) : -1;
        return edgellm_jinja_strv(edgellm_jinja_replace(c, s, edgellm_jinja_arg_str(c, "replace arg 1", a[0]),
                                                        edgellm_jinja_arg_str(c, "replace arg 2", a[1]), count));
    }
    case JF_S_FIND: case JF_S_RFIND: case JF_S_INDEX: case JF_S_RINDEX:
        edgellm_jinja_no_kw(c, "find", nkw);
        edgellm_jinja_nargs(c, "find", n, 1, 3);
        return find(c, s, a, n, id == JF_S_RFIND || id == JF_S_RINDEX, id == JF_S_INDEX || id == JF_S_RINDEX);
    case JF_S_COUNT: {
        edgellm_jinja_no_kw(c, "count", nkw);
        edgellm_jinja_nargs(c, "count", n, 1, 3);
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
        edgellm_jinja_no_kw(c, "join", nkw);
        edgellm_jinja_nargs(c, "join", n, 1, 1);
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
        edgellm_jinja_no_kw(c, "center", nkw);
        return pad(c, s, a, n, id == JF_S_CENTER ? 0 : id == JF_S_LJUST ? 1 : 2);
    case JF_S_ZFILL: {
        edgellm_jinja_no_kw(c, "zfill", nkw);
        edgellm_jinja_nargs(c, "zfill", n, 1, 1);
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
        edgellm_jinja_no_kw(c, "is", nkw);
        edgellm_jinja_nargs(c, "is", n, 0, 0);
        return classify(c, s, id);
    case JF_S_REMOVEPREFIX: case JF_S_REMOVESUFFIX: {
        edgellm_jinja_no_kw(c, "removeprefix", nkw);
        edgellm_jinja_nargs(c, "removeprefix", n, 1, 1);
        const jstr *p = edgellm_jinja_arg_str(c, "removeprefix", a[0]);
        if (p->len > s->len) return edgellm_jinja_strv((jstr *)s);
        if (id == JF_S_REMOVEPREFIX && !memcmp(s->p, p->p, p->len))
            return edgellm_jinja_strv(edgellm_jinja_substr(c, s, p->len, s->len));
        if (id == JF_S_REMOVESUFFIX && p->len && !memcmp(s->p + s->len - p->len, p->p, p->len))
            return edgellm_jinja_strv(edgellm_jinja_substr(c, s, 0, s->len - p->len));
        return edgellm_jinja_strv((jstr *)s);
    }
    case JF_S_PARTITION: case JF_S_RPARTITION:
        edgellm_jinja_no_kw(c, "partition", nkw);
        edgellm_jinja_nargs(c, "partition", n, 1, 1);
        return partition(c, s, edgellm_jinja_arg_str(c, "partition", a[0]), id == JF_S_RPARTITION);
    }
    edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "unsupported str method");
}

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

