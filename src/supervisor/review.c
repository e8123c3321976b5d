/* Review mode's layer: prepared at session start, read, applied and
 * discarded by the CLI (docs/review.md). Host context, as the user.
 *
 * The upper layer is the sandbox's writing (through the kernel's overlay):
 * every entry is opened beneath it with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), symlinks are read as text, never followed. The
 * workspace is written only beneath its root fd, never through a symlink,
 * one file at a time through a temporary file renamed over the target, so a
 * file is either the host's or the sandbox's version, never a mix. */
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

#define RESOLVE_STRICT     (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define PROTECTED_FILE     "protected"
#define STARTED_FILE       "started"
#define APPLIED_FILE       "applied"
#define APPLIED_MAX        (16u << 20)
#define TEMP_PREFIX        ".cordon-apply-"
#define RENAME_COMPARE_MAX 256

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

static char *read_small(int dirfd, const char *name, size_t max, size_t *len)
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
    if (state_get(name, &e, err) < 0)
        return -1;
    _cleanup_close_ int root = state_root_open(NULL, err);
    if (root < 0)
        return -1;
    _cleanup_close_ int sfd = openat(root, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0)
        return error_set(err, errno, "sandbox %s", name);
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

static void changes_free(struct review *r)
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

static bool is_under_path(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

static const char *refused_reason(const struct review *r, const char *rel)
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

/* ---- scanning ---- */

struct vec {
    struct review_change *items;
    size_t count, capacity;
};

static struct review_change *vec_push(struct vec *v)
{
    if (v->count == v->capacity) {
        size_t ncap = v->capacity ? v->capacity * 2 : 64;
        struct review_change *g = realloc(v->items, ncap * sizeof(*g));
        if (!g)
            return NULL;
        v->items = g;
        v->capacity = ncap;
    }
    struct review_change *c = &v->items[v->count++];
    *c = (struct review_change){.type = '-', .old_type = '-'};
    return c;
}

static char type_of(mode_t m)
{
    return S_ISDIR(m) ? 'd' : S_ISLNK(m) ? 'l' : S_ISREG(m) ? 'f' : '?';
}

static bool is_whiteout(const struct stat *st)
{
    return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

static bool is_opaque(int dirfd, const char *name)
{
    /* user.* with userxattr (how cordon mounts it, and what the kernel
     * uses in a user namespace), trusted.* when a root-made overlay wrote
     * the layer. "y": opaque; "x" marks a lower layer's xwhiteouts, which an
     * upper layer does not hold. */
    static const char *const keys[] = {"user.overlay.opaque", "trusted.overlay.opaque"};
    _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return false;
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        char v[4];
        ssize_t n = fgetxattr(fd, keys[i], v, sizeof(v));
        if (n == 1 && v[0] == 'y')
            return true;
    }
    return false;
}

static int host_stat(const struct review *r, const char *rel, struct stat *st)
{
    _cleanup_close_ int fd = fs_openat2(r->ws_fd, rel, O_PATH | O_NOFOLLOW, RESOLVE_STRICT);
    if (fd < 0)
        return -1;
    return fstat(fd, st);
}

static bool same_content(int a, int b)
{
    char x[65536], y[65536];
    for (;;) {
        ssize_t n = read(a, x, sizeof(x));
        if (n < 0)
            return false;
        size_t got = 0;
        while (got < (size_t)n) {
            ssize_t k = read(b, y + got, (size_t)n - got);
            if (k <= 0)
                return false;
            got += (size_t)k;
        }
        if (memcmp(x, y, (size_t)n) != 0)
            return false;
        if (n == 0)
            return read(b, y, 1) == 0;
    }
}

static bool same_file(const struct review *r, int upper_dir, const char *name, const char *rel)
{
    _cleanup_close_ int a = fs_open_regular(upper_dir, name, RESOLVE_STRICT);
    _cleanup_close_ int b = fs_open_regular(r->ws_fd, rel, RESOLVE_STRICT);
    return a >= 0 && b >= 0 && same_content(a, b);
}

static bool same_link(const struct review *r, int upper_dir, const char *name, const char *rel)
{
    char a[PATH_MAX], b[PATH_MAX];
    ssize_t na = readlinkat(upper_dir, name, a, sizeof(a));
    _cleanup_close_ int parent = -1;
    const char *slash = strrchr(rel, '/');
    if (slash) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
        parent = fs_openat2(r->ws_fd, dir, O_PATH | O_DIRECTORY, RESOLVE_STRICT);
    } else {
        parent = dup(r->ws_fd);
    }
    ssize_t nb = parent >= 0 ? readlinkat(parent, slash ? slash + 1 : rel, b, sizeof(b)) : -1;
    return na >= 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
}

static bool changed_since(const struct review *r, const struct stat *st)
{
    return st->st_ctim.tv_sec > r->started.tv_sec ||
           (st->st_ctim.tv_sec == r->started.tv_sec && st->st_ctim.tv_nsec > r->started.tv_nsec);
}

/* Host stamps that cordon's own apply wrote: not the host's changes. */
static bool applied_by_us(const struct review *r, const char *rel, const struct stat *st)
{
    size_t len = 0;
    _cleanup_free_ char *buf = read_small(r->review_fd, APPLIED_FILE, APPLIED_MAX, &len);
    char stamp[96];
    snprintf(stamp, sizeof(stamp), "%lu %lu %lld %ld ", (unsigned long)st->st_dev,
             (unsigned long)st->st_ino, (long long)st->st_ctim.tv_sec, st->st_ctim.tv_nsec);
    size_t sn = strlen(stamp);
    for (size_t i = 0; buf && i < len; i += strlen(buf + i) + 1) {
        if (strncmp(buf + i, stamp, sn) == 0 && strcmp(buf + i + sn, rel) == 0)
            return true;
    }
    return false;
}

static bool tree_changed_since(const struct review *r, int dirfd, int depth)
{
    if (depth > REVIEW_MAX_DEPTH)
        return true;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return true;
    }
    bool changed = false;
    struct dirent *de;
    while (!changed && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (!S_ISDIR(st.st_mode) && changed_since(r, &st)) {
            changed = true;
        } else if (S_ISDIR(st.st_mode)) {
            _cleanup_close_ int sub =
                openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            changed = sub < 0 || tree_changed_since(r, sub, depth + 1);
        }
    }
    closedir(d);
    return changed;
}

static void note_host(const struct review *r, struct review_change *c, const struct stat *host)
{
    c->old_type = type_of(host->st_mode);
    c->old_mode = host->st_mode & 07777;
    c->old_size = host->st_size;
    c->host_dev = host->st_dev;
    c->host_ino = host->st_ino;
    c->host_ctime = host->st_ctim;
    if (S_ISDIR(host->st_mode)) {
        /* A directory's own ctime moves with every entry; what counts is
         * the files below it, for a directory the sandbox removed. */
        if (c->kind == REVIEW_DELETED || c->type != 'd') {
            _cleanup_close_ int fd =
                fs_openat2(r->ws_fd, c->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
            c->conflict = fd < 0 || tree_changed_since(r, fd, 0);
        }
    } else {
        c->conflict = changed_since(r, host) && !applied_by_us(r, c->path, host);
    }
}

static bool tree_has_git(int dirfd, int depth)
{
    if (depth > REVIEW_MAX_DEPTH)
        return true;
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return true;
    }
    bool found = false;
    struct dirent *de;
    while (!found && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (strcmp(de->d_name, ".git") == 0) {
            found = true;
        } else if (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN) {
            _cleanup_close_ int sub =
                openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            found = sub >= 0 ? tree_has_git(sub, depth + 1) : (errno != ENOTDIR && errno != ELOOP);
        }
    }
    closedir(d);
    return found;
}

static const char *tree_refused(const struct review *r, const char *rel)
{
    for (size_t i = 0; i < r->nprotected; i++) {
        if (is_under_path(r->protected_paths[i], rel))
            return "it holds a protected path (protected_paths)";
    }
    _cleanup_close_ int fd =
        fs_openat2(r->ws_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
    if (fd < 0 || tree_has_git(fd, 0))
        return "it holds git metadata (a nested repository), which is the host's";
    return NULL;
}

struct scan {
    struct review *r;
    struct vec v;
    size_t budget;
    char rel[PATH_MAX];
};

static int scan_dir(struct scan *s, int dirfd, size_t len, int depth, bool opaque);

/* The target of the symlink REL in the upper layer. */
static int upper_link(const struct review *r, const char *rel, char *buf, size_t size)
{
    _cleanup_close_ int dir = -1;
    const char *slash = strrchr(rel, '/');
    if (slash) {
        char d[PATH_MAX];
        snprintf(d, sizeof(d), "%.*s", (int)(slash - rel), rel);
        dir = fs_openat2(r->upper_fd, d, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
    } else {
        dir = dup(r->upper_fd);
    }
    ssize_t n = dir >= 0 ? readlinkat(dir, slash ? slash + 1 : rel, buf, size - 1) : -1;
    if (n < 0)
        return -1;
    buf[n] = 0;
    return 0;
}

/* Whether the symlink REL -> TARGET resolves, lexically, inside the
 * workspace: relative, and never above the root on its way. */
static bool link_stays_inside(const char *rel, const char *target)
{
    if (target[0] == '/' || !target[0])
        return false;
    long depth = 0; /* components of REL's directory */
    for (const char *p = rel; (p = strchr(p, '/')); p++)
        depth++;
    for (const char *p = target; *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (--depth < 0)
                return false;
        } else if (n > 0 && !(n == 1 && p[0] == '.')) {
            depth++;
        }
        p = slash ? slash + 1 : p + n;
    }
    return true;
}

static int add_change(struct scan *s, enum review_kind kind, const struct stat *upper,
                      const struct stat *host)
{
    struct review_change *c = vec_push(&s->v);
    if (!c || !(c->path = strdup(s->rel)))
        return -1;
    c->kind = kind;
    if (upper) {
        c->type = type_of(upper->st_mode);
        c->new_mode = upper->st_mode & 07777;
        c->new_size = upper->st_size;
        c->upper_ino = upper->st_ino;
        c->upper_nlink = upper->st_nlink;
    }
    if (host)
        note_host(s->r, c, host);
    c->refused = refused_reason(s->r, c->path);
    if (c->type == 'l') {
        char text[PATH_MAX];
        if (upper_link(s->r, c->path, text, sizeof(text)) < 0 || !(c->link = strdup(text)))
            return -1;
        if (!c->refused && !link_stays_inside(c->path, text))
            c->refused = "a symlink that points out of the workspace (an absolute target, or "
                         "one that climbs above it with ..): host tools would follow it";
    }
    /* Removing a host directory removes what is below it: never a nested
     * repository's git metadata or a protected path. */
    if (!c->refused && host && S_ISDIR(host->st_mode) && (kind == REVIEW_DELETED || c->type != 'd'))
        c->refused = tree_refused(s->r, c->path);
    return 0;
}

/* The host's entries of an opaque directory that the upper one does not
 * hold: the sandbox removed them. */
static int scan_opaque_deletes(struct scan *s, int upper_dir, size_t len)
{
    _cleanup_close_ int hfd =
        fs_openat2(s->r->ws_fd, s->rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
    if (hfd < 0)
        return 0;
    DIR *d = fdopendir(hfd);
    if (!d)
        return -1;
    hfd = -1;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(upper_dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (snprintf(s->rel + len, sizeof(s->rel) - len, "/%s", de->d_name) >=
            (int)(sizeof(s->rel) - len))
            continue;
        rc = add_change(s, REVIEW_DELETED, NULL, &st);
        s->rel[len] = 0;
    }
    closedir(d);
    return rc;
}

static int scan_entry(struct scan *s, int dirfd, const char *name, size_t len, int depth)
{
    struct stat up, host;
    if (fstatat(dirfd, name, &up, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    size_t n = len ? (size_t)snprintf(s->rel + len, sizeof(s->rel) - len, "/%s", name)
                   : (size_t)snprintf(s->rel, sizeof(s->rel), "%s", name);
    if (len + n >= sizeof(s->rel)) {
        s->rel[len] = 0;
        errno = ENAMETOOLONG;
        return -1;
    }
    size_t here = len + n;
    bool on_host = host_stat(s->r, s->rel, &host) == 0;
    int rc = 0;
    if (is_whiteout(&up)) {
        if (on_host)
            rc = add_change(s, REVIEW_DELETED, NULL, &host);
    } else if (S_ISDIR(up.st_mode)) {
        bool opaque = is_opaque(dirfd, name);
        if (!on_host)
            rc = add_change(s, REVIEW_ADDED, &up, NULL);
        else if (!S_ISDIR(host.st_mode))
            rc = add_change(s, REVIEW_MODIFIED, &up, &host);
        else if ((host.st_mode & 07777) != (up.st_mode & 07777))
            rc = add_change(s, REVIEW_MODE, &up, &host);
        _cleanup_close_ int sub =
            openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (rc == 0 && sub >= 0) {
            if (opaque && on_host && S_ISDIR(host.st_mode))
                rc = scan_opaque_deletes(s, sub, here);
            if (rc == 0)
                rc = scan_dir(s, sub, here, depth + 1, opaque);
        }
    } else if (S_ISREG(up.st_mode) || S_ISLNK(up.st_mode)) {
        if (!on_host) {
            rc = add_change(s, REVIEW_ADDED, &up, NULL);
        } else if ((host.st_mode & S_IFMT) != (up.st_mode & S_IFMT)) {
            rc = add_change(s, REVIEW_MODIFIED, &up, &host);
        } else {
            bool same = S_ISREG(up.st_mode)
                            ? up.st_size == host.st_size && same_file(s->r, dirfd, name, s->rel)
                            : same_link(s->r, dirfd, name, s->rel);
            if (!same)
                rc = add_change(s, REVIEW_MODIFIED, &up, &host);
            else if (S_ISREG(up.st_mode) && (host.st_mode & 07777) != (up.st_mode & 07777))
                rc = add_change(s, REVIEW_MODE, &up, &host);
        }
    } else {
        rc = add_change(s, REVIEW_SKIPPED, &up, on_host ? &host : NULL);
    }
    s->rel[len] = 0;
    return rc;
}

static int scan_dir(struct scan *s, int dirfd, size_t len, int depth, bool opaque)
{
    (void)opaque;
    if (depth > REVIEW_MAX_DEPTH) {
        errno = ELOOP;
        return -1;
    }
    int fd = dup(dirfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (s->budget-- == 0) {
            errno = EFBIG;
            rc = -1;
            break;
        }
        rc = scan_entry(s, dirfd, de->d_name, len, depth);
    }
    closedir(d);
    return rc;
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct review_change *)a)->path, ((const struct review_change *)b)->path);
}

/* A file the sandbox moved: one deleted and one added with the same
 * content. Bounded: at most RENAME_COMPARE_MAX comparisons. */
static void find_renames(struct review *r, struct vec *v)
{
    size_t budget = RENAME_COMPARE_MAX;
    for (size_t i = 0; i < v->count && budget; i++) {
        struct review_change *add = &v->items[i];
        if (add->kind != REVIEW_ADDED || add->type != 'f' || add->upper_nlink > 1 || add->refused)
            continue;
        for (size_t j = 0; j < v->count && budget; j++) {
            struct review_change *del = &v->items[j];
            if (del->kind != REVIEW_DELETED || del->old_type != 'f' || del->refused ||
                del->old_size != add->new_size)
                continue;
            budget--;
            _cleanup_close_ int a = fs_open_regular(r->upper_fd, add->path, RESOLVE_STRICT);
            _cleanup_close_ int b = fs_open_regular(r->ws_fd, del->path, RESOLVE_STRICT);
            if (a < 0 || b < 0 || !same_content(a, b))
                continue;
            add->kind = REVIEW_RENAMED;
            add->from = del->path;
            add->old_type = 'f';
            add->old_mode = del->old_mode;
            add->conflict = del->conflict;
            add->host_dev = del->host_dev;
            add->host_ino = del->host_ino;
            add->host_ctime = del->host_ctime;
            del->path = NULL;
            del->kind = REVIEW_SKIPPED; /* dropped below */
            break;
        }
    }
    size_t kept = 0;
    for (size_t i = 0; i < v->count; i++) {
        if (!v->items[i].path) {
            free(v->items[i].from);
            continue;
        }
        v->items[kept++] = v->items[i];
    }
    v->count = kept;
}

int review_scan(struct review *r, struct cordon_error *err)
{
    changes_free(r);
    struct scan *s = calloc(1, sizeof(*s));
    if (!s)
        return error_set(err, ENOMEM, "reading the review layer");
    s->r = r;
    s->budget = REVIEW_MAX_ENTRIES;
    if (scan_dir(s, r->upper_fd, 0, 0, false) < 0) {
        int e = errno;
        for (size_t i = 0; i < s->v.count; i++) {
            free(s->v.items[i].path);
            free(s->v.items[i].from);
        }
        free(s->v.items);
        free(s);
        return error_set(err, e, "sandbox %s: reading its review layer", r->name);
    }
    find_renames(r, &s->v);
    if (s->v.count)
        qsort(s->v.items, s->v.count, sizeof(*s->v.items), by_path);
    r->changes = s->v.items;
    r->count = s->v.count;
    free(s);
    return 0;
}

bool review_selected(const struct review_change *c, char *const *paths, size_t npaths)
{
    if (npaths == 0)
        return true;
    for (size_t i = 0; i < npaths; i++) {
        const char *p = paths[i];
        while (p[0] == '.' && p[1] == '/')
            p += 2;
        if (strcmp(p, ".") == 0 || is_under_path(c->path, p) ||
            (c->from && is_under_path(c->from, p)))
            return true;
    }
    return false;
}

int review_open_sides(const struct review *r, const struct review_change *c, int *ret_host,
                      int *ret_sandbox, struct cordon_error *err)
{
    const char *host_path = c->from ? c->from : c->path;
    int h = -1, u = -1;
    if (c->old_type == 'f' && c->kind != REVIEW_ADDED)
        h = fs_open_regular(r->ws_fd, host_path, RESOLVE_STRICT);
    if (c->type == 'f' && c->kind != REVIEW_DELETED)
        u = fs_open_regular(r->upper_fd, c->path, RESOLVE_STRICT);
    if ((c->old_type == 'f' && c->kind != REVIEW_ADDED && h < 0) ||
        (c->type == 'f' && c->kind != REVIEW_DELETED && u < 0)) {
        int e = errno;
        if (h >= 0)
            close(h);
        if (u >= 0)
            close(u);
        return error_set(err, e, "%s", c->path);
    }
    *ret_host = h;
    *ret_sandbox = u;
    return 0;
}

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
    char buf[65536];
    for (;;) {
        ssize_t n = read(in, buf, sizeof(buf));
        if (n == 0)
            return 0;
        if (n < 0 || fs_write_all(out, buf, (size_t)n) < 0)
            return -1;
    }
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

static void remove_stale_temps(struct review *r)
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
        const char *parent_slash = strrchr(dir, '/');
        _cleanup_close_ int pfd = -1;
        if (parent_slash) {
            char p[PATH_MAX];
            snprintf(p, sizeof(p), "%.*s", (int)(parent_slash - dir), dir);
            pfd = fs_openat2(r->upper_fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
        } else {
            pfd = dup(r->upper_fd);
        }
        if (pfd < 0 || is_opaque(pfd, parent_slash ? parent_slash + 1 : dir))
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
    const char *slash = strrchr(c->path, '/');
    _cleanup_close_ int dir = -1;
    if (slash) {
        char d[PATH_MAX];
        snprintf(d, sizeof(d), "%.*s", (int)(slash - c->path), c->path);
        dir = fs_openat2(r->upper_fd, d, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
    } else {
        dir = dup(r->upper_fd);
    }
    if (dir >= 0)
        unlinkat(dir, slash ? slash + 1 : c->path, 0);
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
