/* `cordon` entry point: global flags and dispatch to subcommands. Host
 * context, unprivileged. */
#include "cli/commands.h"
#include "config.h"
#include "util/error.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct cli_command commands[] = {
    {"run", cmd_run, "run a command in a sandbox of the current workspace"},
    {"shell", cmd_shell, "start an interactive shell in a sandbox"},
    {"config", cmd_config, "show the effective configuration (--explain, --where, check FILE)"},
    {"trust", cmd_trust, "trust this workspace's .cordon.toml (pinned to its content)"},
    {"untrust", cmd_untrust, "stop trusting this workspace's .cordon.toml"},
    {"tool", cmd_tool, "run one of the seven agent tools in a sandbox"},
    {"mcp", cmd_mcp, "serve the tools over MCP (stdio) from one sandbox"},
    {"ls", cmd_ls, "list the sandboxes cordon made (running and stopped)"},
    {"rm", cmd_rm, "remove a stopped sandbox's state"},
    {"gc", cmd_gc, "remove stale sandboxes (not running, older than gc_hours)"},
    {"log", cmd_log, "a session's tool calls and network decisions (--follow, --json)"},
    {"verify", cmd_verify,
     "audit a fresh sandbox, or a running session's (NAME): PASS/FAIL + evidence"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: cordon [--debug] COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n`cordon COMMAND --help` describes a command.\n");
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--debug") == 0) {
            log_debug_enabled = true;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("cordon %s\n", CORDON_VERSION);
            return 0;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "cordon: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return CORDON_EXIT_FAILURE;
        }
    }
    if (getenv("CORDON_DEBUG") && strcmp(getenv("CORDON_DEBUG"), "1") == 0)
        log_debug_enabled = true;
    if (i >= argc) {
        usage(stderr);
        return CORDON_EXIT_FAILURE;
    }
    for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
        if (strcmp(argv[i], commands[c].name) == 0)
            return commands[c].run(argc - i, argv + i);
    }
    fprintf(stderr, "cordon: unknown command '%s'\n", argv[i]);
    usage(stderr);
    return CORDON_EXIT_FAILURE;
}
