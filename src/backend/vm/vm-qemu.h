/* The QEMU command line of one vm boot: a pure builder from what vm.c
 * decided (accelerator, state directory, kernel, shares, network ports, the
 * Docker disk), so it is unit-tested without QEMU
 * (tests/unit/backend/vm/test-qemu-argv.c). Host context. */
#pragma once

#include "backend/spec.h"
#include "backend/vm/vm-net.h"

#include <stdbool.h>
#include <stddef.h>

#define QEMU_BINARY           "qemu-system-x86_64"
#define VM_MAX_ARGS           192
#define VM_MAX_SHARES         13
#define VM_QEMU_NET_FD        3 /* passt's socket in QEMU (open mode) */
#define VM_QEMU_CONSOLE_FD    4 /* the serial console's pipe to the log keeper (vm-log.c) */
#define VM_QEMU_RAM_FD        6 /* the guest memory's file (snapshots, vm-snapshot.c) */
#define VM_DEFAULT_MEMORY_MIB 2048

/* QEMU's three chardev sockets in the state directory. */
enum { SOCK_CHANNEL, SOCK_CONSOLE, SOCK_STDERR, SOCK_COUNT };
extern const char *const vm_sock_names[SOCK_COUNT];

/* A 9p share: a host directory at a guest path. */
struct vm_share {
    const char *host;
    const char *guest;
    bool readonly;
};

struct vm_qemu_input {
    const char *accel; /* "kvm" or "tcg" */
    const char *dir;   /* the session's state directory (the chardev sockets) */
    const char *vmlinuz;
    const char *initrd;
    const struct sandbox_limits *limits;
    long tsc_khz;             /* the host's TSC rate (the guest skips its calibration) */
    const char *append_extra; /* extra kernel parameters (CORDON_VM_APPEND), or NULL */
    const struct vm_net *net; /* the network device and virtio-serial ports */
    const struct vm_share *shares;
    size_t nshares;
    const char *docker_disk; /* the Docker daemon's disk image, or NULL */
    bool qmp;                /* a QMP monitor on <dir>/qmp (saving a snapshot, vm-snapshot.c) */
    bool incoming;           /* restore from the saved state on VM_SNAPSHOT_QEMU_FD */
    bool paused;             /* -S: the vCPUs wait for QMP's cont (vm_snapshot_resume) */
    /* The guest's memory: anonymous, or the file on VM_QEMU_RAM_FD mapped
     * shared (a boot that saves a snapshot: the file is the saved memory)
     * or private (a restore: copy-on-write over the saved memory, pages
     * read as the guest touches them). With a file, a restore's stream is
     * the device state only, loaded after -incoming defer (vm-snapshot.c). */
    enum vm_ram { VM_RAM_ANON, VM_RAM_FILE_SHARED, VM_RAM_FILE_PRIVATE } ram;
};

/* Host paths with commas, escaped for QEMU's option lists, at most. */
#define VM_MAX_ESCAPED VM_MAX_ARGS

struct vm_qemu_argv {
    char *args[VM_MAX_ARGS]; /* NULL-terminated once built */
    size_t n;
    bool failed;
    char *esc[VM_MAX_ESCAPED]; /* the escaped copies args were made from */
    size_t nesc;
};

/* Builds the argv into b (b zeroed by the caller); -1 when it does not fit
 * or an allocation failed. vm_qemu_argv_free() in either case. */
int vm_qemu_argv_build(const struct vm_qemu_input *in, struct vm_qemu_argv *b);
void vm_qemu_argv_free(struct vm_qemu_argv *b);

/* The guest's memory and vCPUs from the sandbox's limits. */
long vm_qemu_memory_mib(const struct sandbox_limits *limits);
long vm_qemu_cpus(const struct sandbox_limits *limits, const char *accel);
/* The host's TSC rate in kHz (from /proc/cpuinfo; 2 GHz when unknown). */
long vm_qemu_host_tsc_khz(void);
