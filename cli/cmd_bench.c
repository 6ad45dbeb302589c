/* cmd_bench.c — placeholder while the command is written. */
#include "commands.h"
int cmd_bench(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "edgellm bench: not yet\n"); return 1; }
