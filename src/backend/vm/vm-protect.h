/* The workspace's protected paths, enforced by the host for QEMU: a guest
 * root (cordon run as root, or any agent through the guest's Docker daemon)
 * can undo the guest's own read-only binds, so QEMU itself runs in a mount
 * namespace where those paths are read-only binds. Host context
 * (supervisor; vm_protect_apply in QEMU's child before exec). */
#pragma once

#include "util/error.h"

#include <stdbool.h>

struct launch;

/* The host paths to keep read-only for QEMU (NULL-terminated, malloc'd;
 * *out is NULL when there are none). As root, always; unprivileged only when
 * guest_root_reachable (the guest's Docker daemon hands the agent guest
 * root): QEMU then needs a user namespace for its mounts, in which files of
 * other owners (root's /usr) show as nobody to the guest, a price paid only
 * then (the guest's user cannot undo the guest's binds otherwise). A
 * protected path that is a symlink, or reached through one, refuses the
 * start, as on ns. */
int vm_protect_plan(const struct launch *l, bool guest_root_reachable, char ***out,
                    struct cordon_error *err);
void vm_protect_free(char **paths);

/* In QEMU's child, before exec: a mount namespace of its own (and, when not
 * root, a user namespace mapping only the caller's uid and gid) with each
 * path bound read-only over itself. 0, or -1 with errno. */
int vm_protect_apply(char *const *paths);
