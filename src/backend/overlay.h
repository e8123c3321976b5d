/* Review mode's overlay (docs/review.md "The kernel's rules"), made the
 * same way wherever cordon mounts it itself: the ns backend's set-up child
 * (ns-mount.c) and QEMU's mount namespace on the vm backend (vm-protect.c).
 * The docker backend has the daemon mount it with the same options
 * (docker-run.c, REVIEW_OVERLAY_OPTIONS). Host context, between fork/clone
 * and exec: no allocation. */
#pragma once

#include "util/error.h"

/* The options every review overlay is mounted with, so that the upper layer
 * is the one form review.c decodes: markers in user.overlay.* (userxattr,
 * also for root), no redirect created or followed, whole files only. */
#define REVIEW_OVERLAY_OPTIONS "userxattr,redirect_dir=nofollow,metacopy=off,index=off"

/* A detached overlay mount (fsmount's fd, close-on-exec) with lower as its
 * read-only lower layer and layer/upper, layer/work above it; attr:
 * MOUNT_ATTR_* for fsmount. -1 with err set (error_set_raw). */
int review_overlay_tree(const char *lower, const char *layer, unsigned attr,
                        struct cordon_error *err);
