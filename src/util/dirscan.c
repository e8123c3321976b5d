/* dirscan.h. */
#include "util/dirscan.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The kernel's record (linux_dirent64): d_name is NUL-terminated and the
 * record padded to 8 bytes. */
struct dirent_record {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

int dirscan_next(struct dirscan *s, const char **ret_name, unsigned char *ret_type)
{
    if (s->pos >= s->len) {
        long n;
        do {
            n = syscall(SYS_getdents64, s->fd, s->buf, DIRSCAN_BUFFER);
        } while (n < 0 && errno == EINTR);
        if (n <= 0)
            return n < 0 ? -1 : 0;
        s->len = (size_t)n;
        s->pos = 0;
    }
    const struct dirent_record *r = (const void *)(s->buf + s->pos);
    size_t room = s->len - s->pos;
    if (room < offsetof(struct dirent_record, name) + 1 || r->reclen > room ||
        r->reclen <= offsetof(struct dirent_record, name) ||
        !memchr(r->name, '\0', r->reclen - offsetof(struct dirent_record, name))) {
        errno = EIO;
        return -1;
    }
    s->pos += r->reclen;
    *ret_name = r->name;
    *ret_type = r->type;
    return 1;
}
