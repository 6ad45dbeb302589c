/* args.h — the command line of every edgellm command, read from one table per command.
 *
 * A command describes its options once, as an array of cli_opt (names, kind of value, range,
 * destination, metavar, help line, default, required), and hands it to cli_args_parse, which
 * reads argv into the destinations, refuses what does not fit, and prints --help from the
 * same table. So every command takes the same forms and says the same things:
 *
 *   -x V, --long V, --long=V   an option with a value (GNU getopt_long's forms; a value may
 *                              start with '-': "-p -x" is the prompt "-x")
 *   --flag                     an option without a value; "--flag=V" is refused
 *   ARG, -                     a positional argument ("-" is one: stdin by convention)
 *   --                         the arguments after it are positional, whatever they look like
 *   -h, --help                 the help, generated from the table, on stdout; exit status 0
 *
 * Repeated options: the last one wins (kind LIST collects every one, in order).
 *
 * Errors are one line on stderr naming the command and the option, then a pointer to the
 * help, and the exit status is 2:
 *
 *   edgellm run: -n expects an integer in [0, 2147483647], got 'abc'
 *   see 'edgellm run --help'
 *
 * The messages: "unknown option '--x'", "--x needs a value", "--x takes no value",
 * "unexpected argument 'A'", "--x expects an integer in [LO, HI], got 'V'", "--x expects a
 * number in [LO, HI), got 'V'", "--x expects f32, f16 or q8_0, got 'V'", "--x expects a
 * non-negative integer, got 'V'", "--x expects a file name, got ''", "-m FILE is required"
 * (or "-m FILE and -o OUT are required"). With no argument at all and a required option
 * missing, the whole help goes to stderr instead (exit status 2).
 *
 * Nothing here allocates, keeps state between calls, or exits: cli_args_parse may be called
 * any number of times (the fuzz target does) and from several threads on different tables.
 */
#ifndef EDGELLM_CLI_ARGS_H
#define EDGELLM_CLI_ARGS_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    CLI_KIND_GROUP,    /* not an option: a heading in the help (help = the heading)          */
    CLI_KIND_FLAG,     /* no value: int *dst = value                                         */
    CLI_KIND_STRING,   /* const char **dst = the argument (borrowed from argv)               */
    CLI_KIND_PATH,     /* as STRING, and not empty                                           */
    CLI_KIND_INT,      /* int *dst: a decimal integer in [lo, hi]                            */
    CLI_KIND_U64,      /* uint64_t *dst: a non-negative decimal integer (seeds)              */
    CLI_KIND_DOUBLE,   /* double *dst: a finite number in the range min..max (ends: open)    */
    CLI_KIND_FLOAT,    /* float *dst: as DOUBLE, and finite as a float                       */
    CLI_KIND_ENUM,     /* int *dst: the value of one of choices' names (any case)            */
    CLI_KIND_LIST,     /* cli_list *dst: every value given, in order (repeatable)            */
    CLI_KIND_CUSTOM,   /* parse(opt, value, dst, ...) decides                                */
} cli_kind;

/* open: which ends of a DOUBLE/FLOAT range are open ("(0, 1]" is CLI_OPEN_MIN) */
enum { CLI_CLOSED = 0, CLI_OPEN_MIN = 1, CLI_OPEN_MAX = 2, CLI_OPEN = 3 };

/* One name of an ENUM option and the value it stores; an array of them ends with {NULL}. */
typedef struct {
    const char *name;
    int value;
} cli_choice;

/* The values of a LIST option (or of the positional arguments): v[0..n), at most max. */
typedef struct {
    const char **v;
    int n, max;
} cli_list;

/* A CUSTOM option's parser: read value (never NULL) into dst. opt is the option as typed
 * ("-t", "--threads"; the positional's metavar for a positional). Returns 0 when accepted;
 * otherwise writes the whole message (after "edgellm CMD: ") into msg and returns nonzero. */
typedef int (*cli_parse_fn)(const char *opt, const char *value, void *dst, char *msg, size_t msg_size);

typedef struct {
    cli_kind    kind;
    const char *s, *l;        /* "-m", "--model": either may be NULL, not both            */
    const char *metavar;      /* the value in the help ("FILE"); NULL: from the kind       */
    void       *dst;          /* where the value goes (type per kind, above)               */
    const char *help;         /* one line or a paragraph; wrapped at 100 columns           */
    const char *def;          /* shown as "(default: DEF)" after the help; NULL: not shown  */
    int         show_default; /* 1 (and def NULL): DEF is the destination's value before the
                               * line is read (INT, U64, DOUBLE, FLOAT, ENUM, STRING, PATH)  */
    int         required;     /* 1: missing is an error (after the whole line is read)      */
    long        lo, hi;       /* INT: the closed range                                      */
    double      min, max;     /* DOUBLE, FLOAT: the range; -INFINITY/INFINITY: unbounded     */
    int         open;         /* DOUBLE, FLOAT: CLI_OPEN_MIN | CLI_OPEN_MAX                  */
    int         value;        /* FLAG: stored in *(int *)dst                                */
    const cli_choice *choices;/* ENUM                                                       */
    cli_parse_fn parse;       /* CUSTOM                                                     */
    int        *count;        /* when not NULL: incremented each time the option is given   */
} cli_opt;

/* Table entries: CLI_INT("-n", "--n-predict", "N", &n, 0, INT_MAX), then any other field
 * (.help, .def, .required, .count). The destination's type is checked by the compiler. */
#define CLI_DST_(T, p) ((void *)(1 ? (p) : (T *)0))
#define CLI_GROUP(TITLE) .kind = CLI_KIND_GROUP, .help = (TITLE)
#define CLI_FLAG(S, L, DST, VALUE) .kind = CLI_KIND_FLAG, .s = (S), .l = (L), .dst = CLI_DST_(int, DST), .value = (VALUE)
#define CLI_STRING(S, L, META, DST) \
    .kind = CLI_KIND_STRING, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(const char *, DST)
#define CLI_PATH(S, L, META, DST) \
    .kind = CLI_KIND_PATH, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(const char *, DST)
#define CLI_INT(S, L, META, DST, LO, HI) \
    .kind = CLI_KIND_INT, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(int, DST), .lo = (LO), .hi = (HI)
#define CLI_U64(S, L, META, DST) \
    .kind = CLI_KIND_U64, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(uint64_t, DST)
#define CLI_DOUBLE(S, L, META, DST, MIN, MAX, OPEN)                                                         \
    .kind = CLI_KIND_DOUBLE, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(double, DST), .min = (MIN), \
    .max = (MAX), .open = (OPEN)
#define CLI_FLOAT(S, L, META, DST, MIN, MAX, OPEN)                                                        \
    .kind = CLI_KIND_FLOAT, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(float, DST), .min = (MIN), \
    .max = (MAX), .open = (OPEN)
#define CLI_ENUM(S, L, META, DST, CHOICES) \
    .kind = CLI_KIND_ENUM, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(int, DST), .choices = (CHOICES)
#define CLI_LIST(S, L, META, DST) \
    .kind = CLI_KIND_LIST, .s = (S), .l = (L), .metavar = (META), .dst = CLI_DST_(cli_list, DST)
#define CLI_CUSTOM(S, L, META, DST, FN) \
    .kind = CLI_KIND_CUSTOM, .s = (S), .l = (L), .metavar = (META), .dst = (void *)(DST), .parse = (FN)

#define CLI_N_OPTS(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define CLI_MAX_OPTS 64   /* options in one table, at most */

/* A command (or an eval subcommand): its name, help text and table. */
typedef struct {
    const char    *name;        /* "run", "eval ppl": errors say "edgellm NAME: ..."              */
    const char    *synopsis;    /* after "usage: "; lines separated by '\n'; NULL: made from the
                                 * table ("edgellm NAME -m FILE ARG [options]")                 */
    const char    *about;       /* paragraph between the synopsis and the options; NULL: none   */
    const char    *notes;       /* text after the options, printed as it is; NULL: none         */
    const cli_opt *opts;
    int            n_opts;      /* at most CLI_MAX_OPTS                                          */
    const cli_opt *positional;  /* the positional arguments (STRING, PATH, LIST or CUSTOM; its
                                 * names NULL); NULL: the command takes none                     */
    /* For an unknown option: where it belongs instead ("only eval sweep takes it"), or NULL.
     * The error then reads "OPT is not an option of NAME (HINT)". NULL: no hints. */
    const char *(*elsewhere)(const char *opt);
} cli_command;

/* Returned by cli_args_parse when the command goes on. */
#define CLI_ARGS_GO (-1)

/* Read argv[1..argc) (argv[0] is the command's name) into the table's destinations, left
 * as they are for options not given (so they hold the defaults). Returns CLI_ARGS_GO when
 * the command goes on; otherwise the exit status to return now: 0 after -h/--help (the help
 * is on stdout), 2 after a command-line error (printed on stderr, see the top). Parsing
 * stops at the first error or at --help; destinations before it may have been written. */
int cli_args_parse(const cli_command *c, int argc, char **argv);

/* The help: synopsis, about, the options aligned in two columns (names and metavar; the
 * help wrapped at 100 columns, "(required)", "(default: DEF)"), -h/--help, notes. The
 * defaults of show_default options are the destinations' values now (cli_args_parse's
 * --help shows them as they were before it read the line). */
void cli_args_usage(const cli_command *c, FILE *f);

/* A command-line error found after parsing (a conflict, a missing alternative): prints
 * "edgellm NAME: MESSAGE" and "see 'edgellm NAME --help'" on stderr; returns 2. */
int cli_args_error(const cli_command *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The error when none of the arguments a command needs were given: with no argument at
 * all (argc < 2) the whole help on stderr, otherwise cli_args_error(c, "%s", msg). Returns 2. */
int cli_args_missing(const cli_command *c, int argc, const char *msg);

/* The same option as written in a message: "-m MODEL.gguf" (short name, else long; then
 * the metavar, if it takes a value), into buf. */
const char *cli_args_opt_name(const cli_opt *o, char *buf, size_t size);

#endif
