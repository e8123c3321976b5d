/* The vm backend's translation of the view plan (backend/view.h): the 9p
 * shares, the guest's read-only list, and the workspace's protected paths
 * enforced by the host for QEMU: a guest root (cordon run as root, or any
 * agent through the guest's Docker daemon) can undo the guest's own
 * read-only binds, so QEMU itself runs in a mount namespace where those
 * paths are read-only binds. Host context (supervisor; vm_protect_apply in
 * QEMU's child before exec). */
#pragma once

#include "backend/view.h"
#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct vm_share;

/* One bind in QEMU's mount namespace: source over target (host paths). */
struct vm_bind {
    char *source;
    char *target;
    bool readonly;
    /* A source the workspace holds: the tree taken must be this directory. */
    bool pinned;
    dev_t dev;
    ino_t ino;
    /* Review mode (docs/review.md "Backends"): this entry is the overlay,
     * source its lower layer (the workspace), layer its review directory,
     * mounted over target (the workspace, the share QEMU exports). */
    char *layer;
};

/* The binds for QEMU (ended by an entry with a NULL target, malloc'd; *out
 * is NULL when there are none): the git metadata plan always, and the
 * protected paths read-only over themselves as root, always; unprivileged only when
 * guest_root_reachable (the guest's Docker daemon hands the agent guest
 * root): QEMU then needs a user namespace for its mounts, in which files of
 * other owners (root's /usr) show as nobody to the guest, a price paid only
 * then (the guest's user cannot undo the guest's binds otherwise). A
 * protected path that is a symlink, or reached through one, refuses the
 * start, as on ns. Review mode: the overlay over the workspace, always
 * (the workspace's protected paths then need no bind: QEMU writes only
 * the upper layer). */
int vm_protect_plan(const struct view_plan *view, bool guest_root_reachable, struct vm_bind **out,
                    struct cordon_error *err);
void vm_protect_free(struct vm_bind *binds);

/* The view's shares, appended to shares[*n..max) (after /usr and /etc):
 * the workspace, the git directories outside it (as many as fit), each
 * [[mounts]] directory (a file, or one past max, refuses the start). The
 * strings are the plan's. */
int vm_view_shares(const struct view_plan *view, struct vm_share *shares, size_t *n, size_t max,
                   struct cordon_error *err);

/* What the guest binds read-only over itself (the boot spec's "protected",
 * vm-init.c), appended to list: the configured protected paths and the
 * git metadata's read-only binds that cover no writable one, as the guest
 * sees them. -1 when out of memory. */
int vm_view_guest_protected(const struct view_plan *view, json_t *list);

/* In QEMU's child, before exec: a mount namespace of its own (and, when not
 * root, a user namespace mapping only the caller's uid and gid) with each
 * bind made in order, every source taken before the first is bound (in
 * review mode the overlay first: the workspace share's source). 0, or -1
 * with errno. */
int vm_protect_apply(const struct vm_bind *binds);

/* What vm_protect_apply needs, tried in a child that exits at once (the
 * host probe, backend/probe.h): the same namespaces, a slave /, a read-only
 * bind made with the mount API. 0, or -errno of the first refused step;
 * *step names it. */
int vm_protect_probe(const char **step);
