/* SCM_RIGHTS helpers. Host context; the peer is always a cordon process. */
#include "net/fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int fdpass_send(int sock, const void *payload, size_t length, int fd)
{
    struct iovec iov = {(void *)payload, length};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&u, 0, sizeof(u));
        msg.msg_control = u.buf;
        msg.msg_controllen = sizeof(u.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    ssize_t n;
    do {
        n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return -1;
    if (n != (ssize_t)length) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

ssize_t fdpass_recv_one(int sock, void *payload, size_t cap, int flags, int *fd, int *msg_flags)
{
    *fd = -1;
    struct iovec iov = {payload, cap};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr msg = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
    ssize_t n = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
    if (n < 0)
        return -1;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int)))
            memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
    if (msg_flags)
        *msg_flags = msg.msg_flags;
    return n;
}

int fdpass_recv(int sock, void *payload, size_t length, int *fd)
{
    int flags = 0;
    ssize_t n;
    do {
        n = fdpass_recv_one(sock, payload, length, 0, fd, &flags);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return -1;
    if (n == 0) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        errno = EPIPE;
        return -1;
    }
    if (n != (ssize_t)length || (flags & (MSG_TRUNC | MSG_CTRUNC))) {
        if (*fd >= 0)
            close(*fd);
        *fd = -1;
        errno = EPROTO;
        return -1;
    }
    return 0;
}
