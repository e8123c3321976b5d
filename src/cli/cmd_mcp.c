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
struct mcp_cli {
    struct cli_sets sets;
    struct mcp_options o;
    const char *attach;
};

static int attach_to(void *ctx, const char *option, const char *name)
{
    (void)option;
    struct mcp_cli *m = ctx;
    m->attach = name;
    char *set = NULL;
    if (asprintf(&set, "sandbox_name=\"%s\"", name) < 0)
        return -1;
    return cli_sets_push(&m->sets, set);
}

const struct cli_option cli_mcp_options[] = {
    CLI_FLAG("--lazy", "start the sandbox at the first tool call", struct mcp_cli, o.lazy_start),
    {.name = "--attach",
     .value = CLI_STOPPED,
     .help = "go back into a kept sandbox",
     .handle = attach_to},
    CLI_FLAG("--off", "start in host mode (unsandboxed)", struct mcp_cli, o.start_off),
    CLI_FLAG("--headless", "refuse host execution requests", struct mcp_cli, o.headless),
    {0},
};

int cmd_mcp(int argc, char **argv)
{
    struct mcp_cli m = {0};
    struct cli_sets *sets = &m.sets;
    const struct cli_parser parser = {
        .command = "mcp", .usage = usage, .ctx = &m, .options = cli_mcp_options, .sets = sets};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_parse_status(parsed);
    struct mcp_options o = m.o;
    o.request = (struct launch_request){(const char *const *)sets->items, sets->net_audit_log,
                                        sets->net_hosts_file, m.attach};
    int rc = mcp_serve(&o);
    cli_sets_free(sets);
    return rc;
}
