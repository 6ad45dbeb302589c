/* cmd_convert.c — 'edgellm convert' (not written yet). */
#include "commands.h"

int cmd_convert(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "edgellm convert: not implemented yet\n");
    return 1;
}
