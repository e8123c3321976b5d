/* The guest init's basics, shared by its files (vm-init.c and the files
 * beside it): the channel to the supervisor, failing (reported on the
 * channel, then the guest powers off), mounts, kernel modules and the
 * virtio-serial ports. Guest context: the init, PID 1, the guest's root. */
#pragma once

#include "util/error.h"

/* How long a virtio port may take to appear and to be connected. */
#define GUEST_PORT_WAIT_MS 10000

/* The channel (VM_PORT_CHANNEL) once open, else -1. A forked child that
 * must not hold it (the port forwarder) closes it and sets -1. */
extern int guest_channel;

void guest_poweroff(void) __attribute__((noreturn));
/* Says msg on stderr and, once the channel exists, as {"t":"error"} to the
 * host; then powers off. */
void guest_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* dst made (mode 0755) and src mounted there, or guest_fail. */
void guest_mount_or_fail(const char *src, const char *dst, const char *type, unsigned long flags,
                         const char *data);
/* Loads the kernel modules a list file names (one path a line); a missing
 * list is none. -1 with err filled on the first module that fails. */
int guest_load_modules(const char *list, struct cordon_error *err);
/* Waits until the host side of the port fd is connected (guest_fail at the
 * deadline); returns fd. */
int guest_port_wait_host(int fd, const char *name, long long deadline);
/* The virtio port called name, opened and connected, or guest_fail. */
int guest_open_port(const char *name);
