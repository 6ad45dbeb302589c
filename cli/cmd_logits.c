/* cmd_logits.c — 'edgellm logits' (not written yet). */
#include "commands.h"

int cmd_logits(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "edgellm logits: not implemented yet\n");
    return 1;
}
