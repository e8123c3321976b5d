/* Node-shaped errors, atomic file replacement and per-path locks for the
 * mutating tools (fileio.h). Sandbox (cordon-agent) or host context. */
#include "agent/tools/fileio.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const struct {
    int errnum;
    const char *name, *text; /* libuv's uv_strerror() wording, which Node prints */
} node_errors[] = {
    {ENOENT, "ENOENT", "no such file or directory"},
    {EACCES, "EACCES", "permission denied"},
    {EISDIR, "EISDIR", "illegal operation on a directory"},
    {ENOTDIR, "ENOTDIR", "not a directory"},
    {EEXIST, "EEXIST", "file already exists"},
    {ELOOP, "ELOOP", "too many symbolic links encountered"},
    {ENAMETOOLONG, "ENAMETOOLONG", "name too long"},
    {EROFS, "EROFS", "read-only file system"},
    {ENOSPC, "ENOSPC", "no space left on device"},
    {EPERM, "EPERM", "operation not permitted"},
    {EINVAL, "EINVAL", "invalid argument"},
    {ENXIO, "ENXIO", "no such device or address"},
    {EIO, "EIO", "i/o error"},
    {ETXTBSY, "ETXTBSY", "text file is busy"},
    {EMFILE, "EMFILE", "too many open files"},
    {EFBIG, "EFBIG", "file too large"},
    {EBUSY, "EBUSY", "resource busy or locked"},
    {EAGAIN, "EAGAIN", "resource temporarily unavailable"},
    {EDQUOT, "EDQUOT", "disk quota exceeded"},
    {ENOMEM, "ENOMEM", "not enough memory"},
};

const char *tool_errno_name(int errnum)
{
    for (size_t i = 0; i < ARRAY_SIZE(node_errors); i++)
        if (node_errors[i].errnum == errnum)
            return node_errors[i].name;
    return "EIO";
}

static bool tools_sandboxed;

void tool_set_sandboxed(bool sandboxed)
{
    tools_sandboxed = sandboxed;
}

const char *tool_refusal_hint(int errnum)
{
    if (!tools_sandboxed || errnum != EROFS)
        return "";
    return " (cordon keeps this path read-only in the sandbox: it is host-owned, such as git "
           "metadata, .cordon.toml or a protected path, or the workspace is read-only; see "
           "`cordon config --explain`)";
}

const char *tool_node_error(int errnum, const char *syscall, const char *path, char *buf,
                            size_t buflen)
{
    const char *text = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(node_errors); i++)
        if (node_errors[i].errnum == errnum)
            text = node_errors[i].text;
    if (!text)
        text = strerror(errnum);
    snprintf(buf, buflen, "%s: %s, %s '%s'%s", tool_errno_name(errnum), text, syscall, path,
             tool_refusal_hint(errnum));
    return buf;
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* fd is open for writing (or -1, errno from its open: -1): a FIFO, device
 * or other file that is not regular is written in place (truncated where
 * it can be), as Node's writeFile does: 0, or -1 with errno. 1 (st filled)
 * for a regular file, which is replaced instead. */
static int write_in_place(int fd, struct stat *st, const char *data, size_t len,
                          const char **syscall)
{
    if (fd < 0 || fstat(fd, st) < 0)
        return -1;
    if (S_ISREG(st->st_mode))
        return 1;
    *syscall = "write";
    if (ftruncate(fd, 0) < 0 && errno != EINVAL)
        return -1;
    return write_all(fd, data, len);
}

/* A temporary file beside name in dirfd: ".NAME.cordon-XXXXXX", created
 * exclusively (never through a symlink). */
static int create_temp_at(int dirfd, const char *name, char *tmp, size_t tmp_size)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (int attempt = 0; attempt < 100; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof(r), 0) != sizeof(r))
            r = (uint64_t)getpid() * 2654435761u + (uint64_t)attempt * 40503u;
        char suffix[7];
        for (int i = 0; i < 6; i++, r /= 62)
            suffix[i] = letters[r % 62];
        suffix[6] = '\0';
        if ((size_t)snprintf(tmp, tmp_size, ".%s.cordon-%s", name, suffix) >= tmp_size) {
            errno = ENAMETOOLONG;
            return -1;
        }
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

static int write_replace_at(int dirfd, const char *name, const struct stat *old, const char *data,
                            size_t len, const char **syscall)
{
    char tmp[PATH_MAX];
    *syscall = "open";
    _cleanup_close_ int fd = create_temp_at(dirfd, name, tmp, sizeof(tmp));
    if (fd < 0)
        return -1;
    mode_t mode = old ? old->st_mode & 07777 : 0;
    if (!old) {
        mode_t mask = umask(0);
        umask(mask);
        mode = 0666 & ~mask;
    }
    *syscall = "write";
    if (fchmod(fd, mode) < 0 || (old && fchown(fd, old->st_uid, old->st_gid) < 0 && errno != EPERM))
        goto fail;
    if (write_all(fd, data, len) < 0 || fsync(fd) < 0)
        goto fail;
    if (close(TAKE_FD(fd)) < 0)
        goto fail;
    *syscall = "open";
    if (renameat(dirfd, tmp, dirfd, name) < 0)
        goto fail;
    return 0;
fail:;
    int saved = errno;
    unlinkat(dirfd, tmp, 0);
    errno = saved;
    return -1;
}

static int write_replace(const char *target, const struct stat *old, const char *data, size_t len,
                         const char **syscall)
{
    _cleanup_free_ char *dir_copy = strdup(target);
    _cleanup_free_ char *base_copy = strdup(target);
    if (!dir_copy || !base_copy)
        return -1;
    *syscall = "open";
    _cleanup_close_ int dirfd = open(dirname(dir_copy), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
        return -1;
    return write_replace_at(dirfd, basename(base_copy), old, data, len, syscall);
}

int tool_write_file(const char *path, const char *data, size_t len, const char **syscall)
{
    *syscall = "open";
    /* Opening first (no O_TRUNC) checks what Node's open would: permission,
     * EISDIR, ENOTDIR, and resolves symlinks; O_NONBLOCK keeps a FIFO with no
     * reader from hanging the call. */
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == EISDIR)
        return -1;
    if (fd < 0 && errno == ENOENT) {
        struct stat lst;
        if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
            /* A dangling symlink: Node creates its target. */
            _cleanup_close_ int created =
                open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0666);
            if (created < 0)
                return -1;
            *syscall = "write";
            return write_all(created, data, len);
        }
        return write_replace(path, NULL, data, len, syscall);
    }
    struct stat st;
    int in_place = write_in_place(fd, &st, data, len, syscall);
    if (in_place != 1)
        return in_place;
    _cleanup_free_ char *real = realpath(path, NULL);
    if (!real)
        return -1;
    return write_replace(real, &st, data, len, syscall);
}

int tool_mkdir_parents(const char *dir, char **failed_path)
{
    *failed_path = NULL;
    _cleanup_free_ char *copy = strdup(dir);
    if (!copy)
        return -1;
    size_t len = strlen(copy);
    for (size_t i = 1; i <= len; i++) {
        if (copy[i] != '/' && copy[i] != '\0')
            continue;
        char saved = copy[i];
        copy[i] = '\0';
        if (mkdir(copy, 0777) < 0 && errno != EEXIST) {
            int e = errno;
            *failed_path = strdup(copy);
            errno = e;
            return -1;
        }
        copy[i] = saved;
    }
    struct stat st;
    if (stat(dir, &st) < 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        *failed_path = strdup(dir);
        errno = EEXIST;
        return -1;
    }
    return 0;
}

int tool_lock_path(const char *path)
{
    _cleanup_free_ char *real = realpath(path, NULL);
    const char *key = real ? real : path;
    uint64_t hash = 1469598103934665603ULL; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        hash = (hash ^ *p) * 1099511628211ULL;
    char lock_path[64];
    snprintf(lock_path, sizeof(lock_path), "/tmp/.cordon-edit-%016llx.lock",
             (unsigned long long)hash);
    int fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    }
    return fd;
}

void tool_unlock_path(int fd)
{
    if (fd >= 0)
        close(fd);
}

static int open_no_symlinks(int dirfd, const char *name, int flags)
{
    return fs_openat2(dirfd, name, flags,
                      RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

int tool_write_file_at(int dirfd, const char *name, const char *data, size_t len,
                       const char **syscall)
{
    *syscall = "open";
    _cleanup_close_ int fd = open_no_symlinks(dirfd, name, O_WRONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == ENOENT)
        return write_replace_at(dirfd, name, NULL, data, len, syscall);
    struct stat st;
    int in_place = write_in_place(fd, &st, data, len, syscall);
    if (in_place != 1)
        return in_place;
    return write_replace_at(dirfd, name, &st, data, len, syscall);
}
