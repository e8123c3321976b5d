/* The sandbox's view inside the guest (docs/design.md "The sandbox's
 * view"), built from the boot spec. Guest context: the init, PID 1, the
 * guest's root, before anything runs for the user. */
#pragma once

#include <jansson.h>
#include <sys/types.h>

/* The fresh tmpfs places and home, the 9p shares, the protected paths
 * bound read-only, the hostname, loopback up, the root read-only; any
 * failure is guest_fail. */
void guest_view_build(json_t *spec, uid_t uid, gid_t gid);
/* /run/cordon/agent, where the ns view keeps the agent, to /init. */
void guest_agent_view_link(void);
