/* Length-prefixed JSON frames for the vm boot exchange, blocking and exact:
 * the encoding and decoding are the agent protocol's (agent/protocol.c).
 * Any context. */
#include "proto/vm-frame.h"
#include "proto/protocol.h"
#include "util/cleanup.h"
#include "util/clock.h"
#include "util/fs.h"

#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int vm_frame_write(int fd, const json_t *msg)
{
    if (json_dumpb(msg, NULL, 0, JSON_COMPACT) > VM_FRAME_MAX) {
        errno = EMSGSIZE;
        return -1;
    }
    struct frame_writer w = {0};
    struct cordon_error err;
    int rc = frame_writer_queue(&w, (json_t *)msg, &err) < 0
                 ? -1
                 : fs_write_all(fd, (const char *)w.buf + w.start, w.len - w.start);
    if (rc < 0 && !errno)
        errno = ENOMEM;
    frame_writer_free(&w);
    return rc;
}

static int read_exact(int fd, char *buf, size_t len, long long deadline)
{
    while (len > 0) {
        if (deadline >= 0) {
            long long left = deadline - clock_now_ms();
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

/* Reads exactly one frame (never past it: the stream goes on to the agent
 * protocol or the next message), then decodes it with the agent protocol's
 * own codec. */
json_t *vm_frame_read(int fd, int timeout_ms)
{
    long long deadline = timeout_ms < 0 ? -1 : clock_now_ms() + timeout_ms;
    unsigned char header[4];
    if (read_exact(fd, (char *)header, sizeof(header), deadline) < 0)
        return NULL;
    uint32_t len = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 |
                   (uint32_t)header[2] << 8 | header[3];
    if (len == 0 || len > VM_FRAME_MAX) {
        errno = EPROTO;
        return NULL;
    }
    struct frame_reader r = {.buf = malloc(len + sizeof(header)), .cap = len + sizeof(header)};
    if (!r.buf) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(r.buf, header, sizeof(header));
    if (read_exact(fd, (char *)r.buf + sizeof(header), len, deadline) < 0) {
        frame_reader_free(&r);
        return NULL;
    }
    r.len = len + sizeof(header);
    int status;
    struct cordon_error err;
    json_t *msg = frame_reader_next(&r, &status, &err);
    frame_reader_free(&r);
    if (!msg)
        errno = EPROTO;
    return msg;
}

static bool winsize_field_ok(json_int_t v)
{
    return v >= 1 && v <= 65535;
}

json_t *vm_frame_winsize_pack(long rows, long cols)
{
    if (!winsize_field_ok(rows) || !winsize_field_ok(cols))
        return NULL;
    return json_pack("{s:I,s:I}", "rows", (json_int_t)rows, "cols", (json_int_t)cols);
}

int vm_frame_winsize_get(const json_t *obj, unsigned short *rows, unsigned short *cols)
{
    json_t *r = json_object_get(obj, "rows"), *c = json_object_get(obj, "cols");
    if (!json_is_integer(r) || !json_is_integer(c) || !winsize_field_ok(json_integer_value(r)) ||
        !winsize_field_ok(json_integer_value(c)))
        return -1;
    *rows = (unsigned short)json_integer_value(r);
    *cols = (unsigned short)json_integer_value(c);
    return 0;
}
