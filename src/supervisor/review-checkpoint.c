/* Review mode's checkpoints (docs/review.md "Checkpoints"): after every
 * routed tool call the supervisor copies the upper layer into
 * review/checkpoints/N, hard-linking every file that did not change since
 * checkpoint N-1, so a call costs a walk of the upper layer (the agent's
 * changes, not the workspace) plus a copy of what the call wrote. rewind
 * and fork copy a checkpoint or the layer back. Host context. */
#include "supervisor/review.h"
#include "supervisor/review-internal.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define STAMP_XATTR "user.cordon.stamp"
#define OPAQUE_USER "user.overlay.opaque"

struct stamp {
    unsigned long long ino;
    long long size, ctime_sec, ctime_nsec;
};

static struct stamp stamp_of(const struct stat *st)
{
    return (struct stamp){st->st_ino, st->st_size, st->st_ctim.tv_sec, st->st_ctim.tv_nsec};
}

static bool opaque_at(int fd)
{
    char v[4];
    return (fgetxattr(fd, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y') ||
           (fgetxattr(fd, "trusted.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y');
}

static int copy_data(int in, int out)
{
    for (;;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, 1u << 30, 0);
        if (n == 0)
            return 0;
        if (n < 0)
            break;
    }
    if (lseek(in, 0, SEEK_SET) < 0 || ftruncate(out, 0) < 0 || lseek(out, 0, SEEK_SET) < 0)
        return -1;
    return review_copy_read_write(in, out);
}

struct snap {
    size_t budget;
    bool stamp; /* a checkpoint: record stamps, link unchanged files from prev */
};

/* Copies directory SRC into DST (both open), linking a file from PREV (or
 * -1) when its stamp says it is unchanged. */
static int snap_dir(struct snap *s, int src, int dst, int prev, int depth)
{
    DIR *d = review_opendir_dup(src, depth);
    if (!d)
        return -1;
    struct dirent *de;
    int rc = 0;
    while ((de = review_readdir(d, &s->budget, &rc))) {
        const char *name = de->d_name;
        struct stat st;
        if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            _cleanup_close_ int sub =
                openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0 || (mkdirat(dst, name, 0700) < 0 && errno != EEXIST)) {
                rc = -1;
                break;
            }
            _cleanup_close_ int out =
                openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            _cleanup_close_ int p =
                prev >= 0 ? openat(prev, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                          : -1;
            if (out < 0) {
                rc = -1;
                break;
            }
            if (opaque_at(sub))
                fsetxattr(out, OPAQUE_USER, "y", 1, 0);
            rc = snap_dir(s, sub, out, p, depth + 1);
            fchmod(out, st.st_mode & 07777);
        } else if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
            /* A whiteout: mknod of 0/0 needs no CAP_MKNOD (Linux 5.8+). */
            if (mknodat(dst, name, S_IFCHR | 0600, makedev(0, 0)) < 0 && errno != EEXIST)
                rc = -1;
        } else if (S_ISLNK(st.st_mode)) {
            char text[PATH_MAX];
            ssize_t n = readlinkat(src, name, text, sizeof(text) - 1);
            if (n >= 0) {
                text[n] = 0;
                if (symlinkat(text, dst, name) < 0 && errno != EEXIST)
                    rc = -1;
            }
        } else if (S_ISREG(st.st_mode)) {
            struct stamp now = stamp_of(&st);
            if (s->stamp && prev >= 0) {
                _cleanup_close_ int pf = openat(prev, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                struct stamp was;
                if (pf >= 0 && fgetxattr(pf, STAMP_XATTR, &was, sizeof(was)) == sizeof(was) &&
                    memcmp(&was, &now, sizeof(now)) == 0 && linkat(prev, name, dst, name, 0) == 0)
                    continue;
            }
            _cleanup_close_ int in =
                fs_open_regular(src, name, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
            if (in < 0)
                continue; /* unreadable (mode 000 unprivileged): not kept */
            _cleanup_close_ int out =
                openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
            if (out < 0 || copy_data(in, out) < 0) {
                rc = -1;
                break;
            }
            fchmod(out, st.st_mode & 01777);
            struct timespec times[2] = {st.st_atim, st.st_mtim};
            futimens(out, times);
            if (s->stamp)
                fsetxattr(out, STAMP_XATTR, &now, sizeof(now), 0);
        }
    }
    closedir(d);
    return rc;
}

static long read_counter(int dirfd)
{
    char buf[32] = {0};
    _cleanup_close_ int fd = openat(dirfd, "last", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
        return 0;
    return strtol(buf, NULL, 10);
}

static int write_counter(int dirfd, long n)
{
    char buf[32];
    int len = snprintf(buf, sizeof(buf), "%ld\n", n);
    _cleanup_close_ int fd =
        openat(dirfd, "last.new", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || fs_write_all(fd, buf, (size_t)len) < 0)
        return -1;
    return renameat(dirfd, "last.new", dirfd, "last");
}

int review_checkpoint(int state_fd, long *ret_n, struct cordon_error *err)
{
    _cleanup_close_ int rfd =
        openat(state_fd, REVIEW_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd < 0)
        return error_set(err, errno, "checkpoint: the review layer");
    if (mkdirat(rfd, "checkpoints", 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "checkpoint");
    _cleanup_close_ int ck =
        openat(rfd, "checkpoints", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    _cleanup_close_ int upper =
        openat(rfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (ck < 0 || upper < 0)
        return error_set(err, errno, "checkpoint");
    long last = read_counter(ck), n = last + 1;
    char name[32], prev_name[32];
    snprintf(name, sizeof(name), "%ld", n);
    snprintf(prev_name, sizeof(prev_name), "%ld", last);
    fs_remove_tree_at(ck, "next");
    if (mkdirat(ck, "next", 0700) < 0)
        return error_set(err, errno, "checkpoint %ld", n);
    _cleanup_close_ int dst = openat(ck, "next", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    _cleanup_close_ int prev =
        openat(ck, prev_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct snap s = {.budget = REVIEW_MAX_ENTRIES, .stamp = true};
    if (dst < 0 || snap_dir(&s, upper, dst, prev, 0) < 0) {
        int e = errno;
        fs_remove_tree_at(ck, "next");
        return error_set(err, e, "checkpoint %ld", n);
    }
    if (renameat(ck, "next", ck, name) < 0 || write_counter(ck, n) < 0)
        return error_set(err, errno, "checkpoint %ld", n);
    if (n > REVIEW_CHECKPOINTS_MAX) {
        char old[32];
        snprintf(old, sizeof(old), "%ld", n - REVIEW_CHECKPOINTS_MAX);
        fs_remove_tree_at(ck, old);
    }
    *ret_n = n;
    return 0;
}

long review_checkpoint_last(const struct review *r)
{
    _cleanup_close_ int d =
        fs_openat2(r->review_fd, "checkpoints", O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
                   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
    return d < 0 ? 0 : read_counter(d);
}

int review_checkpoint_open(const struct review *r, long n, struct cordon_error *err)
{
    if (n == 0)
        return -2; /* before the first call: the empty layer */
    char name[32];
    snprintf(name, sizeof(name), "checkpoints/%ld", n);
    int fd = fs_openat2(r->review_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW,
                        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
    if (fd < 0)
        return error_set(err, errno,
                         "sandbox %s has no checkpoint %ld (one per tool call, the last %d kept)",
                         r->name, n, REVIEW_CHECKPOINTS_MAX);
    return fd;
}

/* Replaces DIR under PARENT by a copy of SRC (-1: empty). */
static int replace_tree(int parent, const char *dir, int src, struct cordon_error *err)
{
    char tmp[64];
    snprintf(tmp, sizeof(tmp), "%s.new", dir);
    fs_remove_tree_at(parent, tmp);
    struct stat st;
    if (fstatat(parent, dir, &st, AT_SYMLINK_NOFOLLOW) < 0)
        st.st_mode = 0755;
    if (mkdirat(parent, tmp, st.st_mode & 07777) < 0)
        return error_set(err, errno, "%s", tmp);
    _cleanup_close_ int dst = openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct snap s = {.budget = REVIEW_MAX_ENTRIES, .stamp = false};
    if (dst < 0 || (src >= 0 && snap_dir(&s, src, dst, -1, 0) < 0)) {
        int e = errno;
        fs_remove_tree_at(parent, tmp);
        return error_set(err, e, "copying the layer");
    }
    fchmod(dst, st.st_mode & 07777);
    if (geteuid() == 0 && fchown(dst, st.st_uid, st.st_gid) < 0) {
        int e = errno;
        fs_remove_tree_at(parent, tmp);
        return error_set(err, e, "copying the layer: its owner");
    }
    bool exists = fstatat(parent, dir, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (exists ? renameat2(parent, tmp, parent, dir, RENAME_EXCHANGE) < 0
               : renameat(parent, tmp, parent, dir) < 0)
        return error_set(err, errno, "replacing %s", dir);
    fs_remove_tree_at(parent, tmp);
    return 0;
}

void review_checkpoint_now(struct review *r)
{
    _cleanup_close_ int state = openat(r->review_fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    long n;
    struct cordon_error ignored;
    if (state >= 0)
        review_checkpoint(state, &n, &ignored);
}

int review_rewind(struct review *r, long n, struct cordon_error *err)
{
    if (r->running)
        return error_set(err, EBUSY,
                         "sandbox %s is running: stop the session first (the kernel's overlay "
                         "must not have its upper layer changed under it, and running processes "
                         "are not rewound)",
                         r->name);
    int src = review_checkpoint_open(r, n, err);
    if (src == -1)
        return -1;
    int rc = replace_tree(r->review_fd, "upper", src >= 0 ? src : -1, err);
    if (src >= 0)
        close(src);
    if (rc < 0)
        return -1;
    close(r->upper_fd);
    r->upper_fd = openat(r->review_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    review_checkpoint_now(r);
    return 0;
}

int review_fork(struct review *r, const char *new_name, const char *workspace, const char *backend,
                struct cordon_error *err)
{
    if (state_exists(new_name))
        return error_set(err, EEXIST, "a sandbox named %s exists already", new_name);
    struct state_owner o;
    if (state_acquire(new_name, workspace, backend, &o, err) < 0)
        return -1;
    int rc = -1;
    _cleanup_close_ int nr = -1;
    if (mkdirat(o.dir_fd, REVIEW_DIR, 0700) < 0) {
        error_set(err, errno, "fork");
        goto out;
    }
    nr = openat(o.dir_fd, REVIEW_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (nr < 0 || mkdirat(nr, "work", 0700) < 0) {
        error_set(err, errno, "fork");
        goto out;
    }
    if (replace_tree(nr, "upper", r->upper_fd, err) < 0)
        goto out;
    /* The same start stamp and protected paths: conflicts are measured from
     * the original session's start. */
    static const char *const files[] = {"started", "protected"};
    for (size_t i = 0; i < 2; i++) {
        _cleanup_close_ int in = openat(r->review_fd, files[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        _cleanup_close_ int out =
            openat(nr, files[i], O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        struct stat st;
        if (in < 0 || out < 0 || fstat(in, &st) < 0 || copy_data(in, out) < 0) {
            error_set(err, errno, "fork: %s", files[i]);
            goto out;
        }
        struct timespec times[2] = {st.st_atim, st.st_mtim};
        futimens(out, times);
    }
    state_set_status(&o, "stopped", 0, err);
    rc = 0;
out:
    state_release(&o, rc < 0);
    return rc;
}

/* ---- what one call changed ---- */

static int host_file(int ws_fd, const char *rel, bool *exists)
{
    int fd = fs_openat2(ws_fd, rel, O_RDONLY | O_NOFOLLOW,
                        RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    int e = errno;
    *exists = fd >= 0 || e == EISDIR || e == ELOOP;
    return fd;
}

static void call_walk(int ws_fd, int cur, int prev, char *rel, size_t len, int depth,
                      void (*fn)(void *ctx, char kind, const char *path, int old_fd, int new_fd),
                      void *ctx)
{
    if (depth > REVIEW_MAX_DEPTH)
        return;
    /* Entries of this checkpoint against the previous one. */
    for (int pass = 0; pass < 2; pass++) {
        int here = pass == 0 ? cur : prev, there = pass == 0 ? prev : cur;
        if (here < 0)
            continue;
        int fd = dup(here);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            if (fd >= 0)
                close(fd);
            return;
        }
        rewinddir(d);
        struct dirent *de;
        while ((de = readdir(d))) {
            const char *name = de->d_name;
            if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                continue;
            int n = len ? snprintf(rel + len, PATH_MAX - len, "/%s", name)
                        : snprintf(rel, PATH_MAX, "%s", name);
            if (n < 0 || len + (size_t)n >= PATH_MAX) {
                rel[len] = 0;
                continue;
            }
            struct stat a, b;
            bool in_here = fstatat(here, name, &a, AT_SYMLINK_NOFOLLOW) == 0;
            bool in_there = there >= 0 && fstatat(there, name, &b, AT_SYMLINK_NOFOLLOW) == 0;
            if (pass == 1) {
                /* only in the previous checkpoint: the call undid it */
                if (in_here && !in_there && !S_ISDIR(a.st_mode)) {
                    _cleanup_close_ int o = openat(here, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                    bool on_host;
                    _cleanup_close_ int h = host_file(ws_fd, rel, &on_host);
                    fn(ctx, on_host ? 'U' : 'D', rel, o, h);
                }
                rel[len] = 0;
                continue;
            }
            if (S_ISDIR(a.st_mode)) {
                _cleanup_close_ int sub =
                    openat(here, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                _cleanup_close_ int psub =
                    in_there && S_ISDIR(b.st_mode)
                        ? openat(there, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                        : -1;
                if (!in_there)
                    fn(ctx, 'A', rel, -1, -1);
                if (sub >= 0)
                    call_walk(ws_fd, sub, psub, rel, len + (size_t)n, depth + 1, fn, ctx);
            } else if (S_ISCHR(a.st_mode)) {
                if (!in_there || !S_ISCHR(b.st_mode)) {
                    bool on_host;
                    _cleanup_close_ int o =
                        in_there ? openat(there, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
                                 : host_file(ws_fd, rel, &on_host);
                    fn(ctx, 'D', rel, o, -1);
                }
            } else if (!in_there || a.st_ino != b.st_ino) {
                bool same_link = false;
                if (in_there && S_ISLNK(a.st_mode) && S_ISLNK(b.st_mode)) {
                    char x[PATH_MAX], y[PATH_MAX];
                    ssize_t nx = readlinkat(here, name, x, sizeof(x));
                    ssize_t ny = readlinkat(there, name, y, sizeof(y));
                    same_link = nx >= 0 && nx == ny && memcmp(x, y, (size_t)nx) == 0;
                }
                if (!same_link) {
                    _cleanup_close_ int nf =
                        S_ISREG(a.st_mode)
                            ? fs_open_regular(here, name, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
                            : -1;
                    bool on_host = false;
                    _cleanup_close_ int of =
                        in_there ? (S_ISREG(b.st_mode)
                                        ? fs_open_regular(there, name,
                                                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
                                        : -1)
                                 : host_file(ws_fd, rel, &on_host);
                    fn(ctx, in_there || on_host ? 'M' : 'A', rel, of, nf);
                }
            }
            rel[len] = 0;
        }
        closedir(d);
    }
}

int review_call_changes(const struct review *r, long n,
                        void (*fn)(void *ctx, char kind, const char *path, int old_fd, int new_fd),
                        void *ctx, struct cordon_error *err)
{
    if (n < 1)
        return error_set(err, EINVAL, "calls are numbered from 1");
    int cur = review_checkpoint_open(r, n, err);
    if (cur < 0)
        return -1;
    struct cordon_error ignored;
    int prev = n > 1 ? review_checkpoint_open(r, n - 1, &ignored) : -1;
    char rel[PATH_MAX] = "";
    call_walk(r->ws_fd, cur, prev < 0 ? -1 : prev, rel, 0, 0, fn, ctx);
    close(cur);
    if (prev >= 0)
        close(prev);
    return 0;
}
