/* Builds the sandbox's view (host side) and applies it (child side, between
 * clone() and exec, privileged only inside the new user namespace).
 *
 * Every bind uses the new mount API (open_tree + mount_setattr + move_mount),
 * so a mount is read-only before it is attached: there is no window in which
 * a read-only view is writable. Paths inside the workspace, which the agent
 * controls between sessions, are walked with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) from directory fds, never as strings. */
#include "backend/ns/ns-mount.h"
#include "backend/etc-cache.h"
#include "backend/overlay.h"
#include "backend/view.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NEWROOT "/newroot"
#define OLDROOT "/oldroot"

/* ---- host side: building the plan ---- */

static const char *plan_str(struct ns_mount_plan *plan, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static const char *plan_str(struct ns_mount_plan *plan, const char *fmt, ...)
{
    if (plan->nstrings == plan->strings_capacity) {
        size_t ncap = plan->strings_capacity ? plan->strings_capacity * 2 : 64;
        char **grown = realloc(plan->strings, ncap * sizeof(char *));
        if (!grown)
            return NULL;
        plan->strings = grown;
        plan->strings_capacity = ncap;
    }
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    plan->strings[plan->nstrings++] = s;
    return s;
}

static int plan_add(struct ns_mount_plan *plan, enum ns_op_kind kind, const char *source,
                    const char *dest, const char *data, unsigned long attr, unsigned flags)
{
    if (!dest || (kind == NS_OP_BIND && !source))
        return -1;
    if (plan->count == plan->capacity) {
        size_t ncap = plan->capacity ? plan->capacity * 2 : 64;
        struct ns_op *grown = realloc(plan->ops, ncap * sizeof(*grown));
        if (!grown)
            return -1;
        plan->ops = grown;
        plan->capacity = ncap;
    }
    plan->ops[plan->count++] = (struct ns_op){kind, source, dest, data, attr, flags, 0, 0};
    return 0;
}

static bool plan_has_dir(const struct ns_mount_plan *plan, const char *dest)
{
    for (size_t i = 0; i < plan->count; i++) {
        if (plan->ops[i].kind == NS_OP_MKDIR && strcmp(plan->ops[i].dest, dest) == 0)
            return true;
    }
    return false;
}

/* Emits MKDIR for each component of path (absolute, inside the view). */
static int plan_mkdir_p(struct ns_mount_plan *plan, const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return -1;
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            const char *dest = plan_str(plan, NEWROOT "%s", buf);
            if (!dest)
                return -1;
            if (!plan_has_dir(plan, dest) &&
                plan_add(plan, NS_OP_MKDIR, NULL, dest, NULL, 0, 0) < 0)
                return -1;
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    return 0;
}

static int plan_bind(struct ns_mount_plan *plan, const char *host, const char *view,
                     unsigned long attr, unsigned flags)
{
    struct stat st;
    if (stat(host, &st) < 0) {
        if (errno == ENOENT && (flags & NS_OP_OPTIONAL))
            return 0;
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        if (plan_mkdir_p(plan, view) < 0)
            return -1;
    } else {
        char parent[PATH_MAX];
        snprintf(parent, sizeof(parent), "%s", view);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
            if (plan_mkdir_p(plan, parent) < 0)
                return -1;
        }
        if (plan_add(plan, NS_OP_MKFILE, NULL, plan_str(plan, NEWROOT "%s", view), NULL, 0, 0) < 0)
            return -1;
    }
    return plan_add(plan, NS_OP_BIND, plan_str(plan, OLDROOT "%s", host),
                    plan_str(plan, NEWROOT "%s", view), NULL, attr, flags);
}

/* Copies a host symlink (the merged-/usr links, /etc/os-release ...). */
static int plan_symlink(struct ns_mount_plan *plan, const char *host, const char *view)
{
    char target[PATH_MAX];
    ssize_t n = readlink(host, target, sizeof(target) - 1);
    if (n < 0)
        return -1;
    target[n] = '\0';
    return plan_add(plan, NS_OP_SYMLINK, plan_str(plan, "%s", target),
                    plan_str(plan, NEWROOT "%s", view), NULL, 0, 0);
}

/* Binds a host path; a symlink is copied as a symlink. */
static int plan_system_entry(struct ns_mount_plan *plan, const char *host, unsigned long attr)
{
    struct stat st;
    if (lstat(host, &st) < 0)
        return errno == ENOENT ? 0 : -1;
    if (S_ISLNK(st.st_mode))
        return plan_symlink(plan, host, host);
    return plan_bind(plan, host, host, attr, NS_OP_OPTIONAL);
}

/* The curated /etc (etc-cache.c): the prepared copy bound read-only, and
 * the directories bound from the host onto their mount points in it. */
static int plan_etc(struct ns_mount_plan *plan, const struct ns_spec *spec,
                    struct cordon_error *err)
{
    const unsigned long ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    _cleanup_free_ struct etc_cache *cache = malloc(sizeof(*cache));
    if (!cache)
        return error_set(err, ENOMEM, "planning /etc");
    if (etc_cache_prepare(spec->etc_cache_root, spec->etc_extra, spec->netc_extra,
                          spec->ssh_proxied, cache, err) < 0)
        return -1;
    if (plan_mkdir_p(plan, "/etc") < 0 ||
        plan_add(plan, NS_OP_BIND, plan_str(plan, OLDROOT "%s", cache->dir), NEWROOT "/etc", NULL,
                 ro, 0) < 0)
        return error_set(err, ENOMEM, "planning /etc");
    for (size_t i = 0; i < cache->nbinds; i++) {
        if (plan_add(plan, NS_OP_BIND, plan_str(plan, OLDROOT "/etc/%s", cache->binds[i]),
                     plan_str(plan, NEWROOT "/etc/%s", cache->binds[i]), NULL, ro,
                     NS_OP_OPTIONAL) < 0)
            return error_set(err, ENOMEM, "planning /etc");
    }
    return 0;
}

/* A writable tmpfs: mode (and owner) plus its bounds. Without size= a
 * tmpfs may take half of the host's RAM, and where no cgroup counts its
 * pages nothing else would stop it (config.h CFG_TMPFS_MOUNTS). A string
 * that cannot be made fails the plan: never a tmpfs without its bounds. */
static int plan_tmpfs(struct ns_mount_plan *plan, const char *dest,
                      const struct sandbox_limits *limits, const char *mode)
{
    char size[32] = "", inodes[32] = "";
    if (limits->tmpfs_mib > 0)
        snprintf(size, sizeof(size), ",size=%ldm", limits->tmpfs_mib);
    if (limits->tmpfs_inodes > 0)
        snprintf(inodes, sizeof(inodes), ",nr_inodes=%ld", limits->tmpfs_inodes);
    const char *options = mode ? plan_str(plan, "%s%s%s", mode, size, inodes) : NULL;
    if (!options)
        return -1;
    return plan_add(plan, NS_OP_TMPFS, NULL, dest, options, 0, 0);
}

static int plan_dev(struct ns_mount_plan *plan, const struct sandbox_limits *limits)
{
    static const char *const nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
    if (plan_mkdir_p(plan, "/dev") < 0 || plan_add(plan, NS_OP_TMPFS, NULL, NEWROOT "/dev",
                                                   "mode=0755,size=64k,nr_inodes=64", 0, 0) < 0)
        return -1;
    for (size_t i = 0; i < ARRAY_SIZE(nodes); i++) {
        char path[64];
        snprintf(path, sizeof(path), "/dev/%s", nodes[i]);
        if (plan_bind(plan, path, path, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, 0) < 0)
            return -1;
    }
    if (plan_mkdir_p(plan, "/dev/pts") < 0 ||
        plan_add(plan, NS_OP_DEVPTS, NULL, NEWROOT "/dev/pts", NULL, 0, 0) < 0 ||
        plan_add(plan, NS_OP_SYMLINK, "pts/ptmx", NEWROOT "/dev/ptmx", NULL, 0, 0) < 0 ||
        plan_mkdir_p(plan, "/dev/shm") < 0 ||
        plan_tmpfs(plan, NEWROOT "/dev/shm", limits, "mode=1777") < 0 ||
        plan_add(plan, NS_OP_SYMLINK, "/proc/self/fd", NEWROOT "/dev/fd", NULL, 0, 0) < 0 ||
        plan_add(plan, NS_OP_SYMLINK, "/proc/self/fd/0", NEWROOT "/dev/stdin", NULL, 0, 0) < 0 ||
        plan_add(plan, NS_OP_SYMLINK, "/proc/self/fd/1", NEWROOT "/dev/stdout", NULL, 0, 0) < 0 ||
        plan_add(plan, NS_OP_SYMLINK, "/proc/self/fd/2", NEWROOT "/dev/stderr", NULL, 0, 0) < 0)
        return -1;
    return plan_add(plan, NS_OP_REMOUNT_RO, NULL, NEWROOT "/dev", NULL, 0, 0);
}

/* /proc entries that leak host state or offer a lever on the kernel (the
 * lists container runtimes converged on). */
static const char *const proc_masked[] = {
    "/proc/kcore",       "/proc/keys",          "/proc/key-users",   "/proc/timer_list",
    "/proc/sched_debug", "/proc/latency_stats", "/proc/timer_stats", "/proc/kmsg",
    "/proc/acpi",        "/proc/asound",        "/proc/scsi",        "/proc/kallsyms",
    "/proc/kpagecount",  "/proc/kpageflags",    "/proc/kpagecgroup", "/proc/vmallocinfo",
    "/proc/config.gz",
};
static const char *const proc_readonly[] = {
    "/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs",
};

static int plan_proc_sys(struct ns_mount_plan *plan)
{
    if (plan_mkdir_p(plan, "/proc") < 0 ||
        plan_add(plan, NS_OP_PROC, NULL, NEWROOT "/proc", NULL, 0, 0) < 0)
        return -1;
    for (size_t i = 0; i < ARRAY_SIZE(proc_masked); i++) {
        if (plan_add(plan, NS_OP_MASK, NULL, plan_str(plan, NEWROOT "%s", proc_masked[i]), NULL, 0,
                     NS_OP_OPTIONAL) < 0)
            return -1;
    }
    for (size_t i = 0; i < ARRAY_SIZE(proc_readonly); i++) {
        if (plan_add(plan, NS_OP_READONLY, NULL, plan_str(plan, NEWROOT "%s", proc_readonly[i]),
                     NULL, 0, NS_OP_OPTIONAL) < 0)
            return -1;
    }
    if (plan_mkdir_p(plan, "/sys") < 0 ||
        plan_add(plan, NS_OP_SYSFS, NULL, NEWROOT "/sys", NULL, 0, NS_OP_OPTIONAL) < 0 ||
        plan_add(plan, NS_OP_MASK, NULL, NEWROOT "/sys/firmware", NULL, 0, NS_OP_OPTIONAL) < 0 ||
        plan_add(plan, NS_OP_MASK, NULL, NEWROOT "/sys/kernel/debug", NULL, 0, NS_OP_OPTIONAL) <
            0 ||
        plan_add(plan, NS_OP_MASK, NULL, NEWROOT "/sys/kernel/security", NULL, 0, NS_OP_OPTIONAL) <
            0)
        return -1;
    return 0;
}

static bool is_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

static int plan_protect(struct ns_mount_plan *plan, const char *view_dir, const char *rel)
{
    return plan_add(plan, NS_OP_PROTECT, plan_str(plan, NEWROOT "%s", view_dir),
                    plan_str(plan, "%s", rel), NULL, 0, 0);
}

/* One bind of the git metadata plan (backend/view.h VIEW_GIT_BIND). A
 * source the workspace holds is checked in the child to be the directory
 * planned: a concurrent sandbox cannot swap it for a symlink in between. */
static int plan_git_bind(struct ns_mount_plan *plan, const struct view_op *b, unsigned long ro,
                         unsigned long rw)
{
    /* A file's mount point is the copy's own file (gitguard.c made it), in
     * a bind that may already be read-only: nothing to create. */
    struct stat st;
    if (lstat(b->source, &st) < 0)
        return -1;
    if (S_ISDIR(st.st_mode) && plan_mkdir_p(plan, b->target) < 0)
        return -1;
    if (plan_add(plan, NS_OP_BIND, plan_str(plan, OLDROOT "%s", b->source),
                 plan_str(plan, NEWROOT "%s", b->target), NULL, b->readonly ? ro : rw,
                 b->pinned ? NS_OP_CHECK_ID : 0) < 0)
        return -1;
    plan->ops[plan->count - 1].dev = b->dev;
    plan->ops[plan->count - 1].ino = b->ino;
    return 0;
}

/* A directory bound from the host at its place in the view. */
static int plan_bind_dir(struct ns_mount_plan *plan, const char *host, const char *view,
                         unsigned long attr)
{
    if (plan_mkdir_p(plan, view) < 0)
        return -1;
    return plan_add(plan, NS_OP_BIND, plan_str(plan, OLDROOT "%s", host),
                    plan_str(plan, NEWROOT "%s", view), NULL, attr, 0);
}

/* One operation of the view plan as mount ops: binds from /oldroot, the
 * review overlay, the protected paths walked and pinned in the child. The
 * git binds are taken from the host's whole tree, so a git directory they
 * cover needs no bind of its own. */
static int plan_view_op(struct ns_mount_plan *plan, const struct view_op *op, unsigned long ro,
                        unsigned long rw)
{
    switch (op->kind) {
    case VIEW_WORKSPACE:
        return plan_bind_dir(plan, op->source, op->target, op->readonly ? ro : rw);
    case VIEW_REVIEW:
        if (plan_mkdir_p(plan, op->target) < 0)
            return -1;
        return plan_add(plan, NS_OP_OVERLAY, plan_str(plan, OLDROOT "%s", op->source),
                        plan_str(plan, NEWROOT "%s", op->target),
                        plan_str(plan, OLDROOT "%s", op->layer), rw, 0);
    case VIEW_PROTECT:
        return plan_protect(plan, op->target, op->rel);
    case VIEW_GIT_BIND:
        return plan_git_bind(plan, op, ro, rw);
    case VIEW_GIT_DIR:
        if (op->covered)
            return 0;
        return plan_bind_dir(plan, op->source, op->target, op->readonly ? ro : rw);
    case VIEW_MOUNT:
        return plan_bind(plan, op->source, op->target, op->readonly ? ro : rw, 0);
    }
    errno = EINVAL;
    return -1;
}

/* The workspace's part of the view (backend/view.h), in the plan's order. */
static int plan_view(struct ns_mount_plan *plan, const struct ns_spec *spec, unsigned long ro,
                     unsigned long rw, struct cordon_error *err)
{
    struct view_plan view;
    if (view_plan_build(spec, &view, err) < 0)
        return -1;
    int rc = 0;
    errno = 0;
    for (size_t i = 0; rc == 0 && i < view.count; i++)
        rc = plan_view_op(plan, &view.ops[i], ro, rw);
    int e = errno;
    view_plan_free(&view);
    if (rc < 0)
        return error_set(err, e ? e : ENOMEM, "planning the sandbox view");
    return 0;
}

int ns_mount_plan_build(const struct ns_spec *spec, uid_t uid, gid_t gid,
                        struct ns_mount_plan *plan, struct cordon_error *err)
{
    const unsigned long ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    const unsigned long rw = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    *plan = (struct ns_mount_plan){0};

    if (plan_system_entry(plan, "/usr", ro) < 0)
        goto fail;
    static const char *const links[] = {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"};
    for (size_t i = 0; i < ARRAY_SIZE(links); i++) {
        if (plan_system_entry(plan, links[i], ro) < 0)
            goto fail;
    }
    if (plan_etc(plan, spec, err) < 0) {
        ns_mount_plan_free(plan);
        return -1;
    }
    if (plan_dev(plan, &spec->limits) < 0)
        goto fail;
    /* A sandbox that outlives its session (teardown stop/none) keeps /tmp
     * and home in its state directory; otherwise they are fresh tmpfs. */
    char persist[PATH_MAX];
    if (spec->persist_dir) {
        snprintf(persist, sizeof(persist), "%s/tmp", spec->persist_dir);
        if (plan_bind(plan, persist, "/tmp", rw, 0) < 0)
            goto fail;
    } else if (plan_mkdir_p(plan, "/tmp") < 0 ||
               plan_tmpfs(plan, NEWROOT "/tmp", &spec->limits, "mode=1777") < 0) {
        goto fail;
    }
    if (plan_mkdir_p(plan, "/var/tmp") < 0 ||
        plan_tmpfs(plan, NEWROOT "/var/tmp", &spec->limits, "mode=1777") < 0 ||
        plan_mkdir_p(plan, "/run") < 0 ||
        plan_tmpfs(plan, NEWROOT "/run", &spec->limits, "mode=0755") < 0)
        goto fail;
    if (plan_bind(plan, spec->agent_path, NS_AGENT_VIEW_PATH, ro, 0) < 0)
        goto fail;

    /* An empty home of the sandbox's own; the workspace may sit below it. */
    bool home_is_tmpfs = !is_under(spec->home, "/tmp") && !is_under(spec->home, "/var/tmp") &&
                         !is_under(spec->home, "/run");
    if (plan_mkdir_p(plan, spec->home) < 0)
        goto fail;
    if (spec->persist_dir && home_is_tmpfs) {
        snprintf(persist, sizeof(persist), "%s/home", spec->persist_dir);
        if (plan_bind(plan, persist, spec->home, rw, 0) < 0)
            goto fail;
    } else if (home_is_tmpfs &&
               plan_tmpfs(plan, plan_str(plan, NEWROOT "%s", spec->home), &spec->limits,
                          plan_str(plan, "mode=0700,uid=%u,gid=%u", uid, gid)) < 0) {
        goto fail;
    }

    /* The workspace, its protected paths, the git metadata, [[mounts]]. */
    if (plan_view(plan, spec, ro, rw, err) < 0) {
        ns_mount_plan_free(plan);
        return -1;
    }

    if (plan_proc_sys(plan) < 0)
        goto fail;
    if (plan_add(plan, NS_OP_REMOUNT_RO, NULL, NEWROOT, NULL, 0, 0) < 0)
        goto fail;
    plan->cwd = spec->cwd;
    return 0;
fail:
    ns_mount_plan_free(plan);
    return error_set(err, errno ? errno : ENOMEM, "planning the sandbox view");
}

void ns_mount_plan_free(struct ns_mount_plan *plan)
{
    for (size_t i = 0; i < plan->nstrings; i++)
        free(plan->strings[i]);
    free(plan->strings);
    free(plan->ops);
    *plan = (struct ns_mount_plan){0};
}

/* ---- child side: applying the plan (no allocation, no stdio) ---- */

static int bind_tree_in_child(int tree, int target_dirfd, const char *target, unsigned long attr,
                              const char *what, struct cordon_error *err)
{
    if (attr) {
        struct mount_attr ma = {.attr_set = attr};
        if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0) {
            int e = errno;
            close(tree);
            return error_set_raw(err, e, "mount_setattr", what);
        }
    }
    unsigned flags = MOVE_MOUNT_F_EMPTY_PATH | (target[0] ? 0 : MOVE_MOUNT_T_EMPTY_PATH);
    if (move_mount(tree, "", target_dirfd, target, flags) < 0) {
        int e = errno;
        close(tree);
        return error_set_raw(err, e, "move_mount", what);
    }
    close(tree);
    return 0;
}

static int op_bind_in_child(const struct ns_op *op, struct cordon_error *err)
{
    int tree = open_tree(AT_FDCWD, op->source, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0) {
        if (errno == ENOENT && (op->flags & NS_OP_OPTIONAL))
            return 0;
        return error_set_raw(err, errno, "bind: open_tree", op->source);
    }
    if (op->flags & NS_OP_CHECK_ID) {
        struct stat st;
        if (fstat(tree, &st) < 0 || st.st_dev != op->dev || st.st_ino != op->ino) {
            close(tree);
            return error_set_raw(
                err, EXDEV, "git metadata changed while the sandbox started; refusing", op->source);
        }
    }
    return bind_tree_in_child(tree, AT_FDCWD, op->dest, op->attr, op->dest, err);
}

static int op_mask_in_child(const struct ns_op *op, struct cordon_error *err)
{
    struct stat st;
    if (lstat(op->dest, &st) < 0)
        return errno == ENOENT ? 0 : error_set_raw(err, errno, "mask: stat", op->dest);
    if (S_ISDIR(st.st_mode)) {
        if (mount("tmpfs", op->dest, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                  "mode=0555,size=0") < 0)
            return error_set_raw(err, errno, "mask: mount tmpfs", op->dest);
        return 0;
    }
    int tree = open_tree(AT_FDCWD, NEWROOT "/dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0)
        return error_set_raw(err, errno, "mask: open_tree", NEWROOT "/dev/null");
    return bind_tree_in_child(tree, AT_FDCWD, op->dest,
                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, op->dest,
                              err);
}

static int op_readonly_in_child(const struct ns_op *op, struct cordon_error *err)
{
    int tree = open_tree(AT_FDCWD, op->dest, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (tree < 0) {
        if (errno == ENOENT && (op->flags & NS_OP_OPTIONAL))
            return 0;
        return error_set_raw(err, errno, "read-only bind: open_tree", op->dest);
    }
    return bind_tree_in_child(tree, AT_FDCWD, op->dest,
                              MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, op->dest,
                              err);
}

static int openat2_nofollow(int dirfd, const char *name, int flags)
{
    return fs_openat2(dirfd, name, flags | O_NOFOLLOW,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

static bool is_mount_root(int fd)
{
    struct statx stx;
    if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) < 0)
        return false;
    return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
           (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* Keeps op->dest (relative to the bound directory op->source) read-only. Each
 * directory on the way is pinned by a bind onto itself first: a mount point
 * cannot be renamed or removed (EBUSY), so the agent cannot swap a parent
 * (`mv .git .git-old; mkdir -p .git/hooks`) to escape the protection. A
 * symlink anywhere on the way refuses the start: it would point the host's
 * git at whatever the link names. */
static int op_protect_in_child(const struct ns_op *op, struct cordon_error *err)
{
    char component[NAME_MAX + 1];
    int dirfd = open(op->source, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return error_set_raw(err, errno, "protect: open", op->source);
    const char *p = op->dest;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0 || len > NAME_MAX) {
            close(dirfd);
            return error_set_raw(err, EINVAL, "protect: bad path", op->dest);
        }
        memcpy(component, p, len);
        component[len] = '\0';
        int fd = openat2_nofollow(dirfd, component, O_PATH);
        if (fd < 0) {
            int e = errno;
            close(dirfd);
            if (e == ENOENT || e == ENOTDIR)
                return 0; /* nothing there to protect */
            if (e == ELOOP)
                return error_set_raw(err, e, "protected path is reached through a symlink",
                                     op->dest);
            return error_set_raw(err, e, "protect: open", op->dest);
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
            int e = errno;
            close(fd);
            close(dirfd);
            return error_set_raw(err, e, "protect: stat", op->dest);
        }
        if (S_ISLNK(st.st_mode)) {
            close(fd);
            close(dirfd);
            return error_set_raw(err, ELOOP, "protected path is a symlink; refusing to start",
                                 op->dest);
        }
        if (!slash) {
            close(dirfd);
            int tree = open_tree(
                fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
            if (tree < 0) {
                int e = errno;
                close(fd);
                return error_set_raw(err, e, "protect: open_tree", op->dest);
            }
            int rc = bind_tree_in_child(tree, fd, "",
                                        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                        op->dest, err);
            close(fd);
            return rc;
        }
        if (!S_ISDIR(st.st_mode)) {
            close(fd);
            close(dirfd);
            return 0;
        }
        if (!is_mount_root(fd)) {
            int tree = open_tree(
                fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
            if (tree < 0 || bind_tree_in_child(tree, fd, "", 0, op->dest, err) < 0) {
                int e = errno;
                close(fd);
                close(dirfd);
                return tree < 0 ? error_set_raw(err, e, "protect: pin", op->dest) : -1;
            }
            close(fd);
            /* Reopen: the walk must continue on the pinned mount, not the
             * directory now hidden beneath it. */
            fd = openat2_nofollow(dirfd, component, O_PATH | O_DIRECTORY);
            if (fd < 0) {
                int e = errno;
                close(dirfd);
                return error_set_raw(err, e, "protect: reopen", op->dest);
            }
        }
        close(dirfd);
        dirfd = fd;
        p = slash + 1;
    }
}

/* Review mode's workspace: the overlay (backend/overlay.c), bound at the
 * workspace's place in the new root. */
static int op_overlay_in_child(const struct ns_op *op, struct cordon_error *err)
{
    int tree = review_overlay_tree(op->source, op->data, (unsigned)op->attr, err);
    if (tree < 0)
        return -1;
    return bind_tree_in_child(tree, AT_FDCWD, op->dest, 0, op->dest, err);
}

static int apply_op_in_child(const struct ns_op *op, struct cordon_error *err)
{
    switch (op->kind) {
    case NS_OP_MKDIR:
        if (mkdir(op->dest, 0755) < 0 && errno != EEXIST)
            return error_set_raw(err, errno, "mkdir", op->dest);
        return 0;
    case NS_OP_MKFILE: {
        int fd = open(op->dest, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
        /* A file that exists already in a read-only place (the session CA
         * bundle over /etc/ssl/certs/ca-certificates.crt) is its own
         * mount point. */
        struct stat st;
        if (fd < 0 && errno != EEXIST &&
            !((errno == EROFS || errno == EACCES) && lstat(op->dest, &st) == 0 &&
              S_ISREG(st.st_mode)))
            return error_set_raw(err, errno, "create mount point", op->dest);
        if (fd >= 0)
            close(fd);
        return 0;
    }
    case NS_OP_SYMLINK:
        if (symlink(op->source, op->dest) < 0 && errno != EEXIST)
            return error_set_raw(err, errno, "symlink", op->dest);
        return 0;
    case NS_OP_TMPFS:
        if (mount("tmpfs", op->dest, "tmpfs", MS_NOSUID | MS_NODEV, op->data) < 0)
            return error_set_raw(err, errno, "mount tmpfs", op->dest);
        return 0;
    case NS_OP_BIND:
        return op_bind_in_child(op, err);
    case NS_OP_PROC:
        if (mount("proc", op->dest, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            return error_set_raw(err, errno, "mount proc", op->dest);
        return 0;
    case NS_OP_DEVPTS:
        if (mount("devpts", op->dest, "devpts", MS_NOSUID | MS_NOEXEC,
                  "newinstance,ptmxmode=0666,mode=0620") < 0)
            return error_set_raw(err, errno, "mount devpts", op->dest);
        return 0;
    case NS_OP_SYSFS:
        /* The kernel refuses sysfs when the host's /sys is partly hidden
         * (mount_too_revealing); an empty /sys is the stricter outcome. */
        if (mount("sysfs", op->dest, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) <
                0 &&
            !(op->flags & NS_OP_OPTIONAL))
            return error_set_raw(err, errno, "mount sysfs", op->dest);
        return 0;
    case NS_OP_MASK:
        return op_mask_in_child(op, err);
    case NS_OP_READONLY:
        return op_readonly_in_child(op, err);
    case NS_OP_REMOUNT_RO: {
        struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY};
        if (mount_setattr(AT_FDCWD, op->dest, 0, &ma, sizeof(ma)) < 0)
            return error_set_raw(err, errno, "remount read-only", op->dest);
        return 0;
    }
    case NS_OP_PROTECT:
        return op_protect_in_child(op, err);
    case NS_OP_OVERLAY:
        return op_overlay_in_child(op, err);
    }
    return error_set_raw(err, EINVAL, "unknown mount operation", op->dest);
}

int ns_mount_plan_apply_in_child(const struct ns_mount_plan *plan, struct cordon_error *err)
{
    /* Nothing we mount may propagate back to the host's namespace. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return error_set_raw(err, errno, "make mounts private", "/");
    /* Staging (as bubblewrap does): a tmpfs on /tmp becomes the root, the
     * host's root moves to /oldroot, and the view is built in /newroot from
     * /oldroot sources. */
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k") < 0)
        return error_set_raw(err, errno, "mount staging tmpfs", "/tmp");
    if (mkdir("/tmp" NEWROOT, 0755) < 0 || mkdir("/tmp" OLDROOT, 0755) < 0)
        return error_set_raw(err, errno, "mkdir", "/tmp" NEWROOT);
    if (syscall(SYS_pivot_root, "/tmp", "/tmp" OLDROOT) < 0)
        return error_set_raw(err, errno, "pivot_root", "/tmp");
    if (chdir("/") < 0)
        return error_set_raw(err, errno, "chdir", "/");
    if (mount("tmpfs", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") < 0)
        return error_set_raw(err, errno, "mount root tmpfs", NEWROOT);
    for (size_t i = 0; i < plan->count; i++) {
        if (apply_op_in_child(&plan->ops[i], err) < 0)
            return -1;
    }
    if (chdir(NEWROOT) < 0)
        return error_set_raw(err, errno, "chdir", NEWROOT);
    /* pivot_root(".", ".") stacks the old root on the new one; detaching it
     * leaves nothing of the host reachable by path. */
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return error_set_raw(err, errno, "pivot_root", NEWROOT);
    if (umount2(".", MNT_DETACH) < 0)
        return error_set_raw(err, errno, "detach the host root", "/");
    if (chdir("/") < 0)
        return error_set_raw(err, errno, "chdir", "/");
    if (plan->cwd && chdir(plan->cwd) < 0)
        return error_set_raw(err, errno, "chdir to the working directory", plan->cwd);
    return 0;
}
