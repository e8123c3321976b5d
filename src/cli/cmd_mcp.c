/* `cordon mcp`: the MCP server on stdio. Host context. Nothing but protocol
 * messages goes to stdout; diagnostics go to stderr. */
#include "cli/commands.h"
#include "cli/options.h"
#include "mcp/server.h"
#include "util/error.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out,
            "usage: cordon mcp [--lazy] [--attach NAME] [--off] [--headless] [OPTIONS]\n\n"
            "Serves the seven tools (read, write, edit, ls, find, grep, bash) over MCP on\n"
            "stdio, all running in one sandbox of the current workspace for the whole\n"
            "session. --lazy starts the sandbox at the first tool call instead of at\n"
            "initialize. --off starts in host mode: tools run ON THE HOST, unsandboxed,\n"
            "until the client sends cordon/setMode {\"mode\":\"on\"}. --headless: nobody\n"
            "can approve a call's execution_target \"host\", so it is refused.\n"
            "--attach NAME goes back into a sandbox kept by teardown \"stop\" or \"none\"\n"
            "(its home and /tmp); the tools are blocked if there is none.\n"
            "While the sandbox runs, `cordon verify NAME` audits it through this\n"
            "process (docs/verify.md). See docs/routing.md.\n\n%s",
            cli_config_flags_help);
}

int cmd_mcp(int argc, char **argv)
{
    struct cli_sets sets = {0};
    struct mcp_options o = {0};
    const char *attach = NULL;
    for (int i = 1; i < argc; i++) {
        int rc = cli_config_flag(argc, argv, &i, &sets);
        if (rc < 0) {
            cli_sets_free(&sets);
            return CORDON_EXIT_FAILURE;
        }
        if (rc > 0)
            continue;
        if (strcmp(argv[i], "--attach") == 0 && i + 1 < argc) {
            /* Back into a sandbox kept by teardown stop/none. */
            char *set = NULL;
            attach = argv[++i];
            if (asprintf(&set, "sandbox_name=\"%s\"", attach) < 0 ||
                cli_sets_push(&sets, set) < 0) {
                cli_sets_free(&sets);
                return CORDON_EXIT_FAILURE;
            }
        } else if (strcmp(argv[i], "--lazy") == 0) {
            o.lazy_start = true;
        } else if (strcmp(argv[i], "--off") == 0) {
            o.start_off = true;
        } else if (strcmp(argv[i], "--headless") == 0) {
            o.headless = true;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            cli_sets_free(&sets);
            return 0;
        } else {
            fprintf(stderr, "cordon: mcp: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            cli_sets_free(&sets);
            return CORDON_EXIT_FAILURE;
        }
    }
    if (cli_sets_finish(&sets) < 0) {
        cli_sets_free(&sets);
        return CORDON_EXIT_FAILURE;
    }
    o.request = (struct launch_request){(const char *const *)sets.items, sets.net_audit_log,
                                        sets.net_hosts_file, attach};
    int rc = mcp_serve(&o);
    cli_sets_free(&sets);
    return rc;
}
