/* Length-prefixed JSON frames for the vm boot exchange. Any context. */
#include "backend/vm/vm-frame.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            struct pollfd p = {fd, POLLOUT, 0};
            poll(&p, 1, 100);
            continue;
        }
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

int vm_frame_write(int fd, const json_t *msg)
{
    _cleanup_free_ char *text = json_dumps(msg, JSON_COMPACT);
    if (!text) {
        errno = ENOMEM;
        return -1;
    }
    size_t len = strlen(text);
    if (len > VM_FRAME_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    uint32_t be = htonl((uint32_t)len);
    if (write_all(fd, (const char *)&be, sizeof(be)) < 0 || write_all(fd, text, len) < 0)
        return -1;
    return 0;
}

static int read_exact(int fd, char *buf, size_t len, long long deadline)
{
    while (len > 0) {
        if (deadline >= 0) {
            long long left = deadline - now_ms();
            if (left <= 0) {
                errno = ETIMEDOUT;
                return -1;
            }
            struct pollfd p = {fd, POLLIN, 0};
            int r = poll(&p, 1, (int)left);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0)
                return -1;
            if (r == 0) {
                errno = ETIMEDOUT;
                return -1;
            }
        }
        ssize_t n = read(fd, buf, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = ECONNRESET;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

json_t *vm_frame_read(int fd, int timeout_ms)
{
    long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
    uint32_t be;
    if (read_exact(fd, (char *)&be, sizeof(be), deadline) < 0)
        return NULL;
    uint32_t len = ntohl(be);
    if (len == 0 || len > VM_FRAME_MAX) {
        errno = EPROTO;
        return NULL;
    }
    _cleanup_free_ char *buf = malloc(len);
    if (!buf) {
        errno = ENOMEM;
        return NULL;
    }
    if (read_exact(fd, buf, len, deadline) < 0)
        return NULL;
    json_t *msg = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
    if (!msg || !json_is_object(msg)) {
        json_decref(msg);
        errno = EPROTO;
        return NULL;
    }
    return msg;
}
