/* Docker inside the microVM: the guest's own dockerd, started and verified
 * by the guest's init (root in the guest), and the status it leaves for the
 * agent's probe. Guest context. */
#pragma once

#include "proto/vm-docker-status.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* In the guest's init, before it drops to the user: creates the daemon's
 * socket (root:gid, 0660) and forks the keeper, a root process that starts
 * dockerd with that socket (systemd-style activation) and verifies it.
 * spec is the boot spec's "docker" object. With "require" the daemon is
 * started at once and this waits until it answers (or fails: -1 with the
 * reason in reason); with "auto" it starts on the first connection to the
 * socket, so a session that never uses Docker pays nothing. Fills summary
 * (for the boot answer) either way. fds_to_close: the init's own channels,
 * closed in the keeper (-1 terminated). */
int vm_docker_guest_start(json_t *spec, gid_t gid, const int *fds_to_close, char *reason,
                          size_t size, json_t **summary);
