/* The boot spec, the supervisor's first frame on the channel (vm-spec.c):
 * read, and the command it describes. Guest context: the init, PID 1, the
 * guest's root, before anything of the session exists. */
#pragma once

#include "backend/vm/guest/vm-command.h"

#include <jansson.h>
#include <stdbool.h>

/* The boot spec ({"t":"boot"}), after a park for a snapshot if the host
 * asks for one first; any failure is guest_fail. */
json_t *guest_boot_spec_read(void);
/* The command the spec describes (pointers into spec, which must outlive
 * c); guest_fail on a bad argv or environment. */
void guest_command_from_spec(json_t *spec, struct guest_command *c);
/* "init [--pty ...] -- CMD...": c->argv becomes CMD and c->pty is set;
 * false for any other mode (c unchanged). */
bool guest_command_init_mode(struct guest_command *c);
