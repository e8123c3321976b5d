/* Reading a directory straight from its fd with getdents64, one system
 * call per buffer, without the dup, fstat and fcntl calls of fdopendir: for
 * walks that open thousands of directories (the git guard's look for
 * planted repositories at every session's end). Any context. */
#pragma once

#include <stddef.h>

struct dirscan {
    int fd;     /* the caller's; read from its current offset */
    char *buf;  /* the caller's, at least DIRSCAN_BUFFER bytes */
    size_t len; /* bytes the last call returned */
    size_t pos; /* the next record in buf */
};

#define DIRSCAN_BUFFER (32 * 1024)

static inline void dirscan_init(struct dirscan *s, int fd, char *buf)
{
    *s = (struct dirscan){.fd = fd, .buf = buf};
}

/* The next entry ("." and ".." included): 1 with *ret_name (valid until the
 * next call) and *ret_type (a DT_* value, DT_UNKNOWN when the file system
 * does not say); 0 at the end; -1 with errno. */
int dirscan_next(struct dirscan *s, const char **ret_name, unsigned char *ret_type);
