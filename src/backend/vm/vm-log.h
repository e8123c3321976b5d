/* Bounded logs of QEMU's output (vm-log.c): the guest's serial console and
 * QEMU's own stderr reach the state directory through a keeper process that
 * caps each file. Host context, the supervisor. */
#pragma once

#include "util/error.h"

#include <stddef.h>
#include <sys/types.h>

/* Each log file holds at most this much (plus one read) before it is
 * rotated to NAME.1: at most about twice this per stream on disk. */
#define VM_LOG_FILE_MAX (1u << 20)

#define VM_LOG_STREAMS 2

/* Starts a keeper that copies what is written to each of the returned
 * pipes' write ends (ret_write_fds[i], O_CLOEXEC) into dir/names[i], rotating
 * at file_max bytes, until every writer has closed them. Files are created
 * 0600 and truncated. The keeper exits on its own once the writers are
 * gone; with ret_pid the caller reaps it, without it is not the caller's
 * child at all. */
int vm_log_keeper_start(const char *dir, const char *const names[VM_LOG_STREAMS], size_t file_max,
                        int ret_write_fds[VM_LOG_STREAMS], pid_t *ret_pid,
                        struct cordon_error *err);
