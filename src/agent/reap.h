/* Ending everything a process started: used by the host agent (cordon-agent
 * serve --host), which has no PID namespace to take its processes with it.
 * Host context, the user's own process. */
#pragma once

#include "util/error.h"

/* How long the host agent may spend ending its leftover processes at the
 * end of a session; the supervisor waits longer before it kills the agent. */
#define REAP_HOST_TIMEOUT_MS 2000

/* Makes the caller a child subreaper: its descendants' orphans (a shell's
 * `cmd &`, nohup, setsid, a double fork) are reparented to it rather than
 * to init, so they stay findable as its descendants. */
int reap_become_subreaper(struct cordon_error *err);

/* SIGKILLs every living descendant of the calling process, round after
 * round (killing a parent reparents its children here), and reaps its
 * children, until none is left or timeout_ms has passed. Returns the number
 * of processes killed, or -1 (err set) when some were still alive at the
 * deadline or /proc could not be read. */
int reap_descendants(int timeout_ms, struct cordon_error *err);
