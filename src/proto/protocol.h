/* The agent protocol's framing (docs/agent-protocol.md): 4-byte big-endian
 * length + one JSON object, bounded. Used by both ends: cordon-agent inside
 * the sandbox and the supervisor on the host. Neither end trusts the other's
 * lengths. */
#pragma once

#include "util/error.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define AGENT_PROTOCOL_VERSION 1
#define AGENT_FRAME_MAX        (64u << 20)

struct frame_reader {
    unsigned char *buf;
    size_t len, cap;
    bool eof;
};

struct frame_writer {
    unsigned char *buf;
    size_t start, len, cap;
};

/* Reads what fd has now (non-blocking fds return 0 on EAGAIN). Returns 0, or
 * <0 on a read error; sets reader->eof when the peer closed. */
int frame_reader_fill(struct frame_reader *r, int fd, struct cordon_error *err);
/* Next complete frame as a JSON object (caller owns), NULL when none is
 * complete yet; NULL with err filled (and <0 in *status) on a bad frame. */
json_t *frame_reader_next(struct frame_reader *r, int *status, struct cordon_error *err);
void frame_reader_free(struct frame_reader *r);

/* Queues one frame. */
int frame_writer_queue(struct frame_writer *w, json_t *msg, struct cordon_error *err);
/* Writes as much as fd takes now. Returns 1 when the queue is empty, 0 when
 * data remains, <0 on error. */
int frame_writer_flush(struct frame_writer *w, int fd, struct cordon_error *err);
bool frame_writer_pending(const struct frame_writer *w);
void frame_writer_free(struct frame_writer *w);
