/* cordon-agent's tool server: PID 1 in the sandbox, serving the agent
 * protocol on one fd. Sandbox context (or a host helper for approved host
 * calls, where it is not PID 1). */
#pragma once

#include <stdbool.h>

/* Serves until the channel closes or a shutdown frame arrives; returns the
 * exit status. `host` (cordon-agent serve --host, outside any sandbox): the
 * agent is a child subreaper, and at the end kills every process its calls
 * left behind (agent/reap.h). */
int agent_serve(int channel_fd, bool host);
/* The same, reading frames from in_fd and writing them to out_fd: the
 * docker backend's channel is the container's stdin and stdout. */
int agent_serve_pipes(int in_fd, int out_fd, bool host);
