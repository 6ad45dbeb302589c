/* cmd_run.c — 'edgellm run' (not written yet). */
#include "commands.h"

int cmd_run(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "edgellm run: not implemented yet\n");
    return 1;
}
