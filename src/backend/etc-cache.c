/* The curated /etc, prepared once and reused: a directory in cordon's state
 * root holding copies of the allowed small files and symlinks of /etc, plus
 * empty mount points for what is bound instead (directories, large files).
 * Host context, the supervisor (the user's own credentials).
 *
 * Why: copying about thirty files into a fresh tmpfs at every sandbox start
 * was the largest single item of the view (some 150 syscalls on the start
 * path). The cache is keyed by the identity of every entry it copies (inode,
 * size, mtime, ctime, mode), so any change of the host's /etc gives a new
 * key and a fresh copy; a start with an unchanged /etc costs the lstat()s
 * it needs anyway and one bind. A cache directory is never modified once
 * renamed into place, so a running sandbox's /etc never changes under it;
 * caches unused for ETC_CACHE_KEEP_DAYS are removed. */
#include "backend/etc-cache.h"
#include "backend/etc-allowlist.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* 2: environment, gitconfig, wgetrc, subversion, profile.d and perl left
 * the list; the key changes with the format, so no cache built under the
 * old list is used again. 3: ssh/ssh_known_hosts, and cordon's own
 * ssh/ssh_config where ssh goes through the proxy. */
#define ETC_CACHE_FORMAT    3
#define ETC_CACHE_KEEP_DAYS 7
/* Regular files up to this size are copied; larger ones are bound. */
#define ETC_CACHE_COPY_MAX    (1u << 20)
#define ETC_CACHE_MAX_ENTRIES 256

struct etc_item {
    char rel[64]; /* below /etc: "passwd", "ssl/certs" */
    struct stat st;
};

static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t hash_item(uint64_t h, const struct etc_item *it)
{
    const struct stat *st = &it->st;
    uint64_t fields[] = {(uint64_t)st->st_dev,         (uint64_t)st->st_ino,
                         (uint64_t)st->st_mode,        (uint64_t)st->st_size,
                         (uint64_t)st->st_mtim.tv_sec, (uint64_t)st->st_mtim.tv_nsec,
                         (uint64_t)st->st_ctim.tv_sec, (uint64_t)st->st_ctim.tv_nsec,
                         (uint64_t)st->st_uid,         (uint64_t)st->st_gid};
    h = fnv1a(h, it->rel, strlen(it->rel) + 1);
    return fnv1a(h, fields, sizeof(fields));
}

static bool item_is_copied(const struct etc_item *it)
{
    return S_ISLNK(it->st.st_mode) ||
           (S_ISREG(it->st.st_mode) && it->st.st_size <= ETC_CACHE_COPY_MAX);
}

static bool already_listed(const struct etc_item *items, size_t n, const char *rel)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(items[i].rel);
        if (strncmp(items[i].rel, rel, len) == 0 && (rel[len] == '\0' || rel[len] == '/'))
            return true;
    }
    return false;
}

/* One etc.extra entry: its directories are walked from /etc without
 * following a symlink (a link there would bind or copy a place outside
 * /etc); the entry itself is taken as the listed ones are (a symlink is
 * copied as a link, resolved inside the sandbox's own view). Returns 0
 * with nothing added when it does not exist. */
static int collect_extra(int etcfd, const char *rel, struct etc_item *it, bool *found,
                         struct cordon_error *err)
{
    *found = false;
    char path[sizeof(it->rel)];
    if (snprintf(path, sizeof(path), "%s", rel) >= (int)sizeof(path) || rel[0] == '/' ||
        strstr(rel, ".."))
        return error_set(err, EINVAL, "etc.extra: %s is not a short path below /etc", rel);
    _cleanup_close_ int dirfd = fcntl(etcfd, F_DUPFD_CLOEXEC, 3);
    if (dirfd < 0)
        return error_set(err, errno, "etc.extra: %s", rel);
    char *name = path;
    for (char *slash; (slash = strchr(name, '/'));) {
        *slash = '\0';
        int next = openat(dirfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0) {
            if (errno == ENOENT)
                return 0;
            if (errno == ELOOP || errno == ENOTDIR) {
                struct stat st;
                if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
                    return error_set(err, ELOOP,
                                     "etc.extra: %s: /etc/%.*s is a symlink; name the place it "
                                     "points to instead",
                                     rel, (int)(slash - path), rel);
                return 0; /* a file where a directory was named: nothing there */
            }
            return error_set(err, errno, "etc.extra: /etc/%s", rel);
        }
        close(dirfd);
        dirfd = next;
        *slash = '/';
        name = slash + 1;
    }
    if (fstatat(dirfd, name, &it->st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        return error_set(err, errno, "etc.extra: /etc/%s", rel);
    }
    if (!S_ISLNK(it->st.st_mode) && !S_ISREG(it->st.st_mode) && !S_ISDIR(it->st.st_mode))
        return error_set(err, EINVAL, "etc.extra: /etc/%s is not a file, directory or symlink",
                         rel);
    memcpy(it->rel, rel, strlen(rel) + 1);
    *found = true;
    return 0;
}

/* Collects the allowed entries of /etc (and the TLS roots without
 * /etc/ssl/private), then etc.extra's. */
static int collect(struct etc_item *items, size_t *n, char *const *extra, size_t nextra,
                   struct cordon_error *err)
{
    *n = 0;
    _cleanup_closedir_ DIR *dir = opendir("/etc");
    if (!dir)
        return error_set(err, errno, "etc cache: reading /etc");
    struct dirent *de;
    while ((de = readdir(dir))) {
        if (de->d_name[0] == '.' || !etc_entry_allowed(de->d_name))
            continue;
        if (*n == ETC_CACHE_MAX_ENTRIES || strlen(de->d_name) >= sizeof(items[0].rel))
            return error_set(err, E2BIG, "etc cache: reading /etc");
        struct etc_item *it = &items[*n];
        memcpy(it->rel, de->d_name, strlen(de->d_name) + 1);
        if (fstatat(dirfd(dir), de->d_name, &it->st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT)
                continue;
            return error_set(err, errno, "etc cache: /etc/%s", de->d_name);
        }
        if (!S_ISLNK(it->st.st_mode) && !S_ISREG(it->st.st_mode) && !S_ISDIR(it->st.st_mode))
            continue;
        (*n)++;
    }
    /* ssh_known_hosts: servers' public keys, so that ssh can check them. */
    static const char *const nested[] = {"ssl/certs", "ssl/openssl.cnf", "ssh/ssh_known_hosts"};
    for (size_t i = 0; i < ARRAY_SIZE(nested); i++) {
        if (*n == ETC_CACHE_MAX_ENTRIES)
            break;
        struct etc_item *it = &items[*n];
        snprintf(it->rel, sizeof(it->rel), "%s", nested[i]);
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "/etc/%s", nested[i]);
        if (lstat(path, &it->st) == 0 &&
            (S_ISLNK(it->st.st_mode) || S_ISREG(it->st.st_mode) || S_ISDIR(it->st.st_mode)))
            (*n)++;
    }
    for (size_t i = 0; i < nextra; i++) {
        if (already_listed(items, *n, extra[i]))
            continue;
        if (*n == ETC_CACHE_MAX_ENTRIES)
            return error_set(err, E2BIG, "etc.extra: too many entries in /etc's view");
        bool found;
        if (collect_extra(dirfd(dir), extra[i], &items[*n], &found, err) < 0)
            return -1;
        if (found)
            (*n)++;
    }
    return 0;
}

static int copy_file(const char *src, int dirfd, const char *rel, mode_t mode)
{
    _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return -1;
    _cleanup_close_ int out =
        openat(dirfd, rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (out < 0)
        return -1;
    for (size_t copied = 0; copied <= ETC_CACHE_COPY_MAX;) {
        ssize_t r = sendfile(out, in, NULL, ETC_CACHE_COPY_MAX);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        copied += (size_t)r;
    }
    return fchmod(out, mode & 0755);
}

/* The directories above rel ("apt" for "apt/auth.conf"), in the fresh
 * copy: made by us, so never a symlink. */
static int mkdir_parents(int dirfd, const char *rel)
{
    char path[sizeof(((struct etc_item *)0)->rel)];
    snprintf(path, sizeof(path), "%s", rel);
    for (char *slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = '\0';
        if (mkdirat(dirfd, path, 0755) < 0 && errno != EEXIST)
            return -1;
        *slash = '/';
    }
    return 0;
}

/* Fills a fresh directory: copies, symlinks, and mount points. */
static int populate(int dirfd, const struct etc_item *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct etc_item *it = &items[i];
        char src[PATH_MAX];
        snprintf(src, sizeof(src), "/etc/%s", it->rel);
        if (mkdir_parents(dirfd, it->rel) < 0)
            return -1;
        if (S_ISLNK(it->st.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlink(src, target, sizeof(target) - 1);
            if (len < 0)
                return -1;
            target[len] = '\0';
            if (symlinkat(target, dirfd, it->rel) < 0)
                return -1;
        } else if (item_is_copied(it)) {
            if (copy_file(src, dirfd, it->rel, it->st.st_mode) < 0)
                return -1;
        } else if (S_ISDIR(it->st.st_mode)) {
            /* An extra below this directory may have made it already. */
            if (mkdirat(dirfd, it->rel, 0755) < 0 && errno != EEXIST)
                return -1;
        } else {
            int fd = openat(dirfd, it->rel, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
            if (fd < 0)
                return -1;
            close(fd);
        }
    }
    return 0;
}

/* Drops caches nobody started a sandbox from for a week, and builds that a
 * crashed process left half done. */
static void sweep(int rootfd, const char *keep)
{
    int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return;
    }
    time_t now = time(NULL);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || strcmp(de->d_name, "..") == 0))
            continue;
        if (strcmp(de->d_name, keep) == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        double age = difftime(now, st.st_mtime);
        bool partial = strncmp(de->d_name, ".build-", 7) == 0 && age > 600;
        if (partial || (de->d_name[0] != '.' && age > ETC_CACHE_KEEP_DAYS * 86400.0))
            fs_remove_tree_at(dirfd(d), de->d_name);
    }
    closedir(d);
}

int etc_cache_prepare(const char *root, char *const *extra, size_t nextra, bool ssh_proxied,
                      struct etc_cache *out, struct cordon_error *err)
{
    *out = (struct etc_cache){0};
    _cleanup_free_ struct etc_item *items = calloc(ETC_CACHE_MAX_ENTRIES, sizeof(*items));
    if (!items)
        return error_set(err, ENOMEM, "etc cache");
    size_t n;
    if (collect(items, &n, extra, nextra, err) < 0)
        return -1;
    uint64_t h = 0xcbf29ce484222325ull;
    int format = ETC_CACHE_FORMAT;
    h = fnv1a(h, &format, sizeof(format));
    h = fnv1a(h, &ssh_proxied, sizeof(ssh_proxied));
    for (size_t i = 0; i < n; i++)
        h = hash_item(h, &items[i]);
    char key[32];
    snprintf(key, sizeof(key), "%016" PRIx64, h);

    if (fs_mkdir_p(root, 0700) < 0)
        return error_set(err, errno, "etc cache: %s", root);
    _cleanup_close_ int rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (rootfd < 0)
        return error_set(err, errno, "etc cache: %s", root);
    struct stat rst;
    /* Only a directory of our own, closed to others, holds what the
     * sandbox will see as /etc; one opened up is closed again. A copy
     * someone else placed there while it was open is refused below: every
     * copy must be a directory of this user. */
    if (fstat(rootfd, &rst) < 0)
        return error_set(err, errno, "etc cache: %s", root);
    if (rst.st_uid != geteuid())
        return error_set(err, EPERM, "etc cache: %s belongs to uid %u, not to this user", root,
                         (unsigned)rst.st_uid);
    if ((rst.st_mode & 0077) && fchmod(rootfd, 0700) < 0)
        return error_set(err, errno, "etc cache: making %s private", root);

    struct stat kst;
    if (fstatat(rootfd, key, &kst, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            return error_set(err, errno, "etc cache: %s/%s", root, key);
        char tmp[64];
        snprintf(tmp, sizeof(tmp), ".build-%d-%016" PRIx64, (int)getpid(), h);
        if (mkdirat(rootfd, tmp, 0755) < 0)
            return error_set(err, errno, "etc cache: %s/%s", root, tmp);
        int tmpfd = openat(rootfd, tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (tmpfd < 0 || populate(tmpfd, items, n) < 0 ||
            (ssh_proxied && etc_write_ssh_config(tmpfd) < 0)) {
            int e = errno;
            if (tmpfd >= 0)
                close(tmpfd);
            fs_remove_tree_at(rootfd, tmp);
            return error_set(err, e, "etc cache: copying /etc into %s", root);
        }
        close(tmpfd);
        /* Another start may have built the same key meanwhile: theirs is as
         * good as ours. */
        if (renameat(rootfd, tmp, rootfd, key) < 0) {
            int e = errno;
            fs_remove_tree_at(rootfd, tmp);
            if (e != EEXIST && e != ENOTEMPTY)
                return error_set(err, e, "etc cache: %s/%s", root, key);
        }
        sweep(rootfd, key);
    } else if (!S_ISDIR(kst.st_mode) || kst.st_uid != geteuid()) {
        return error_set(err, EPERM, "etc cache: %s/%s is not a directory of this user", root, key);
    } else if (difftime(time(NULL), kst.st_mtime) > 86400.0) {
        /* Marks it as used, for the sweep. */
        utimensat(rootfd, key, NULL, AT_SYMLINK_NOFOLLOW);
    }
    if (snprintf(out->dir, sizeof(out->dir), "%s/%s", root, key) >= (int)sizeof(out->dir))
        return error_set(err, ENAMETOOLONG, "etc cache: %s", root);
    for (size_t i = 0; i < n; i++) {
        if (item_is_copied(&items[i]))
            continue;
        if (out->nbinds == ARRAY_SIZE(out->binds))
            return error_set(err, E2BIG, "etc cache: too many directories to bind");
        snprintf(out->binds[out->nbinds++], sizeof(out->binds[0]), "%s", items[i].rel);
    }
    return 0;
}
