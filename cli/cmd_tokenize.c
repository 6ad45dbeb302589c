/* cmd_tokenize.c — 'edgellm tokenize' (not written yet). */
#include "commands.h"

int cmd_tokenize(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "edgellm tokenize: not implemented yet\n");
    return 1;
}
