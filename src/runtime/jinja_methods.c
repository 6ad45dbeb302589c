/*
 * jinja_methods.c — what templates call: methods of str (jinja_str.c), dict and list
 * (https://docs.python.org/3/library/stdtypes.html), Jinja's globals (range, dict,
 * namespace; jinja2/defaults.py, with the sandbox's 100000-element cap on range) and
 * transformers' (raise_exception, strftime_now), loop.cycle / loop.changed, printf-style
 * `%` formatting.
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

void edgellm_jinja_no_kw(jctx *c, const char *what, int n_kw)
{
    if (n_kw) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s() takes no keyword arguments", what);
}

void edgellm_jinja_nargs(jctx *c, const char *what, int n, int lo, int hi)
{
    if (n < lo || n > hi)
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "%s() takes %d to %d arguments (%d given)", what, lo, hi, n);
}

/* ---------------------------------------------------------------- methods ---- */
static void put_cp(jctx *c, jbuf *b, uint32_t cp, bool taint)
{
    char u[4];
    edgellm_jinja_buf_put(c, b, u, edgellm_jinja_u8_put(u, cp), taint);
}

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
    edgellm_jinja_no_kw(c, "range", nkw);
    edgellm_jinja_nargs(c, "range", n, 1, 3);
    int64_t start = 0, stop, step = 1;
    if (n == 1) stop = edgellm_jinja_arg_int(c, "range", a[0]);
    else {
        start = edgellm_jinja_arg_int(c, "range", a[0]);
        stop = edgellm_jinja_arg_int(c, "range", a[1]);
        if (n == 3) step = edgellm_jinja_arg_int(c, "range", a[2]);
    }
    if (step == 0) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "range() arg 3 must not be zero");
    double cnt_d = step > 0 ? ((double)stop - (double)start) / (double)step : ((double)start - (double)stop) / -(double)step;
    if (cnt_d > 100000)   /* jinja2/sandbox.py MAX_RANGE */
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    int64_t cnt = cnt_d <= 0 ? 0 : (int64_t)ceil(cnt_d);
    if (cnt > 100000)
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
    edgellm_jinja_no_kw(c, "strftime_now", nkw);
    edgellm_jinja_nargs(c, "strftime_now", n, 1, 1);
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
        while (j < fmt->len && fmt->p[j] >= '0' && fmt->p[j] <= '9') {   /* capped: refused below */
            int d = fmt->p[j++] - '0';
            width = width > 1000000 ? width : (width < 0 ? 0 : width) * 10 + d;
        }
        if (j < fmt->len && fmt->p[j] == '.') {
            prec = 0;
            j++;
            while (j < fmt->len && fmt->p[j] >= '0' && fmt->p[j] <= '9') {
                int d = fmt->p[j++] - '0';
                prec = prec > 1000000 ? prec : prec * 10 + d;
            }
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
        char num[2048], spec[32];
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
            /* without the width (applied below, as for every conversion): zero padding goes
             * after the sign */
            char nf[8];
            size_t k = 0;
            for (const char *q = flags; *q; q++)
                if (*q != '0' && *q != '-') nf[k++] = *q;
            nf[k] = 0;
            snprintf(spec, sizeof spec, "%%%s.%d%c", nf, prec >= 0 ? prec : 6, type);
            fmt_double(num, sizeof num, spec, v);
            int len = (int)strlen(num);
            if (width > len && strchr(flags, '0') && !strchr(flags, '-')) {
                int sign = num[0] == '-' || num[0] == '+' || num[0] == ' ';
                edgellm_jinja_buf_put(c, &piece, num, (size_t)sign, false);
                for (int z = len; z < width; z++) edgellm_jinja_buf_putc(c, &piece, '0');
                edgellm_jinja_buf_put(c, &piece, num + sign, (size_t)(len - sign), false);
                width = -1;
            } else edgellm_jinja_buf_put(c, &piece, num, (size_t)len, false);
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
        edgellm_jinja_no_kw(c, "raise_exception", nkw);
        edgellm_jinja_nargs(c, "raise_exception", n, 1, 1);
        const jstr *m = edgellm_jinja_to_str(c, a[0]);
        edgellm_jinja_rfail(c, EDGELLM_ERR_MISUSE, "%s", m->p);
    }
    case JF_STRFTIME: return strftime_now(c, a, n, nkw);
    case JF_LOOP_CYCLE:
        edgellm_jinja_no_kw(c, "cycle", nkw);
        if (!n) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "no items for cycling given");
        return a[self.u.loop->index0 % n];
    case JF_LOOP_CHANGED: {
        edgellm_jinja_no_kw(c, "changed", nkw);
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
        edgellm_jinja_no_kw(c, "get", nkw);
        edgellm_jinja_nargs(c, "get", n, 1, 2);
        jv *v = edgellm_jinja_dict_get(c, self.u.d, a[0]);
        return v ? *v : n > 1 ? a[1] : jv_none();
    }
    case JF_DICT_ITEMS: case JF_DICT_KEYS: case JF_DICT_VALUES: {
        edgellm_jinja_no_kw(c, "items", nkw);
        edgellm_jinja_nargs(c, "items", n, 0, 0);
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
        edgellm_jinja_no_kw(c, "count", nkw);
        edgellm_jinja_nargs(c, id == JF_LIST_COUNT ? "count" : "index", n, 1, id == JF_LIST_COUNT ? 1 : 1);
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
    default: return edgellm_jinja_str_method(c, id, self.u.s, a, n, kw, kwv, nkw);
    }
}
