/* The microVM backend (docs/vm-backend.md): a QEMU microvm with Debian's
 * kernel, an initramfs cordon builds itself with cordon-agent as /init, the
 * host's system directories and the workspace shared over virtio-9p, and the
 * agent's channel on a virtio-serial port. Host context (supervisor) unless
 * a comment says otherwise. */
#pragma once

#include "backend/backend.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

/* virtio-serial port names, seen in the guest under
 * /sys/class/virtio-ports/vport*p* /name. */
#define VM_PORT_CHANNEL "cordon.channel"
#define VM_PORT_STDERR  "cordon.stderr"

/* Where the kernel, its modules and the built initramfs live. */
struct vm_kernel {
    char dir[512];       /* .../vm/<version> */
    char version[128];   /* uname -r of the guest */
    char vmlinuz[640];   /* dir/vmlinuz */
    char modules[768];   /* dir/modules/<version> */
    char cache_dir[512]; /* writable: where initramfs images are written */
};

/* Finds the unpacked Debian kernel; when there is none, runs
 * scripts/vm-kernel.sh once (which needs apt, and root the first time). */
int vm_kernel_find(struct vm_kernel *k, bool fetch, struct cordon_error *err);

/* Builds (or reuses from the cache) the initramfs holding agent_path as
 * /init, the libraries it links, and the modules the guest needs; writes its
 * path to out. Rebuilt whenever the agent, a library or the kernel changes. */
int vm_initramfs_get(const struct vm_kernel *k, const char *agent_path, char *out, size_t out_size,
                     struct cordon_error *err);

/* Which accelerator to use: "kvm" when /dev/kvm works for a stock guest (a
 * cached verdict of an earlier boot), else "tcg". */
const char *vm_accel_choose(const struct vm_kernel *k);
/* The same decision without logging: why says what decided it (and, for a
 * cached KVM failure, how to retry KVM). */
const char *vm_accel_decide(const struct vm_kernel *k, char *why, size_t size);
/* Where the cached "KVM failed to boot a guest" verdict of this host is. */
void vm_accel_verdict_path(const struct vm_kernel *k, char *out, size_t size);
/* 0 when QEMU is in PATH; else err says how to install it. */
int vm_qemu_find(struct cordon_error *err);
/* Records that KVM failed to boot a stock guest on this host. */
void vm_accel_mark_kvm_broken(const struct vm_kernel *k, const char *why);

/* The sandbox's console and stderr sockets (host side), for `cordon run`. */
int vm_sandbox_console_fd(const struct sandbox *sb);
int vm_sandbox_stderr_fd(const struct sandbox *sb);
/* The accelerator the running VM uses ("kvm" or "tcg"). */
const char *vm_sandbox_accel(const struct sandbox *sb);

extern const struct backend_ops vm_backend_ops;

struct lifecycle;
/* Starts the guest with agent_argv as its init's command (serve mode:
 * `cordon-agent serve`; run mode: `cordon-agent init ... -- CMD`). */
int vm_sandbox_start(const struct launch *l, char *const *agent_argv, struct sandbox *sb,
                     struct cordon_error *err);
/* Run mode (run-vm.c): the backend's run operation. */
int vm_run(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell);
