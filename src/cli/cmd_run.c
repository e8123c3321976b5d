/* `cordon run` and `cordon shell`. Host context. */
#include "cli/commands.h"
#include "util/error.h"

#include <stdio.h>

int cmd_run(int argc, char **argv)
{
    fprintf(stderr, "cordon: run: not implemented yet\n");
    return CORDON_EXIT_FAILURE;
}

int cmd_shell(int argc, char **argv)
{
    return cmd_run(argc, argv);
}
