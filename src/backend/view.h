/* The view plan: the sandbox's view of the workspace as one ordered list of
 * operations (as bubblewrap's setup ops), built once from the spec and
 * translated by each backend into its own mechanism: the ns backend's mount
 * ops (ns-mount.c), docker's --mount arguments (docker-run.c), QEMU's host
 * binds, the 9p shares and the guest's read-only list (vm-protect.c). So a
 * protection such as the git metadata rule is written once, here. What is
 * not the workspace's (/usr, /etc, /dev, the scratch places, the agent) is
 * each backend's own. Host context, supervisor: no privilege, no mount. */
#pragma once

#include "backend/spec.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* More than this many operations refuse the start (the spec's own bounds,
 * protected paths, git binds and [[mounts]], add up to fewer). */
#define VIEW_PLAN_MAX_OPS 1024

enum view_op_kind {
    /* The workspace at its lexical path: source (host) at target, readonly. */
    VIEW_WORKSPACE,
    /* Review mode: the workspace is the overlay (backend/overlay.h) with
     * source as its read-only lower layer and layer's upper/ and work/
     * above it, at target. */
    VIEW_REVIEW,
    /* rel kept read-only below a directory of the view: source is that
     * directory on the host, target where the sandbox sees it. Each
     * directory on the way is pinned (a mount point cannot be renamed); a
     * symlink on the way refuses the start; a missing path is skipped. */
    VIEW_PROTECT,
    /* One bind of the git metadata plan (supervisor/gitguard.h), in order:
     * source over host_target (the host's path, vm: in QEMU's mount
     * namespace), seen at target; pinned: the bound tree must be the
     * directory (dev, ino) planned. */
    VIEW_GIT_BIND,
    /* A git directory outside the workspace (a linked worktree's, a
     * submodule's) at its own path, source = target. covered: the git
     * binds make what is seen there (the backends that bind the host's
     * tree bind nothing for it; one that shares directories still shares
     * it). Not covered (no git metadata plan): it is bound readonly as the
     * workspace, and the VIEW_PROTECT ops after it keep its hooks/, config
     * and config.worktree read-only. */
    VIEW_GIT_DIR,
    /* A [[mounts]] entry: source (host) at target, readonly. */
    VIEW_MOUNT,
};

/* Why a path is protected: the backends differ in which they apply where
 * (docs/design.md "The view plan"). */
enum view_protect_origin {
    VIEW_PROTECT_CONFIGURED, /* protected_paths (and the host's trusted git paths) */
    VIEW_PROTECT_GIT_FILE,   /* the workspace's .git is a file naming the git directory */
    VIEW_PROTECT_GIT_DIR,    /* hooks/, config, config.worktree of a VIEW_GIT_DIR */
};

/* Every string is borrowed from the spec the plan was built from: the
 * plan is valid as long as that spec is. */
struct view_op {
    enum view_op_kind kind;
    const char *source;      /* host path */
    const char *target;      /* the same place as the sandbox sees it */
    const char *host_target; /* VIEW_GIT_BIND */
    const char *rel;         /* VIEW_PROTECT: relative to source and target */
    const char *layer;       /* VIEW_REVIEW: the directory of upper/ and work/ */
    bool readonly;
    bool covered;                    /* VIEW_GIT_DIR */
    enum view_protect_origin origin; /* VIEW_PROTECT */
    bool pinned;                     /* VIEW_GIT_BIND */
    dev_t dev;
    ino_t ino;
};

struct view_plan {
    struct view_op *ops;
    size_t count, cap;
    bool workspace_readonly;
    bool review; /* the first op is VIEW_REVIEW */
};

/* Walks spec once: the workspace (bind or review overlay), its protected
 * paths, the .git file's protection, the git metadata binds, the git
 * directories (with their protections when no git metadata plan covers
 * them), the [[mounts]]; later operations sit on earlier ones. Reads the
 * host only to learn whether the workspace's .git is a file. -1 with err
 * set (past VIEW_PLAN_MAX_OPS: E2BIG); *plan is then empty. */
int view_plan_build(const struct ns_spec *spec, struct view_plan *plan, struct cordon_error *err);
/* Accepts an empty (zeroed or freed) plan. */
void view_plan_free(struct view_plan *plan);
/* A plan freed when its variable leaves scope (initialise it to {0}). */
#define _cleanup_view_plan_ __attribute__((cleanup(view_plan_free)))
