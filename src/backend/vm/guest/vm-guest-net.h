/* The guest's network (docs/vm-backend.md "Network"), as the boot spec's
 * "net" asks. Guest context: the init, PID 1, the guest's root; the port
 * forwarder it starts runs as nobody. */
#pragma once

#include <jansson.h>

/* Open mode's interface, the session CA's bundle, and the port forwarder
 * (the guest's end of the allowlist proxy and of published ports); net
 * NULL: nothing. Any failure is guest_fail. */
void guest_net_setup(json_t *net);
