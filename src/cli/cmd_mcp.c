/* `cordon mcp`: the MCP server on stdio. Host context. Nothing but protocol
 * messages goes to stdout; diagnostics go to stderr. */
#include "cli/commands.h"
#include "cli/options.h"
#include "mcp/server.h"
#include "util/error.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *out, void *ctx)
{
    (void)ctx;
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

/* --attach NAME: back into a sandbox kept by teardown stop/none. */
static int attach_to(void *ctx, const char *option, const char *name)
{
    (void)option;
    char *set = NULL;
    if (asprintf(&set, "sandbox_name=\"%s\"", name) < 0)
        return -1;
    return cli_sets_push(ctx, set);
}

int cmd_mcp(int argc, char **argv)
{
    struct cli_sets sets = {0};
    struct mcp_options o = {0};
    const char *attach = NULL;
    const struct cli_option options[] = {
        {.name = "--attach", .has_value = true, .value = &attach, .handle = attach_to},
        {.name = "--lazy", .flag = &o.lazy_start},
        {.name = "--off", .flag = &o.start_off},
        {.name = "--headless", .flag = &o.headless},
        {0},
    };
    const struct cli_parser parser = {.command = "mcp",
                                      .word = "argument",
                                      .usage = usage,
                                      .ctx = &sets,
                                      .options = options,
                                      .sets = &sets};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_parse_status(parsed);
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
