/* The subcommands of the `cordon` CLI. Host context. Each returns the process
 * exit status. */
#pragma once

#include "cli/options.h"

#include <stdbool.h>

struct launch;

/* One command: how it is dispatched (main.c), its line in `cordon --help`,
 * and its line in the table of commands that the completions are made of
 * and tests/unit/cli-docs.sh holds against its --help and the man page
 * (help.c). Its options are its parser's tables. */
enum cli_command_flag {
    CLI_HIDDEN = 1u << 0,  /* not listed (completions) */
    CLI_NO_HELP = 1u << 1, /* --help is not listed (help, completions) */
    CLI_CONFIG = 1u << 2,  /* it takes the configuration flags */
};

struct cli_command {
    const char *name;
    int (*run)(int argc, char **argv);   /* argv[0] is the subcommand name */
    enum cli_value positional;           /* what its non-option arguments are */
    const struct cli_option *options[2]; /* its parsers' tables (NULL: none) */
    unsigned flags;                      /* enum cli_command_flag */
    const char *summary;
};

/* Every command, in the order `cordon --help` lists them (main.c). */
extern const struct cli_command cli_commands[];
extern const size_t cli_command_count;

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

/* The commands' option tables (cli_parse's, and help.c's table of the
 * commands: one source). */
extern const struct cli_option cli_run_options[]; /* run, shell */
extern const struct cli_option cli_config_main_options[];
extern const struct cli_option cli_config_check_options[];
extern const struct cli_option cli_trust_options[];
extern const struct cli_option cli_tool_options[];
extern const struct cli_option cli_mcp_options[];
extern const struct cli_option cli_ls_options[];
extern const struct cli_option cli_gc_options[];
extern const struct cli_option cli_verify_options[];
extern const struct cli_option cli_changes_options[];
extern const struct cli_option cli_diff_options[];
extern const struct cli_option cli_apply_options[];
extern const struct cli_option cli_review_options[]; /* discard, fork */
extern const struct cli_option cli_rewind_options[];
extern const struct cli_option cli_log_options[];
extern const struct cli_option cli_doctor_options[];
