/* `cordon-agent connect HOST PORT`: ssh's ProxyCommand through cordon's
 * proxy (docs/ssh.md). Sandbox context, untrusted input (HOST, PORT). */
#pragma once

/* argv: "cordon-agent" "connect" HOST PORT. Returns the exit status: 0 when
 * the tunnel ran to its end, 1 when the proxy refused or could not be
 * reached (the reason on stderr), 125 for a bad command line. */
int agent_connect(int argc, char **argv);
