/* cordon-agent's tool server: PID 1 in the sandbox, serving the agent
 * protocol on one fd. Sandbox context (or a host helper for approved host
 * calls, where it is not PID 1). */
#pragma once

/* Serves until the channel closes or a shutdown frame arrives; returns the
 * exit status. */
int agent_serve(int channel_fd);
