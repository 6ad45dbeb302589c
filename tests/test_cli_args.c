/*
 * test_cli_args.c — the command-line reader every edgellm command uses (cli/args.c): each
 * kind of value with its range, the "--name=value" form, flags that refuse a value, unknown
 * options, missing values, positionals, required options, and the help generated from the
 * table (every option in it, aligned, within 100 columns).
 *
 * Each case parses an argv built from a string (split at spaces; '' is an empty argument)
 * with stdout and stderr captured, and checks the return value, the destinations and the
 * exact message.
 */
#include "test_util.h"
#include "args.h"
#include <fcntl.h>
#include <limits.h>

static char cap_out[16384], cap_err[16384];

/* Read fd's file from the start into buf. */
static void slurp(int fd, char *buf, size_t size)
{
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, size - 1);
    buf[n > 0 ? n : 0] = 0;
}

/* capture(true): stdout and stderr go to temporary files from now on; capture(false): back
 * to where they went, their text in cap_out and cap_err. */
static void capture(bool on)
{
    static int fo = -1, fe = -1, so = -1, se = -1;
    fflush(stdout);
    fflush(stderr);
    if (on) {
        char po[] = "/tmp/edgellm-args-out-XXXXXX", pe[] = "/tmp/edgellm-args-err-XXXXXX";
        fo = mkstemp(po);
        fe = mkstemp(pe);
        unlink(po);
        unlink(pe);
        so = dup(1);
        se = dup(2);
        dup2(fo, 1);
        dup2(fe, 2);
        return;
    }
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    slurp(fo, cap_out, sizeof cap_out);
    slurp(fe, cap_err, sizeof cap_err);
    close(fo);
    close(fe);
}

/* Split args at spaces into argv (argv[0] = name; '' stands for an empty argument), parse
 * with stdout and stderr captured into cap_out and cap_err. */
static int parse(const cli_command *c, const char *args)
{
    static char store[4096];
    char *argv[64];
    int argc = 0;
    snprintf(store, sizeof store, "%s", args);
    argv[argc++] = (char *)c->name;
    for (char *save = NULL, *t = strtok_r(store, " ", &save); t && argc < 63; t = strtok_r(NULL, " ", &save))
        argv[argc++] = strcmp(t, "''") ? t : t + 2;   /* '' -> "" (the NUL after the quotes) */
    argv[argc] = NULL;
    capture(true);
    int rc = cli_args_parse(c, argc, argv);
    capture(false);
    return rc;
}

/* The help of c as a string (static buffer). */
static const char *help_of(const cli_command *c)
{
    static char buf[16384];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    cli_args_usage(c, f);
    fclose(f);
    return buf;
}

/* ---- one table with every kind ---- */

static int v_flag, v_off, v_int, v_enum, v_count;
static const char *v_str, *v_path;
static uint64_t v_u64;
static double v_dbl;
static float v_flt;
static const char *list_store[3], *pos_store[2];
static cli_list v_list, v_pos;
static int v_custom;

static const cli_choice colours[] = {{"red", 1}, {"green", 2}, {"blue", 3}, {NULL, 0}};

/* accepts "even" numbers only */
static int parse_even(const char *opt, const char *value, void *dst, char *msg, size_t size)
{
    char *end;
    long v = strtol(value, &end, 10);
    if (!*value || *end || v % 2) {
        snprintf(msg, size, "%s wants an even number, got '%s'", opt, value);
        return 1;
    }
    *(int *)dst = (int)v;
    return 0;
}

static const cli_opt all_opts[] = {
    {CLI_GROUP("values")},
    {CLI_FLAG("-F", "--flag", &v_flag, 1), .help = "a flag"},
    {CLI_FLAG(NULL, "--no-thing", &v_off, 0), .help = "a flag that clears"},
    {CLI_STRING("-s", "--str", "TEXT", &v_str), .help = "a string", .count = &v_count},
    {CLI_PATH("-p", "--path", "FILE", &v_path), .help = "a path", .required = 1},
    {CLI_INT("-n", "--int", "N", &v_int, -5, 10), .help = "an integer", .show_default = 1},
    {CLI_U64(NULL, "--seed", "S", &v_u64), .help = "a seed", .def = "from the clock"},
    {CLI_DOUBLE(NULL, "--dbl", "X", &v_dbl, 0, 1e6, CLI_OPEN_MAX), .help = "a double in [0, 1e6)"},
    {CLI_GROUP("more")},
    {CLI_FLOAT(NULL, "--flt", "X", &v_flt, 0, INFINITY, CLI_OPEN_MIN), .help = "a float > 0"},
    {CLI_ENUM("-c", "--colour", NULL, &v_enum, colours), .help = "a colour", .show_default = 1},
    {CLI_LIST("-l", "--list", "ITEM", &v_list), .help = "repeatable"},
    {CLI_CUSTOM(NULL, "--even", "N", &v_custom, parse_even),
     .help = "a long help text that goes on and on so that it must be wrapped at one hundred columns, "
             "with every continuation line starting under the first"},
    {CLI_INT(NULL, "--a-rather-long-option-name", "VALUE", &v_int, 0, 1), .help = "help on the next line"},
    {CLI_STRING(NULL, "--types", "LIST", &v_str), .help = "a list",
     .def = "alpha,beta,gamma,delta,epsilon,zeta,eta,theta,iota,kappa,lambda,mu,nu,xi,omicron,pi,rho,sigma"},
};
static const cli_opt pos_opt = {CLI_LIST(NULL, NULL, "IN OUT", &v_pos), .help = "two files"};

static const char *elsewhere(const char *opt)
{
    return !strcmp(opt, "--other") ? "only edgellm other takes it" : NULL;
}

static const cli_command all_cmd = {
    .name = "demo", .about = "A table with every kind of option.", .notes = "Notes after the options.",
    .opts = all_opts, .n_opts = CLI_N_OPTS(all_opts), .positional = &pos_opt, .elsewhere = elsewhere,
};

static void reset(void)
{
    v_flag = 0, v_off = 1, v_int = 3, v_enum = 0, v_count = 0, v_custom = 0;
    v_str = v_path = NULL;
    v_u64 = 0;
    v_dbl = 0;
    v_flt = 0;
    v_list = (cli_list){list_store, 0, 3};
    v_pos = (cli_list){pos_store, 0, 2};
}

static void test_cli_args_each_kind_and_form(void)
{
    reset();
    CHECK_EQ(parse(&all_cmd, "-p a.bin -F --no-thing -s hi -n -5 --seed 18446744073709551615 --dbl 0.5 --flt 2.5 "
                             "-c GREEN -l x -l y --even 4 in out"), CLI_ARGS_GO);
    CHECK(!strcmp(cap_err, "") && !strcmp(cap_out, ""));
    CHECK(!strcmp(v_path, "a.bin") && v_flag == 1 && v_off == 0 && !strcmp(v_str, "hi") && v_int == -5);
    CHECK(v_u64 == UINT64_MAX && v_dbl == 0.5 && v_flt == 2.5f && v_enum == 2 && v_custom == 4);
    CHECK(v_list.n == 2 && !strcmp(v_list.v[0], "x") && !strcmp(v_list.v[1], "y"));
    CHECK(v_pos.n == 2 && !strcmp(v_pos.v[0], "in") && !strcmp(v_pos.v[1], "out"));
    CHECK_EQ(v_count, 1);
    /* --name=value is --name value; the value may hold '=' and start with '-' */
    reset();
    CHECK_EQ(parse(&all_cmd, "--path=a=b --str=--x=y --int=10 --colour=blue --list=z --even=-2"), CLI_ARGS_GO);
    CHECK(!strcmp(v_path, "a=b") && !strcmp(v_str, "--x=y") && v_int == 10 && v_enum == 3 && v_custom == -2);
    CHECK(v_list.n == 1 && !strcmp(v_list.v[0], "z"));
    reset();
    CHECK_EQ(parse(&all_cmd, "-p f -s -n"), CLI_ARGS_GO);   /* "-n" is the value of -s */
    CHECK(!strcmp(v_str, "-n") && v_int == 3);
    /* an option not given keeps its destination's value (the default) */
    reset();
    CHECK_EQ(parse(&all_cmd, "-p f"), CLI_ARGS_GO);
    CHECK(v_int == 3 && v_off == 1 && v_str == NULL && v_count == 0);
    /* repeated: the last wins, and count says how often */
    reset();
    CHECK_EQ(parse(&all_cmd, "-p f -s a --str b -s c -n 1 -n 2"), CLI_ARGS_GO);
    CHECK(!strcmp(v_str, "c") && v_int == 2 && v_count == 3);
    /* "-" is a positional, "--" ends the options */
    reset();
    CHECK_EQ(parse(&all_cmd, "-p f - -- -F"), CLI_ARGS_GO);
    CHECK(v_pos.n == 2 && !strcmp(v_pos.v[0], "-") && !strcmp(v_pos.v[1], "-F") && v_flag == 0);
}

/* one error line naming the command and the option, then the pointer to the help */
static void check_error(const char *args, const char *line)
{
    reset();
    char want[1024];
    snprintf(want, sizeof want, "edgellm demo: %s\nsee 'edgellm demo --help'\n", line);
    const int f0 = test_failures;
    CHECK_EQ(parse(&all_cmd, args), 2);
    CHECK(!strcmp(cap_err, want));
    CHECK(!strcmp(cap_out, ""));
    if (test_failures != f0) fprintf(stderr, "   args '%s' -> %s   wanted %s", args, cap_err, want);
}

static void test_cli_args_ranges(void)
{
    check_error("-p f -n 11", "-n expects an integer in [-5, 10], got '11'");
    check_error("-p f --int=-6", "--int expects an integer in [-5, 10], got '-6'");
    check_error("-p f -n 2x", "-n expects an integer in [-5, 10], got '2x'");
    check_error("-p f -n ''", "-n expects an integer in [-5, 10], got ''");
    check_error("-p f -n 99999999999999999999", "-n expects an integer in [-5, 10], got '99999999999999999999'");
    check_error("-p f --seed -1", "--seed expects a non-negative integer, got '-1'");
    check_error("-p f --seed 18446744073709551616", "--seed expects a non-negative integer, got '18446744073709551616'");
    check_error("-p f --dbl 1e6", "--dbl expects a number in [0, 1e6), got '1e6'");
    check_error("-p f --dbl -0.1", "--dbl expects a number in [0, 1e6), got '-0.1'");
    check_error("-p f --dbl nan", "--dbl expects a number in [0, 1e6), got 'nan'");
    check_error("-p f --flt 0", "--flt expects a finite number > 0, got '0'");
    check_error("-p f --flt inf", "--flt expects a finite number > 0, got 'inf'");
    check_error("-p f --flt 1e39", "--flt expects a finite number > 0, got '1e39'");    /* not finite as a float */
    check_error("-p f --flt 1e-50", "--flt expects a finite number > 0, got '1e-50'");  /* 0 as a float */
    check_error("-c purple -p f", "-c expects red, green or blue, got 'purple'");
    check_error("-p ''", "-p expects a file name, got ''");
    check_error("-p f --even 3", "--even wants an even number, got '3'");
    check_error("-p f -l a -l b -l c -l d", "-l is given more than 3 times");
    /* the bounds themselves are in the range */
    reset();
    CHECK_EQ(parse(&all_cmd, "-p f -n 10 --dbl 0 --flt 3.4e38"), CLI_ARGS_GO);
    CHECK(v_int == 10 && v_dbl == 0 && v_flt > 3e38f);
}

static void test_cli_args_refusals(void)
{
    check_error("-p f --frob", "unknown option '--frob'");
    check_error("-p f --frob=1", "unknown option '--frob'");
    check_error("-p f -nx", "unknown option '-nx'");          /* no clustering, no attached values */
    check_error("-p f --in", "unknown option '--in'");         /* no abbreviations */
    check_error("-p f --=x", "unknown option '--=x'");
    check_error("-p f --other 1", "--other is not an option of demo (only edgellm other takes it)");
    check_error("-p f --flag=1", "--flag takes no value");
    check_error("-p f --no-thing=", "--no-thing takes no value");
    check_error("--help=x", "--help takes no value");
    check_error("-p f -n", "-n needs a value");
    check_error("-p f --colour", "--colour needs a value");
    check_error("-p f a b c", "unexpected argument 'c'");
    check_error("-F", "-p FILE is required");
    /* parsing stops at the first error */
    check_error("-p f --int 99 --frob", "--int expects an integer in [-5, 10], got '99'");
    /* no argument at all: the whole help, on stderr */
    reset();
    CHECK_EQ(parse(&all_cmd, ""), 2);
    CHECK(!strncmp(cap_err, "usage: edgellm demo", 19) && strstr(cap_err, "--a-rather-long-option-name"));
    /* several missing: named together */
    static int x, y;
    static const cli_opt two[] = {
        {CLI_INT("-x", NULL, "N", &x, 0, 9), .required = 1},
        {CLI_INT(NULL, "--y", "M", &y, 0, 9), .required = 1},
        {CLI_FLAG("-q", NULL, &x, 1)},
    };
    static const char *p[2];
    static cli_list pl = {p, 0, 2};
    static const cli_opt pos = {CLI_LIST(NULL, NULL, "IN OUT", &pl), .required = 1};
    const cli_command c2 = {.name = "two", .opts = two, .n_opts = CLI_N_OPTS(two), .positional = &pos};
    CHECK_EQ(parse(&c2, "-q"), 2);
    CHECK(!strcmp(cap_err, "edgellm two: IN OUT, -x N and --y M are required\nsee 'edgellm two --help'\n"));
    pl.n = 0;
    CHECK_EQ(parse(&c2, "a b -x 1"), 2);
    CHECK(!strcmp(cap_err, "edgellm two: --y M is required\nsee 'edgellm two --help'\n"));
    pl.n = 0;
    CHECK_EQ(parse(&c2, "a -x 1 --y 2"), 2);   /* a LIST positional that is required needs all of it */
    CHECK(strstr(cap_err, "IN OUT is required") != NULL);
    /* a command without positionals */
    const cli_command c3 = {.name = "three", .opts = two + 2, .n_opts = 1};
    CHECK_EQ(parse(&c3, "-q -"), 2);
    CHECK(!strcmp(cap_err, "edgellm three: unexpected argument '-'\nsee 'edgellm three --help'\n"));
    /* the errors a command finds itself, in the same form */
    capture(true);
    const int rc = cli_args_error(&c3, "give %s or %s, not both", "-a", "-b");
    capture(false);
    CHECK_EQ(rc, 2);
    CHECK(!strcmp(cap_err, "edgellm three: give -a or -b, not both\nsee 'edgellm three --help'\n"));
    capture(true);
    CHECK_EQ(cli_args_missing(&c3, 1, "give -a"), 2);   /* no argument at all: the help instead */
    CHECK_EQ(cli_args_missing(&c3, 2, "give -a"), 2);
    capture(false);
    CHECK(!strncmp(cap_err, "usage: edgellm three [options]\n", 31) &&
          strstr(cap_err, "-h, --help") && strstr(cap_err, "edgellm three: give -a\nsee 'edgellm three --help'\n"));
}

static void test_cli_args_help_lists_every_option(void)
{
    reset();
    v_enum = 2;
    CHECK_EQ(parse(&all_cmd, "-n 4 --help --frob"), 0);   /* --help ends parsing: --frob is not seen */
    CHECK(!strcmp(cap_err, ""));
    v_int = 3;   /* the defaults shown are the values before the line was read: -n 4 is not one */
    const char *h = help_of(&all_cmd);
    CHECK(!strcmp(cap_out, h));
    static const char head[] = "usage: edgellm demo -p FILE [IN OUT] [options]\n\nA table with every kind of option.\n";
    CHECK(!strncmp(h, head, strlen(head)));
    static const char *const want[] = {
        "\narguments:\n  IN OUT ", "\nvalues:\n  -F, --flag ", "  --no-thing ", "  -s, --str TEXT ",
        "  -p, --path FILE ", "a path (required)", "  -n, --int N ", "an integer (default: 3)\n", "  --seed S ",
        "a seed (default: from the clock)\n", "a colour (default: green)\n", "repeatable\n",
        "  --dbl X ", "\nmore:\n  --flt X ", "  -c, --colour red|green|blue\n", "  -l, --list ITEM ", "  --even N ",
        "  --a-rather-long-option-name VALUE\n", "  -h, --help ", "show this help\n", "\nNotes after the options.\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const int f0 = test_failures;
        CHECK(strstr(h, want[i]) != NULL);
        if (test_failures != f0) fprintf(stderr, "   missing '%s' in:\n%s", want[i], h);
    }
    /* aligned: each help text starts in one column; no line over 100 columns; a wrapped
     * help goes on under its first line */
    int col = -1;
    for (const char *line = h; *line;) {
        const size_t n = strcspn(line, "\n");
        CHECK(n <= 100);
        if (!strncmp(line, "  -", 3) || !strncmp(line, "  IN", 4)) {
            const char *gap = strstr(line, "  ") ? strstr(line + 2, "  ") : NULL;
            if (gap && gap < line + n) {
                int c = (int)(gap - line);
                while (line[c] == ' ') c++;
                if (col < 0) col = c;
                CHECK_EQ(c, col);
            }
        }
        line += n + (line[n] == '\n');
    }
    CHECK(col > 0);
    const char *wrap = strstr(h, "--even N");
    const char *next = wrap ? strchr(wrap, '\n') : NULL;
    CHECK(next && strspn(next + 1, " ") == (size_t)col);
    const char *long_name = strstr(h, "--a-rather-long-option-name VALUE\n");
    CHECK(long_name && strspn(strchr(long_name, '\n') + 1, " ") == (size_t)col);
    /* a default longer than a line: on its own line, broken after a comma */
    const char *list = strstr(h, "  --types LIST ");
    CHECK(list && strstr(list, "a list\n") && strstr(list, "(default: alpha,beta,") &&
          strstr(list, ",\n") && strstr(list, "sigma)\n"));
    /* -h works as --help */
    CHECK_EQ(parse(&all_cmd, "-h"), 0);
    CHECK(!strcmp(cap_out, h));
}

int main(void)
{
    RUN(test_cli_args_each_kind_and_form);
    RUN(test_cli_args_ranges);
    RUN(test_cli_args_refusals);
    RUN(test_cli_args_help_lists_every_option);
    return test_summary();
}
