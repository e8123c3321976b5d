/* JSON-RPC 2.0 over stdio for MCP: bounded line framing and message
 * builders. Host context. Every line a client sends is bounded; an
 * over-long line is discarded whole and answered with a parse error. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define MCP_LINE_MAX   (16u << 20) /* one message */
#define MCP_OUTPUT_MAX (64u << 20) /* queued for a client that is not reading */
/* Past this much queued output, progress notifications are held (the newest
 * per call) instead of queued: a client that does not read cannot make the
 * server grow without bound while a command prints. */
#define MCP_PROGRESS_QUEUED_MAX (1u << 20)

enum {
    RPC_PARSE_ERROR = -32700,
    RPC_INVALID_REQUEST = -32600,
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
    RPC_NOT_INITIALIZED = -32002,
};

struct line_reader {
    char *buf;
    size_t len, cap;
    bool discarding; /* inside an over-long line */
    bool eof;
};

/* Calls fn for each complete line (without '\n'); an over-long line is
 * reported once as fn(ctx, NULL, 0). Returns <0 on read error. */
int line_reader_fill(struct line_reader *r, int fd,
                     void (*fn)(void *ctx, const char *line, size_t len), void *ctx);
void line_reader_free(struct line_reader *r);

struct out_queue {
    char *buf;
    size_t start, len, cap;
};

/* Queues msg as one line (msg is stolen). */
void out_queue_msg(struct out_queue *q, json_t *msg);
/* Writes what fd takes; returns <0 when the client is gone. */
int out_queue_flush(struct out_queue *q, int fd);
size_t out_queue_pending(const struct out_queue *q);
void out_queue_free(struct out_queue *q);

json_t *rpc_result(json_t *id, json_t *result);               /* both stolen */
json_t *rpc_error(json_t *id, int code, const char *message); /* id stolen; NULL id -> null */
json_t *rpc_notification(const char *method, json_t *params); /* params stolen */
