/* Unit tests for the MCP server's framing (src/mcp/jsonrpc.c): what a client
 * sends is cut into lines however the reads fall, a line past MCP_LINE_MAX
 * is dropped whole with memory bounded, and queued answers leave as one
 * JSON object a line, also to a client that reads slowly or is gone. */
#include "mcp/jsonrpc.h"
#include "util/cleanup.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct lines {
    char got[8][64];
    size_t n, dropped;
};

static void on_line(void *ctx, const char *line, size_t len)
{
    struct lines *l = ctx;
    if (!line) {
        l->dropped++;
        return;
    }
    if (l->n < 8)
        snprintf(l->got[l->n], sizeof(l->got[0]), "%.*s", (int)len, line);
    l->n++;
}

/* Feeds chunks through a pipe, one read per chunk. */
static void feed(struct line_reader *r, struct lines *l, const char *const *chunks)
{
    int p[2];
    if (pipe(p) < 0)
        tap_bail("pipe: %s", strerror(errno));
    for (const char *const *c = chunks; *c; c++) {
        if (write(p[1], *c, strlen(*c)) != (ssize_t)strlen(*c))
            tap_bail("write: %s", strerror(errno));
        if (line_reader_fill(r, p[0], on_line, l) < 0)
            tap_bail("line_reader_fill: %s", strerror(errno));
    }
    close(p[1]);
    while (!r->eof)
        line_reader_fill(r, p[0], on_line, l);
    close(p[0]);
}

static void test_lines(void)
{
    struct line_reader r = {0};
    struct lines l = {0};
    const char *chunks[] = {"{\"a\"", ":1}\n{\"b\":2}\r\n\n{\"c\"", ":3}\n", "{\"tail\":", NULL};
    feed(&r, &l, chunks);
    is_int(l.n, 4, "lines: four complete lines, however the reads fell");
    is_str(l.got[0], "{\"a\":1}", "lines: a line split across two reads is whole");
    is_str(l.got[1], "{\"b\":2}", "lines: CRLF loses its CR");
    is_str(l.got[2], "", "lines: an empty line is delivered as empty");
    is_str(l.got[3], "{\"c\":3}", "lines: the line after it");
    is_int(l.dropped, 0, "lines: nothing dropped");
    is_int(r.len, strlen("{\"tail\":"), "lines: an unfinished line at EOF is held, not delivered");
    line_reader_free(&r);
}

/* A client sends more than MCP_LINE_MAX without a newline: the line is
 * dropped once, memory stays bounded, and the next line is read. */
static void test_long_line(void)
{
    char path[] = "/tmp/cordon-unit-jsonrpc-XXXXXX";
    _cleanup_close_ int fd = mkstemp(path);
    if (fd < 0)
        tap_bail("mkstemp: %s", strerror(errno));
    unlink(path);
    size_t total = MCP_LINE_MAX + (1u << 20), chunk = 1u << 20;
    _cleanup_free_ char *a = malloc(chunk);
    if (!a)
        tap_bail("malloc");
    memset(a, 'a', chunk);
    for (size_t done = 0; done < total; done += chunk)
        if (write(fd, a, chunk) != (ssize_t)chunk)
            tap_bail("write: %s", strerror(errno));
    const char *after = "\n{\"next\":1}\n";
    if (write(fd, after, strlen(after)) != (ssize_t)strlen(after))
        tap_bail("write: %s", strerror(errno));
    lseek(fd, 0, SEEK_SET);
    struct line_reader r = {0};
    struct lines l = {0};
    size_t most = 0;
    while (!r.eof) {
        if (line_reader_fill(&r, fd, on_line, &l) < 0)
            tap_bail("line_reader_fill: %s", strerror(errno));
        if (r.cap > most)
            most = r.cap;
    }
    is_int(l.dropped, 1, "long line: reported once as dropped");
    is_int(l.n, 1, "long line: the line after it is read");
    is_str(l.got[0], "{\"next\":1}", "long line: and is whole");
    ok(most <= MCP_LINE_MAX + 131072, "long line: the buffer stayed bounded (%zu bytes)", most);
    line_reader_free(&r);
}

static void test_queue(void)
{
    struct out_queue q = {0};
    out_queue_msg(&q, rpc_result(json_integer(7), json_pack("{s:b}", "ok", 1)));
    out_queue_msg(&q, rpc_error(NULL, RPC_PARSE_ERROR, "parse error: line 1"));
    out_queue_msg(&q,
                  rpc_notification("notifications/progress", json_pack("{s:i}", "progress", 3)));
    int p[2];
    if (pipe2(p, O_NONBLOCK) < 0)
        tap_bail("pipe2: %s", strerror(errno));
    is_int(out_queue_flush(&q, p[1]), 0, "queue: flushed");
    is_int(out_queue_pending(&q), 0, "queue: nothing pending");
    char buf[1024] = "";
    ssize_t n = read(p[0], buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    is_str(buf,
           "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"ok\":true}}\n"
           "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse "
           "error: line 1\"}}\n"
           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":"
           "3}}\n",
           "queue: one compact JSON object a line; a missing id is null");

    /* A client that does not read: flush takes what the pipe holds, keeps
     * the rest, and a later flush finishes it. */
    size_t big = 200000;
    _cleanup_free_ char *s = malloc(big + 1);
    memset(s, 'x', big);
    s[big] = '\0';
    out_queue_msg(&q, rpc_result(json_integer(8), json_string(s)));
    is_int(out_queue_flush(&q, p[1]), 0, "slow client: a full pipe is not an error");
    size_t left = out_queue_pending(&q);
    ok(left > 0 && left < big, "slow client: part is pending (%zu bytes)", left);
    size_t drained = 0;
    char tmp[65536];
    while (out_queue_pending(&q)) {
        ssize_t m = read(p[0], tmp, sizeof(tmp));
        drained += m > 0 ? (size_t)m : 0;
        out_queue_flush(&q, p[1]);
    }
    for (ssize_t m; (m = read(p[0], tmp, sizeof(tmp))) > 0;)
        drained += (size_t)m;
    is_int(drained, big + strlen("{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":\"\"}\n"),
           "slow client: every byte arrives once");

    /* A client that is gone. */
    close(p[0]);
    out_queue_msg(&q, rpc_result(json_integer(9), json_object()));
    is_int(out_queue_flush(&q, p[1]), -1, "gone client: flush says so");
    close(p[1]);
    out_queue_free(&q);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_lines();
    test_long_line();
    test_queue();
    return tap_done();
}
