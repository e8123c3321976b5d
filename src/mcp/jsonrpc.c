/* Line framing and JSON-RPC builders for the MCP server. Host context. */
#include "mcp/jsonrpc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int line_reader_fill(struct line_reader *r, int fd,
                     void (*fn)(void *ctx, const char *line, size_t len), void *ctx)
{
    if (r->cap - r->len < 65536) {
        size_t ncap = r->cap ? r->cap * 2 : 131072;
        if (ncap > MCP_LINE_MAX + 131072)
            ncap = MCP_LINE_MAX + 131072;
        if (ncap > r->cap) {
            char *grown = realloc(r->buf, ncap);
            if (!grown)
                return -1;
            r->buf = grown;
            r->cap = ncap;
        }
    }
    ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -1;
    if (n == 0) {
        r->eof = true;
        return 0;
    }
    size_t scan_from = r->len;
    r->len += (size_t)n;
    size_t start = 0;
    for (size_t i = scan_from; i < r->len; i++) {
        if (r->buf[i] != '\n')
            continue;
        if (r->discarding) {
            r->discarding = false;
            fn(ctx, NULL, 0);
        } else {
            size_t len = i - start;
            if (len && r->buf[start + len - 1] == '\r')
                len--;
            fn(ctx, r->buf + start, len);
        }
        start = i + 1;
    }
    memmove(r->buf, r->buf + start, r->len - start);
    r->len -= start;
    /* A line longer than the limit is dropped as it streams in: memory
     * stays bounded however much a client sends without a newline. */
    if (r->len > MCP_LINE_MAX) {
        r->discarding = true;
        r->len = 0;
    }
    return 0;
}

void line_reader_free(struct line_reader *r)
{
    free(r->buf);
    *r = (struct line_reader){0};
}

void out_queue_msg(struct out_queue *q, json_t *msg)
{
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!text)
        return;
    size_t n = strlen(text);
    if (q->start > 0) {
        memmove(q->buf, q->buf + q->start, q->len - q->start);
        q->len -= q->start;
        q->start = 0;
    }
    if (q->len + n + 1 > q->cap) {
        size_t ncap = q->cap ? q->cap : 65536;
        while (ncap < q->len + n + 1)
            ncap *= 2;
        char *grown = realloc(q->buf, ncap);
        if (!grown) {
            free(text);
            return;
        }
        q->buf = grown;
        q->cap = ncap;
    }
    memcpy(q->buf + q->len, text, n);
    q->buf[q->len + n] = '\n';
    q->len += n + 1;
    free(text);
}

int out_queue_flush(struct out_queue *q, int fd)
{
    while (q->start < q->len) {
        ssize_t n = write(fd, q->buf + q->start, q->len - q->start);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return 0;
            return -1;
        }
        q->start += (size_t)n;
    }
    q->start = q->len = 0;
    return 0;
}

size_t out_queue_pending(const struct out_queue *q)
{
    return q->len - q->start;
}

void out_queue_free(struct out_queue *q)
{
    free(q->buf);
    *q = (struct out_queue){0};
}

json_t *rpc_result(json_t *id, json_t *result)
{
    return json_pack("{s:s, s:o, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result",
                     result);
}

json_t *rpc_error(json_t *id, int code, const char *message)
{
    return json_pack("{s:s, s:o, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
                     "error", "code", code, "message", message);
}

json_t *rpc_notification(const char *method, json_t *params)
{
    return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method, "params", params);
}
