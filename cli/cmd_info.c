/* cmd_info.c — 'edgellm info' (not written yet). */
#include "commands.h"

int cmd_info(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "edgellm info: not implemented yet\n");
    return 1;
}
