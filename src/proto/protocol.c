/* Frame reader and writer for the agent protocol. Sandbox or host context. */
#include "proto/protocol.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int reserve(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 4096;
    while (ncap < need)
        ncap *= 2;
    unsigned char *grown = realloc(*buf, ncap);
    if (!grown)
        return -1;
    *buf = grown;
    *cap = ncap;
    return 0;
}

int frame_reader_fill(struct frame_reader *r, int fd, struct cordon_error *err)
{
    for (int rounds = 0; rounds < 64; rounds++) {
        /* Never hold more than one maximal frame plus its header. */
        if (r->len >= AGENT_FRAME_MAX + 4)
            return 0;
        if (reserve(&r->buf, &r->cap, r->len + 65536) < 0)
            return error_set(err, ENOMEM, "agent channel");
        ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
        if (n > 0) {
            r->len += (size_t)n;
            continue;
        }
        if (n == 0) {
            r->eof = true;
            return 0;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN)
            return 0;
        return error_set(err, errno, "agent channel: read");
    }
    return 0;
}

json_t *frame_reader_next(struct frame_reader *r, int *status, struct cordon_error *err)
{
    *status = 0;
    if (r->len < 4)
        return NULL;
    uint32_t n = ((uint32_t)r->buf[0] << 24) | ((uint32_t)r->buf[1] << 16) |
                 ((uint32_t)r->buf[2] << 8) | r->buf[3];
    if (n > AGENT_FRAME_MAX) {
        *status = -1;
        error_set(err, 0, "agent channel: frame of %u bytes exceeds the %u-byte limit", n,
                  AGENT_FRAME_MAX);
        return NULL;
    }
    if (r->len < 4 + (size_t)n)
        return NULL;
    json_error_t jerr;
    json_t *msg =
        json_loadb((const char *)r->buf + 4, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
    memmove(r->buf, r->buf + 4 + n, r->len - 4 - n);
    r->len -= 4 + (size_t)n;
    if (!msg || !json_is_object(msg)) {
        json_decref(msg);
        *status = -1;
        error_set(err, 0, "agent channel: malformed frame: %s", msg ? "not an object" : jerr.text);
        return NULL;
    }
    return msg;
}

void frame_reader_free(struct frame_reader *r)
{
    free(r->buf);
    *r = (struct frame_reader){0};
}

int frame_writer_queue(struct frame_writer *w, json_t *msg, struct cordon_error *err)
{
    char *body = json_dumps(msg, JSON_COMPACT);
    if (!body)
        return error_set(err, ENOMEM, "agent channel: encoding a frame");
    size_t n = strlen(body);
    if (n > AGENT_FRAME_MAX) {
        free(body);
        return error_set(err, EMSGSIZE, "agent channel: frame too large (%zu bytes)", n);
    }
    if (w->start > 0 && w->start == w->len) {
        w->start = w->len = 0;
    }
    if (reserve(&w->buf, &w->cap, w->len + 4 + n) < 0) {
        free(body);
        return error_set(err, ENOMEM, "agent channel");
    }
    unsigned char *p = w->buf + w->len;
    p[0] = (unsigned char)(n >> 24);
    p[1] = (unsigned char)(n >> 16);
    p[2] = (unsigned char)(n >> 8);
    p[3] = (unsigned char)n;
    memcpy(p + 4, body, n);
    w->len += 4 + n;
    free(body);
    return 0;
}

int frame_writer_flush(struct frame_writer *w, int fd, struct cordon_error *err)
{
    while (w->start < w->len) {
        ssize_t n = write(fd, w->buf + w->start, w->len - w->start);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            return error_set(err, errno, "agent channel: write");
        }
        w->start += (size_t)n;
    }
    w->start = w->len = 0;
    return 1;
}

bool frame_writer_pending(const struct frame_writer *w)
{
    return w->start < w->len;
}

void frame_writer_free(struct frame_writer *w)
{
    free(w->buf);
    *w = (struct frame_writer){0};
}
