/* The subcommands of the `cordon` CLI. Host context. Each returns the process
 * exit status. */
#pragma once

#include <stdbool.h>

struct launch;

struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv); /* argv[0] is the subcommand name */
    const char *summary;
};

int cmd_run(int argc, char **argv);
int cmd_shell(int argc, char **argv);
int cmd_tool(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_rm(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_trust(int argc, char **argv);
int cmd_untrust(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_completions(int argc, char **argv);
/* `cordon ARGS...` (main.c), for `cordon help COMMAND`. */
int cli_main(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
/* review mode (cli/cmd_review.c, docs/review.md) */
int cmd_changes(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_discard(int argc, char **argv);
int cmd_rewind(int argc, char **argv);
int cmd_fork(int argc, char **argv);
int cmd_log(int argc, char **argv);
