/* commands.h — one function per subcommand: argv[0] is the subcommand name.
 * Exit status: 0 success, 1 failed operation, 2 wrong command line. */
#ifndef EDGELLM_CLI_COMMANDS_H
#define EDGELLM_CLI_COMMANDS_H
#include "edgellm.h"
#include <stdio.h>

int cmd_plan(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_logits(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_synth(int argc, char **argv);
int cmd_bench(int argc, char **argv);

/* Print "edgellm CMD: message" to stderr. */
void cli_print_error(const char *cmd, const edgellm_error *err);
/* After a one-line command-line error: print "see 'edgellm CMD --help'" to stderr, return 2. */
int cli_see_help(const char *cmd);
/* Parse an int/float flag value; returns 0 on success, prints the problem and returns 2. */
int cli_parse_int(const char *cmd, const char *flag, const char *s, long lo, long hi, long *out);
int cli_parse_float(const char *cmd, const char *flag, const char *s, double *out);
#endif
