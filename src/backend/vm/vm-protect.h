/* The workspace's protected paths, enforced by the host for QEMU: a guest
 * root (cordon run as root, or any agent through the guest's Docker daemon)
 * can undo the guest's own read-only binds, so QEMU itself runs in a mount
 * namespace where those paths are read-only binds. Host context
 * (supervisor; vm_protect_apply in QEMU's child before exec). */
#pragma once

#include "util/error.h"

struct launch;

/* The host paths to keep read-only for QEMU (NULL-terminated, malloc'd;
 * *out is NULL when there are none or when cordon is not root: an
 * unprivileged supervisor cannot make bind mounts for QEMU without a user
 * namespace, which would change the owners the guest sees). A protected path
 * that is a symlink, or reached through one, refuses the start, as on ns. */
int vm_protect_plan(const struct launch *l, char ***out, struct cordon_error *err);
void vm_protect_free(char **paths);

/* In QEMU's child, before exec: a mount namespace of its own with each path
 * bound read-only over itself. 0, or -1 with errno. */
int vm_protect_apply(char *const *paths);
