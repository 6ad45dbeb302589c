/*
 * jinja_ops.c — what the operators of a Jinja expression do to values: attribute and item
 * access through ImmutableSandboxedEnvironment's rules (jinja2/sandbox.py), slicing,
 * arithmetic, concatenation and membership, with Python's semantics
 * (https://docs.python.org/3/reference/expressions.html).
 *
 * Sandbox: methods that would modify a list or dict are refused, and so is every attribute
 * whose name starts with "__" (Python internals such as __class__): the sandbox returns an
 * undefined value that fails when used; here any use of it is an EDGELLM_ERR_UNSUPPORTED
 * error naming the attribute.
 */
#include "jinja_int.h"
#include <math.h>
#include <stdlib.h>

/* ------------------------------------------------------------- attributes ---- */
static const char *const DICT_UNSAFE[] = {"clear", "copy", "fromkeys", "pop", "popitem", "setdefault", "update", NULL};
static const char *const LIST_UNSAFE[] = {"append", "clear", "copy", "extend", "insert", "pop", "remove", "reverse",
                                          "sort", NULL};

static bool in_list(const char *const *l, const char *s)
{
    for (; *l; l++)
        if (!strcmp(*l, s)) return true;
    return false;
}

static jv unsafe(jctx *c, const jv *obj, const char *name)
{
    size_t n = strlen(name) + 96;
    char *msg = edgellm_jinja_alloc(c, n);
    snprintf(msg, n, "access to attribute '%s' of '%s' object is unsafe", name, edgellm_jinja_type_name(obj));
    return edgellm_jinja_undef(c, JU_UNSAFE, NULL, msg, NULL);
}

static jv loop_attr(jctx *c, jv obj, const char *name)
{
    const jloop *l = obj.u.loop;
    int64_t i = l->index0, n = l->length;
    if (!strcmp(name, "index")) return jv_int(i + 1);
    if (!strcmp(name, "index0")) return jv_int(i);
    if (!strcmp(name, "revindex")) return jv_int(n - i);
    if (!strcmp(name, "revindex0")) return jv_int(n - i - 1);
    if (!strcmp(name, "first")) return jv_bool(i == 0);
    if (!strcmp(name, "last")) return jv_bool(i == n - 1);
    if (!strcmp(name, "length")) return jv_int(n);
    if (!strcmp(name, "depth")) return jv_int(l->depth);
    if (!strcmp(name, "depth0")) return jv_int(l->depth - 1);
    if (!strcmp(name, "previtem"))
        return i > 0 ? l->items[i - 1] : edgellm_jinja_undef(c, JU_HINT, NULL, "there is no previous item", NULL);
    if (!strcmp(name, "nextitem"))
        return i + 1 < n ? l->items[i + 1] : edgellm_jinja_undef(c, JU_HINT, NULL, "there is no next item", NULL);
    jv m;
    if (edgellm_jinja_method(c, obj, name, &m)) return m;
    return edgellm_jinja_undef(c, JU_ATTR, &obj, name, NULL);
}

/* Jinja's sandboxed getattr: a Python attribute first, then the item. */
jv edgellm_jinja_getattr(jctx *c, jv obj, const char *name)
{
    if (obj.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &obj);
    if (name[0] == '_' && name[1] == '_') {
        if ((obj.t == JV_DICT || obj.t == JV_NS) && edgellm_jinja_dict_get_cstr(obj.u.d, name))
            return *edgellm_jinja_dict_get_cstr(obj.u.d, name);
        return unsafe(c, &obj, name);
    }
    jv m;
    switch (obj.t) {
    case JV_DICT:
        if (edgellm_jinja_method(c, obj, name, &m)) return m;
        if (in_list(DICT_UNSAFE, name)) return unsafe(c, &obj, name);
        /* fall through */
    case JV_NS: {
        jv *v = edgellm_jinja_dict_get_cstr(obj.u.d, name);
        if (v) return *v;
        break;
    }
    case JV_STR:
        if (edgellm_jinja_method(c, obj, name, &m)) return m;
        break;
    case JV_LIST:
        if (edgellm_jinja_method(c, obj, name, &m)) return m;
        if (in_list(LIST_UNSAFE, name) && obj.u.l->kind == JL_LIST) return unsafe(c, &obj, name);
        break;
    case JV_LOOP: return loop_attr(c, obj, name);
    default: break;
    }
    return edgellm_jinja_undef(c, JU_ATTR, &obj, name, NULL);
}

/* Byte offset of code point k in s (k <= count). */
static size_t cp_offset(const jstr *s, size_t k)
{
    size_t i = 0;
    while (k && i < s->len) {
        i++;
        while (i < s->len && ((unsigned char)s->p[i] & 0xC0) == 0x80) i++;
        k--;
    }
    return i;
}

static bool int_key(const jv *k, int64_t *i)
{
    if (k->t == JV_INT) { *i = k->u.i; return true; }
    if (k->t == JV_BOOL) { *i = k->u.b; return true; }
    return false;
}

jv edgellm_jinja_getitem(jctx *c, jv obj, jv key)
{
    if (obj.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &obj);
    int64_t i;
    switch (obj.t) {
    case JV_DICT: {
        if (key.t != JV_LIST || key.u.l->kind != JL_LIST) {
            jv *v = edgellm_jinja_dict_get(c, obj.u.d, key);
            if (v) return *v;
        }
        break;
    }
    case JV_LIST:
        if (obj.u.l->kind != JL_GEN && obj.u.l->kind != JL_ITEMS && obj.u.l->kind != JL_KEYS &&
            obj.u.l->kind != JL_VALUES && int_key(&key, &i)) {
            int64_t n = (int64_t)obj.u.l->n;
            if (i < 0) i += n;
            if (i >= 0 && i < n) return obj.u.l->items[i];
            return edgellm_jinja_undef(c, JU_ELEMENT, &obj, NULL, &key);
        }
        break;
    case JV_STR:
        if (int_key(&key, &i)) {
            const jstr *s = obj.u.s;
            int64_t n = (int64_t)edgellm_jinja_u8_count(s->p, s->len);
            if (i < 0) i += n;
            if (i >= 0 && i < n) {
                size_t b = cp_offset(s, (size_t)i), e = cp_offset(s, (size_t)i + 1);
                jbuf buf;
                edgellm_jinja_buf_init(&buf);
                edgellm_jinja_buf_put_str(c, &buf, s, b, e);
                jv v = {.t = JV_STR};
                v.u.s = edgellm_jinja_buf_finish(c, &buf);
                return v;
            }
            return edgellm_jinja_undef(c, JU_ELEMENT, &obj, NULL, &key);
        }
        break;
    default: break;
    }
    if (key.t == JV_STR) {   /* Jinja falls back to the attribute */
        if (memchr(key.u.s->p, 0, key.u.s->len)) return edgellm_jinja_undef(c, JU_ATTR, &obj, "\\x00", NULL);
        if (obj.t == JV_DICT) {
            jv m;
            if (key.u.s->p[0] == '_' && key.u.s->p[1] == '_') return unsafe(c, &obj, key.u.s->p);
            if (edgellm_jinja_method(c, obj, key.u.s->p, &m)) return m;
            return edgellm_jinja_undef(c, JU_ATTR, &obj, key.u.s->p, NULL);
        }
        return edgellm_jinja_getattr(c, obj, key.u.s->p);
    }
    return edgellm_jinja_undef(c, JU_ELEMENT, &obj, NULL, &key);
}

/* Python's PySlice_AdjustIndices. */
static int64_t slice_count(int64_t len, bool has_start, int64_t start, bool has_stop, int64_t stop, int64_t step,
                           int64_t *first)
{
    int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? len : len - 1;
    if (!has_start) start = step < 0 ? upper : lower;
    else if (start < 0) { start += len; if (start < lower) start = lower; }
    else if (start > upper) start = upper;
    if (!has_stop) stop = step < 0 ? lower : upper;
    else if (stop < 0) { stop += len; if (stop < lower) stop = lower; }
    else if (stop > upper) stop = upper;
    *first = start;
    if (step > 0) return start < stop ? (stop - start - 1) / step + 1 : 0;
    return stop < start ? (start - stop - 1) / (-step) + 1 : 0;
}

jv edgellm_jinja_slice(jctx *c, jv obj, jv start, jv stop, jv step)
{
    if (obj.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &obj);
    int64_t a = 0, b = 0, st = 1;
    bool ha = start.t != JV_NONE && start.t != JV_UNDEF, hb = stop.t != JV_NONE && stop.t != JV_UNDEF;
    bool ok = (!ha || int_key(&start, &a)) && (!hb || int_key(&stop, &b)) &&
              (step.t == JV_NONE || step.t == JV_UNDEF || int_key(&step, &st));
    bool seq = obj.t == JV_STR || (obj.t == JV_LIST && (obj.u.l->kind == JL_LIST || obj.u.l->kind == JL_TUPLE ||
                                                        obj.u.l->kind == JL_RANGE));
    /* Jinja compiles a slice to obj[a:b:c] itself, not through the sandbox's getitem: Python's
     * errors come through */
    if (obj.t == JV_DICT) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "unhashable type: 'slice'");
    if (!seq) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'%s' object is not subscriptable", edgellm_jinja_type_name(&obj));
    if (!ok) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "slice indices must be integers or None or have an __index__ method");
    if (st == 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "slice step cannot be zero");
    if (st == INT64_MIN) st = -INT64_MAX;
    int64_t first;
    if (obj.t == JV_STR) {
        const jstr *s = obj.u.s;
        bool ascii = edgellm_jinja_u8_count(s->p, s->len) == s->len;
        int64_t len = (int64_t)edgellm_jinja_u8_count(s->p, s->len);
        int64_t n = slice_count(len, ha, a, hb, b, st, &first);
        jbuf buf;
        edgellm_jinja_buf_init(&buf);
        if (st == 1) {
            size_t from = ascii ? (size_t)first : cp_offset(s, (size_t)first);
            size_t to = ascii ? (size_t)(first + n) : cp_offset(s, (size_t)(first + n));
            edgellm_jinja_buf_put_str(c, &buf, s, from, to);
        } else {
            size_t *offs = NULL;
            if (!ascii) {   /* code point k starts at offs[k] */
                offs = edgellm_jinja_alloc(c, ((size_t)len + 1) * sizeof *offs);
                size_t i = 0;
                for (int64_t k = 0; k <= len; k++) {
                    offs[k] = i;
                    if (i < s->len) { i++; while (i < s->len && ((unsigned char)s->p[i] & 0xC0) == 0x80) i++; }
                }
            }
            for (int64_t k = 0; k < n; k++) {
                int64_t idx = first + k * st;   /* inside [0, len): no overflow */
                size_t from = ascii ? (size_t)idx : offs[idx], to = ascii ? (size_t)idx + 1 : offs[idx + 1];
                edgellm_jinja_buf_put_str(c, &buf, s, from, to);
            }
        }
        jv v = {.t = JV_STR};
        v.u.s = edgellm_jinja_buf_finish(c, &buf);
        return v;
    }
    const jlist *l = obj.u.l;
    int64_t n = slice_count((int64_t)l->n, ha, a, hb, b, st, &first);
    jlist *r = edgellm_jinja_list_new(c, (size_t)n, l->kind == JL_RANGE ? JL_LIST : (jl_kind)l->kind);
    for (int64_t k = 0; k < n; k++) r->items[k] = l->items[first + k * st];
    if (l->kind == JL_RANGE) {   /* a range sliced is a range */
        r->kind = JL_RANGE;
        r->r_step = l->r_step * st;
        r->r_start = n ? r->items[0].u.i : l->r_start;
        r->r_stop = n ? r->items[n - 1].u.i + r->r_step : r->r_start;
    }
    jv v = {.t = JV_LIST};
    v.u.l = r;
    return v;
}

/* -------------------------------------------------------------- operators ---- */
static bool is_num(const jv *v) { return v->t == JV_BOOL || v->t == JV_INT || v->t == JV_FLOAT; }
static double as_f(const jv *v) { return v->t == JV_FLOAT ? v->u.f : v->t == JV_BOOL ? v->u.b : (double)v->u.i; }
static int64_t as_i(const jv *v) { return v->t == JV_BOOL ? v->u.b : v->u.i; }

static const char *opname(int op)
{
    switch (op) {
    case JO_ADD: return "+";
    case JO_SUB: return "-";
    case JO_MUL: return "*";
    case JO_DIV: return "/";
    case JO_FLOORDIV: return "//";
    case JO_MOD: return "%";
    case JO_POW: return "** or pow()";
    default: return "?";
    }
}

_Noreturn static void operand_error(jctx *c, int op, const jv *a, const jv *b)
{
    if (op == JO_ADD && a->t == JV_STR)
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "can only concatenate str (not \"%s\") to str", edgellm_jinja_type_name(b));
    if (op == JO_ADD && a->t == JV_LIST && (a->u.l->kind == JL_LIST || a->u.l->kind == JL_TUPLE))
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "can only concatenate %s (not \"%s\") to %s", edgellm_jinja_type_name(a),
                            edgellm_jinja_type_name(b), edgellm_jinja_type_name(a));
    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "unsupported operand type(s) for %s: '%s' and '%s'", opname(op),
                        edgellm_jinja_type_name(a), edgellm_jinja_type_name(b));
}

_Noreturn static void overflow(jctx *c)
{
    edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "integer overflow (edgellm's integers are 64-bit)");
}

/* Python's float floor division and modulo (Objects/floatobject.c, _float_div_mod). */
static void float_divmod(double vx, double wx, double *floordiv, double *mod)
{
    double m = fmod(vx, wx);
    double div = (vx - m) / wx;
    if (m != 0) {
        if ((wx < 0) != (m < 0)) { m += wx; div -= 1.0; }
    } else m = copysign(0.0, wx);
    double fd;
    if (div != 0) {
        fd = floor(div);
        if (div - fd > 0.5) fd += 1.0;
    } else fd = copysign(0.0, vx / wx);
    *floordiv = fd;
    *mod = m;
}

/* Markup semantics: a Markup string joined with a plain one escapes the plain one. */
static jv str_join2(jctx *c, jv a, jv b)
{
    const jstr *x = a.u.s, *y = b.u.s;
    bool safe = a.safe || b.safe;
    if (safe && !a.safe) x = edgellm_jinja_escape(c, x);
    if (safe && !b.safe) y = edgellm_jinja_escape(c, y);
    jbuf buf;
    edgellm_jinja_buf_init(&buf);
    edgellm_jinja_buf_put_str(c, &buf, x, 0, x->len);
    edgellm_jinja_buf_put_str(c, &buf, y, 0, y->len);
    jv v = {.t = JV_STR, .safe = safe};
    v.u.s = edgellm_jinja_buf_finish(c, &buf);
    return v;
}

static jv repeat(jctx *c, jv seq, int64_t times)
{
    if (times < 0) times = 0;
    if (seq.t == JV_STR) {
        const jstr *s = seq.u.s;
        if (!s->len) times = 0;   /* '' * 10**18 is '' at once */
        if (times && s->len > c->arena.limit / (uint64_t)times)
            edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "memory limit reached (%zu bytes)", c->arena.limit);
        jbuf buf;
        edgellm_jinja_buf_init(&buf);
        for (int64_t k = 0; k < times; k++) edgellm_jinja_buf_put_str(c, &buf, s, 0, s->len);
        jv v = {.t = JV_STR, .safe = seq.safe};
        v.u.s = edgellm_jinja_buf_finish(c, &buf);
        return v;
    }
    const jlist *l = seq.u.l;
    if (!l->n) times = 0;
    if (times && l->n > c->arena.limit / sizeof(jv) / (uint64_t)times)
        edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "memory limit reached (%zu bytes)", c->arena.limit);
    jlist *r = edgellm_jinja_list_new(c, l->n * (size_t)times, (jl_kind)l->kind);
    for (int64_t k = 0; k < times && l->n; k++) memcpy(r->items + (size_t)k * l->n, l->items, l->n * sizeof(jv));
    jv v = {.t = JV_LIST};
    v.u.l = r;
    return v;
}

jv edgellm_jinja_binop(jctx *c, int op, jv a, jv b)
{
    if (a.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &a);
    if (b.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &b);
    if (is_num(&a) && is_num(&b)) {
        bool fl = a.t == JV_FLOAT || b.t == JV_FLOAT;
        int64_t x = as_i(&a), y = as_i(&b), r;
        double fx = as_f(&a), fy = as_f(&b);
        switch (op) {
        case JO_ADD:
            if (fl) return jv_float(fx + fy);
            if (__builtin_add_overflow(x, y, &r)) overflow(c);
            return jv_int(r);
        case JO_SUB:
            if (fl) return jv_float(fx - fy);
            if (__builtin_sub_overflow(x, y, &r)) overflow(c);
            return jv_int(r);
        case JO_MUL:
            if (fl) return jv_float(fx * fy);
            if (__builtin_mul_overflow(x, y, &r)) overflow(c);
            return jv_int(r);
        case JO_DIV:
            if (fy == 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, fl ? "float division by zero" : "division by zero");
            return jv_float(fx / fy);
        case JO_FLOORDIV:
        case JO_MOD:
            if (fl) {
                if (fy == 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, op == JO_MOD ? "float modulo" : "float floor division by zero");
                double fd, m;
                float_divmod(fx, fy, &fd, &m);
                return jv_float(op == JO_MOD ? m : fd);
            }
            if (y == 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, op == JO_MOD ? "integer modulo by zero" : "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) {
                if (op == JO_MOD) return jv_int(0);
                overflow(c);
            }
            {
                int64_t q = x / y, m = x % y;
                if (m != 0 && ((m < 0) != (y < 0))) { q--; m += y; }
                return jv_int(op == JO_MOD ? m : q);
            }
        case JO_POW:
            if (!fl && y >= 0) {
                int64_t acc = 1, base = x;
                for (int64_t e = y; e > 0; e >>= 1) {
                    if (e & 1 && __builtin_mul_overflow(acc, base, &acc)) overflow(c);
                    if (e > 1 && __builtin_mul_overflow(base, base, &base)) overflow(c);
                }
                return jv_int(acc);
            }
            if (fx == 0 && fy < 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "0.0 cannot be raised to a negative power");
            if (fx < 0 && fy != floor(fy))
                edgellm_jinja_rfail(c, EDGELLM_ERR_UNSUPPORTED, "a negative number to a fractional power is complex");
            return jv_float(pow(fx, fy));
        default: break;
        }
    }
    if (op == JO_ADD && a.t == JV_STR && b.t == JV_STR) return str_join2(c, a, b);
    if (op == JO_ADD && a.t == JV_LIST && b.t == JV_LIST && a.u.l->kind == b.u.l->kind &&
        (a.u.l->kind == JL_LIST || a.u.l->kind == JL_TUPLE)) {
        const jlist *x = a.u.l, *y = b.u.l;
        jlist *r = edgellm_jinja_list_new(c, x->n + y->n, (jl_kind)x->kind);
        if (x->n) memcpy(r->items, x->items, x->n * sizeof(jv));
        if (y->n) memcpy(r->items + x->n, y->items, y->n * sizeof(jv));
        jv v = {.t = JV_LIST};
        v.u.l = r;
        return v;
    }
    if (op == JO_MUL) {
        bool sa = a.t == JV_STR || (a.t == JV_LIST && (a.u.l->kind == JL_LIST || a.u.l->kind == JL_TUPLE));
        bool sb = b.t == JV_STR || (b.t == JV_LIST && (b.u.l->kind == JL_LIST || b.u.l->kind == JL_TUPLE));
        if (sa && (b.t == JV_INT || b.t == JV_BOOL)) return repeat(c, a, as_i(&b));
        if (sb && (a.t == JV_INT || a.t == JV_BOOL)) return repeat(c, b, as_i(&a));
    }
    if (op == JO_MOD && a.t == JV_STR) return edgellm_jinja_str_format(c, a, b);
    operand_error(c, op, &a, &b);
}

/* `a ~ b ~ c`: Jinja's str_join without autoescape (plain str(), no Markup escaping). */
jv edgellm_jinja_concat(jctx *c, const jv *vals, int n)
{
    jbuf buf;
    edgellm_jinja_buf_init(&buf);
    for (int i = 0; i < n; i++) {
        const jstr *s = edgellm_jinja_to_str(c, vals[i]);
        edgellm_jinja_buf_put_str(c, &buf, s, 0, s->len);
    }
    jv v = {.t = JV_STR};
    v.u.s = edgellm_jinja_buf_finish(c, &buf);
    return v;
}

bool edgellm_jinja_contains(jctx *c, jv container, jv item)
{
    switch (container.t) {
    case JV_UNDEF:
        if (container.u.u && container.u.u->kind == JU_UNSAFE) edgellm_jinja_undef_fail(c, &container);
        return false;
    case JV_STR: {
        if (item.t != JV_STR)
            edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "'in <string>' requires string as left operand, not %s",
                                edgellm_jinja_type_name(&item));
        const jstr *h = container.u.s, *nd = item.u.s;
        if (!nd->len) return true;
        return memmem(h->p, h->len, nd->p, nd->len) != NULL;
    }
    case JV_LIST: {
        jlist *l = container.u.l;
        edgellm_jinja_gen_force(c, l);
        size_t from = l->kind == JL_GEN ? l->pos : 0;
        for (size_t i = from; i < l->n; i++)
            if (edgellm_jinja_eq(c, l->items[i], item)) {
                if (l->kind == JL_GEN) l->pos = i + 1;
                return true;
            }
        if (l->kind == JL_GEN) l->pos = l->n;
        return false;
    }
    case JV_DICT: return edgellm_jinja_dict_get(c, container.u.d, item) != NULL;
    default:
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "argument of type '%s' is not iterable", edgellm_jinja_type_name(&container));
    }
}

jv edgellm_jinja_unary(jctx *c, bool neg, jv v)
{
    if (v.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &v);
    if (v.t == JV_FLOAT) return jv_float(neg ? -v.u.f : v.u.f);
    if (v.t == JV_INT || v.t == JV_BOOL) {
        int64_t i = as_i(&v);
        if (neg && i == INT64_MIN) overflow(c);
        return jv_int(neg ? -i : i);
    }
    edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "bad operand type for unary %c: '%s'", neg ? '-' : '+',
                        edgellm_jinja_type_name(&v));
}
