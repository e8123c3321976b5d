/* QEMU's process and its connections for one boot attempt (vm-launch.c).
 * Host context (supervisor); QEMU itself runs without capability. */
#pragma once

#include "backend/backend.h"
#include "backend/vm/vm-state.h"
#include "util/error.h"

#include <stddef.h>
#include <sys/types.h>

/* A listening AF_UNIX socket dir/name (0600). */
int vm_launch_listen(const char *dir, const char *name, struct cordon_error *err);
/* Starts QEMU with argv: dies with the supervisor, its own process group,
 * stdio on the capped logs of dir, net_fd, incoming_fd and ram_fd (or -1) on their
 * fixed numbers, protect's binds applied, no capability, a minimal
 * environment. Returns its pid, *pidfd_out a pidfd of it. */
pid_t vm_launch_spawn(char *const *argv, const char *dir, int net_fd, int incoming_fd, int ram_fd,
                      const struct vm_bind *protect, int *pidfd_out, struct cordon_error *err);
/* The last lines of a log file, for an error message ("" when none). */
void vm_launch_log_tail(const char *path, char *out, size_t size);
/* Accepts QEMU's three serial connections; fails when QEMU exits first. */
int vm_launch_accept(struct vm_state *st, int pidfd, long long deadline, struct cordon_error *err);
/* QEMU's monitor connection (BOOT_SAVE, BOOT_RESTORE); its listener goes. */
int vm_launch_qmp_accept(struct vm_state *st, int pidfd, long long deadline,
                         struct cordon_error *err);
/* BOOT_SAVE: the guest parked and saved (see vm-launch.c). */
int vm_launch_park_and_save(struct vm_state *st, int pidfd, long long deadline,
                            struct cordon_error *err);
/* Closes the serial connections and listeners. */
void vm_launch_close(struct vm_state *st);
/* Kills and reaps QEMU (sb->pid), closes its pidfd. */
void vm_launch_kill(struct sandbox *sb);
