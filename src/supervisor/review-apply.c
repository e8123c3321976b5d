/* Review mode's apply (review.c): the selected changes written into the
 * workspace beneath its root fd, one file at a time through a temporary
 * file renamed over the target, refused on a conflict, recorded so a later
 * listing knows them, and dropped from the upper layer. Host context, as
 * the user. */
#include "supervisor/review-internal.h"
#include "supervisor/review.h"
#include "supervisor/gitguard.h"
#include "backend/backend.h"
#include "config/config.h"
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
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

/* ---- apply ---- */

/* The directory holding REL in the workspace, created (as the sandbox's
 * directories are) when CREATE; the last component in *BASE. */
static int open_parent(struct review *r, const char *rel, bool create, const char **base)
{
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    int fd = dup(r->ws_fd);
    if (!slash || fd < 0)
        return fd;
    char comp[NAME_MAX + 1];
    for (const char *p = rel; p < slash;) {
        const char *next = memchr(p, '/', (size_t)(slash - p));
        size_t n = next ? (size_t)(next - p) : (size_t)(slash - p);
        if (n == 0 || n > NAME_MAX) {
            close(fd);
            errno = EINVAL;
            return -1;
        }
        memcpy(comp, p, n);
        comp[n] = 0;
        int sub = fs_openat2(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
        if (sub < 0 && errno == ENOENT && create) {
            char up[PATH_MAX];
            struct stat st;
            snprintf(up, sizeof(up), "%.*s", (int)(p + n - rel), rel);
            mode_t mode =
                fstatat(r->upper_fd, up, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode)
                    ? st.st_mode & 01777
                    : 0755;
            if (mkdirat(fd, comp, mode) == 0 || errno == EEXIST)
                sub = fs_openat2(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
        }
        close(fd);
        if (sub < 0)
            return -1;
        fd = sub;
        p += n + 1;
    }
    return fd;
}

static int temp_name(char *buf, size_t size, const char *session)
{
    unsigned char rnd[6];
    if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
        return -1;
    snprintf(buf, size, TEMP_PREFIX "%.40s-%02x%02x%02x%02x%02x%02x", session, rnd[0], rnd[1],
             rnd[2], rnd[3], rnd[4], rnd[5]);
    return 0;
}

static int copy_fd(int in, int out)
{
    for (;;) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, 1u << 30, 0);
        if (n == 0)
            return 0;
        if (n > 0)
            continue;
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return -1;
        break;
    }
    return review_copy_read_write(in, out);
}

/* The host entry is still the one scanned (the user did not change it
 * between `cordon changes` and this rename). */
static bool host_unchanged(const struct review_change *c, int parent, const char *base)
{
    struct stat st;
    if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT && c->old_type == '-';
    if (c->old_type == '-')
        return false;
    if (S_ISDIR(st.st_mode))
        return st.st_dev == c->host_dev && st.st_ino == c->host_ino;
    return st.st_dev == c->host_dev && st.st_ino == c->host_ino &&
           st.st_ctim.tv_sec == c->host_ctime.tv_sec && st.st_ctim.tv_nsec == c->host_ctime.tv_nsec;
}

static void record_applied(struct review *r, int parent, const char *base, const char *rel)
{
    struct stat st;
    if (fstatat(parent, base, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return;
    _cleanup_close_ int fd = openat(r->review_fd, APPLIED_FILE,
                                    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    struct stat cur;
    if (fd < 0 || fstat(fd, &cur) < 0 || cur.st_size > (off_t)APPLIED_MAX)
        return;
    char line[PATH_MAX + 128];
    int n =
        snprintf(line, sizeof(line), "%lu %lu %lld %ld %s", (unsigned long)st.st_dev,
                 (unsigned long)st.st_ino, (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec, rel);
    if (n > 0 && (size_t)n < sizeof(line))
        fs_write_all(fd, line, (size_t)n + 1);
}

struct linked {
    ino_t ino;
    char *path;
};

/* Every temporary name is noted (its path, NUL-terminated) before it is
 * created, so an apply killed halfway leaves nothing the next apply or
 * discard does not remove. */
#define TEMPS_FILE "temps"

static int note_temp(struct review *r, const char *rel, const char *tmp)
{
    _cleanup_close_ int fd = openat(r->review_fd, TEMPS_FILE,
                                    O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    const char *slash = strrchr(rel, '/');
    char line[PATH_MAX + NAME_MAX + 2];
    int n = slash ? snprintf(line, sizeof(line), "%.*s/%s", (int)(slash - rel), rel, tmp)
                  : snprintf(line, sizeof(line), "%s", tmp);
    if (n < 0 || (size_t)n >= sizeof(line))
        return -1;
    return fs_write_all(fd, line, (size_t)n + 1);
}

void remove_stale_temps(struct review *r)
{
    size_t len = 0;
    _cleanup_free_ char *buf = read_small(r->review_fd, TEMPS_FILE, APPLIED_MAX, &len);
    for (size_t i = 0; buf && i < len; i += strlen(buf + i) + 1) {
        const char *rel = buf + i, *base;
        const char *slash = strrchr(rel, '/');
        const char *name = slash ? slash + 1 : rel;
        /* Only a name cordon made: the journal is ours, but be exact. */
        if (strncmp(name, TEMP_PREFIX, sizeof(TEMP_PREFIX) - 1) != 0)
            continue;
        _cleanup_close_ int parent = open_parent(r, rel, false, &base);
        if (parent >= 0)
            unlinkat(parent, base, 0);
    }
    unlinkat(r->review_fd, TEMPS_FILE, 0);
}

/* Writes the sandbox's version of C at BASE in PARENT: a temporary file (or
 * symlink, or a hard link to an entry applied before) renamed over it. */
static int put_entry(struct review *r, struct review_change *c, int parent, const char *base,
                     struct linked *links, size_t nlinks)
{
    char tmp[NAME_MAX + 1];
    if (temp_name(tmp, sizeof(tmp), r->name) < 0 || note_temp(r, c->path, tmp) < 0)
        return -1;
    if (c->type == 'l') {
        /* The target the scan read and judged, not whatever is there now. */
        if (!c->link || symlinkat(c->link, parent, tmp) < 0)
            return -1;
    } else {
        const struct linked *earlier = NULL;
        for (size_t i = 0; c->upper_nlink > 1 && i < nlinks; i++) {
            if (links[i].ino == c->upper_ino)
                earlier = &links[i];
        }
        const char *eb;
        _cleanup_close_ int ep = earlier ? open_parent(r, earlier->path, false, &eb) : -1;
        if (ep >= 0 && linkat(ep, eb, parent, tmp, 0) == 0)
            goto placed;
        _cleanup_close_ int in = fs_open_regular(r->upper_fd, c->path, RESOLVE_STRICT);
        if (in < 0)
            return -1;
        _cleanup_close_ int out =
            openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
            return -1;
        /* No set-id bit is carried over: the sandbox's root made them. */
        if (copy_fd(in, out) < 0 || fchmod(out, c->new_mode & 01777) < 0 || fsync(out) < 0) {
            int e = errno;
            unlinkat(parent, tmp, 0);
            errno = e;
            return -1;
        }
    }
placed:
    if (!host_unchanged(c, parent, base)) {
        unlinkat(parent, tmp, 0);
        errno = ESTALE;
        return -1;
    }
    if (c->old_type == 'd')
        fs_remove_tree_at(parent, base);
    unsigned flags = c->old_type == '-' || c->old_type == 'd' ? RENAME_NOREPLACE : 0;
    if (renameat2(parent, tmp, parent, base, flags) < 0) {
        int e = errno;
        unlinkat(parent, tmp, 0);
        errno = e;
        return -1;
    }
    return 0;
}

/* chmod of the directory BASE in PARENT, never through a symlink put there. */
static int chmod_dir(int parent, const char *base, mode_t mode)
{
    _cleanup_close_ int fd =
        fs_openat2(parent, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
    return fd < 0 ? -1 : fchmod(fd, mode);
}

static int apply_one(struct review *r, struct review_change *c, struct linked *links,
                     size_t *nlinks)
{
    const char *base;
    _cleanup_close_ int parent = open_parent(r, c->path, c->kind != REVIEW_DELETED, &base);
    if (parent < 0)
        return c->kind == REVIEW_DELETED && errno == ENOENT ? 0 : -1;
    switch (c->kind) {
    case REVIEW_DELETED:
        if (!host_unchanged(c, parent, base)) {
            errno = ESTALE;
            return -1;
        }
        if (c->old_type == 'd')
            fs_remove_tree_at(parent, base);
        else if (unlinkat(parent, base, 0) < 0 && errno != ENOENT)
            return -1;
        return 0;
    case REVIEW_MODE:
        if (c->type == 'd') {
            if (!host_unchanged(c, parent, base)) {
                errno = ESTALE;
                return -1;
            }
            return chmod_dir(parent, base, c->new_mode & 01777);
        }
        return put_entry(r, c, parent, base, links, *nlinks);
    case REVIEW_ADDED:
    case REVIEW_MODIFIED:
    case REVIEW_RENAMED:
        if (c->type == 'd') {
            if (c->old_type != '-' && c->old_type != 'd') {
                if (!host_unchanged(c, parent, base)) {
                    errno = ESTALE;
                    return -1;
                }
                unlinkat(parent, base, 0);
            }
            if (mkdirat(parent, base, c->new_mode & 01777) < 0 && errno != EEXIST)
                return -1;
            return chmod_dir(parent, base, c->new_mode & 01777);
        }
        if (c->kind == REVIEW_RENAMED) {
            /* The old name must still be the host's file as scanned; the
             * new name is created, never replaced. */
            const char *fbase;
            _cleanup_close_ int fparent = open_parent(r, c->from, false, &fbase);
            if (fparent < 0 || !host_unchanged(c, fparent, fbase)) {
                errno = ESTALE;
                return -1;
            }
            struct review_change to = *c;
            to.old_type = '-';
            if (put_entry(r, &to, parent, base, links, *nlinks) < 0)
                return -1;
        } else if (put_entry(r, c, parent, base, links, *nlinks) < 0) {
            return -1;
        }
        if (c->type == 'f' && c->upper_nlink > 1 && *nlinks < 4096) {
            links[*nlinks].ino = c->upper_ino;
            links[*nlinks].path = c->path;
            (*nlinks)++;
        }
        record_applied(r, parent, base, c->path);
        if (c->kind == REVIEW_RENAMED) {
            const char *fbase;
            _cleanup_close_ int fparent = open_parent(r, c->from, false, &fbase);
            if (fparent >= 0)
                unlinkat(fparent, fbase, 0);
        }
        return 0;
    case REVIEW_SKIPPED:
        errno = EINVAL;
        return -1;
    }
    return -1;
}

/* A stopped session's layer loses what was applied, so its next start sees
 * the host's files (which are now the same). */
static bool under_opaque(struct review *r, const char *rel)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", rel);
    for (char *slash = strrchr(dir, '/'); slash; slash = strrchr(dir, '/')) {
        *slash = 0;
        const char *base;
        _cleanup_close_ int pfd = review_upper_parent(r, dir, &base);
        if (pfd < 0 || is_opaque(pfd, base))
            return true;
    }
    return false;
}

static void drop_from_upper(struct review *r, const struct review_change *c)
{
    /* An entry below an opaque directory stays (its content is the host's
     * now): without it the directory would hide the host's new file. */
    if (r->running || c->type == 'd' || under_opaque(r, c->path))
        return;
    const char *base;
    _cleanup_close_ int dir = review_upper_parent(r, c->path, &base);
    if (dir >= 0)
        unlinkat(dir, base, 0);
}

int review_apply(struct review *r, char *const *paths, size_t npaths,
                 void (*report)(void *ctx, const char *what, const char *path, const char *why),
                 void *ctx, struct cordon_error *err)
{
    if (r->running && r->as_of == 0)
        return error_set(err, EBUSY,
                         "sandbox %s is running and no tool call of it has ended yet: nothing "
                         "is checkpointed to apply (stop the session, or apply after a call)",
                         r->name);
    if (r->running && r->expect_as_of != r->as_of)
        return error_set(err, EBUSY,
                         "sandbox %s is running: apply takes exactly the changes `cordon changes` "
                         "and `cordon diff` showed, as of tool call %ld; review those, then "
                         "`cordon apply %s --at %ld`",
                         r->name, r->as_of, r->name, r->as_of);
    remove_stale_temps(r);
    if (review_scan(r, err) < 0)
        return -1;
    struct linked *links = calloc(4096, sizeof(*links));
    if (!links)
        return error_set(err, ENOMEM, "apply");
    size_t nlinks = 0;
    int problems = 0;
    for (size_t i = 0; i < r->count; i++) {
        struct review_change *c = &r->changes[i];
        if (!review_selected(c, paths, npaths))
            continue;
        if (c->refused) {
            report(ctx, "refused", c->path, c->refused);
            problems++;
            continue;
        }
        if (c->kind == REVIEW_SKIPPED) {
            report(ctx, "skipped", c->path, "not a file, directory or symlink");
            problems++;
            continue;
        }
        if (c->conflict) {
            report(ctx, "conflict", c->path,
                   "the host changed it since the session started; both versions kept (the "
                   "host's in the workspace, the sandbox's in the review layer)");
            problems++;
            continue;
        }
        if (apply_one(r, c, links, &nlinks) < 0) {
            char why[256];
            snprintf(why, sizeof(why), "%s",
                     errno == ESTALE ? "the host changed it during apply; both versions kept"
                     : errno == ELOOP || errno == EXDEV
                         ? "a symlink on the way in the workspace; not followed"
                         : strerror(errno));
            report(ctx, errno == ESTALE ? "conflict" : "failed", c->path, why);
            problems++;
            continue;
        }
        drop_from_upper(r, c);
        if (c->kind == REVIEW_RENAMED) {
            char line[PATH_MAX * 2 + 8];
            snprintf(line, sizeof(line), "%s -> %s", c->from, c->path);
            report(ctx, "applied", line, NULL);
        } else {
            report(ctx, "applied", c->path, NULL);
        }
    }
    free(links);
    unlinkat(r->review_fd, TEMPS_FILE, 0);
    return problems;
}
