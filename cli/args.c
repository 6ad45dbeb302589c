/* args.c — one reader of command lines for every edgellm command (args.h says what it
 * accepts and what it answers): argv in, each value converted and range-checked into the
 * table's destination, one-line errors, and the help printed from the same table.
 *
 * The forms follow POSIX utility conventions (the Open Group Base Specifications, "Utility
 * Syntax Guidelines", XBD 12.2: "-" is an operand, "--" ends the options) and GNU
 * getopt_long's long options ("--name value", "--name=value"; a flag given "=value" is an
 * error). Unlike getopt, no option is matched by an abbreviation and short options do not
 * cluster: "-n5" and "--temp0" are unknown options, not "-n 5". */
#include "args.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HELP_WIDTH 100   /* columns of the help text */
#define NAMES_MAX 24     /* a longer names column puts the help on the next line */

static void vreport(const char *cmd, const char *fmt, va_list ap)
{
    char msg[1536];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "edgellm %s: %s\nsee 'edgellm %s --help'\n", cmd, msg, cmd);
}

static int report(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int report(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(cmd, fmt, ap);
    va_end(ap);
    return 2;
}

int cli_args_error(const cli_command *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport(c->name, fmt, ap);
    va_end(ap);
    return 2;
}

int cli_args_missing(const cli_command *c, int argc, const char *msg)
{
    if (argc < 2) {
        cli_args_usage(c, stderr);
        return 2;
    }
    return cli_args_error(c, "%s", msg);
}

/* ------------------------------------------------------------------ values ---- */

/* A range bound as people write it: 1000000 as "1e6", 0.5 as "0.5". */
static void fmt_bound(char *buf, size_t size, double v)
{
    char tmp[48];
    snprintf(tmp, sizeof tmp, "%g", v);
    char *e = strchr(tmp, 'e');
    if (!e) { snprintf(buf, size, "%s", tmp); return; }
    const char *x = e + 1;
    const bool neg = *x == '-';
    if (*x == '+' || *x == '-') x++;
    while (*x == '0' && x[1]) x++;
    snprintf(buf, size, "%.*se%s%s", (int)(e - tmp), tmp, neg ? "-" : "", x);
}

/* "a number in [0, 1e6)", "a finite number > 0", "a finite number" */
static void fmt_range(char *buf, size_t size, const cli_opt *o)
{
    char lo[48], hi[48];
    fmt_bound(lo, sizeof lo, o->min);
    fmt_bound(hi, sizeof hi, o->max);
    const bool has_lo = isfinite(o->min), has_hi = isfinite(o->max);
    const bool open_lo = o->open & CLI_OPEN_MIN, open_hi = o->open & CLI_OPEN_MAX;
    if (has_lo && has_hi)
        snprintf(buf, size, "a number in %c%s, %s%c", open_lo ? '(' : '[', lo, hi, open_hi ? ')' : ']');
    else if (has_lo) snprintf(buf, size, "a finite number %s %s", open_lo ? ">" : ">=", lo);
    else if (has_hi) snprintf(buf, size, "a finite number %s %s", open_hi ? "<" : "<=", hi);
    else snprintf(buf, size, "a finite number");
}

static bool in_range(const cli_opt *o, double v)
{
    if (!isfinite(v)) return false;
    if (o->open & CLI_OPEN_MIN ? !(v > o->min) : !(v >= o->min)) return false;
    if (o->open & CLI_OPEN_MAX ? !(v < o->max) : !(v <= o->max)) return false;
    return true;
}

/* "f32, f16 or q8_0" */
static void fmt_choices(char *buf, size_t size, const cli_choice *ch, const char *sep, const char *last)
{
    size_t n = 0, o = 0;
    while (ch[n].name) n++;
    buf[0] = 0;
    for (size_t i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i == 0 ? "" : i + 1 == n ? last : sep, ch[i].name);
}

/* Convert value for o into its destination; 0, or 2 after printing why not. name: the option
 * as typed. */
static int set_value(const char *cmd, const cli_opt *o, const char *name, const char *value)
{
    char *end;
    switch (o->kind) {
    case CLI_KIND_STRING:
        *(const char **)o->dst = value;
        return 0;
    case CLI_KIND_PATH:
        if (!*value) return report(cmd, "%s expects a file name, got ''", name);
        *(const char **)o->dst = value;
        return 0;
    case CLI_KIND_INT: {
        errno = 0;
        const long v = strtol(value, &end, 10);
        if (!*value || *end || errno || v < o->lo || v > o->hi)
            return report(cmd, "%s expects an integer in [%ld, %ld], got '%s'", name, o->lo, o->hi, value);
        *(int *)o->dst = (int)v;
        return 0;
    }
    case CLI_KIND_U64: {
        errno = 0;
        const unsigned long long v = strtoull(value, &end, 10);
        if (!*value || *end || errno || strchr(value, '-'))   /* strtoull takes "-1" as 2^64 - 1 */
            return report(cmd, "%s expects a non-negative integer, got '%s'", name, value);
        *(uint64_t *)o->dst = (uint64_t)v;
        return 0;
    }
    case CLI_KIND_DOUBLE:
    case CLI_KIND_FLOAT: {
        errno = 0;
        const double v = strtod(value, &end);
        /* a float destination: the range holds for the value it keeps (1e-50 is 0 there) */
        const double kept = o->kind == CLI_KIND_FLOAT ? (double)(float)v : v;
        if (!*value || *end || !in_range(o, v) || !in_range(o, kept)) {
            char range[128];
            fmt_range(range, sizeof range, o);
            return report(cmd, "%s expects %s, got '%s'", name, range, value);
        }
        if (o->kind == CLI_KIND_FLOAT) *(float *)o->dst = (float)v;
        else *(double *)o->dst = v;
        return 0;
    }
    case CLI_KIND_ENUM:
        for (const cli_choice *ch = o->choices; ch->name; ch++)
            if (!strcasecmp(value, ch->name)) {
                *(int *)o->dst = ch->value;
                return 0;
            }
        {
            char names[256];
            fmt_choices(names, sizeof names, o->choices, ", ", " or ");
            return report(cmd, "%s expects %s, got '%s'", name, names, value);
        }
    case CLI_KIND_LIST: {
        cli_list *l = o->dst;
        if (l->n >= l->max) return report(cmd, "%s is given more than %d times", name, l->max);
        l->v[l->n++] = value;
        return 0;
    }
    case CLI_KIND_CUSTOM: {
        char msg[1024] = "";
        if (o->parse(name, value, o->dst, msg, sizeof msg))
            return report(cmd, "%s", msg[0] ? msg : "bad value");
        return 0;
    }
    case CLI_KIND_GROUP:
    case CLI_KIND_FLAG:
        break;
    }
    return report(cmd, "%s: not an option that takes a value", name);
}

/* ------------------------------------------------------------------- parse ---- */

static bool is_name(const char *opt_name, const char *arg, size_t len)
{
    return opt_name && strlen(opt_name) == len && !memcmp(opt_name, arg, len);
}

/* The positional spec's name in messages: its metavar. */
static const char *pos_name(const cli_opt *p)
{
    return p->metavar ? p->metavar : "ARG";
}

/* One positional argument; 0 or 2. */
static int take_positional(const cli_command *c, const char *arg, int *n_pos)
{
    const cli_opt *p = c->positional;
    if (!p) return report(c->name, "unexpected argument '%s'", arg);
    if (p->kind == CLI_KIND_LIST) {
        cli_list *l = p->dst;
        if (l->n >= l->max) return report(c->name, "unexpected argument '%s'", arg);
    } else if ((p->kind == CLI_KIND_STRING || p->kind == CLI_KIND_PATH) && *n_pos > 0) {
        return report(c->name, "unexpected argument '%s'", arg);
    }
    if (set_value(c->name, p, pos_name(p), arg)) return 2;
    ++*n_pos;
    if (p->count) ++*p->count;
    return 0;
}

/* The names of the required options (and positionals) not given, as "A", "A and B",
 * "A, B and C"; empty when none is missing. */
static void missing_names(const cli_command *c, const int *seen, int n_pos, char *buf, size_t size)
{
    const char *names[CLI_MAX_OPTS + 1];
    char store[CLI_MAX_OPTS + 1][96];
    int n = 0;
    const cli_opt *p = c->positional;
    if (p && p->required) {
        const bool missing = p->kind == CLI_KIND_LIST ? ((cli_list *)p->dst)->n < ((cli_list *)p->dst)->max : n_pos == 0;
        if (missing) names[n++] = pos_name(p);
    }
    for (int i = 0; i < c->n_opts && i < CLI_MAX_OPTS; i++)
        if (c->opts[i].required && !seen[i] && c->opts[i].kind != CLI_KIND_GROUP) {
            names[n] = cli_args_opt_name(&c->opts[i], store[n], sizeof store[n]);
            n++;
        }
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < size; i++)
        o += (size_t)snprintf(buf + o, size - o, "%s%s", i == 0 ? "" : i + 1 == n ? " and " : ", ", names[i]);
}

/* The value *o->dst holds, as the help shows a default: "128", "0.8", "f32"; "" for none. */
static void fmt_value(const cli_opt *o, char *buf, size_t size)
{
    buf[0] = 0;
    if (!o->show_default || !o->dst) return;
    switch (o->kind) {
    case CLI_KIND_INT: snprintf(buf, size, "%d", *(const int *)o->dst); break;
    case CLI_KIND_U64: snprintf(buf, size, "%llu", (unsigned long long)*(const uint64_t *)o->dst); break;
    case CLI_KIND_DOUBLE: snprintf(buf, size, "%g", *(const double *)o->dst); break;
    case CLI_KIND_FLOAT: snprintf(buf, size, "%g", (double)*(const float *)o->dst); break;
    case CLI_KIND_STRING:
    case CLI_KIND_PATH:
        if (*(const char *const *)o->dst) snprintf(buf, size, "%s", *(const char *const *)o->dst);
        break;
    case CLI_KIND_ENUM:
        for (const cli_choice *ch = o->choices; ch->name; ch++)
            if (ch->value == *(const int *)o->dst) {
                snprintf(buf, size, "%s", ch->name);
                break;
            }
        break;
    default: break;
    }
}

typedef char default_text[160];
static void usage_with(const cli_command *c, FILE *f, const default_text *defs);

int cli_args_parse(const cli_command *c, int argc, char **argv)
{
    int seen[CLI_MAX_OPTS] = {0};
    default_text defs[CLI_MAX_OPTS];   /* the defaults, for --help after options that change them */
    int n_pos = 0;
    bool options_done = false;
    if (c->n_opts > CLI_MAX_OPTS) return report(c->name, "%d options: at most %d", c->n_opts, CLI_MAX_OPTS);
    for (int i = 0; i < c->n_opts; i++) fmt_value(&c->opts[i], defs[i], sizeof defs[i]);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options_done || arg[0] != '-' || !arg[1]) {
            if (take_positional(c, arg, &n_pos)) return 2;
            continue;
        }
        if (!strcmp(arg, "--")) { options_done = true; continue; }
        /* "--name=value": the name is what precedes the first '=' ("--=x" has no name) */
        const char *eq = arg[1] == '-' && arg[2] && arg[2] != '=' ? strchr(arg, '=') : NULL;
        const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const char *inline_value = eq ? eq + 1 : NULL;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), arg);
        if (is_name("-h", arg, len) || is_name("--help", arg, len)) {
            if (inline_value) return report(c->name, "%s takes no value", name);
            usage_with(c, stdout, defs);
            return 0;
        }
        int k = -1;
        for (int j = 0; j < c->n_opts && k < 0; j++)
            if (c->opts[j].kind != CLI_KIND_GROUP && (is_name(c->opts[j].s, arg, len) || is_name(c->opts[j].l, arg, len)))
                k = j;
        if (k < 0) {
            const char *hint = c->elsewhere ? c->elsewhere(name) : NULL;
            if (hint) return report(c->name, "%s is not an option of %s (%s)", name, c->name, hint);
            return report(c->name, "unknown option '%s'", name);
        }
        const cli_opt *o = &c->opts[k];
        if (o->kind == CLI_KIND_FLAG) {
            if (inline_value) return report(c->name, "%s takes no value", name);
            *(int *)o->dst = o->value;
        } else {
            const char *value = inline_value ? inline_value : i + 1 < argc ? argv[++i] : NULL;
            if (!value) return report(c->name, "%s needs a value", name);
            if (set_value(c->name, o, name, value)) return 2;
        }
        seen[k]++;
        if (o->count) ++*o->count;
    }
    char missing[1024];
    missing_names(c, seen, n_pos, missing, sizeof missing);
    if (missing[0]) {
        char msg[1100];
        snprintf(msg, sizeof msg, "%s %s required", missing, strstr(missing, " and ") ? "are" : "is");
        return cli_args_missing(c, argc, msg);
    }
    return CLI_ARGS_GO;
}

/* ------------------------------------------------------------------- help ---- */

const char *cli_args_opt_name(const cli_opt *o, char *buf, size_t size)
{
    const char *n = o->s ? o->s : o->l ? o->l : "";
    const bool takes = o->kind != CLI_KIND_FLAG && o->kind != CLI_KIND_GROUP;
    if (!takes) snprintf(buf, size, "%s", n);
    else if (!*n) snprintf(buf, size, "%s", o->metavar ? o->metavar : "ARG");
    else snprintf(buf, size, "%s %s", n, o->metavar ? o->metavar : "VALUE");
    return buf;
}

/* The metavar of o in the help: its own, or from its kind. */
static void metavar(const cli_opt *o, char *buf, size_t size)
{
    if (o->metavar) snprintf(buf, size, "%s", o->metavar);
    else if (o->kind == CLI_KIND_ENUM) fmt_choices(buf, size, o->choices, "|", "|");
    else if (o->kind == CLI_KIND_PATH) snprintf(buf, size, "FILE");
    else if (o->kind == CLI_KIND_INT || o->kind == CLI_KIND_U64) snprintf(buf, size, "N");
    else if (o->kind == CLI_KIND_DOUBLE || o->kind == CLI_KIND_FLOAT) snprintf(buf, size, "X");
    else snprintf(buf, size, "VALUE");
}

/* The names column: "-m, --model FILE", "--temp T", "IN.gguf OUT.gguf" (a positional). */
static void names_column(const cli_opt *o, char *buf, size_t size)
{
    char mv[160];
    metavar(o, mv, sizeof mv);
    const bool takes = o->kind != CLI_KIND_FLAG;
    if (!o->s && !o->l) snprintf(buf, size, "%s", mv);
    else
        snprintf(buf, size, "%s%s%s%s%s", o->s ? o->s : "", o->s && o->l ? ", " : "", o->l ? o->l : "", takes ? " " : "",
                 takes ? mv : "");
}

/* text from column col on, wrapped at HELP_WIDTH at spaces; '\n' breaks a line; continuation
 * lines start at column indent; NBSP ('\1') is a space where no line breaks. The cursor is
 * at column col when it is called. */
#define NBSP '\1'
static void print_wrapped(FILE *f, const char *text, int col, int indent)
{
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            p++;
            continue;
        }
        size_t word = strcspn(p, " \n");
        if (col > indent && col + (int)word > HELP_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        }
        size_t cut = 0;   /* a word longer than a line ("a,b,c,..."): broken after a comma */
        for (size_t i = 0; col + (int)word > HELP_WIDTH && i < word && col + (int)i < HELP_WIDTH; i++)
            if (p[i] == ',') cut = i + 1;
        if (cut) word = cut;
        for (size_t i = 0; i < word; i++) fputc(p[i] == NBSP ? ' ' : p[i], f);
        col += (int)word;
        p += word;
        if (cut) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
            continue;
        }
        if (*p == ' ') {
            while (*p == ' ') p++;
            if (*p && *p != '\n') {
                const size_t next = strcspn(p, " \n");
                if (col + 1 + (int)next > HELP_WIDTH) {
                    fprintf(f, "\n%*s", indent, "");
                    col = indent;
                } else {
                    fputc(' ', f);
                    col++;
                }
            }
        }
    }
    fputc('\n', f);
}

static void print_entry(FILE *f, const cli_opt *o, const char *def, int width)
{
    char names[256], text[2048];
    names_column(o, names, sizeof names);
    if (o->def) def = o->def;
    const bool has_def = def && *def;
    /* a one-word default stays on the line of "(default:" */
    snprintf(text, sizeof text, "%s%s%s%s%s", o->help ? o->help : "", o->required ? " (required)" : "",
             !has_def ? "" : strchr(def, ' ') ? " (default: " : " (default:\1", has_def ? def : "", has_def ? ")" : "");
    const int indent = 2 + width + 2;
    fprintf(f, "  %s", names);
    if ((int)strlen(names) > width) fprintf(f, "\n%*s", indent, "");
    else fprintf(f, "%*s", indent - 2 - (int)strlen(names), "");
    print_wrapped(f, text, indent, indent);
}

/* "edgellm NAME -m FILE ARG [options]" from the table */
static void print_synopsis(const cli_command *c, FILE *f)
{
    char buf[256];
    bool optional = false;
    fprintf(f, "usage: edgellm %s", c->name);
    for (int i = 0; i < c->n_opts; i++) {
        if (c->opts[i].kind == CLI_KIND_GROUP) continue;
        if (c->opts[i].required) fprintf(f, " %s", cli_args_opt_name(&c->opts[i], buf, sizeof buf));
        else optional = true;
    }
    if (c->positional) fprintf(f, " %s%s%s", c->positional->required ? "" : "[", pos_name(c->positional),
                               c->positional->required ? "" : "]");
    fprintf(f, "%s\n", optional ? " [options]" : "");
}

void cli_args_usage(const cli_command *c, FILE *f)
{
    default_text defs[CLI_MAX_OPTS];
    for (int i = 0; i < c->n_opts && i < CLI_MAX_OPTS; i++) fmt_value(&c->opts[i], defs[i], sizeof defs[i]);
    usage_with(c, f, defs);
}

static void usage_with(const cli_command *c, FILE *f, const default_text *defs)
{
    if (c->synopsis) {
        fprintf(f, "usage: ");
        for (const char *p = c->synopsis; *p;) {   /* continuation lines under the first */
            const size_t n = strcspn(p, "\n");
            fprintf(f, "%s%.*s\n", p == c->synopsis ? "" : "       ", (int)n, p);
            p += n + (p[n] == '\n');
        }
    } else {
        print_synopsis(c, f);
    }
    if (c->about && *c->about) fprintf(f, "\n%s%s", c->about, c->about[strlen(c->about) - 1] == '\n' ? "" : "\n");
    static const cli_opt help = {.kind = CLI_KIND_FLAG, .s = "-h", .l = "--help", .help = "show this help"};
    char names[256];
    int width = (int)strlen("-h, --help");
    for (int i = -1; i < c->n_opts; i++) {
        const cli_opt *o = i < 0 ? c->positional : &c->opts[i];
        if (!o || o->kind == CLI_KIND_GROUP) continue;
        names_column(o, names, sizeof names);
        const int n = (int)strlen(names);
        if (n <= NAMES_MAX && n > width) width = n;
    }
    if (c->positional && c->positional->help) {
        fprintf(f, "\narguments:\n");
        print_entry(f, c->positional, NULL, width);
    }
    if (c->n_opts == 0 || c->opts[0].kind != CLI_KIND_GROUP) fprintf(f, "\noptions:\n");
    for (int i = 0; i < c->n_opts && i < CLI_MAX_OPTS; i++) {
        if (c->opts[i].kind == CLI_KIND_GROUP) fprintf(f, "\n%s:\n", c->opts[i].help);
        else print_entry(f, &c->opts[i], defs[i], width);
    }
    print_entry(f, &help, NULL, width);
    if (c->notes && *c->notes) fprintf(f, "\n%s%s", c->notes, c->notes[strlen(c->notes) - 1] == '\n' ? "" : "\n");
}
