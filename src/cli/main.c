/* `cordon` entry point: global flags and dispatch to subcommands. Host
 * context, unprivileged. */
#include "cli/commands.h"
#include "config.h"
#include "version.h"
#include "util/error.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct cli_command cli_commands[] = {
    {"run",
     cmd_run,
     CLI_EXEC,
     {cli_run_options},
     CLI_CONFIG,
     "run a command in a sandbox of the current workspace"},
    {"shell",
     cmd_shell,
     CLI_STOPPED,
     {cli_run_options},
     CLI_CONFIG,
     "start an interactive shell in a sandbox"},
    {"config",
     cmd_config,
     CLI_NONE,
     {cli_config_main_options, cli_config_check_options},
     CLI_CONFIG,
     "show the effective configuration (--explain, --where, check FILE)"},
    {"trust",
     cmd_trust,
     CLI_DIR,
     {cli_trust_options},
     0,
     "trust this workspace's .cordon.toml (pinned to its content)"},
    {"untrust", cmd_untrust, CLI_DIR, {NULL}, 0, "stop trusting this workspace's .cordon.toml"},
    {"tool",
     cmd_tool,
     CLI_TOOL,
     {cli_tool_options},
     CLI_CONFIG,
     "run one of the seven agent tools in a sandbox"},
    {"mcp",
     cmd_mcp,
     CLI_NONE,
     {cli_mcp_options},
     CLI_CONFIG,
     "serve the tools over MCP (stdio) from one sandbox"},
    {"ls",
     cmd_ls,
     CLI_NONE,
     {cli_ls_options},
     0,
     "list the sandboxes cordon made (running and stopped)"},
    {"rm", cmd_rm, CLI_STOPPED, {NULL}, 0, "remove a stopped sandbox's state"},
    {"changes",
     cmd_changes,
     CLI_SANDBOX,
     {cli_changes_options},
     0,
     "list what a review-mode sandbox changed (docs/review.md)"},
    {"diff",
     cmd_diff,
     CLI_SANDBOX,
     {cli_diff_options},
     0,
     "a unified diff of a review-mode sandbox's changes (--stat)"},
    {"apply",
     cmd_apply,
     CLI_SANDBOX,
     {cli_apply_options},
     0,
     "write a review-mode sandbox's changes into the workspace"},
    {"discard",
     cmd_discard,
     CLI_STOPPED,
     {cli_review_options},
     0,
     "drop a stopped review-mode sandbox's changes"},
    {"rewind",
     cmd_rewind,
     CLI_SANDBOX,
     {cli_rewind_options},
     0,
     "return a review-mode sandbox's workspace to after call N"},
    {"fork",
     cmd_fork,
     CLI_SANDBOX,
     {cli_review_options},
     0,
     "copy a review-mode sandbox's changes into a new sandbox"},
    {"gc",
     cmd_gc,
     CLI_NONE,
     {cli_gc_options},
     0,
     "remove stale sandboxes (not running, older than gc_hours)"},
    {"log",
     cmd_log,
     CLI_SANDBOX,
     {cli_log_options},
     0,
     "a session's tool calls and network decisions (--follow, --json)"},
    {"verify",
     cmd_verify,
     CLI_SANDBOX,
     {cli_verify_options},
     CLI_CONFIG,
     "audit a fresh sandbox, or a running session's (NAME): PASS/FAIL + evidence"},
    {"doctor",
     cmd_doctor,
     CLI_NONE,
     {cli_doctor_options},
     CLI_CONFIG,
     "check what this host allows each backend, with the fix (--json)"},
    {"help",
     cmd_help,
     CLI_COMMAND,
     {NULL},
     CLI_NO_HELP,
     "describe cordon, or one COMMAND (the same as COMMAND --help)"},
    /* Not listed: the shell completion scripts (`cordon completions bash`). */
    {"completions",
     cmd_completions,
     CLI_SHELL,
     {NULL},
     CLI_HIDDEN | CLI_NO_HELP,
     "print a shell completion script"},
};
const size_t cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);

static void usage(FILE *out)
{
    fprintf(out, "usage: cordon [--debug] COMMAND [ARGS...]\n"
                 "       cordon --version | --help\n\ncommands:\n");
    for (size_t i = 0; i < cli_command_count; i++) {
        if (!(cli_commands[i].flags & CLI_HIDDEN))
            fprintf(out, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
    }
    fprintf(out, "\n`cordon help COMMAND` (or `cordon COMMAND --help`) describes a command;\n"
                 "`man cordon` describes them all, `man cordon.toml` the configuration.\n"
                 "Exit status: a usage error is 2 (125 for run, shell, tool, mcp and verify),\n"
                 "cordon's own failure 125; `cordon run` exits with the command's status.\n");
}

int cli_main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--debug") == 0) {
            log_debug_enabled = true;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("cordon %s (commit %s)\n", CORDON_VERSION, CORDON_COMMIT);
            return 0;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cordon: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return CORDON_EXIT_USAGE;
        }
    }
    if (getenv("CORDON_DEBUG") && strcmp(getenv("CORDON_DEBUG"), "1") == 0)
        log_debug_enabled = true;
    if (i >= argc) {
        usage(stderr);
        return CORDON_EXIT_USAGE;
    }
    for (size_t c = 0; c < cli_command_count; c++) {
        if (strcmp(argv[i], cli_commands[c].name) == 0)
            return cli_commands[c].run(argc - i, argv + i);
    }
    fprintf(stderr, "cordon: unknown command '%s'\n", argv[i]);
    usage(stderr);
    return CORDON_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
