/*
 * jinja_tests.c — Jinja's tests (`x is defined`, `is string`, `is divisibleby 3`...;
 * jinja2/tests.py, 3.1) with Python's notion of each type; `select`/`reject` filters use
 * them by name.
 */
#include "jinja_int.h"

enum {
    T_DEFINED, T_UNDEFINED, T_NONE, T_BOOLEAN, T_FALSE, T_TRUE, T_INTEGER, T_FLOAT, T_NUMBER, T_STRING,
    T_MAPPING, T_ITERABLE, T_SEQUENCE, T_CALLABLE, T_SAMEAS, T_ESCAPED, T_ODD, T_EVEN, T_DIVISIBLEBY, T_EQ,
    T_NE, T_LT, T_LE, T_GT, T_GE, T_IN, T_LOWER, T_UPPER, T_FILTER, T_TEST
};

static const struct { const char *name; int id; } TESTS[] = {
    {"defined", T_DEFINED}, {"undefined", T_UNDEFINED}, {"none", T_NONE}, {"boolean", T_BOOLEAN},
    {"false", T_FALSE}, {"true", T_TRUE}, {"integer", T_INTEGER}, {"float", T_FLOAT}, {"number", T_NUMBER},
    {"string", T_STRING}, {"mapping", T_MAPPING}, {"iterable", T_ITERABLE}, {"sequence", T_SEQUENCE},
    {"callable", T_CALLABLE}, {"sameas", T_SAMEAS}, {"escaped", T_ESCAPED}, {"odd", T_ODD}, {"even", T_EVEN},
    {"divisibleby", T_DIVISIBLEBY}, {"eq", T_EQ}, {"equalto", T_EQ}, {"==", T_EQ}, {"ne", T_NE}, {"!=", T_NE},
    {"lt", T_LT}, {"lessthan", T_LT}, {"<", T_LT}, {"le", T_LE}, {"<=", T_LE}, {"gt", T_GT},
    {"greaterthan", T_GT}, {">", T_GT}, {"ge", T_GE}, {">=", T_GE}, {"in", T_IN}, {"lower", T_LOWER},
    {"upper", T_UPPER}, {"filter", T_FILTER}, {"test", T_TEST},
};
#define N_TESTS ((int)(sizeof TESTS / sizeof TESTS[0]))

int edgellm_jinja_test_id(const char *name)
{
    for (int i = 0; i < N_TESTS; i++)
        if (!strcmp(TESTS[i].name, name)) return i;
    return -1;
}

static bool is_num(const jv *v) { return v->t == JV_INT || v->t == JV_FLOAT || v->t == JV_BOOL; }

static jv modulo(jctx *c, jv v, jv d)
{
    if (!is_num(&v)) {
        if (v.t == JV_UNDEF) edgellm_jinja_undef_fail(c, &v);
        edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "unsupported operand type(s) for %%: '%s' and '%s'", edgellm_jinja_type_name(&v),
                            edgellm_jinja_type_name(&d));
    }
    return edgellm_jinja_binop(c, JO_MOD, v, d);
}

static void test_args(jctx *c, const char *name, int n, int want)
{
    if (n != want) edgellm_jinja_rfail(c, EDGELLM_ERR_FORMAT, "the test '%s' takes %d argument(s), %d given", name, want, n);
}

bool edgellm_jinja_test(jctx *c, int id, jv v, const jv *a, int n)
{
    const char *name = TESTS[id].name;
    int tid = TESTS[id].id;
    bool binary = tid == T_SAMEAS || tid == T_DIVISIBLEBY || (tid >= T_EQ && tid <= T_IN);
    if (tid == T_FILTER || tid == T_TEST) binary = false;
    test_args(c, name, n, binary ? 1 : 0);
    switch (tid) {
    case T_DEFINED: return v.t != JV_UNDEF;
    case T_UNDEFINED: return v.t == JV_UNDEF;
    case T_NONE: return v.t == JV_NONE;
    case T_BOOLEAN: return v.t == JV_BOOL;
    case T_FALSE: return v.t == JV_BOOL && !v.u.b;
    case T_TRUE: return v.t == JV_BOOL && v.u.b;
    case T_INTEGER: return v.t == JV_INT;
    case T_FLOAT: return v.t == JV_FLOAT;
    case T_NUMBER: return is_num(&v);
    case T_STRING: return v.t == JV_STR;
    case T_MAPPING: return v.t == JV_DICT;
    case T_ITERABLE: return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF || v.t == JV_LOOP;
    case T_SEQUENCE:
        return v.t == JV_STR || v.t == JV_DICT || v.t == JV_UNDEF ||
               (v.t == JV_LIST && (v.u.l->kind == JL_LIST || v.u.l->kind == JL_TUPLE || v.u.l->kind == JL_RANGE));
    case T_CALLABLE: return v.t == JV_FUNC || v.t == JV_MACRO || v.t == JV_UNDEF || v.t == JV_LOOP;
    case T_SAMEAS: {
        jv o = a[0];
        if (v.t != o.t) return false;
        switch (v.t) {
        case JV_NONE: case JV_UNDEF: return v.t == JV_NONE || v.u.u == o.u.u;
        case JV_BOOL: return v.u.b == o.u.b;
        case JV_INT: return v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256;   /* CPython's cached ints */
        case JV_STR: return v.u.s == o.u.s;
        case JV_LIST: return v.u.l == o.u.l;
        case JV_DICT: case JV_NS: return v.u.d == o.u.d;
        case JV_FUNC: return v.u.fn == o.u.fn;
        case JV_MACRO: return v.u.m == o.u.m;
        case JV_LOOP: return v.u.loop == o.u.loop;
        default: return false;
        }
    }
    case T_ESCAPED: return v.t == JV_STR && v.safe;
    case T_ODD: return edgellm_jinja_eq(c, modulo(c, v, jv_int(2)), jv_int(1));
    case T_EVEN: return edgellm_jinja_eq(c, modulo(c, v, jv_int(2)), jv_int(0));
    case T_DIVISIBLEBY: return edgellm_jinja_eq(c, modulo(c, v, a[0]), jv_int(0));
    case T_EQ: return edgellm_jinja_eq(c, v, a[0]);
    case T_NE: return !edgellm_jinja_eq(c, v, a[0]);
    case T_LT: return edgellm_jinja_cmp(c, v, a[0], "<") == -1;
    case T_LE: { int k = edgellm_jinja_cmp(c, v, a[0], "<="); return k == -1 || k == 0; }
    case T_GT: return edgellm_jinja_cmp(c, v, a[0], ">") == 1;
    case T_GE: { int k = edgellm_jinja_cmp(c, v, a[0], ">="); return k == 1 || k == 0; }
    case T_IN: return edgellm_jinja_contains(c, a[0], v);
    case T_LOWER: case T_UPPER: {
        jv m;
        edgellm_jinja_method(c, edgellm_jinja_strv(edgellm_jinja_to_str(c, v)), tid == T_LOWER ? "islower" : "isupper", &m);
        return edgellm_jinja_call(c, m, NULL, 0, NULL, NULL, 0).u.b;
    }
    case T_FILTER: case T_TEST:
        if (v.t != JV_STR) return false;
        return tid == T_FILTER ? edgellm_jinja_filter_id(v.u.s->p) >= 0 : edgellm_jinja_test_id(v.u.s->p) >= 0;
    }
    return false;
}
