/* `cordon mcp`: an MCP server on stdio (JSON-RPC 2.0, one message per line)
 * exposing the seven tools, run in one sandbox per session. Host context,
 * unprivileged supervisor, single-threaded event loop. */
#pragma once

#include "supervisor/launch.h"

#include <stdbool.h>

struct mcp_options {
    struct launch_request request; /* configuration flags and network settings */
    bool lazy_start;               /* start the sandbox on the first call */
    bool start_off;                /* --off: host mode from the start (the user's choice) */
    bool headless;                 /* nobody can approve: host calls are refused */
};

/* Serves stdin/stdout until the client closes stdin or a signal ends the
 * session; returns the exit status. */
int mcp_serve(const struct mcp_options *o);

/* Test seam for the fuzzer: dispatches the lines read from fd (to end of
 * file) with no sandbox behind the tools; responses on fd 1. */
int mcp_dispatch_fd_for_fuzzing(int fd);
