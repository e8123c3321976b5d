/* Review mode's listing (review.c): the upper layer walked beneath its fd
 * (whiteouts, opaque directories, renames found by content), each change
 * compared with the workspace for a conflict and checked against what
 * apply never writes. Host context, as the user. */
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

bool is_opaque(int dirfd, const char *name)
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

/* Whether ENTRY says true for an entry of DIRFD (but . and ..), stopping
 * at the first; also true when the directory cannot be read or lies deeper
 * than REVIEW_MAX_DEPTH, as "changed" and "holds .git" fail closed. */
static bool tree_any(int dirfd, int depth,
                     bool (*entry)(const void *ctx, int dirfd, const struct dirent *de, int depth),
                     const void *ctx)
{
    if (depth > REVIEW_MAX_DEPTH)
        return true;
    DIR *d = fs_opendir_at(dirfd, ".");
    if (!d)
        return true;
    bool hit = false;
    struct dirent *de;
    while (!hit && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            hit = entry(ctx, dirfd, de, depth);
    }
    closedir(d);
    return hit;
}

static bool tree_changed_since(const struct review *r, int dirfd, int depth);

static bool entry_changed_since(const void *ctx, int dirfd, const struct dirent *de, int depth)
{
    struct stat st;
    if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return false;
    if (!S_ISDIR(st.st_mode))
        return changed_since(ctx, &st);
    _cleanup_close_ int sub =
        openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return sub < 0 || tree_changed_since(ctx, sub, depth + 1);
}

static bool tree_changed_since(const struct review *r, int dirfd, int depth)
{
    return tree_any(dirfd, depth, entry_changed_since, r);
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

static bool entry_has_git(const void *ctx, int dirfd, const struct dirent *de, int depth)
{
    if (strcmp(de->d_name, ".git") == 0)
        return true;
    if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
        return false;
    _cleanup_close_ int sub =
        openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return sub >= 0 ? tree_any(sub, depth + 1, entry_has_git, ctx)
                    : (errno != ENOTDIR && errno != ELOOP);
}

static bool tree_has_git(int dirfd, int depth)
{
    return tree_any(dirfd, depth, entry_has_git, NULL);
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

int review_upper_parent(const struct review *r, const char *rel, const char **base)
{
    const char *slash = strrchr(rel, '/');
    *base = slash ? slash + 1 : rel;
    if (!slash)
        return dup(r->upper_fd);
    char d[PATH_MAX];
    snprintf(d, sizeof(d), "%.*s", (int)(slash - rel), rel);
    return fs_openat2(r->upper_fd, d, O_PATH | O_DIRECTORY | O_NOFOLLOW, RESOLVE_STRICT);
}

/* The target of the symlink REL in the upper layer. */
static int upper_link(const struct review *r, const char *rel, char *buf, size_t size)
{
    const char *base;
    _cleanup_close_ int dir = review_upper_parent(r, rel, &base);
    ssize_t n = dir >= 0 ? readlinkat(dir, base, buf, size - 1) : -1;
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
    DIR *d = review_opendir_dup(dirfd, depth);
    if (!d)
        return -1;
    struct dirent *de;
    int rc = 0;
    while ((de = review_readdir(d, &s->budget, &rc)))
        rc = scan_entry(s, dirfd, de->d_name, len, depth);
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
