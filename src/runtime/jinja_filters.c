/*
 * jinja_filters.c — Jinja's filters and tests (jinja2/filters.py, jinja2/tests.py, 3.1),
 * with transformers' tojson (json.dumps(x, ensure_ascii=False, indent=None,
 * separators=None, sort_keys=False); transformers/utils/chat_template_utils.py).
 *
 * Filters that Jinja computes lazily (map, select, reject, selectattr, rejectattr,
 * unique, batch, items, reverse of a list) return generators here too (JL_GEN): they are
 * truthy even when empty, have no length, print as an error (Python would print an
 * object address) and are consumed by the first iteration, as in Jinja.
 *
 * Jinja filters with no use in a chat template (groupby, wordwrap, striptags, urlize,
 * xmlattr, urlencode, filesizeformat, pprint, random, slice) are known names that fail
 * when applied (EDGELLM_ERR_UNSUPPORTED); an unknown name fails when the template is
 * parsed, as in Jinja.
 */
#include "jinja_int.h"
#include <locale.h>
#include <math.h>
#include <stdlib.h>

enum {
    F_ABS, F_ATTR, F_BATCH, F_CAPITALIZE, F_CENTER, F_DEFAULT, F_DICTSORT, F_ESCAPE, F_FIRST, F_FLOAT,
    F_FORCEESCAPE, F_FORMAT, F_INDENT, F_INT, F_ITEMS, F_JOIN, F_LAST, F_LENGTH, F_LIST, F_LOWER, F_MAP, F_MAX,
    F_MIN, F_REJECT, F_REJECTATTR, F_REPLACE, F_REVERSE, F_ROUND, F_SAFE, F_SELECT, F_SELECTATTR, F_SORT,
    F_STRING, F_SUM, F_TITLE, F_TOJSON, F_TRIM, F_TRUNCATE, F_UNIQUE, F_UPPER, F_WORDCOUNT, F_UNSUPPORTED
};

static const struct { const char *name; int id; } FILTERS[] = {
    {"abs", F_ABS}, {"attr", F_ATTR}, {"batch", F_BATCH}, {"capitalize", F_CAPITALIZE}, {"center", F_CENTER},
    {"count", F_LENGTH}, {"d", F_DEFAULT}, {"default", F_DEFAULT}, {"dictsort", F_DICTSORT}, {"e", F_ESCAPE},
    {"escape", F_ESCAPE}, {"first", F_FIRST}, {"float", F_FLOAT}, {"forceescape", F_FORCEESCAPE},
    {"format", F_FORMAT}, {"indent", F_INDENT}, {"int", F_INT}, {"items", F_ITEMS}, {"join", F_JOIN},
    {"last", F_LAST}, {"length", F_LENGTH}, {"list", F_LIST}, {"lower", F_LOWER}, {"map", F_MAP}, {"max", F_MAX},
    {"min", F_MIN}, {"reject", F_REJECT}, {"rejectattr", F_REJECTATTR}, {"replace", F_REPLACE},
    {"reverse", F_REVERSE}, {"round", F_ROUND}, {"safe", F_SAFE}, {"select", F_SELECT},
    {"selectattr", F_SELECTATTR}, {"sort", F_SORT}, {"string", F_STRING}, {"sum", F_SUM}, {"title", F_TITLE},
    {"tojson", F_TOJSON}, {"trim", F_TRIM}, {"truncate", F_TRUNCATE}, {"unique", F_UNIQUE}, {"upper", F_UPPER},
    {"wordcount", F_WORDCOUNT},
    {"filesizeformat", F_UNSUPPORTED}, {"groupby", F_UNSUPPORTED}, {"pprint", F_UNSUPPORTED},
    {"random", F_UNSUPPORTED}, {"slice", F_UNSUPPORTED}, {"striptags", F_UNSUPPORTED},
    {"urlencode", F_UNSUPPORTED}, {"urlize", F_UNSUPPORTED}, {"wordwrap", F_UNSUPPORTED},
    {"xmlattr", F_UNSUPPORTED},
};
#define N_FILTERS ((int)(sizeof FILTERS / sizeof FILTERS[0]))


/* Ids are indexes into the table (so the name is known for messages). */
int edgellm_jinja_filter_id(const char *name)
{
    for (int i = 0; i < N_FILTERS; i++)
        if (!strcmp(FILTERS[i].name, name)) return i;
    return -1;
}


/* ------------------------------------------------------------------ helpers ---- */
static jv gen_of(jctx *c, const jv *items, size_t n)
{
    jlist *l = edgellm_jinja_list_new(c, n, JL_GEN);
    if (n) memcpy(l->items, items, n * sizeof(jv));
    return edgellm_jinja_listv(l);
}

static jv undef_hint(jctx *c, const char *msg)
{
    return edgellm_jinja_undef(c, JU_HINT, NULL, msg, NULL);
}

/* jinja2's make_attrgetter: "a.b.0" looked up part by part with the sandbox's getitem
 * (digit-only parts as integers); dflt (may be NULL) replaces an undefined result. */
typedef struct {
    int n;
    jv  parts[16];
} jpath;

static void parse_path(jctx *c, jv attr, jpath *p)
{
    p->n = 0;
    if (attr.t == JV_NONE || attr.t == JV_UNDEF) return;
    if (attr.t != JV_STR) { p->parts[p->n++] = attr; return; }
    const jstr *s = attr.u.s;
    size_t i = 0;
    for (;;) {
        const char *dot = memchr(s->p + i, '.', s->len - i);
        size_t e = dot ? (size_t)(dot - s->p) : s->len;
        if (p->n == 16) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "attribute path too long");
        bool digits = e > i;
        for (size_t k = i; k < e; k++) digits &= s->p[k] >= '0' && s->p[k] <= '9';
        if (digits && e - i < 18) p->parts[p->n++] = jv_int(strtoll(s->p + i, NULL, 10));
        else p->parts[p->n++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, i, e));
        if (!dot) break;
        i = e + 1;
    }
}

static jv get_path(jctx *c, const jpath *p, jv item, const jv *dflt)
{
    for (int i = 0; i < p->n; i++) {
        item = edgellm_jinja_getitem(c, item, p->parts[i]);
        if (dflt && item.t == JV_UNDEF) item = *dflt;
    }
    return item;
}

static jv lower_key(jctx *c, jv v, bool case_sensitive)
{
    if (!case_sensitive && v.t == JV_STR) return edgellm_jinja_strv(edgellm_jinja_case(c, v.u.s, JCASE_LOWER));
    return v;
}

/* Sort keys: make_multi_attrgetter's list of comma-separated attribute paths. */
static jv sort_key(jctx *c, jv attr, jv item, bool case_sensitive)
{
    jv paths[8];
    int np = 0;
    if (attr.t == JV_STR) {
        const jstr *s = attr.u.s;
        size_t i = 0;
        for (;;) {
            const char *comma = memchr(s->p + i, ',', s->len - i);
            size_t e = comma ? (size_t)(comma - s->p) : s->len;
            if (np == 8) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "too many sort attributes");
            paths[np++] = edgellm_jinja_strv(edgellm_jinja_substr(c, s, i, e));
            if (!comma) break;
            i = e + 1;
        }
    } else paths[np++] = attr;
    jlist *key = edgellm_jinja_list_new(c, (size_t)np, JL_LIST);
    for (int k = 0; k < np; k++) {
        jpath p;
        parse_path(c, paths[k], &p);
        key->items[k] = lower_key(c, get_path(c, &p, item, NULL), case_sensitive);
    }
    return edgellm_jinja_listv(key);
}

static bool key_less(jctx *c, jv a, jv b)
{
    return edgellm_jinja_cmp(c, a, b, "<") == -1;
}

/* Stable merge sort of items by keys (Python's sorted; reverse keeps equal items in order). */
static void sort_by_keys(jctx *c, jv *items, jv *keys, size_t n, bool reverse)
{
    if (n < 2) return;
    jv *ti = edgellm_jinja_alloc(c, n * sizeof(jv)), *tk = edgellm_jinja_alloc(c, n * sizeof(jv));
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                bool take_right = reverse ? key_less(c, keys[i], keys[j]) : key_less(c, keys[j], keys[i]);
                if (take_right) { ti[o] = items[j]; tk[o++] = keys[j++]; }
                else { ti[o] = items[i]; tk[o++] = keys[i++]; }
            }
            while (i < mid) { ti[o] = items[i]; tk[o++] = keys[i++]; }
            while (j < hi) { ti[o] = items[j]; tk[o++] = keys[j++]; }
        }
        memcpy(items, ti, n * sizeof(jv));
        memcpy(keys, tk, n * sizeof(jv));
    }
}

static jv *copy_items(jctx *c, jv value, size_t *n)
{
    const jv *it = edgellm_jinja_iter(c, value, n);
    jv *out = *n ? edgellm_jinja_alloc(c, *n * sizeof(jv)) : NULL;
    if (*n) memcpy(out, it, *n * sizeof(jv));
    return out;
}

/* Python round(x, ndigits) for a float (correctly rounded, as CPython's dtoa-based one). */
static double round_float(jctx *c, double x, int64_t nd)
{
    if (!isfinite(x)) return x;
    if (nd < 0) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "round() of a float to a negative precision is not supported");
    if (nd > 300) return x;
    if (nd == 0) return nearbyint(x);
    char buf[400];
    snprintf(buf, sizeof buf, "%.*f", (int)nd, x);
    return strtod(buf, NULL);
}

/* ---------------------------------------------------------------- filters ---- */
static jv select_reject(jctx *c, jv value, const jv *a, int n, const char *const *kw, const jv *kwv, int nkw,
                        bool reject, bool attr);

static jv call_filter_named(jctx *c, jv name, jv value, const jv *a, int n, const char *const *kw, const jv *kwv, int nkw)
{
    const jstr *s = edgellm_jinja_arg_str(c, "filter name", name);
    int id = edgellm_jinja_filter_id(s->p);
    if (id < 0) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "no filter named '%s'", s->p);
    return edgellm_jinja_filter(c, id, value, a, n, kw, kwv, nkw);
}

#define BIND(what, ...)                                                                      \
    static const char *const names_[] = {__VA_ARGS__};                                       \
    enum { NP_ = sizeof names_ / sizeof names_[0] };                                          \
    jv p[NP_];                                                                                \
    bool g[NP_];                                                                              \
    edgellm_jinja_bind(c, what, names_, NP_, args, n, kw, kwv, nkw, p, g)

static jv f_indent(jctx *c, jv value, const jv *args, int n, const char *const *kw, const jv *kwv, int nkw)
{
    BIND("indent", "width", "first", "blank");
    jstr *ind;
    if (g[0] && p[0].t == JV_STR) ind = p[0].u.s;
    else {
        int64_t w = g[0] ? edgellm_jinja_arg_int(c, "indent width", p[0]) : 4;
        if (w < 0) w = 0;
        if (w > 1000000) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "indent too wide");
        char *sp = edgellm_jinja_alloc(c, (size_t)w + 1);
        memset(sp, ' ', (size_t)w);
        ind = edgellm_jinja_str_new(c, sp, (size_t)w, false);
    }
    bool first = g[1] && edgellm_jinja_truthy(c, p[1]), blank = g[2] && edgellm_jinja_truthy(c, p[2]);
    if (value.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &value);
    if (value.t != JV_STR)   /* jinja's `s += "\n"` */
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "unsupported operand type(s) for +=: '%s' and 'str'", edgellm_jinja_type_name(&value));
    jbuf sb;
    edgellm_jinja_buf_init(&sb);
    const jstr *src = value.u.s;
    edgellm_jinja_buf_put_str(c, &sb, src, 0, src->len);
    edgellm_jinja_buf_putc(c, &sb, '\n');   /* jinja's quirk for splitlines */
    jstr *s = edgellm_jinja_buf_finish(c, &sb);
    jv m;
    edgellm_jinja_method(c, edgellm_jinja_strv(s), "splitlines", &m);
    jv lines = edgellm_jinja_call(c, m, NULL, 0, NULL, NULL, 0);
    const jlist *l = lines.u.l;
    jbuf b;
    edgellm_jinja_buf_init(&b);
    if (first) edgellm_jinja_buf_put_str(c, &b, ind, 0, ind->len);
    for (size_t i = 0; i < l->n; i++) {
        const jstr *line = l->items[i].u.s;
        if (i) edgellm_jinja_buf_putc(c, &b, '\n');
        if (i && (blank || line->len)) edgellm_jinja_buf_put_str(c, &b, ind, 0, ind->len);
        edgellm_jinja_buf_put_str(c, &b, line, 0, line->len);
    }
    return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
}

static jv f_tojson(jctx *c, jv value, const jv *args, int n, const char *const *kw, const jv *kwv, int nkw)
{
    BIND("tojson", "ensure_ascii", "indent", "separators", "sort_keys");
    bool ascii = g[0] && edgellm_jinja_truthy(c, p[0]);
    const jstr *indent = NULL;
    if (g[1] && p[1].t != JV_NONE) {
        if (p[1].t == JV_STR) indent = p[1].u.s;
        else {
            int64_t w = edgellm_jinja_arg_int(c, "tojson indent", p[1]);
            if (w < 0) w = 0;
            if (w > 1000) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "tojson indent too wide");
            char sp[1001];
            memset(sp, ' ', (size_t)w);
            indent = edgellm_jinja_str_new(c, sp, (size_t)w, false);
        }
    }
    const jstr *item_sep = edgellm_jinja_str_new(c, indent ? "," : ", ", indent ? 1 : 2, false);
    const jstr *key_sep = edgellm_jinja_str_new(c, ": ", 2, false);
    if (g[2] && p[2].t != JV_NONE) {
        size_t cnt;
        const jv *seps = edgellm_jinja_iter(c, p[2], &cnt);
        if (cnt != 2) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "tojson separators: expected 2 strings");
        item_sep = edgellm_jinja_arg_str(c, "tojson separators", seps[0]);
        key_sep = edgellm_jinja_arg_str(c, "tojson separators", seps[1]);
    }
    bool sort_keys = g[3] && edgellm_jinja_truthy(c, p[3]);
    jbuf b;
    edgellm_jinja_buf_init(&b);
    edgellm_jinja_json(c, &b, value, ascii, indent, item_sep, key_sep, sort_keys, 0);
    return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
}

static jv f_title(jctx *c, jv value)
{
    /* "".join(w[0].upper() + w[1:].lower() for w in re.split(r"([-\s({\[<]+)", s) if w) */
    const jstr *s = edgellm_jinja_to_str(c, value);
    jbuf b;
    edgellm_jinja_buf_init(&b);
    size_t i = 0;
    while (i < s->len) {
        uint32_t cp;
        size_t j = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
        bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || edgellm_jinja_isspace(cp);
        size_t e = j;
        while (e < s->len) {   /* the run of separators or of word characters starting at i */
            uint32_t q;
            size_t k = edgellm_jinja_u8_next(s->p, s->len, e, &q);
            bool qs = q == '-' || q == '(' || q == '{' || q == '[' || q == '<' || edgellm_jinja_isspace(q);
            if (qs != sep) break;
            e = k;
        }
        jstr *head = edgellm_jinja_case(c, edgellm_jinja_substr(c, s, i, j), JCASE_UPPER);
        jstr *tail = edgellm_jinja_case(c, edgellm_jinja_substr(c, s, j, e), JCASE_LOWER);
        edgellm_jinja_buf_put_str(c, &b, head, 0, head->len);
        edgellm_jinja_buf_put_str(c, &b, tail, 0, tail->len);
        i = e;
    }
    return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
}

static jv f_minmax(jctx *c, jv value, bool is_max, const jv *args, int n, const char *const *kw, const jv *kwv, int nkw)
{
    BIND(is_max ? "max" : "min", "case_sensitive", "attribute");
    size_t cnt;
    const jv *items = edgellm_jinja_iter(c, value, &cnt);
    if (!cnt) return undef_hint(c, "No aggregated item, sequence was empty.");
    bool cs = g[0] && edgellm_jinja_truthy(c, p[0]);
    jpath path;
    parse_path(c, g[1] ? p[1] : jv_none(), &path);
    size_t best = 0;
    jv bk = lower_key(c, get_path(c, &path, items[0], NULL), cs);
    for (size_t i = 1; i < cnt; i++) {
        jv k = lower_key(c, get_path(c, &path, items[i], NULL), cs);
        if (is_max ? key_less(c, bk, k) : key_less(c, k, bk)) { best = i; bk = k; }
    }
    return items[best];
}

struct jlazy {
    int id;
    jv value;
    jv *args, *kwv;
    const char **kw;
    int n, nkw;
};

static jv filter_impl(jctx *c, int id, jv value, const jv *args, int n, const char *const *kw, const jv *kwv, int nkw);

/* Jinja's generator filters run only when their result is consumed (a for loop, list,
 * join...): until then they raise nothing and are simply truthy. */
jv edgellm_jinja_filter(jctx *c, int id, jv value, const jv *args, int n, const char *const *kw, const jv *kwv, int nkw)
{
    switch (FILTERS[id].id) {
    case F_MAP: case F_SELECT: case F_REJECT: case F_SELECTATTR: case F_REJECTATTR: case F_UNIQUE: case F_BATCH:
    case F_ITEMS: {
        jlazy *z = edgellm_jinja_alloc(c, sizeof *z);
        z->id = id;
        z->value = value;
        z->n = n;
        z->nkw = nkw;
        z->args = edgellm_jinja_alloc(c, ((size_t)n + 1) * sizeof(jv));
        z->kwv = edgellm_jinja_alloc(c, ((size_t)nkw + 1) * sizeof(jv));
        z->kw = edgellm_jinja_alloc(c, ((size_t)nkw + 1) * sizeof(char *));
        if (n) memcpy(z->args, args, (size_t)n * sizeof(jv));
        for (int k = 0; k < nkw; k++) { z->kw[k] = kw[k]; z->kwv[k] = kwv[k]; }
        jlist *l = edgellm_jinja_list_new(c, 0, JL_GEN);
        l->lazy = z;
        return edgellm_jinja_listv(l);
    }
    default: return filter_impl(c, id, value, args, n, kw, kwv, nkw);
    }
}

void edgellm_jinja_gen_force(jctx *c, jlist *l)
{
    if (l->kind != JL_GEN || !l->lazy) return;
    jlazy *z = l->lazy;
    l->lazy = NULL;   /* consumed once, whatever happens */
    jv r = filter_impl(c, z->id, z->value, z->args, z->n, z->kw, z->kwv, z->nkw);
    edgellm_jinja_gen_force(c, r.u.l);
    l->n = r.u.l->n - r.u.l->pos;
    l->items = l->n ? r.u.l->items + r.u.l->pos : NULL;
    l->pos = 0;
}

static jv filter_impl(jctx *c, int id, jv value, const jv *args, int n, const char *const *kw, const jv *kwv, int nkw)
{
    const char *fname = FILTERS[id].name;
    switch (FILTERS[id].id) {
    case F_ABS: {
        BIND("abs");
        (void)p;
        if (value.t == JV_FLOAT) return jv_float(fabs(value.u.f));
        if (value.t == JV_INT || value.t == JV_BOOL) {
            int64_t v = value.t == JV_INT ? value.u.i : value.u.b;
            if (v == INT64_MIN) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "integer overflow (edgellm's integers are 64-bit)");
            return jv_int(v < 0 ? -v : v);
        }
        if (value.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &value);
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "bad operand type for abs(): '%s'", edgellm_jinja_type_name(&value));
    }
    case F_ATTR: {
        BIND("attr", "name");
        const jstr *name = edgellm_jinja_arg_str(c, "attr", p[0]);
        if (value.t == JV_DICT) {
            jv m;
            if (name->p[0] != '_' && edgellm_jinja_method(c, value, name->p, &m)) return m;
            return edgellm_jinja_undef(c, JU_ATTR, &value, name->p, NULL);
        }
        return edgellm_jinja_getattr(c, value, name->p);
    }
    case F_BATCH: {
        BIND("batch", "linecount", "fill_with");
        int64_t lc = edgellm_jinja_arg_int(c, "batch", p[0]);
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, value, &cnt);
        if (lc <= 0 && cnt) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "batch() with a count below 1 is not supported");
        size_t nb = lc > 0 ? (cnt + (size_t)lc - 1) / (size_t)lc : 0;
        jlist *out = edgellm_jinja_list_new(c, nb, JL_GEN);
        for (size_t k = 0; k < nb; k++) {
            size_t from = k * (size_t)lc, take = cnt - from < (size_t)lc ? cnt - from : (size_t)lc;
            bool fill = g[1] && p[1].t != JV_NONE && take < (size_t)lc;
            jlist *row = edgellm_jinja_list_new(c, fill ? (size_t)lc : take, JL_LIST);
            memcpy(row->items, items + from, take * sizeof(jv));
            for (size_t j = take; fill && j < (size_t)lc; j++) row->items[j] = p[1];
            out->items[k] = edgellm_jinja_listv(row);
        }
        return edgellm_jinja_listv(out);
    }
    case F_CAPITALIZE: { BIND("capitalize"); (void)p; return edgellm_jinja_strv(edgellm_jinja_case(c, edgellm_jinja_to_str(c, value), JCASE_CAPITALIZE)); }
    case F_UPPER: { BIND("upper"); (void)p; return edgellm_jinja_strv(edgellm_jinja_case(c, edgellm_jinja_to_str(c, value), JCASE_UPPER)); }
    case F_LOWER: { BIND("lower"); (void)p; return edgellm_jinja_strv(edgellm_jinja_case(c, edgellm_jinja_to_str(c, value), JCASE_LOWER)); }
    case F_TITLE: { BIND("title"); (void)p; return f_title(c, value); }
    case F_CENTER: {
        BIND("center", "width");
        jv w = g[0] ? p[0] : jv_int(80), m;
        edgellm_jinja_method(c, edgellm_jinja_strv(edgellm_jinja_to_str(c, value)), "center", &m);
        return edgellm_jinja_call(c, m, &w, 1, NULL, NULL, 0);
    }
    case F_DEFAULT: {
        BIND("default", "default_value", "boolean");
        bool boolean = g[1] && edgellm_jinja_truthy(c, p[1]);
        if (value.t == JV_UNDEF || (boolean && !edgellm_jinja_truthy(c, value)))
            return g[0] ? p[0] : edgellm_jinja_str(c, "", 0);
        return value;
    }
    case F_DICTSORT: {
        BIND("dictsort", "case_sensitive", "by", "reverse");
        if (value.t != JV_DICT) {
            if (value.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &value);
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' object has no attribute 'items'", edgellm_jinja_type_name(&value));
        }
        int pos = 0;
        if (g[1]) {
            const jstr *by = edgellm_jinja_arg_str(c, "dictsort by", p[1]);
            if (!strcmp(by->p, "value")) pos = 1;
            else if (strcmp(by->p, "key")) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "You can only sort by either \"key\" or \"value\"");
        }
        const jdict *d = value.u.d;
        jlist *l = edgellm_jinja_list_new(c, d->n, JL_LIST);
        jv *keys = d->n ? edgellm_jinja_alloc(c, d->n * sizeof(jv)) : NULL;
        for (size_t i = 0; i < d->n; i++) {
            jlist *pair = edgellm_jinja_list_new(c, 2, JL_TUPLE);
            pair->items[0] = d->keys[i];
            pair->items[1] = d->vals[i];
            l->items[i] = edgellm_jinja_listv(pair);
            keys[i] = lower_key(c, pos ? d->vals[i] : d->keys[i], g[0] && edgellm_jinja_truthy(c, p[0]));
        }
        sort_by_keys(c, l->items, keys, l->n, g[2] && edgellm_jinja_truthy(c, p[2]));
        return edgellm_jinja_listv(l);
    }
    case F_ESCAPE: case F_FORCEESCAPE: {
        BIND(fname);
        (void)p;
        if (value.t == JV_STR && value.safe && FILTERS[id].id == F_ESCAPE) return value;
        jv v = edgellm_jinja_strv(edgellm_jinja_escape(c, edgellm_jinja_to_str(c, value)));
        v.safe = 1;
        return v;
    }
    case F_FIRST: {
        BIND("first");
        (void)p;
        if (value.t == JV_LIST && value.u.l->kind == JL_GEN) {
            jlist *l = value.u.l;
            edgellm_jinja_gen_force(c, l);
            if (l->pos >= l->n) return undef_hint(c, "No first item, sequence was empty.");
            return l->items[l->pos++];
        }
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, value, &cnt);
        return cnt ? items[0] : undef_hint(c, "No first item, sequence was empty.");
    }
    case F_LAST: {
        BIND("last");
        (void)p;
        if (value.t == JV_LIST && value.u.l->kind == JL_GEN)
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'generator' object is not reversible");
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, value, &cnt);
        return cnt ? items[cnt - 1] : undef_hint(c, "No last item, sequence was empty.");
    }
    case F_FLOAT: {
        BIND("float", "default");
        jv dflt = g[0] ? p[0] : jv_float(0.0);
        if (value.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &value);   /* Undefined.__float__ raises */
        double f;
        if (value.t == JV_FLOAT) return value;
        if (value.t == JV_INT) return jv_float((double)value.u.i);
        if (value.t == JV_BOOL) return jv_float(value.u.b);
        if (value.t == JV_STR && edgellm_jinja_parse_float(value.u.s, &f)) return jv_float(f);
        return dflt;
    }
    case F_INT: {
        BIND("int", "default", "base");
        jv dflt = g[0] ? p[0] : jv_int(0);
        int64_t base = g[1] ? edgellm_jinja_arg_int(c, "int base", p[1]) : 10;
        if (value.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &value);   /* Undefined.__int__ raises */
        if (value.t == JV_INT) return value;
        if (value.t == JV_BOOL) return jv_int(value.u.b);
        double f;
        bool of = false;
        int64_t iv;
        if (value.t == JV_STR && edgellm_jinja_parse_int(value.u.s, base, &iv, &of) && !of) return jv_int(iv);
        if (of) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "integer overflow (edgellm's integers are 64-bit)");
        if (value.t == JV_FLOAT) f = value.u.f;
        else if (!(value.t == JV_STR && edgellm_jinja_parse_float(value.u.s, &f))) return dflt;
        if (isnan(f)) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "cannot convert float NaN to integer");
        if (isinf(f)) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "cannot convert float infinity to integer");
        if (fabs(f) >= 9.2233720368547758e18) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "integer overflow (edgellm's integers are 64-bit)");
        return jv_int((int64_t)f);
    }
    case F_FORMAT: {
        if (n && nkw) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "can't handle positional and keyword arguments at the same time");
        jv fmt = edgellm_jinja_strv(edgellm_jinja_to_str(c, value)), a;
        if (nkw) {
            jdict *d = edgellm_jinja_dict_new(c, (size_t)nkw);
            for (int k = 0; k < nkw; k++) edgellm_jinja_dict_set(c, d, edgellm_jinja_cstr(c, kw[k]), kwv[k]);
            a.t = JV_DICT;
            a.safe = 0;
            a.u.d = d;
        } else {
            jlist *t = edgellm_jinja_list_new(c, (size_t)n, JL_TUPLE);
            if (n) memcpy(t->items, args, (size_t)n * sizeof(jv));
            a = edgellm_jinja_listv(t);
        }
        return edgellm_jinja_str_format(c, fmt, a);
    }
    case F_INDENT: return f_indent(c, value, args, n, kw, kwv, nkw);
    case F_ITEMS: {
        BIND("items");
        (void)p;
        if (value.t == JV_UNDEF) return gen_of(c, NULL, 0);
        if (value.t != JV_DICT) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "Can only get item pairs from a mapping.");
        jv m, r;
        edgellm_jinja_method(c, value, "items", &m);
        r = edgellm_jinja_call(c, m, NULL, 0, NULL, NULL, 0);
        r.u.l->kind = JL_GEN;
        return r;
    }
    case F_JOIN: {
        BIND("join", "d", "attribute");
        const jstr *sep = g[0] ? edgellm_jinja_to_str(c, p[0]) : edgellm_jinja_str_new(c, "", 0, false);
        jpath path;
        parse_path(c, g[1] ? p[1] : jv_none(), &path);
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, value, &cnt);
        jbuf b;
        edgellm_jinja_buf_init(&b);
        for (size_t i = 0; i < cnt; i++) {
            if (i) edgellm_jinja_buf_put_str(c, &b, sep, 0, sep->len);
            const jstr *s = edgellm_jinja_to_str(c, get_path(c, &path, items[i], NULL));
            edgellm_jinja_buf_put_str(c, &b, s, 0, s->len);
        }
        return edgellm_jinja_strv(edgellm_jinja_buf_finish(c, &b));
    }
    case F_LENGTH: { BIND(fname); (void)p; return jv_int(edgellm_jinja_len(c, value)); }
    case F_LIST: {
        BIND("list");
        (void)p;
        size_t cnt;
        jv *items = copy_items(c, value, &cnt);
        jlist *l = edgellm_jinja_list_new(c, 0, JL_LIST);
        l->n = cnt;
        l->items = items;
        return edgellm_jinja_listv(l);
    }
    case F_MAP: {
        if (!edgellm_jinja_truthy(c, value)) return gen_of(c, NULL, 0);
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, value, &cnt);
        jv *out = cnt ? edgellm_jinja_alloc(c, cnt * sizeof(jv)) : NULL;
        int ai = -1, di = -1;
        for (int k = 0; k < nkw; k++) {
            if (!strcmp(kw[k], "attribute")) ai = k;
            else if (!strcmp(kw[k], "default")) di = k;
        }
        if (!n && ai >= 0) {
            if (nkw > 1 + (di >= 0))
                edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "Unexpected keyword argument '%s'", kw[ai == 0 ? (di == 1 ? 2 : 1) : 0]);
            jpath path;
            parse_path(c, kwv[ai], &path);
            const jv *dflt = di >= 0 && kwv[di].t != JV_NONE ? &kwv[di] : NULL;
            for (size_t i = 0; i < cnt; i++) out[i] = get_path(c, &path, items[i], dflt);
        } else {
            if (!n) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "map requires a filter argument");
            for (size_t i = 0; i < cnt; i++) out[i] = call_filter_named(c, args[0], items[i], args + 1, n - 1, kw, kwv, nkw);
        }
        return gen_of(c, out, cnt);
    }
    case F_MAX: return f_minmax(c, value, true, args, n, kw, kwv, nkw);
    case F_MIN: return f_minmax(c, value, false, args, n, kw, kwv, nkw);
    case F_SELECT: return select_reject(c, value, args, n, kw, kwv, nkw, false, false);
    case F_REJECT: return select_reject(c, value, args, n, kw, kwv, nkw, true, false);
    case F_SELECTATTR: return select_reject(c, value, args, n, kw, kwv, nkw, false, true);
    case F_REJECTATTR: return select_reject(c, value, args, n, kw, kwv, nkw, true, true);
    case F_REPLACE: {
        BIND("replace", "old", "new", "count");
        int64_t count = g[2] && p[2].t != JV_NONE ? edgellm_jinja_arg_int(c, "replace count", p[2]) : -1;
        return edgellm_jinja_strv(edgellm_jinja_replace(c, edgellm_jinja_to_str(c, value), edgellm_jinja_to_str(c, p[0]),
                                                        edgellm_jinja_to_str(c, p[1]), count));
    }
    case F_REVERSE: {
        BIND("reverse");
        (void)p;
        if (value.t == JV_STR) return edgellm_jinja_slice(c, value, jv_none(), jv_none(), jv_int(-1));
        size_t cnt;
        jv *items = copy_items(c, value, &cnt);
        for (size_t i = 0; i < cnt / 2; i++) {
            jv t = items[i];
            items[i] = items[cnt - 1 - i];
            items[cnt - 1 - i] = t;
        }
        /* reversed() of a sequence or dict is an iterator; a generator becomes a list */
        bool reversible = (value.t == JV_LIST && value.u.l->kind != JL_GEN) || value.t == JV_DICT || value.t == JV_UNDEF;
        jlist *l = edgellm_jinja_list_new(c, 0, reversible ? JL_GEN : JL_LIST);
        l->n = cnt;
        l->items = items;
        return edgellm_jinja_listv(l);
    }
    case F_ROUND: {
        BIND("round", "precision", "method");
        int64_t prec = g[0] ? edgellm_jinja_arg_int(c, "round precision", p[0]) : 0;
        const char *method = g[1] ? edgellm_jinja_arg_str(c, "round method", p[1])->p : "common";
        if (strcmp(method, "common") && strcmp(method, "ceil") && strcmp(method, "floor"))
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "method must be common, ceil or floor");
        if (value.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &value);
        if (value.t != JV_FLOAT && value.t != JV_INT && value.t != JV_BOOL)
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "type %s doesn't define __round__ method", edgellm_jinja_type_name(&value));
        if (!strcmp(method, "common")) {
            if (value.t != JV_FLOAT) {
                int64_t v = value.t == JV_INT ? value.u.i : value.u.b;
                if (prec >= 0) return jv_int(v);
                edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "round() of an integer to a negative precision is not supported");
            }
            return jv_float(round_float(c, value.u.f, prec));
        }
        if (prec < 0 || prec > 300) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "round precision out of range");
        double x = value.t == JV_FLOAT ? value.u.f : value.t == JV_INT ? (double)value.u.i : value.u.b;
        double scale = pow(10.0, (double)prec);
        double r = (!strcmp(method, "ceil") ? ceil(x * scale) : floor(x * scale)) / scale;
        return jv_float(r);
    }
    case F_SAFE: {
        BIND("safe");
        (void)p;
        jv v = edgellm_jinja_strv(edgellm_jinja_to_str(c, value));
        v.safe = 1;
        return v;
    }
    case F_SORT: {
        BIND("sort", "reverse", "case_sensitive", "attribute");
        size_t cnt;
        jv *items = copy_items(c, value, &cnt);
        jv *keys = cnt ? edgellm_jinja_alloc(c, cnt * sizeof(jv)) : NULL;
        bool cs = g[1] && edgellm_jinja_truthy(c, p[1]);
        for (size_t i = 0; i < cnt; i++) keys[i] = sort_key(c, g[2] ? p[2] : jv_none(), items[i], cs);
        sort_by_keys(c, items, keys, cnt, g[0] && edgellm_jinja_truthy(c, p[0]));
        jlist *l = edgellm_jinja_list_new(c, 0, JL_LIST);
        l->n = cnt;
        l->items = items;
        return edgellm_jinja_listv(l);
    }
    case F_STRING: {
        BIND("string");
        (void)p;
        jv v = edgellm_jinja_strv(edgellm_jinja_to_str(c, value));
        v.safe = value.t == JV_STR && value.safe;
        return v;
    }
    case F_SUM: {
        BIND("sum", "attribute", "start");
        jpath path;
        parse_path(c, g[0] ? p[0] : jv_none(), &path);
        jv acc = g[1] ? p[1] : jv_int(0);
        if (acc.t == JV_STR) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "sum() can't sum strings [use ''.join(seq) instead]");
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, value, &cnt);
        for (size_t i = 0; i < cnt; i++) acc = edgellm_jinja_binop(c, JO_ADD, acc, get_path(c, &path, items[i], NULL));
        return acc;
    }
    case F_TOJSON: return f_tojson(c, value, args, n, kw, kwv, nkw);
    case F_TRIM: {
        BIND("trim", "chars");
        const jstr *chars = g[0] && p[0].t != JV_NONE ? edgellm_jinja_arg_str(c, "trim", p[0]) : NULL;
        return edgellm_jinja_strv(edgellm_jinja_strip(c, edgellm_jinja_to_str(c, value), 3, chars));
    }
    case F_TRUNCATE: {
        BIND("truncate", "length", "killwords", "end", "leeway");
        int64_t length = g[0] ? edgellm_jinja_arg_int(c, "truncate", p[0]) : 255;
        bool killwords = g[1] && edgellm_jinja_truthy(c, p[1]);
        const jstr *end = g[2] ? edgellm_jinja_arg_str(c, "truncate end", p[2]) : edgellm_jinja_str_new(c, "...", 3, false);
        int64_t leeway = g[3] && p[3].t != JV_NONE ? edgellm_jinja_arg_int(c, "truncate leeway", p[3]) : 5;
        int64_t endlen = (int64_t)edgellm_jinja_u8_count(end->p, end->len);
        if (length < endlen) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "expected length >= %lld, got %lld", (long long)endlen, (long long)length);
        if (leeway < 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "expected leeway >= 0, got %lld", (long long)leeway);
        if (leeway > INT64_MAX - length || edgellm_jinja_len(c, value) <= length + leeway)
            return value;   /* any sized value, as is */
        if (value.t != JV_STR)   /* jinja's s[:n].rsplit() */
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' object has no attribute 'rsplit'", edgellm_jinja_type_name(&value));
        const jstr *s = value.u.s;
        jv head = edgellm_jinja_slice(c, edgellm_jinja_strv((jstr *)s), jv_none(), jv_int(length - endlen), jv_none());
        if (!killwords) {
            const jstr *h = head.u.s;
            size_t cut = h->len;
            for (size_t k = h->len; k-- > 0;)
                if (h->p[k] == ' ') { cut = k; break; }
            head = edgellm_jinja_strv(edgellm_jinja_substr(c, h, 0, cut));
        }
        return edgellm_jinja_binop(c, JO_ADD, head, edgellm_jinja_strv((jstr *)end));
    }
    case F_UNIQUE: {
        BIND("unique", "case_sensitive", "attribute");
        bool cs = g[0] && edgellm_jinja_truthy(c, p[0]);
        jpath path;
        parse_path(c, g[1] ? p[1] : jv_none(), &path);
        size_t cnt;
        const jv *items = edgellm_jinja_iter(c, value, &cnt);
        jv *out = cnt ? edgellm_jinja_alloc(c, cnt * sizeof(jv)) : NULL, *seen = cnt ? edgellm_jinja_alloc(c, cnt * sizeof(jv)) : NULL;
        size_t no = 0;
        for (size_t i = 0; i < cnt; i++) {
            jv k = lower_key(c, get_path(c, &path, items[i], NULL), cs);
            if (k.t == JV_DICT || (k.t == JV_LIST && k.u.l->kind == JL_LIST))
                edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "unhashable type: '%s'", edgellm_jinja_type_name(&k));
            bool dup = false;
            for (size_t j = 0; j < no && !dup; j++) dup = edgellm_jinja_eq(c, seen[j], k);
            if (!dup) { seen[no] = k; out[no++] = items[i]; }
        }
        return gen_of(c, out, no);
    }
    case F_WORDCOUNT: {
        BIND("wordcount");
        (void)p;
        const jstr *s = edgellm_jinja_to_str(c, value);
        int64_t words = 0;   /* runs of re's \w: str.isalnum() characters and '_' */
        bool in = false;
        for (size_t i = 0; i < s->len;) {
            uint32_t cp;
            i = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
            bool w = cp == '_' || (edgellm_jinja_props(cp) & (JP_ALPHA | JP_DECIMAL | JP_DIGIT | JP_NUMERIC));
            if (w && !in) words++;
            in = w;
        }
        return jv_int(words);
    }
    default:
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "the filter '%s' is not supported", fname);
    }
}

static jv select_reject(jctx *c, jv value, const jv *a, int n, const char *const *kw, const jv *kwv, int nkw,
                        bool reject, bool attr)
{
    if (!edgellm_jinja_truthy(c, value)) return gen_of(c, NULL, 0);
    int off = attr ? 1 : 0;
    if (attr && n < 1) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "Missing parameter for attribute name");
    jpath path;
    parse_path(c, attr ? a[0] : jv_none(), &path);
    int test = -1;
    if (n > off) {
        const jstr *tn = edgellm_jinja_arg_str(c, "test name", a[off]);
        test = edgellm_jinja_test_id(tn->p);
        if (test < 0) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "no test named '%s'", tn->p);
    }
    if (nkw) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "keyword arguments to tests are not supported");
    size_t cnt;
    const jv *items = edgellm_jinja_iter(c, value, &cnt);
    jv *out = cnt ? edgellm_jinja_alloc(c, cnt * sizeof(jv)) : NULL;
    size_t no = 0;
    for (size_t i = 0; i < cnt; i++) {
        jv x = get_path(c, &path, items[i], NULL);
        bool r = test >= 0 ? edgellm_jinja_test(c, test, x, a + off + 1, n - off - 1) : edgellm_jinja_truthy(c, x);
        if (r != reject) out[no++] = items[i];
    }
    return gen_of(c, out, no);
}
