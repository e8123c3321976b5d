/* The mount plan: the sandbox's view as a list of operations, built on the
 * host (where allocation and stat are fine) and applied by the child between
 * clone() and exec (where nothing allocates). */
#pragma once

#include "backend/ns/ns.h"

#include <stddef.h>
#include <sys/types.h>

enum ns_op_kind {
    NS_OP_MKDIR,      /* dest */
    NS_OP_MKFILE,     /* dest: empty file to bind a file onto */
    NS_OP_SYMLINK,    /* source = link text, dest */
    NS_OP_TMPFS,      /* dest, data = mount options */
    NS_OP_BIND,       /* source (under /oldroot), dest; attr = MOUNT_ATTR_* to set */
    NS_OP_PROC,       /* dest */
    NS_OP_DEVPTS,     /* dest */
    NS_OP_SYSFS,      /* dest; skipped when the kernel refuses (then /sys stays empty) */
    NS_OP_MASK,       /* dest: a file is covered by /dev/null, a directory by an empty tmpfs */
    NS_OP_READONLY,   /* dest: bound onto itself read-only */
    NS_OP_REMOUNT_RO, /* dest: an existing mount made read-only */
    NS_OP_PROTECT,    /* source = a bound directory inside the view, dest = relative path */
    NS_OP_OVERLAY,    /* source = lower (under /oldroot), data = dir of upper/ and work/, dest */
};

enum {
    NS_OP_OPTIONAL = 1 << 0, /* a missing source is skipped, not an error */
    NS_OP_CHECK_ID = 1 << 1, /* bind: the source must be the directory (dev, ino) planned */
};

struct ns_op {
    enum ns_op_kind kind;
    const char *source;
    const char *dest;
    const char *data;
    unsigned long attr;
    unsigned flags;
    dev_t dev; /* NS_OP_CHECK_ID */
    ino_t ino;
};

struct ns_mount_plan {
    struct ns_op *ops;
    size_t count, capacity;
    char **strings; /* owned copies the ops point to */
    size_t nstrings, strings_capacity;
    const char *cwd;                     /* inside the new root, after pivot */
    bool etc_cached;                     /* /etc comes from the prepared cache */
    struct cordon_error etc_cache_error; /* why not, when it could not */
};

int ns_mount_plan_build(const struct ns_spec *spec, uid_t uid, gid_t gid,
                        struct ns_mount_plan *plan, struct cordon_error *err);
void ns_mount_plan_free(struct ns_mount_plan *plan);

/* Child, in the new mount namespace, privileged in the new user namespace:
 * builds the view and pivots into it. No allocation. */
int ns_mount_plan_apply_in_child(const struct ns_mount_plan *plan, struct cordon_error *err);
