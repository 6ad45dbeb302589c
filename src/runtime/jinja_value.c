/*
 * jinja_value.c — the values a template computes with, behaving as the Python objects
 * Jinja hands around (https://docs.python.org/3/library/stdtypes.html): truth, ==, <,
 * str() and repr(), len(), iteration, and json.dumps (https://docs.python.org/3/library/
 * json.html) for the tojson filter transformers defines.
 *
 * Python integers are unbounded; here they are 64-bit and an overflow is an error
 * (EDGELLM_ERR_UNSUPPORTED), never a wrapped value.
 */
#include "jinja_int.h"
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const char *edgellm_jinja_type_name(const jv *v)
{
    switch (v->t) {
    case JV_UNDEF: return "Undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return v->safe ? "Markup" : "str";
    case JV_LIST:
        switch (v->u.l->kind) {
        case JL_TUPLE: return "tuple";
        case JL_GEN: return "generator";
        case JL_ITEMS: return "dict_items";
        case JL_KEYS: return "dict_keys";
        case JL_VALUES: return "dict_values";
        case JL_RANGE: return "range";
        default: return "list";
        }
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_FUNC: return v->u.fn->self.t == JV_UNDEF ? "function" : "builtin_function_or_method";
    case JV_MACRO: return "Macro";
    case JV_LOOP: return "LoopContext";
    }
    return "object";
}

const char *edgellm_jinja_obj_desc(jctx *c, const jv *v)
{
    if (v->t == JV_NONE) return "None";
    const char *t = edgellm_jinja_type_name(v);
    size_t n = strlen(t) + 8;
    char *s = edgellm_jinja_alloc(c, n);
    snprintf(s, n, "%s object", t);
    return s;
}

/* ------------------------------------------------------------- undefined ---- */
jv edgellm_jinja_undef(jctx *c, ju_kind kind, const jv *obj, const char *name, const jv *key)
{
    jundef *u = edgellm_jinja_alloc(c, sizeof *u);
    u->kind = (uint8_t)kind;
    u->obj = obj ? edgellm_jinja_obj_desc(c, obj) : NULL;
    u->name = name;
    if (kind == JU_ELEMENT && key) {
        jbuf b;
        edgellm_jinja_buf_init(&b);
        edgellm_jinja_repr(c, &b, *key);
        u->name = edgellm_jinja_buf_finish(c, &b)->p;
    }
    jv v = {.t = JV_UNDEF};
    v.u.u = u;
    return v;
}

void edgellm_jinja_undef_fail(jctx *c, const jv *v)
{
    const jundef *u = v->t == JV_UNDEF ? v->u.u : NULL;
    if (!u) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "undefined value used");
    switch (u->kind) {
    case JU_VAR: edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' is undefined", u->name);
    case JU_ATTR: edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' has no attribute '%s'", u->obj, u->name);
    case JU_ELEMENT: edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s has no element %s", u->obj, u->name);
    case JU_UNSAFE: edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "%s", u->name);
    default: edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s", u->name);
    }
}

/* ------------------------------------------------------------- containers ---- */
jlist *edgellm_jinja_list_new(jctx *c, size_t n, jl_kind kind)
{
    if (n > (c->arena.limit / sizeof(jv))) edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "memory limit reached (%zu bytes)", c->arena.limit);
    jlist *l = edgellm_jinja_alloc(c, sizeof *l);
    memset(l, 0, sizeof *l);
    l->n = n;
    l->kind = (uint8_t)kind;
    l->items = n ? edgellm_jinja_alloc(c, n * sizeof(jv)) : NULL;
    for (size_t i = 0; i < n; i++) l->items[i] = jv_undef();
    return l;
}

jdict *edgellm_jinja_dict_new(jctx *c, size_t cap)
{
    jdict *d = edgellm_jinja_alloc(c, sizeof *d);
    d->n = 0;
    d->cap = cap ? cap : 4;
    d->keys = edgellm_jinja_alloc(c, d->cap * sizeof(jv));
    d->vals = edgellm_jinja_alloc(c, d->cap * sizeof(jv));
    return d;
}

static bool is_hashable(const jv *k)
{
    if (k->t == JV_LIST) return k->u.l->kind == JL_TUPLE || k->u.l->kind == JL_RANGE || k->u.l->kind == JL_GEN;
    return k->t != JV_DICT;
}

jv *edgellm_jinja_dict_get(jctx *c, const jdict *d, jv key)
{
    if (!is_hashable(&key)) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "unhashable type: '%s'", edgellm_jinja_type_name(&key));
    for (size_t i = 0; i < d->n; i++)
        if (edgellm_jinja_eq(c, d->keys[i], key)) return &d->vals[i];
    return NULL;
}

jv *edgellm_jinja_dict_get_cstr(const jdict *d, const char *key)
{
    size_t kl = strlen(key);
    for (size_t i = 0; i < d->n; i++)
        if (d->keys[i].t == JV_STR && d->keys[i].u.s->len == kl && !memcmp(d->keys[i].u.s->p, key, kl)) return &d->vals[i];
    return NULL;
}

void edgellm_jinja_dict_set(jctx *c, jdict *d, jv key, jv val)
{
    jv *slot = edgellm_jinja_dict_get(c, d, key);
    if (slot) { *slot = val; return; }
    if (d->n == d->cap) {
        size_t cap = d->cap * 2;
        jv *k = edgellm_jinja_alloc(c, cap * sizeof(jv)), *v = edgellm_jinja_alloc(c, cap * sizeof(jv));
        memcpy(k, d->keys, d->n * sizeof(jv));
        memcpy(v, d->vals, d->n * sizeof(jv));
        d->keys = k;
        d->vals = v;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n] = val;
    d->n++;
}

/* One code point of s at byte i as a string value (spans kept). */
static jv char_at(jctx *c, const jstr *s, size_t i, size_t *next)
{
    uint32_t cp;
    size_t j = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
    jbuf b;
    edgellm_jinja_buf_init(&b);
    edgellm_jinja_buf_put_str(c, &b, s, i, j);
    jv v = {.t = JV_STR};
    v.u.s = edgellm_jinja_buf_finish(c, &b);
    *next = j;
    return v;
}

const jv *edgellm_jinja_iter(jctx *c, jv v, size_t *n)
{
    switch (v.t) {
    case JV_UNDEF:
        if (v.u.u && v.u.u->kind == JU_UNSAFE) edgellm_jinja_undef_fail(c, &v);
        *n = 0;
        return NULL;
    case JV_LIST: {
        jlist *l = v.u.l;
        if (l->kind == JL_GEN) {
            edgellm_jinja_gen_force(c, l);
            size_t from = l->pos;
            l->pos = l->n;
            *n = l->n - from;
            return *n ? l->items + from : NULL;
        }
        *n = l->n;
        return l->items;
    }
    case JV_DICT: {
        *n = v.u.d->n;
        jv *keys = *n ? edgellm_jinja_alloc(c, *n * sizeof(jv)) : NULL;
        if (*n) memcpy(keys, v.u.d->keys, *n * sizeof(jv));
        return keys;
    }
    case JV_STR: {
        const jstr *s = v.u.s;
        size_t cnt = edgellm_jinja_u8_count(s->p, s->len);
        jv *chars = cnt ? edgellm_jinja_alloc(c, cnt * sizeof(jv)) : NULL;
        size_t i = 0;
        for (size_t k = 0; k < cnt; k++) chars[k] = char_at(c, s, i, &i);
        *n = cnt;
        return chars;
    }
    default: edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' object is not iterable", edgellm_jinja_type_name(&v));
    }
}

int64_t edgellm_jinja_len(jctx *c, jv v)
{
    switch (v.t) {
    case JV_UNDEF:
        if (v.u.u && v.u.u->kind == JU_UNSAFE) edgellm_jinja_undef_fail(c, &v);
        return 0;
    case JV_STR: return (int64_t)edgellm_jinja_u8_count(v.u.s->p, v.u.s->len);
    case JV_LIST:
        if (v.u.l->kind != JL_GEN) return (int64_t)v.u.l->n;
        break;
    case JV_DICT: return (int64_t)v.u.d->n;
    default: break;
    }
    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "object of type '%s' has no len()", edgellm_jinja_type_name(&v));
}

/* ---------------------------------------------------------- truth, ==, < ---- */
bool edgellm_jinja_truthy(jctx *c, jv v)
{
    switch (v.t) {
    case JV_UNDEF:
        if (v.u.u && v.u.u->kind == JU_UNSAFE) edgellm_jinja_undef_fail(c, &v);
        return false;
    case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0;
    case JV_STR: return v.u.s->len != 0;
    case JV_LIST: return v.u.l->kind == JL_GEN || v.u.l->n != 0;
    case JV_DICT: return v.u.d->n != 0;
    default: return true;
    }
}

static bool is_num(const jv *v) { return v->t == JV_BOOL || v->t == JV_INT || v->t == JV_FLOAT; }
static int64_t as_int(const jv *v) { return v->t == JV_BOOL ? (int64_t)v->u.b : v->u.i; }

/* Exact comparison of an integer and a double, as Python does: <0, 0, >0 (NaN: 2). */
static int cmp_int_float(int64_t i, double f)
{
    if (isnan(f)) return 2;
    if (f >= 9223372036854775808.0) return -1;
    if (f < -9223372036854775808.0) return 1;
    double fl = floor(f);
    int64_t fi = (int64_t)fl;
    if (i < fi) return -1;
    if (i > fi) return 1;
    return fl == f ? 0 : -1;
}

static int cmp_num(const jv *a, const jv *b)
{
    if (a->t != JV_FLOAT && b->t != JV_FLOAT) {
        int64_t x = as_int(a), y = as_int(b);
        return x < y ? -1 : x > y;
    }
    if (a->t == JV_FLOAT && b->t == JV_FLOAT) {
        if (isnan(a->u.f) || isnan(b->u.f)) return 2;
        return a->u.f < b->u.f ? -1 : a->u.f > b->u.f;
    }
    if (a->t == JV_FLOAT) {
        int r = cmp_int_float(as_int(b), a->u.f);
        return r == 2 ? 2 : -r;
    }
    return cmp_int_float(as_int(a), b->u.f);
}

static int seq_class(const jlist *l)
{
    switch (l->kind) {
    case JL_LIST: return 1;
    case JL_TUPLE: return 2;
    case JL_RANGE: return 3;
    case JL_KEYS: case JL_ITEMS: return 4;   /* set-like views */
    default: return 0;
    }
}

static void deeper(jctx *c)
{
    if (++c->depth > c->lim.max_depth)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "values nested too deep (depth limit %d)", c->lim.max_depth);
}

static bool eq_inner(jctx *c, jv a, jv b);

/* Comparisons count as steps: they are what quadratic filters (unique, dict building)
 * repeat, and the step limit must bound those too. */
static void tick(jctx *c)
{
    if (++c->steps > c->lim.max_steps)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "step limit reached (%llu operations)", (unsigned long long)c->lim.max_steps);
}

bool edgellm_jinja_eq(jctx *c, jv a, jv b)
{
    tick(c);
    if (a.t != JV_LIST && a.t != JV_DICT) return eq_inner(c, a, b);
    deeper(c);
    bool r = eq_inner(c, a, b);
    c->depth--;
    return r;
}

static bool eq_inner(jctx *c, jv a, jv b)
{
    if (is_num(&a) && is_num(&b)) return cmp_num(&a, &b) == 0;
    if (a.t != b.t) return false;
    switch (a.t) {
    case JV_UNDEF: case JV_NONE: return true;
    case JV_STR: return a.u.s->len == b.u.s->len && !memcmp(a.u.s->p, b.u.s->p, a.u.s->len);
    case JV_LIST: {
        const jlist *x = a.u.l, *y = b.u.l;
        if (x == y) return true;
        int k = seq_class(x);
        if (!k || k != seq_class(y) || x->n != y->n) return false;
        if (k == 4) {   /* views compare as sets */
            for (size_t i = 0; i < x->n; i++) {
                bool found = false;
                for (size_t j = 0; j < y->n && !found; j++) found = edgellm_jinja_eq(c, x->items[i], y->items[j]);
                if (!found) return false;
            }
            return true;
        }
        for (size_t i = 0; i < x->n; i++)
            if (!edgellm_jinja_eq(c, x->items[i], y->items[i])) return false;
        return true;
    }
    case JV_DICT: {
        const jdict *x = a.u.d, *y = b.u.d;
        if (x->n != y->n) return false;
        for (size_t i = 0; i < x->n; i++) {
            jv *o = edgellm_jinja_dict_get(c, y, x->keys[i]);
            if (!o || !edgellm_jinja_eq(c, x->vals[i], *o)) return false;
        }
        return true;
    }
    case JV_NS: return a.u.d == b.u.d;
    case JV_FUNC: return a.u.fn == b.u.fn;
    case JV_MACRO: return a.u.m == b.u.m;
    case JV_LOOP: return a.u.loop == b.u.loop;
    default: return false;
    }
}

int edgellm_jinja_cmp(jctx *c, jv a, jv b, const char *op)
{
    tick(c);
    if (a.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &a);
    if (b.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &b);
    if (is_num(&a) && is_num(&b)) return cmp_num(&a, &b);
    if (a.t == JV_STR && b.t == JV_STR) {
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int r = memcmp(a.u.s->p, b.u.s->p, n);
        if (r) return r < 0 ? -1 : 1;
        return a.u.s->len < b.u.s->len ? -1 : a.u.s->len > b.u.s->len;
    }
    if (a.t == JV_LIST && b.t == JV_LIST && seq_class(a.u.l) && seq_class(a.u.l) == seq_class(b.u.l) &&
        seq_class(a.u.l) <= 2) {
        const jlist *x = a.u.l, *y = b.u.l;
        deeper(c);
        for (size_t i = 0; i < x->n && i < y->n; i++) {
            if (edgellm_jinja_eq(c, x->items[i], y->items[i])) continue;
            int r = edgellm_jinja_cmp(c, x->items[i], y->items[i], op);
            c->depth--;
            return r;
        }
        c->depth--;
        return x->n < y->n ? -1 : x->n > y->n;
    }
    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' not supported between instances of '%s' and '%s'", op,
                        edgellm_jinja_type_name(&a), edgellm_jinja_type_name(&b));
}

/* ------------------------------------------------------------ str, repr ---- */
void edgellm_jinja_float_repr(double f, char buf[32])
{
    if (isnan(f)) { strcpy(buf, "nan"); return; }
    if (isinf(f)) { strcpy(buf, f < 0 ? "-inf" : "inf"); return; }
    if (f == 0) { strcpy(buf, signbit(f) ? "-0.0" : "0.0"); return; }
    char tmp[48];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f) break;
    }
    /* tmp: [-]d[<point>ddd]e(+|-)dd, the point in the current locale */
    char digits[24];
    int nd = 0, exp10 = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg) p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9' && nd < 20) digits[nd++] = *p;
    if (*p == 'e') exp10 = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    char *o = buf;
    if (neg) *o++ = '-';
    if (exp10 < -4 || exp10 >= 16) {
        *o++ = digits[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, digits + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        o += sprintf(o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    } else if (exp10 >= 0) {
        for (int i = 0; i <= exp10; i++) *o++ = i < nd ? digits[i] : '0';
        *o++ = '.';
        if (nd > exp10 + 1) {
            memcpy(o, digits + exp10 + 1, (size_t)(nd - exp10 - 1));
            o += nd - exp10 - 1;
        } else *o++ = '0';
    } else {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -exp10 - 1; i++) *o++ = '0';
        memcpy(o, digits, (size_t)nd);
        o += nd;
    }
    *o = 0;
}

static void put_cstr(jctx *c, jbuf *b, const char *s)
{
    edgellm_jinja_buf_put(c, b, s, strlen(s), false);
}

static void repr_str(jctx *c, jbuf *b, const jstr *s)
{
    bool sq = memchr(s->p, '\'', s->len) != NULL, dq = memchr(s->p, '"', s->len) != NULL;
    char q = sq && !dq ? '"' : '\'';
    bool taint = edgellm_jinja_str_tainted(s);
    edgellm_jinja_buf_putc(c, b, q);
    for (size_t i = 0; i < s->len;) {
        uint32_t cp;
        size_t j = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
        char esc[16];
        const char *e = NULL;
        if (cp == '\\') e = "\\\\";
        else if (cp == (uint32_t)q) e = q == '\'' ? "\\'" : "\\\"";
        else if (cp == '\t') e = "\\t";
        else if (cp == '\n') e = "\\n";
        else if (cp == '\r') e = "\\r";
        else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && !edgellm_jinja_printable(cp))) {
            snprintf(esc, sizeof esc, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
            e = esc;
        }
        if (e) edgellm_jinja_buf_put(c, b, e, strlen(e), taint);
        else edgellm_jinja_buf_put(c, b, s->p + i, j - i, taint);
        i = j;
    }
    edgellm_jinja_buf_putc(c, b, q);
}

static void repr_items(jctx *c, jbuf *b, const jv *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i) put_cstr(c, b, ", ");
        edgellm_jinja_repr(c, b, items[i]);
    }
}

static void repr_dict(jctx *c, jbuf *b, const jdict *d)
{
    edgellm_jinja_buf_putc(c, b, '{');
    for (size_t i = 0; i < d->n; i++) {
        if (i) put_cstr(c, b, ", ");
        edgellm_jinja_repr(c, b, d->keys[i]);
        put_cstr(c, b, ": ");
        edgellm_jinja_repr(c, b, d->vals[i]);
    }
    edgellm_jinja_buf_putc(c, b, '}');
}

static void repr_inner(jctx *c, jbuf *b, jv v);

void edgellm_jinja_repr(jctx *c, jbuf *b, jv v)
{
    deeper(c);
    repr_inner(c, b, v);
    c->depth--;
}

static void repr_inner(jctx *c, jbuf *b, jv v)
{
    char num[32];
    switch (v.t) {
    case JV_UNDEF:
        if (v.u.u && v.u.u->kind == JU_UNSAFE) edgellm_jinja_undef_fail(c, &v);
        put_cstr(c, b, "Undefined");
        return;
    case JV_NONE: put_cstr(c, b, "None"); return;
    case JV_BOOL: put_cstr(c, b, v.u.b ? "True" : "False"); return;
    case JV_INT: snprintf(num, sizeof num, "%lld", (long long)v.u.i); put_cstr(c, b, num); return;
    case JV_FLOAT: edgellm_jinja_float_repr(v.u.f, num); put_cstr(c, b, num); return;
    case JV_STR:
        if (v.safe) put_cstr(c, b, "Markup(");
        repr_str(c, b, v.u.s);
        if (v.safe) edgellm_jinja_buf_putc(c, b, ')');
        return;
    case JV_DICT: repr_dict(c, b, v.u.d); return;
    case JV_NS:
        put_cstr(c, b, "<Namespace ");
        repr_dict(c, b, v.u.d);
        edgellm_jinja_buf_putc(c, b, '>');
        return;
    case JV_LIST: {
        const jlist *l = v.u.l;
        switch (l->kind) {
        case JL_LIST:
            edgellm_jinja_buf_putc(c, b, '[');
            repr_items(c, b, l->items, l->n);
            edgellm_jinja_buf_putc(c, b, ']');
            return;
        case JL_TUPLE:
            edgellm_jinja_buf_putc(c, b, '(');
            repr_items(c, b, l->items, l->n);
            if (l->n == 1) edgellm_jinja_buf_putc(c, b, ',');
            edgellm_jinja_buf_putc(c, b, ')');
            return;
        case JL_RANGE:
            snprintf(num, sizeof num, "range(%lld, ", (long long)l->r_start);
            put_cstr(c, b, num);
            snprintf(num, sizeof num, "%lld", (long long)l->r_stop);
            put_cstr(c, b, num);
            if (l->r_step != 1) {
                snprintf(num, sizeof num, ", %lld", (long long)l->r_step);
                put_cstr(c, b, num);
            }
            edgellm_jinja_buf_putc(c, b, ')');
            return;
        case JL_ITEMS: case JL_KEYS: case JL_VALUES:
            put_cstr(c, b, l->kind == JL_ITEMS ? "dict_items([" : l->kind == JL_KEYS ? "dict_keys([" : "dict_values([");
            repr_items(c, b, l->items, l->n);
            put_cstr(c, b, "])");
            return;
        default: break;
        }
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "printing a generator (Python prints its address): add |list");
    }
    default:
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "printing a %s is not supported", edgellm_jinja_type_name(&v));
    }
}

jstr *edgellm_jinja_to_str(jctx *c, jv v)
{
    if (v.t == JV_STR) return v.u.s;
    if (v.t == JV_UNDEF) {
        if (v.u.u && v.u.u->kind == JU_UNSAFE) edgellm_jinja_undef_fail(c, &v);
        return edgellm_jinja_str_new(c, "", 0, false);
    }
    jbuf b;
    edgellm_jinja_buf_init(&b);
    edgellm_jinja_repr(c, &b, v);
    return edgellm_jinja_buf_finish(c, &b);
}

/* ------------------------------------------------------------------- JSON ---- */
static void json_str(jctx *c, jbuf *b, const jstr *s, bool ensure_ascii)
{
    bool taint = edgellm_jinja_str_tainted(s);
    edgellm_jinja_buf_putc(c, b, '"');
    for (size_t i = 0; i < s->len;) {
        uint32_t cp;
        size_t j = edgellm_jinja_u8_next(s->p, s->len, i, &cp);
        char esc[16];
        const char *e = NULL;
        switch (cp) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default:
            if (cp < 0x20 || (ensure_ascii && cp > 0x7E)) {
                if (cp >= 0x10000) {
                    uint32_t v = cp - 0x10000;
                    snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
                } else snprintf(esc, sizeof esc, "\\u%04x", cp);
                e = esc;
            }
        }
        if (e) edgellm_jinja_buf_put(c, b, e, strlen(e), taint);
        else edgellm_jinja_buf_put(c, b, s->p + i, j - i, taint);
        i = j;
    }
    edgellm_jinja_buf_putc(c, b, '"');
}

_Noreturn static void json_type_error(jctx *c, const jv *v)
{
    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "Object of type %s is not JSON serializable", edgellm_jinja_type_name(v));
}

static void json_newline(jctx *c, jbuf *b, const jstr *indent, int level)
{
    edgellm_jinja_buf_putc(c, b, '\n');
    for (int i = 0; i < level; i++) edgellm_jinja_buf_put(c, b, indent->p, indent->len, false);
}

static void json_float(jctx *c, jbuf *b, double f)
{
    char num[32];
    if (isnan(f)) strcpy(num, "NaN");
    else if (isinf(f)) strcpy(num, f < 0 ? "-Infinity" : "Infinity");
    else edgellm_jinja_float_repr(f, num);
    put_cstr(c, b, num);
}

void edgellm_jinja_json(jctx *c, jbuf *b, jv v, bool ensure_ascii, const jstr *indent, const jstr *item_sep,
                        const jstr *key_sep, bool sort_keys, int level)
{
    char num[32];
    deeper(c);
    switch (v.t) {
    case JV_NONE: put_cstr(c, b, "null"); break;
    case JV_BOOL: put_cstr(c, b, v.u.b ? "true" : "false"); break;
    case JV_INT: snprintf(num, sizeof num, "%lld", (long long)v.u.i); put_cstr(c, b, num); break;
    case JV_FLOAT: json_float(c, b, v.u.f); break;
    case JV_STR: json_str(c, b, v.u.s, ensure_ascii); break;
    case JV_LIST: {
        const jlist *l = v.u.l;
        if (l->kind != JL_LIST && l->kind != JL_TUPLE) json_type_error(c, &v);
        if (!l->n) { put_cstr(c, b, "[]"); break; }
        edgellm_jinja_buf_putc(c, b, '[');
        for (size_t i = 0; i < l->n; i++) {
            if (i) edgellm_jinja_buf_put(c, b, item_sep->p, item_sep->len, false);
            if (indent) json_newline(c, b, indent, level + 1);
            edgellm_jinja_json(c, b, l->items[i], ensure_ascii, indent, item_sep, key_sep, sort_keys, level + 1);
        }
        if (indent) json_newline(c, b, indent, level);
        edgellm_jinja_buf_putc(c, b, ']');
        break;
    }
    case JV_DICT: {
        const jdict *d = v.u.d;
        if (!d->n) { put_cstr(c, b, "{}"); break; }
        size_t *order = edgellm_jinja_alloc(c, d->n * sizeof *order);
        for (size_t i = 0; i < d->n; i++) order[i] = i;
        if (sort_keys)   /* insertion sort: stable, and dicts in templates are small */
            for (size_t i = 1; i < d->n; i++)
                for (size_t j = i; j > 0 && edgellm_jinja_cmp(c, d->keys[order[j]], d->keys[order[j - 1]], "<") < 0; j--) {
                    size_t t = order[j];
                    order[j] = order[j - 1];
                    order[j - 1] = t;
                }
        edgellm_jinja_buf_putc(c, b, '{');
        for (size_t i = 0; i < d->n; i++) {
            const jv *k = &d->keys[order[i]];
            if (i) edgellm_jinja_buf_put(c, b, item_sep->p, item_sep->len, false);
            if (indent) json_newline(c, b, indent, level + 1);
            switch (k->t) {
            case JV_STR: json_str(c, b, k->u.s, ensure_ascii); break;
            case JV_NONE: put_cstr(c, b, "\"null\""); break;
            case JV_BOOL: put_cstr(c, b, k->u.b ? "\"true\"" : "\"false\""); break;
            case JV_INT: snprintf(num, sizeof num, "\"%lld\"", (long long)k->u.i); put_cstr(c, b, num); break;
            case JV_FLOAT:
                edgellm_jinja_buf_putc(c, b, '"');
                json_float(c, b, k->u.f);
                edgellm_jinja_buf_putc(c, b, '"');
                break;
            default:
                edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "keys must be str, int, float, bool or None, not %s",
                                    edgellm_jinja_type_name(k));
            }
            edgellm_jinja_buf_put(c, b, key_sep->p, key_sep->len, false);
            edgellm_jinja_json(c, b, d->vals[order[i]], ensure_ascii, indent, item_sep, key_sep, sort_keys, level + 1);
        }
        if (indent) json_newline(c, b, indent, level);
        edgellm_jinja_buf_putc(c, b, '}');
        break;
    }
    default: json_type_error(c, &v);
    }
    c->depth--;
}

/* ------------------------------------------------- numbers from strings ---- */
/* Python float() of a string: [ws][sign](digits[_digits][.digits]|.digits)[e[sign]digits] |
 * inf | infinity | nan [ws]; false when it is not one. */
bool edgellm_jinja_parse_float(const jstr *s, double *out)
{
    size_t b = 0, e = s->len;
    uint32_t cp;
    while (b < e && (edgellm_jinja_u8_next(s->p, e, b, &cp), edgellm_jinja_isspace(cp))) b = edgellm_jinja_u8_next(s->p, e, b, &cp);
    while (e > b) {
        size_t k = e - 1;
        while (k > b && ((unsigned char)s->p[k] & 0xC0) == 0x80) k--;
        edgellm_jinja_u8_next(s->p, s->len, k, &cp);
        if (!edgellm_jinja_isspace(cp)) break;
        e = k;
    }
    char buf[512];
    size_t o = 0, i = b;
    if (e - b >= sizeof buf) return false;
    if (i < e && (s->p[i] == '+' || s->p[i] == '-')) buf[o++] = s->p[i++];
    size_t rest = e - i;
    const char *words[] = {"inf", "infinity", "nan"};
    for (int w = 0; w < 3; w++)
        if (rest == strlen(words[w]) && !strncasecmp(s->p + i, words[w], rest)) {
            double v = w == 2 ? NAN : INFINITY;
            *out = o && buf[0] == '-' ? -v : v;
            return true;
        }
    bool digits = false, prev_digit = false;
    int part = 0;   /* 0 mantissa, 1 fraction, 2 exponent */
    for (; i < e; i++) {
        char ch = s->p[i];
        if (ch >= '0' && ch <= '9') { buf[o++] = ch; digits = prev_digit = true; continue; }
        if (ch == '_' && prev_digit && i + 1 < e && s->p[i + 1] >= '0' && s->p[i + 1] <= '9') { prev_digit = false; continue; }
        prev_digit = false;
        if (ch == '.' && part == 0) { buf[o++] = '.'; part = 1; continue; }
        if ((ch == 'e' || ch == 'E') && part < 2 && digits) {
            buf[o++] = 'e';
            part = 2;
            digits = false;
            if (i + 1 < e && (s->p[i + 1] == '+' || s->p[i + 1] == '-')) buf[o++] = s->p[++i];
            continue;
        }
        return false;
    }
    if (!digits) return false;
    buf[o] = 0;
    const char *dp = localeconv()->decimal_point;
    if (dp && !(dp[0] == '.' && !dp[1])) {
        char *p = strchr(buf, '.');
        if (p) {
            char tmp[600];
            snprintf(tmp, sizeof tmp, "%.*s%s%s", (int)(p - buf), buf, dp, p + 1);
            *out = strtod(tmp, NULL);
            return true;
        }
    }
    *out = strtod(buf, NULL);
    return true;
}

/* Python int(s, base) for a string; false when it is not one. */
bool edgellm_jinja_parse_int(const jstr *s, int64_t base, int64_t *out, bool *overflow)
{
    *overflow = false;
    size_t b = 0, e = s->len;
    uint32_t cp;
    while (b < e && (edgellm_jinja_u8_next(s->p, e, b, &cp), edgellm_jinja_isspace(cp))) b = edgellm_jinja_u8_next(s->p, e, b, &cp);
    while (e > b && ((unsigned char)s->p[e - 1] < 0x80) && edgellm_jinja_isspace((unsigned char)s->p[e - 1])) e--;
    bool neg = false;
    if (b < e && (s->p[b] == '+' || s->p[b] == '-')) neg = s->p[b++] == '-';
    if (base != 0 && (base < 2 || base > 36)) return false;
    if (b + 1 < e && s->p[b] == '0') {
        char k = (char)(s->p[b + 1] | 0x20);
        int pb = k == 'x' ? 16 : k == 'o' ? 8 : k == 'b' ? 2 : 0;
        if (pb && (base == 0 || base == pb)) { base = pb; b += 2; if (b < e && s->p[b] == '_') b++; }
    }
    if (base == 0) {
        base = 10;
        if (b < e && s->p[b] == '0') {   /* base 0: no leading zeros unless the number is 0 */
            for (size_t k = b; k < e; k++)
                if (s->p[k] != '0' && s->p[k] != '_') return false;
        }
    }
    if (b >= e) return false;
    uint64_t acc = 0;
    bool prev_digit = false;
    for (size_t i = b; i < e; i++) {
        char ch = s->p[i];
        if (ch == '_' && prev_digit && i + 1 < e) { prev_digit = false; continue; }
        int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z' ? (ch | 0x20) - 'a' + 10 : 99;
        if (d >= base) return false;
        if (acc > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) *overflow = true;
        acc = acc * (uint64_t)base + (uint64_t)d;
        prev_digit = true;
    }
    if (!prev_digit) return false;
    if (acc > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) *overflow = true;
    *out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
    return true;
}
