/* The view plan (view.h): the workspace's part of the sandbox's view,
 * derived from the spec once for every backend. Host context, supervisor. */
#include "backend/view.h"
#include "supervisor/gitguard.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* What a git directory's git trusts and the sandbox must not write, when no
 * git metadata plan shows it a copy (docs/git-metadata.md). */
static const char *const git_dir_protected[] = {"hooks", "config", "config.worktree"};

static struct view_op *plan_add(struct view_plan *plan, enum view_op_kind kind, const char *source,
                                const char *target, bool readonly, struct cordon_error *err)
{
    if (plan->count >= VIEW_PLAN_MAX_OPS) {
        error_set(err, E2BIG,
                  "the sandbox's view: more than %d operations (protected paths, git "
                  "metadata, mounts)",
                  VIEW_PLAN_MAX_OPS);
        return NULL;
    }
    /* Grown as needed: a usual view is a handful of operations, and the
     * plan is built at every start. */
    if (plan->count == plan->cap) {
        size_t cap = plan->cap ? plan->cap * 2 : 16;
        if (cap > VIEW_PLAN_MAX_OPS)
            cap = VIEW_PLAN_MAX_OPS;
        struct view_op *grown = realloc(plan->ops, cap * sizeof(*grown));
        if (!grown) {
            error_set(err, ENOMEM, "the sandbox's view");
            return NULL;
        }
        plan->ops = grown;
        plan->cap = cap;
    }
    struct view_op *op = &plan->ops[plan->count++];
    *op = (struct view_op){.kind = kind, .source = source, .target = target, .readonly = readonly};
    return op;
}

static int plan_protect(struct view_plan *plan, const char *host, const char *view, const char *rel,
                        enum view_protect_origin origin, struct cordon_error *err)
{
    struct view_op *op = plan_add(plan, VIEW_PROTECT, host, view, true, err);
    if (!op)
        return -1;
    op->rel = rel;
    op->origin = origin;
    return 0;
}

/* The workspace, then what is kept read-only in it. A .git *file* (linked
 * worktree, submodule) names the git directory the host's git will trust:
 * it is protected like .git/config. */
static int plan_workspace(const struct ns_spec *spec, struct view_plan *plan,
                          struct cordon_error *err)
{
    struct view_op *ws =
        plan_add(plan, spec->review_dir ? VIEW_REVIEW : VIEW_WORKSPACE, spec->workspace,
                 spec->workspace_view, spec->workspace_readonly && !spec->review_dir, err);
    if (!ws)
        return -1;
    ws->layer = spec->review_dir;
    for (const char *const *p = spec->protected_paths; p && *p; p++) {
        if (plan_protect(plan, spec->workspace, spec->workspace_view, *p, VIEW_PROTECT_CONFIGURED,
                         err) < 0)
            return -1;
    }
    char dotgit[PATH_MAX];
    if (snprintf(dotgit, sizeof(dotgit), "%s/.git", spec->workspace) >= (int)sizeof(dotgit))
        return error_set(err, ENAMETOOLONG, "the workspace %s", spec->workspace);
    struct stat st;
    if (lstat(dotgit, &st) == 0 && S_ISREG(st.st_mode))
        return plan_protect(plan, spec->workspace, spec->workspace_view, ".git",
                            VIEW_PROTECT_GIT_FILE, err);
    return 0;
}

/* The git metadata plan's binds in its order (later ones sit on earlier
 * ones), then the git directories outside the workspace. */
static int plan_git(const struct ns_spec *spec, struct view_plan *plan, struct cordon_error *err)
{
    for (size_t i = 0; i < spec->ngit_binds; i++) {
        const struct gitguard_bind *b = &spec->git_binds[i];
        struct view_op *op =
            plan_add(plan, VIEW_GIT_BIND, b->source, b->view_target, b->readonly, err);
        if (!op)
            return -1;
        op->host_target = b->host_target;
        op->pinned = b->pinned;
        op->dev = b->dev;
        op->ino = b->ino;
    }
    bool covered = spec->ngit_binds > 0;
    for (const char *const *g = spec->git_dirs; g && *g; g++) {
        struct view_op *op = plan_add(plan, VIEW_GIT_DIR, *g, *g, spec->workspace_readonly, err);
        if (!op)
            return -1;
        op->covered = covered;
        for (size_t j = 0; !covered && j < sizeof(git_dir_protected) / sizeof(*git_dir_protected);
             j++) {
            if (plan_protect(plan, *g, *g, git_dir_protected[j], VIEW_PROTECT_GIT_DIR, err) < 0)
                return -1;
        }
    }
    return 0;
}

int view_plan_build(const struct ns_spec *spec, struct view_plan *plan, struct cordon_error *err)
{
    *plan = (struct view_plan){.workspace_readonly = spec->workspace_readonly,
                               .review = spec->review_dir != NULL};
    if (plan_workspace(spec, plan, err) < 0 || plan_git(spec, plan, err) < 0)
        goto fail;
    for (size_t i = 0; i < spec->nmounts; i++) {
        const struct ns_extra_mount *m = &spec->mounts[i];
        if (!plan_add(plan, VIEW_MOUNT, m->host_path, m->guest_path, m->readonly, err))
            goto fail;
    }
    return 0;
fail:
    view_plan_free(plan);
    return -1;
}

void view_plan_free(struct view_plan *plan)
{
    free(plan->ops);
    *plan = (struct view_plan){0};
}
