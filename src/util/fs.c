/* Filesystem helpers (fs.h). */
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <poll.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* Usually all of it exists: one call, not one per component. Only a
     * missing parent (ENOENT) needs the walk. */
    if (mkdir(buf, mode) == 0 || errno == EEXIST)
        return 0;
    if (errno != ENOENT)
        return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(buf, mode) < 0 && errno != EEXIST ? -1 : 0;
}

void fs_close(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int fs_write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = strlen(text);
    ssize_t written = write(fd, text, len);
    int saved = written < 0 ? errno : EIO;
    close(fd);
    if (written == (ssize_t)len)
        return 0;
    errno = saved;
    return -1;
}

/* Both below: read(2) from the file's offset when off < 0, else pread(2)
 * from off. */
static ssize_t read_full_at(int fd, char *buf, size_t size, off_t off)
{
    size_t len = 0;
    while (len < size) {
        ssize_t r = off < 0 ? read(fd, buf + len, size - len)
                            : pread(fd, buf + len, size - len, off + (off_t)len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        len += (size_t)r;
    }
    return (ssize_t)len;
}

ssize_t fs_read_full(int fd, char *buf, size_t size)
{
    return read_full_at(fd, buf, size, -1);
}

ssize_t fs_pread_full(int fd, void *buf, size_t size, off_t off)
{
    if (off < 0)
        return errno = EINVAL, -1;
    return read_full_at(fd, buf, size, off);
}

DIR *fs_opendir_at(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        errno = e;
    }
    return d;
}

int fs_rename_temp(int dir, const char *tmp, const char *name, bool ok)
{
    if (ok && renameat(dir, tmp, dir, name) == 0)
        return 0;
    int e = errno;
    unlinkat(dir, tmp, 0);
    errno = e;
    return -1;
}

static void remove_tree(int parent, const char *name, int depth)
{
    if (unlinkat(parent, name, 0) == 0 || depth > 32)
        return;
    DIR *d = fs_opendir_at(parent, name);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
            remove_tree(dirfd(d), de->d_name, depth + 1);
    }
    closedir(d);
    unlinkat(parent, name, AT_REMOVEDIR);
}

void fs_remove_tree_at(int parent, const char *name)
{
    remove_tree(parent, name, 0);
}

int fs_owner_bits_back(int fd, mode_t add)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    if (st.st_uid != geteuid()) {
        errno = EACCES;
        return -1;
    }
    mode_t mode = st.st_mode & 07777;
    if ((mode | add) == mode)
        return 0;
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
    return chmod(proc, mode | add) < 0 ? -1 : 1;
}

int fs_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            struct pollfd w = {fd, POLLOUT, 0};
            poll(&w, 1, -1);
            continue;
        }
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fs_openat2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
    struct open_how how = {.flags = (unsigned long long)(flags | O_CLOEXEC), .resolve = resolve};
    return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int fs_open_regular(int dirfd, const char *path, unsigned long long resolve)
{
    int fd = fs_openat2(dirfd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, resolve);
    if (fd < 0)
        return -1;
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fl < 0 ||
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}
