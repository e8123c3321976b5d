/* A vm sandbox's host-side state (struct sandbox's priv), shared by the
 * files of its start: vm.c (the session and its boot attempts), vm-etc.c
 * (the curated /etc) and vm-launch.c (QEMU's process and connections).
 * Private to src/backend/vm/. Host context (supervisor). */
#pragma once

#include "backend/vm/vm-docker-plan.h"
#include "backend/vm/vm-net.h"
#include "backend/vm/vm-protect.h"
#include "backend/vm/vm-qemu.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

struct vm_state {
    char dir[256];          /* the session's state directory (socket paths must fit 108 bytes) */
    char accel[8];          /* "kvm" or "tcg" */
    int fds[SOCK_COUNT];    /* connected streams to QEMU's chardevs */
    int listen[SOCK_COUNT]; /* listening sockets, closed once accepted */
    struct vm_docker_plan docker;
    struct vm_bind *protect; /* QEMU's binds (vm-protect.c), or NULL */
    bool etc_filled;         /* vm_etc_fill() done (once, even across a KVM retry) */
    /* The /etc the guest gets: a prepared copy of this content in the
     * state root's .vm-etc (vm_etc_cache_find), or the session's own etc,
     * filled while QEMU starts and moved there once the guest booted. */
    char etc_path[PATH_MAX];
    char etc_cache[PATH_MAX]; /* <state root>/.vm-etc, or "" (no cache) */
    char etc_name[20];        /* the content's key, the entry's name */
    bool etc_store;           /* this session's copy goes into the cache */
    struct vm_net net;        /* network mode, port relay, passt */
    char qemu[PATH_MAX];      /* the QEMU binary found in PATH */
    /* Snapshot restore (vm-snapshot.c): where this configuration's saved
     * guest is, its key, and how this session's guest started. */
    char snap_path[PATH_MAX];
    uint64_t snap_key;
    bool snap_usable; /* a configuration a snapshot can be taken of */
    bool snap_broke;  /* the last boot failed in its snapshot save */
    int snap_ram_fd;  /* the guest memory's file while saving (a memfd) or restoring, else -1 */
    int qmp_listen;   /* QMP's listener while saving, else -1 */
};

/* How one boot attempt starts the guest. */
enum boot_mode {
    BOOT_PLAIN,   /* a normal boot */
    BOOT_SAVE,    /* a normal boot that saves the parked guest first */
    BOOT_RESTORE, /* QEMU restores the saved guest (-incoming) */
};
