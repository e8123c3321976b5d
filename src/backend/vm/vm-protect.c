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
#include "supervisor/gitguard.h"
#include "supervisor/launch.h"
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

int vm_protect_plan(const struct launch *l, bool guest_root_reachable, struct vm_bind **out,
                    struct cordon_error *err)
{
    *out = NULL;
    bool guest_binds_hold = geteuid() != 0 && !guest_root_reachable;
    const char *review = l->spec.review_dir;
    if (guest_binds_hold && l->spec.ngit_binds == 0 && !review) {
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
    if (review) {
        rc = add_bind(list, &n, l->spec.workspace, l->spec.workspace, false, err);
        if (rc == 0 && !(list[n - 1].layer = strdup(review)))
            rc = error_set(err, ENOMEM, "vm");
    }
    /* The git metadata first: the protected paths below may lie in it. */
    for (size_t i = 0; rc == 0 && i < l->spec.ngit_binds; i++) {
        const struct gitguard_bind *b = &l->spec.git_binds[i];
        rc = add_bind(list, &n, b->source, b->host_target, b->readonly, err);
        if (rc == 0) {
            list[n - 1].pinned = b->pinned;
            list[n - 1].dev = b->dev;
            list[n - 1].ino = b->ino;
        }
    }
    const char *ws = l->spec.workspace;
    /* Review mode: QEMU writes the workspace only into the upper layer, so
     * the host's protected files are out of its reach without binds (and
     * apply never writes them, review.c). A bind of the host's directory on
     * a path's way would even let the guest write the host beneath the
     * overlay, and one taken from the overlay's view would follow what an
     * earlier session left in the layer. The guest's own binds keep them
     * read-only for the guest's user, as without review mode. */
    bool ws_binds = !guest_binds_hold && !review;
    for (size_t i = 0; rc == 0 && ws_binds && l->spec.protected_paths && l->spec.protected_paths[i];
         i++)
        rc = add_path(list, &n, ws, l->spec.protected_paths[i], err);
    /* A .git file names the git directory the host's git trusts. */
    char dotgit[PATH_MAX];
    struct stat st;
    snprintf(dotgit, sizeof(dotgit), "%s/.git", ws);
    if (rc == 0 && ws_binds && lstat(dotgit, &st) == 0 && S_ISREG(st.st_mode))
        rc = add_path(list, &n, ws, ".git", err);
    static const char *const git_protected[] = {"hooks", "config", "config.worktree"};
    for (size_t i = 0; rc == 0 && !guest_binds_hold && l->spec.ngit_binds == 0 &&
                       l->spec.git_dirs && l->spec.git_dirs[i];
         i++)
        for (size_t j = 0; rc == 0 && j < sizeof(git_protected) / sizeof(*git_protected); j++)
            rc = add_path(list, &n, l->spec.git_dirs[i], git_protected[j], err);
    if (rc < 0 || n == 0) {
        vm_protect_free(list);
        return rc;
    }
    *out = list;
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
