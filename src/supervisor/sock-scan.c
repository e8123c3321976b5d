/* The socket guard's start-time layer (sock-guard.h, docs/sockets.md): a
 * walk of the workspace with fds, never following symlinks nor crossing
 * into other file systems, for a unix socket the sandbox could connect to
 * without the runtime guard. Host context, before the sandbox starts. */
#include "supervisor/sock-guard.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool scan_allowed(const char *rel, const char *const *allow, size_t nallow)
{
    for (size_t i = 0; i < nallow; i++)
        if (strcmp(rel, allow[i]) == 0)
            return true;
    return false;
}

static int scan_dir(int dir_fd, dev_t dev, char *rel, size_t rel_len, size_t rel_size,
                    const char *const *allow, size_t nallow, char *found, size_t found_size,
                    size_t *visited, unsigned depth, struct cordon_error *err)
{
    if (depth > 256)
        return error_set(err, ELOOP, "socket scan: %s: too deep", rel);
    DIR *d = fdopendir(dir_fd);
    if (!d) {
        close(dir_fd);
        return error_set(err, errno, "socket scan: %s", rel_len ? rel : ".");
    }
    _cleanup_closedir_ DIR *dir = d;
    struct dirent *e;
    while ((errno = 0, e = readdir(dir))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        (*visited)++;
        size_t nlen = strlen(e->d_name);
        if (rel_len + nlen + 2 > rel_size)
            return error_set(err, ENAMETOOLONG, "socket scan: %s/%s", rel, e->d_name);
        size_t at = rel_len;
        if (at)
            rel[at++] = '/';
        memcpy(rel + at, e->d_name, nlen + 1);
        unsigned char type = e->d_type;
        if (type == DT_UNKNOWN) {
            struct stat st;
            if (fstatat(dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return error_set(err, errno, "socket scan: %s", rel);
            type = S_ISSOCK(st.st_mode) ? DT_SOCK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
        }
        if (type == DT_SOCK && !scan_allowed(rel, allow, nallow)) {
            snprintf(found, found_size, "%s", rel);
            return 1;
        }
        if (type == DT_DIR) {
            int sub =
                openat(dirfd(dir), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                return error_set(err, errno, "socket scan: %s", rel);
            struct stat st;
            if (fstat(sub, &st) < 0 || st.st_dev != dev) {
                /* Another file system mounted inside: not the workspace's. */
                close(sub);
                rel[rel_len] = '\0';
                continue;
            }
            int r = scan_dir(sub, dev, rel, at + nlen, rel_size, allow, nallow, found, found_size,
                             visited, depth + 1, err);
            if (r != 0)
                return r;
        }
        rel[rel_len] = '\0';
    }
    if (errno)
        return error_set(err, errno, "socket scan: %s", rel_len ? rel : ".");
    return 0;
}

int sock_scan_tree(const char *root, const char *const *allow, size_t nallow, char *found,
                   size_t found_size, size_t *visited, struct cordon_error *err)
{
    size_t count = 0;
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return error_set(err, errno, "socket scan: %s", root);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return error_set(err, errno, "socket scan: %s", root);
    }
    char rel[PATH_MAX] = "";
    int r = scan_dir(fd, st.st_dev, rel, 0, sizeof(rel), allow, nallow, found, found_size, &count,
                     0, err);
    if (visited)
        *visited = count;
    return r;
}

int sock_scan_refuse(const char *root, const char *const *allow, size_t nallow, const char *backend,
                     struct cordon_error *err)
{
    char found[PATH_MAX];
    size_t visited = 0;
    long long t0 = log_now_us();
    int r = sock_scan_tree(root, allow, nallow, found, sizeof(found), &visited, err);
    log_debug("socket scan: %zu entries of %s in %lld us", visited, root, log_now_us() - t0);
    if (r < 0)
        return error_prefix(err, "backend \"%s\"", backend);
    if (r > 0)
        return error_set(err, 0,
                         "backend \"%s\": the workspace holds a unix socket, %s/%s: a host "
                         "service listening there would be reachable from the sandbox, which "
                         "this backend cannot prevent for sockets (docs/sockets.md); remove it, "
                         "name it in sockets.allow, or use the ns or vm backend",
                         backend, root, found);
    return 0;
}
