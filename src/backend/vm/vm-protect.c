/* Host-enforced protected paths for the vm backend (see vm-protect.h).
 * Why: the guest's view binds .git/hooks, .git/config, .cordon.toml ...
 * read-only, but those binds live in the guest's kernel; whoever is root in
 * the guest (a privileged container of the guest's Docker daemon, reachable
 * from the agent's user) can unmount them and write through the workspace's
 * 9p share, e.g. a hook the host's git would run. QEMU does the writing on
 * the host, so QEMU's own view is where the paths must be read-only, and
 * where the git metadata plan (supervisor/gitguard.h) is built: whatever
 * the guest's root does, QEMU writes git's top level only in the copies.
 * Host context: the plan in the supervisor, the mounts in QEMU's child. */
#include "backend/vm/vm-protect.h"
#include "backend/overlay.h"
#include "backend/vm/vm-qemu.h"
#include "supervisor/gitguard.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROTECT_MAX (64 + GITGUARD_MAX_BINDS)

static int add_bind(struct vm_bind *list, size_t *n, const char *source, const char *target,
                    bool readonly, struct cordon_error *err)
{
    if (*n + 1 >= PROTECT_MAX)
        return error_set(err, E2BIG, "vm: more than %d protected paths", PROTECT_MAX - 1);
    list[*n] =
        (struct vm_bind){.source = strdup(source), .target = strdup(target), .readonly = readonly};
    if (!list[*n].source || !list[*n].target) {
        free(list[*n].source);
        free(list[*n].target);
        list[*n] = (struct vm_bind){0};
        return error_set(err, ENOMEM, "vm");
    }
    (*n)++;
    return 0;
}

/* Adds dir/rel when it exists; refuses one that is, or is reached through,
 * a symlink (it could point QEMU's bind anywhere). */
static int add_path(struct vm_bind *list, size_t *n, const char *dir, const char *rel,
                    struct cordon_error *err)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
        return error_set(err, ENAMETOOLONG, "vm: protected path %s/%s", dir, rel);
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT || errno == ENOTDIR
                   ? 0
                   : error_set(err, errno, "vm: protected path %s", path);
    if (S_ISLNK(st.st_mode))
        return error_set(err, ELOOP, "vm: protected path %s is a symlink; refusing to start", path);
    _cleanup_free_ char *real = realpath(path, NULL);
    if (!real || strcmp(real, path) != 0)
        return error_set(err, ELOOP, "vm: protected path %s is reached through a symlink", path);
    /* Each directory on the way is bound over itself first: a mount point
     * cannot be renamed, so a guest root cannot move a parent aside through
     * 9p and make the path anew (as ns pins them). */
    size_t base = strlen(dir) + 1;
    for (char *slash = strchr(path + base, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        int rc = add_bind(list, n, path, path, false, err);
        *slash = '/';
        if (rc < 0)
            return -1;
    }
    return add_bind(list, n, path, path, true, err);
}

/* The git metadata first: the protected paths below may lie in it. */
static int add_git_binds(const struct view_plan *view, struct vm_bind *list, size_t *n,
                         struct cordon_error *err)
{
    for (size_t i = 0; i < view->count; i++) {
        const struct view_op *op = &view->ops[i];
        if (op->kind != VIEW_GIT_BIND)
            continue;
        if (add_bind(list, n, op->source, op->host_target, op->readonly, err) < 0)
            return -1;
        list[*n - 1].pinned = op->pinned;
        list[*n - 1].dev = op->dev;
        list[*n - 1].ino = op->ino;
    }
    return 0;
}

int vm_protect_plan(const struct view_plan *view, bool guest_root_reachable, struct vm_bind **out,
                    struct cordon_error *err)
{
    *out = NULL;
    bool guest_binds_hold = geteuid() != 0 && !guest_root_reachable;
    bool git_binds = false;
    for (size_t i = 0; i < view->count; i++)
        git_binds |= view->ops[i].kind == VIEW_GIT_BIND;
    if (guest_binds_hold && !git_binds && !view->review) {
        log_debug("vm: protected paths are read-only binds in the guest, which its user cannot "
                  "undo (no Docker daemon in the guest)");
        return 0;
    }
    struct vm_bind *list = calloc(PROTECT_MAX, sizeof(*list));
    if (!list)
        return error_set(err, ENOMEM, "vm");
    size_t n = 0;
    int rc = 0;
    /* Review mode: the overlay over the workspace first, so that the share
     * QEMU exports is the overlay (its upper layer the host's review/upper,
     * read by `cordon changes` as on ns) and the binds below land on it. */
    if (view->review) {
        const struct view_op *ws = &view->ops[0];
        rc = add_bind(list, &n, ws->source, ws->source, false, err);
        if (rc == 0 && !(list[n - 1].layer = strdup(ws->layer)))
            rc = error_set(err, ENOMEM, "vm");
    }
    if (rc == 0)
        rc = add_git_binds(view, list, &n, err);
    /* Review mode: QEMU writes the workspace only into the upper layer, so
     * the host's protected files are out of its reach without binds (and
     * apply never writes them, review.c). A bind of the host's directory on
     * a path's way would even let the guest write the host beneath the
     * overlay, and one taken from the overlay's view would follow what an
     * earlier session left in the layer. The guest's own binds keep them
     * read-only for the guest's user, as without review mode. A git
     * directory's hooks/ and config (no git metadata plan) are the host's
     * in either mode. */
    bool ws_binds = !guest_binds_hold && !view->review;
    for (size_t i = 0; rc == 0 && i < view->count; i++) {
        const struct view_op *op = &view->ops[i];
        bool in_git_dir = op->origin == VIEW_PROTECT_GIT_DIR;
        if (op->kind == VIEW_PROTECT && (in_git_dir ? !guest_binds_hold : ws_binds))
            rc = add_path(list, &n, op->source, op->rel, err);
    }
    if (rc < 0 || n == 0) {
        vm_protect_free(list);
        return rc;
    }
    *out = list;
    return 0;
}

int vm_view_shares(const struct view_plan *view, struct vm_share *shares, size_t *n, size_t max,
                   struct cordon_error *err)
{
    size_t first = *n;
    for (size_t i = 0; i < view->count; i++) {
        const struct view_op *op = &view->ops[i];
        if (op->kind == VIEW_WORKSPACE || op->kind == VIEW_REVIEW) {
            if (*n < max)
                shares[(*n)++] =
                    (struct vm_share){op->source, op->target, view->workspace_readonly};
        } else if (op->kind == VIEW_GIT_DIR) {
            if (*n < max)
                shares[(*n)++] = (struct vm_share){op->source, op->target, op->readonly};
        } else if (op->kind == VIEW_MOUNT) {
            /* Configured mounts exactly as ns binds them, or no start: 9p
             * shares directories only, and sharing a file's parent would
             * show its siblings. */
            struct stat st;
            if (stat(op->source, &st) < 0)
                return error_set(err, errno, "vm: [[mounts]] %s", op->source);
            if (!S_ISDIR(st.st_mode))
                return error_set(err, ENOTDIR,
                                 "vm: [[mounts]] %s: the vm backend shares directories only "
                                 "(virtio-9p); mount its directory, or use the ns backend",
                                 op->source);
            if (*n == max)
                return error_set(err, E2BIG,
                                 "vm: [[mounts]]: at most %d directories on the vm backend",
                                 (int)(max - first - 3));
            shares[(*n)++] = (struct vm_share){op->source, op->target, op->readonly};
        }
    }
    return 0;
}

int vm_view_guest_protected(const struct view_plan *view, json_t *list)
{
    for (size_t i = 0; i < view->count; i++) {
        const struct view_op *op = &view->ops[i];
        if (op->kind == VIEW_PROTECT && op->origin == VIEW_PROTECT_CONFIGURED) {
            char path[PATH_MAX];
            snprintf(path, sizeof(path), "%s/%s", op->target, op->rel);
            if (json_array_append_new(list, json_string(path)) < 0)
                return -1;
        }
    }
    /* The git metadata's read-only parts once more inside the guest (a
     * second layer: QEMU's view already refuses writes to them). */
    for (size_t i = 0; i < view->count; i++) {
        const struct view_op *b = &view->ops[i];
        if (b->kind != VIEW_GIT_BIND || !b->readonly)
            continue;
        /* In the guest one share holds them all: a read-only bind there
         * covers what lies below it, such as a submodule's writable copy
         * inside the read-only modules/. */
        bool covers_writable = false;
        size_t n = strlen(b->target);
        for (size_t j = 0; j < view->count && !covers_writable; j++) {
            const struct view_op *o = &view->ops[j];
            covers_writable = o->kind == VIEW_GIT_BIND && !o->readonly &&
                              strncmp(o->target, b->target, n) == 0 && o->target[n] == '/';
        }
        if (!covers_writable && json_array_append_new(list, json_string(b->target)) < 0)
            return -1;
    }
    return 0;
}

void vm_protect_free(struct vm_bind *binds)
{
    for (size_t i = 0; binds && binds[i].target; i++) {
        free(binds[i].source);
        free(binds[i].target);
        free(binds[i].layer);
    }
    free(binds);
}

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = write(fd, text, strlen(text));
    int e = errno;
    close(fd);
    errno = e;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Unprivileged: a user namespace mapping only our own ids, so that QEMU
 * keeps creating files as the user on the host. */
static int enter_userns(void)
{
    uid_t uid = getuid();
    gid_t gid = getgid();
    char map[64];
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0 || write_file("/proc/self/setgroups", "deny") < 0)
        return -1;
    snprintf(map, sizeof(map), "%u %u 1", uid, uid);
    if (write_file("/proc/self/uid_map", map) < 0)
        return -1;
    snprintf(map, sizeof(map), "%u %u 1", gid, gid);
    return write_file("/proc/self/gid_map", map);
}

int vm_protect_apply(const struct vm_bind *binds)
{
    if (!binds || !binds[0].target)
        return 0;
    if (geteuid() == 0 ? unshare(CLONE_NEWNS) < 0 : enter_userns() < 0)
        return -1;
    /* Slave: the host's later mounts still reach QEMU, its own never leak. */
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
        return -1;
    /* Every source is taken before any target is covered: the copy of a
     * git directory is bound over the host's, and its objects/ must come
     * from the host's, not from the copy now in its place. */
    static int trees[PROTECT_MAX];
    size_t n = 0;
    for (; binds[n].target; n++) {
        if (binds[n].layer) {
            struct cordon_error oerr;
            trees[n] = review_overlay_tree(binds[n].source, binds[n].layer,
                                           MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, &oerr);
            if (trees[n] < 0) {
                dprintf(2, "cordon: review mode: %s\n", oerr.message);
                errno = oerr.errnum;
                return -1;
            }
            continue;
        }
        trees[n] = open_tree(AT_FDCWD, binds[n].source,
                             OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (trees[n] < 0)
            return -1;
        /* As on ns: a git directory swapped between the plan and now (by a
         * concurrent sandbox) refuses the start instead of being bound. */
        struct stat st;
        if (binds[n].pinned &&
            (fstat(trees[n], &st) < 0 || st.st_dev != binds[n].dev || st.st_ino != binds[n].ino)) {
            errno = EXDEV;
            return -1;
        }
    }
    /* mount_setattr only adds read-only: a remount would have to repeat
     * every flag the user namespace locked. */
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    struct mount_attr rw = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    for (size_t i = 0; i < n; i++) {
        if (mount_setattr(trees[i], "", AT_EMPTY_PATH | AT_RECURSIVE, binds[i].readonly ? &ro : &rw,
                          sizeof(ro)) < 0 ||
            move_mount(trees[i], "", AT_FDCWD, binds[i].target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return -1;
        close(trees[i]);
    }
    return 0;
}

int vm_protect_probe(const char **step)
{
    static const char *const steps[] = {
        "a mount namespace for QEMU (unshare: CLONE_NEWNS as root, else CLONE_NEWUSER | "
        "CLONE_NEWNS)",
        "making / a slave mount in it",
        "a read-only bind with the mount API (open_tree + mount_setattr)",
    };
    int p[2];
    *step = "fork";
    if (pipe2(p, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return -e;
    }
    if (pid == 0) {
        int result[2] = {0, 0};
        int tree = -1;
        struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
        if (geteuid() == 0 ? unshare(CLONE_NEWNS) < 0 : enter_userns() < 0)
            result[1] = errno;
        else if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
            result[0] = 1, result[1] = errno;
        else if ((tree = open_tree(AT_FDCWD, "/usr", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)) < 0 ||
                 mount_setattr(tree, "", AT_EMPTY_PATH, &ro, sizeof(ro)) < 0)
            result[0] = 2, result[1] = errno;
        ssize_t w = write(p[1], result, sizeof(result));
        _exit(w == sizeof(result) ? 0 : 1);
    }
    close(p[1]);
    int result[2] = {0, EPROTO};
    ssize_t n;
    do
        n = read(p[0], result, sizeof(result));
    while (n < 0 && errno == EINTR);
    close(p[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (n != sizeof(result))
        result[1] = EPROTO;
    *step = steps[result[0] >= 0 && result[0] < 3 ? result[0] : 0];
    return -result[1];
}
