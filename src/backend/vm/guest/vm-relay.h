/* "init" mode's relay (vm-relay.c): the command of `cordon run` with its
 * stdio over the virtio console and the stderr port. Guest context: the
 * init, PID 1, the guest's root; the command runs confined as the user. */
#pragma once

#include "backend/vm/guest/vm-command.h"

/* Runs c, relays its stdio and the channel's control frames (stdin EOF,
 * signals, resizes, probes) until it exits, reports its status and powers
 * off. */
void guest_run_relayed(const struct guest_command *c) __attribute__((noreturn));
