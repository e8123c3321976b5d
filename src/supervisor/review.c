/* Review mode's layer: prepared at session start, read, applied and
 * discarded by the CLI (docs/review.md). Host context, as the user.
 *
 * The upper layer is the sandbox's writing (through the kernel's overlay):
 * every entry is opened beneath it with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), symlinks are read as text, never followed. The
 * workspace is written only beneath its root fd, never through a symlink,
 * one file at a time through a temporary file renamed over the target, so a
 * file is either the host's or the sandbox's version, never a mix. This
 * file holds session start, opening, what apply never writes and discard;
 * the listing is in review-scan.c, apply in review-apply.c. */
#include "supervisor/review.h"
#include "supervisor/review-internal.h"
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

/* ---- session start ---- */

int review_check_config(const struct cordon_config *cfg, const struct backend_ops *backend,
                        struct cordon_error *err)
{
    if (cfg->workspace_mode != CFG_WORKSPACE_REVIEW)
        return 0;
    /* docs/review.md "Backends": ns, vm (the overlay in QEMU's mount
     * namespace) and docker (the daemon's overlay volume) offer it; a
     * backend without BACKEND_CAP_REVIEW refuses. */
    if (!backend_has(backend, BACKEND_CAP_REVIEW))
        return error_set(err, ENOTSUP,
                         "review mode (workspace_mode = \"review\") is not available on the %s "
                         "backend yet: its workspace is a share the host's overlay cannot be "
                         "put under; use a backend that offers it (docs/review.md)",
                         backend->name);
    if (cfg->workspace_readonly)
        return error_set(err, EINVAL,
                         "review mode and workspace_readonly = true exclude each other");
    return 0;
}

int review_prepare(int state_fd, const char *state_dir, const char *ws_root,
                   const char *const *protected_paths, char **ret_dir, struct cordon_error *err)
{
    struct stat ws;
    if (stat(ws_root, &ws) < 0)
        return error_set(err, errno, "review mode: %s", ws_root);
    if (mkdirat(state_fd, REVIEW_DIR, 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "review mode: creating %s/%s", state_dir, REVIEW_DIR);
    _cleanup_close_ int rfd =
        openat(state_fd, REVIEW_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (rfd < 0)
        return error_set(err, errno, "review mode: %s/%s", state_dir, REVIEW_DIR);
    /* The overlay's root takes the upper directory's owner and mode: they
     * are the workspace root's. */
    if (mkdirat(rfd, "upper", ws.st_mode & 07777) < 0 && errno != EEXIST)
        return error_set(err, errno, "review mode: creating the upper layer");
    if (mkdirat(rfd, "work", 0700) < 0 && errno != EEXIST)
        return error_set(err, errno, "review mode: creating the work directory");
    if (fchmodat(rfd, "upper", ws.st_mode & 07777, 0) < 0)
        return error_set(err, errno, "review mode: the upper layer");
    if (geteuid() == 0 && fchownat(rfd, "upper", ws.st_uid, ws.st_gid, AT_SYMLINK_NOFOLLOW) < 0)
        return error_set(err, errno, "review mode: the upper layer");
    /* The start stamp is the first session's: a layer kept across sessions
     * of one name is measured against the host as it was then. */
    int fd = openat(rfd, STARTED_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0)
        close(fd);
    else if (errno != EEXIST)
        return error_set(err, errno, "review mode: the start stamp");
    fd = openat(rfd, PROTECTED_FILE ".new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                0600);
    if (fd < 0)
        return error_set(err, errno, "review mode: the protected list");
    for (const char *const *p = protected_paths; p && *p; p++) {
        if (fs_write_all(fd, *p, strlen(*p) + 1) < 0) {
            int e = errno;
            close(fd);
            return error_set(err, e, "review mode: the protected list");
        }
    }
    close(fd);
    if (renameat(rfd, PROTECTED_FILE ".new", rfd, PROTECTED_FILE) < 0)
        return error_set(err, errno, "review mode: the protected list");
    if (asprintf(ret_dir, "%s/%s", state_dir, REVIEW_DIR) < 0)
        return error_set(err, ENOMEM, "review mode");
    return 0;
}

/* ---- opening ---- */

char *read_small(int dirfd, const char *name, size_t max, size_t *len)
{
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max)
        return NULL;
    char *buf = malloc((size_t)st.st_size + 1);
    if (!buf)
        return NULL;
    size_t n = 0;
    while (n < (size_t)st.st_size) {
        ssize_t k = read(fd, buf + n, (size_t)st.st_size - n);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int review_open(const char *name, struct review *r, struct cordon_error *err)
{
    *r = (struct review){.ws_fd = -1, .review_fd = -1, .upper_fd = -1, .lock_fd = -1};
    snprintf(r->name, sizeof(r->name), "%s", name);
    struct state_entry e;
    _cleanup_close_ int sfd = state_dir_open(name, O_PATH, &e, err);
    if (sfd < 0)
        return -1;
    r->review_fd = openat(sfd, REVIEW_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (r->review_fd < 0) {
        int e2 = errno;
        review_close(r);
        return error_set(err, e2 == ENOENT ? ENOTSUP : e2,
                         "sandbox %s has no review layer (it did not run with workspace_mode = "
                         "\"review\" or --review)",
                         name);
    }
    r->upper_fd = openat(r->review_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    r->ws_fd = open(e.workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (r->upper_fd < 0 || r->ws_fd < 0 || fstatat(r->review_fd, STARTED_FILE, &st, 0) < 0) {
        int e2 = errno;
        review_close(r);
        return error_set(err, e2, "sandbox %s: its review layer or workspace %s", name,
                         e.workspace);
    }
    r->started = st.st_mtim;
    /* A stopped session's lock is taken for as long as we work on its
     * layer, so it cannot start under us. */
    r->lock_fd = openat(sfd, "lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (r->lock_fd >= 0 && flock(r->lock_fd, LOCK_EX | LOCK_NB) == 0) {
        r->running = false;
    } else {
        r->running = true;
        if (r->lock_fd >= 0)
            close(r->lock_fd);
        r->lock_fd = -1;
        /* What a running sandbox keeps writing is not what anyone can
         * review: its last checkpoint is (the sandbox cannot reach it). */
        long n = review_checkpoint_last(r);
        struct cordon_error ignored;
        int fd = n > 0 ? review_checkpoint_open(r, n, &ignored) : -1;
        if (fd >= 0) {
            close(r->upper_fd);
            r->upper_fd = fd;
            r->as_of = n;
        }
    }
    size_t len = 0;
    _cleanup_free_ char *list = read_small(r->review_fd, PROTECTED_FILE, 1u << 20, &len);
    for (size_t i = 0; list && i < len; i += strlen(list + i) + 1) {
        char **grown = realloc(r->protected_paths, (r->nprotected + 1) * sizeof(char *));
        if (!grown)
            break;
        r->protected_paths = grown;
        r->protected_paths[r->nprotected] = strdup(list + i);
        if (r->protected_paths[r->nprotected])
            r->nprotected++;
    }
    return 0;
}

void changes_free(struct review *r)
{
    for (size_t i = 0; i < r->count; i++) {
        free(r->changes[i].path);
        free(r->changes[i].from);
        free(r->changes[i].link);
    }
    free(r->changes);
    r->changes = NULL;
    r->count = 0;
}

void review_close(struct review *r)
{
    changes_free(r);
    for (size_t i = 0; i < r->nprotected; i++)
        free(r->protected_paths[i]);
    free(r->protected_paths);
    r->protected_paths = NULL;
    r->nprotected = 0;
    int *fds[] = {&r->ws_fd, &r->review_fd, &r->upper_fd, &r->lock_fd};
    for (size_t i = 0; i < ARRAY_SIZE(fds); i++) {
        if (*fds[i] >= 0)
            close(*fds[i]);
        *fds[i] = -1;
    }
}

/* ---- what apply never writes ---- */

bool is_under_path(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

const char *refused_reason(const struct review *r, const char *rel)
{
    for (const char *p = rel; p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 4 && strncmp(p, ".git", 4) == 0)
            return "git metadata is the host's (docs/git-metadata.md)";
        if (n >= sizeof(TEMP_PREFIX) - 1 && strncmp(p, TEMP_PREFIX, sizeof(TEMP_PREFIX) - 1) == 0)
            return "a name cordon uses for its own temporary files";
        /* What the host's tools trust on sight, at any depth (a nested
         * .envrc or .cordon.toml acts when the user enters that folder):
         * cordon's and direnv's files, editors' and coding agents'
         * settings (gitguard_host_trusted). */
        for (size_t i = 0; gitguard_host_trusted[i]; i++) {
            if (n == strlen(gitguard_host_trusted[i]) &&
                strncmp(p, gitguard_host_trusted[i], n) == 0)
                return "the host's tools trust it; copy it yourself after reading it";
        }
        p = slash ? slash + 1 : NULL;
    }
    for (size_t i = 0; i < r->nprotected; i++) {
        if (is_under_path(rel, r->protected_paths[i]))
            return "a protected path (protected_paths)";
    }
    return NULL;
}

DIR *review_opendir_dup(int dirfd, int depth)
{
    if (depth > REVIEW_MAX_DEPTH) {
        errno = ELOOP;
        return NULL;
    }
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return NULL;
    }
    rewinddir(d);
    return d;
}

struct dirent *review_readdir(DIR *d, size_t *budget, int *rc)
{
    struct dirent *de;
    while (*rc == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if ((*budget)-- == 0) {
            errno = EFBIG;
            *rc = -1;
            return NULL;
        }
        return de;
    }
    return NULL;
}

int review_copy_read_write(int in, int out)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n == 0)
            return 0;
        if (n < 0 || fs_write_all(out, buf, (size_t)n) < 0)
            return -1;
    }
}

int review_discard(struct review *r, struct cordon_error *err)
{
    if (r->running)
        return error_set(err, EBUSY,
                         "sandbox %s is running: the kernel's overlay must not have its upper "
                         "layer changed under it; stop the session first",
                         r->name);
    struct stat ws;
    if (fstat(r->ws_fd, &ws) < 0)
        return error_set(err, errno, "discard");
    remove_stale_temps(r);
    close(r->upper_fd);
    r->upper_fd = -1;
    /* work/ is the kernel's scratch (its work/work is mode 000): it stays. */
    fs_remove_tree_at(r->review_fd, "upper");
    unlinkat(r->review_fd, APPLIED_FILE, 0);
    unlinkat(r->review_fd, STARTED_FILE, 0);
    struct stat st;
    if (fstatat(r->review_fd, "upper", &st, AT_SYMLINK_NOFOLLOW) == 0)
        return error_set(err, ENOTEMPTY, "sandbox %s: its upper layer could not be removed",
                         r->name);
    if (mkdirat(r->review_fd, "upper", ws.st_mode & 07777) < 0 ||
        (mkdirat(r->review_fd, "work", 0700) < 0 && errno != EEXIST))
        return error_set(err, errno, "sandbox %s: recreating its review layer", r->name);
    int fd = openat(r->review_fd, STARTED_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    r->upper_fd = openat(r->review_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    review_checkpoint_now(r);
    return 0;
}

long review_pending(const char *name)
{
    struct review r;
    struct cordon_error err;
    if (review_open(name, &r, &err) < 0)
        return -1;
    long n = review_scan(&r, &err) < 0 ? -1 : (long)r.count;
    review_close(&r);
    return n;
}

const char *review_kind_name(enum review_kind k)
{
    switch (k) {
    case REVIEW_ADDED:
        return "A";
    case REVIEW_MODIFIED:
        return "M";
    case REVIEW_DELETED:
        return "D";
    case REVIEW_RENAMED:
        return "R";
    case REVIEW_MODE:
        return "T";
    case REVIEW_SKIPPED:
        return "?";
    }
    return "?";
}
