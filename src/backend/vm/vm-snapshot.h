/* A saved guest to start from (docs/vm-backend.md "Snapshot restore"): the
 * state of a freshly booted guest whose init waits for its boot spec, saved
 * with QEMU's migration to a file in the kernel's cache and restored with
 * -incoming. Host context (supervisor). */
#pragma once

#include "backend/vm/vm-qemu.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The saved state's fd in a restoring QEMU (-incoming fd:5). */
#define VM_SNAPSHOT_QEMU_FD     5
#define VM_SNAPSHOT_QEMU_FD_STR "5"

/* Whether snapshots are used at all (CORDON_VM_SNAPSHOT=0 turns them off). */
bool vm_snapshot_enabled(void);

/* The key of everything the saved state depends on: the QEMU command line
 * with the session's own paths left out (state directory, the shares' host
 * directories and modes, the Docker disk's path but not its size), the
 * identity of QEMU, the kernel and the initramfs, and the format version. */
uint64_t vm_snapshot_key(const struct vm_qemu_input *in, const char *qemu_path);
/* <cache_dir>/snapshots/vm-<key>.snap */
int vm_snapshot_path(const char *cache_dir, uint64_t key, char *out, size_t size,
                     struct cordon_error *err);

/* The verified snapshot at path, positioned at the migration stream: a
 * regular file of this uid, mode 0600, with this format version, key and
 * the payload size its header says. -1 when there is none or it does not
 * verify (err says why; a bad one is removed). */
int vm_snapshot_open(const char *path, uint64_t key, struct cordon_error *err);
/* The same without the checksum, which vm_snapshot_verify() then
 * computes while QEMU starts paused (-S); *ram_fd the guest memory's file
 * (the snapshot's .ram beside it: this user's, 0600, of the size and inode
 * the header names), mapped private by the restoring QEMU. */
int vm_snapshot_open_unchecked(const char *path, uint64_t key, int *ram_fd,
                               struct cordon_error *err);
/* The stream's and the memory's checksums against the header's; a
 * mismatch removes the snapshot. -1 with err when they do not match: the
 * guest must not run. */
int vm_snapshot_verify(int fd, int ram_fd, const char *path, struct cordon_error *err);
/* The restoring QEMU (-incoming defer; qmp_fd, a connected QMP socket)
 * told to read the device state from VM_SNAPSHOT_QEMU_FD, its memory
 * being the file it mapped (x-ignore-shared). */
int vm_snapshot_incoming(int qmp_fd, long long deadline, struct cordon_error *err);
/* The checksum passed: the restoring QEMU starts the vCPUs once the
 * stream is loaded (the same QMP connection, after vm_snapshot_incoming). */
int vm_snapshot_resume(int qmp_fd, long long deadline, struct cordon_error *err);
/* Removes a snapshot QEMU could not restore. */
void vm_snapshot_discard(const char *path);
/* The same for the snapshot open on fd: path and its memory file are
 * removed only while they are still the files fd's header names (a save
 * that replaced them meanwhile keeps its own). */
void vm_snapshot_discard_fd(int fd, const char *path);

/* Saves the parked guest through QEMU's monitor (qmp_fd, a connected QMP
 * socket) to path (temp file + rename, 0600): the device state in QEMU's
 * stream, its memory (ram_fd, the memfd QEMU maps shared) copied to the
 * .ram beside it, sparse. Then lets the guest continue, whether the save
 * worked or not. -1 with err when the save failed but the guest runs on;
 * -2 when it may be left stopped. */
int vm_snapshot_save(int qmp_fd, const char *path, uint64_t key, int ram_fd, long long deadline,
                     struct cordon_error *err);
/* The same format from a stream in memory and a memory file (ram_fd):
 * what vm_snapshot_save writes once QEMU has migrated, for tests of the
 * format without QEMU. */
int vm_snapshot_store(const char *path, uint64_t key, const void *stream, size_t len, int ram_fd,
                      struct cordon_error *err);
