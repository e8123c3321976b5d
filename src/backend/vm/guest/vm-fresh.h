/* A restored guest made as fresh as a booted one (vm-fresh.c). Guest
 * context: the init, PID 1, the guest's root, once the view is built. */
#pragma once

#include <jansson.h>

/* The boot spec's seed into the RNG, the host's clock, the disk's cached
 * blocks dropped, a boot id of this session; any failure is guest_fail. */
void guest_fresh_start(json_t *spec);
