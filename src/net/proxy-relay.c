/* Relaying an established proxy connection (see proxy-conn.h): bytes
 * socket -> pipe -> socket with splice(2), the hand-shake buffers first;
 * pipes that grow for bulk transfers within a budget; half-closes passed
 * on; the client's bytes dropped after the server stopped taking them.
 * Host context: the proxy process. */
#include "net/proxy-conn.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Reads from FD into B; returns bytes read, 0 at EOF, -1 on error, -2 when
 * nothing was there. */
ssize_t buffer_read_into(int fd, struct buffer *b, size_t max)
{
    size_t room = buffer_room(b);
    if (room > max)
        room = max;
    if (room == 0)
        return -2;
    ssize_t n = read(fd, b->data + b->end, room);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? -2 : -1;
    b->end += (size_t)n;
    return n;
}

/* Sends from B; returns bytes sent, -1 on error, -2 when the socket is
 * full. */
static ssize_t write_from(int fd, struct buffer *b)
{
    if (buffer_used(b) == 0)
        return 0;
    ssize_t n = send(fd, b->data + b->start, buffer_used(b), MSG_NOSIGNAL);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? -2 : -1;
    buffer_drop(b, (size_t)n);
    return n;
}

/* Like read_into, through the pipe when the direction has switched to it. */
static ssize_t flow_read(int fd, struct buffer *b, struct relay_pipe *pp, size_t max)
{
    if (pp->r < 0 || buffer_used(b) > 0)
        return buffer_read_into(fd, b, max);
    size_t room = pp->size - pp->fill;
    if (room == 0)
        return -2;
    ssize_t n = splice(fd, NULL, pp->w, NULL, room, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n < 0) {
        if (errno != EAGAIN && errno != EINTR)
            return -1;
        pp->retry_read = pp->fill > 0;
        return -2;
    }
    pp->fill += (size_t)n;
    return n;
}

/* Like write_from, out of the pipe once the buffer is empty. */
ssize_t flow_write(int fd, struct buffer *b, struct relay_pipe *pp)
{
    if (buffer_used(b) > 0)
        return write_from(fd, b);
    if (pp->fill == 0)
        return 0;
    ssize_t n = splice(pp->r, NULL, fd, NULL, pp->fill, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? -2 : -1;
    pp->fill -= (size_t)n;
    return n;
}

/* A full pipe means a bulk transfer: give it more room while the budget
 * lasts. F_SETPIPE_SZ may fail (the user's pipe page limit): the pipe then
 * keeps its size. */
static void relay_pipe_grow(struct proxy *p, struct relay_pipe *pp)
{
    if (pp->size >= RELAY_PIPE_MAX || p->pipe_grown + RELAY_PIPE_MAX - pp->size > RELAY_PIPE_BUDGET)
        return;
    int size = fcntl(pp->w, F_SETPIPE_SZ, RELAY_PIPE_MAX);
    if (size <= (int)pp->size)
        return;
    p->pipe_grown += (size_t)size - pp->size;
    pp->grown += (size_t)size - pp->size;
    pp->size = (size_t)size;
}

/* Moves what it can in one direction. Returns 1 when something moved
 * (or EOF was seen), 0 when both ends are blocked, -1 on an error of the
 * source, -2 on one of the destination. */
static int relay_direction(struct proxy *p, int src, bool *src_readable, bool *src_eof, int dst,
                           bool *dst_writable, struct buffer *b, struct relay_pipe *pp,
                           size_t *moved)
{
    int progress = 0;
    /* A stalled direction (pipe full, destination not draining) stops
     * reading from its source: TCP pushes back on that peer alone. */
    if (!*src_eof && *src_readable && flow_room(b, pp) > 0) {
        ssize_t n = flow_read(src, b, pp, NET_BUFFER_SIZE);
        if (n == -1)
            return -1;
        if (n == -2) {
            *src_readable = false;
        } else {
            progress = 1;
            *moved += (size_t)n;
            if (n == 0)
                *src_eof = true;
            else if (pp->r >= 0 && pp->fill == pp->size)
                relay_pipe_grow(p, pp);
        }
    }
    if (*dst_writable && flow_pending(b, pp) > 0) {
        ssize_t n = flow_write(dst, b, pp);
        if (n == -1)
            return -2;
        if (n == -2) {
            *dst_writable = false;
        } else if (n > 0) {
            progress = 1;
            if (pp->retry_read) {
                pp->retry_read = false;
                *src_readable = true;
            }
        }
    }
    return progress;
}

/* The client's bytes after the server stopped taking them: read and
 * dropped, so that closing does not reset the connection under an answer
 * the client has yet to read. */
static int relay_drop_up(struct conn *c, size_t *moved)
{
    if (c->client_eof || !c->client_readable)
        return 0;
    char scratch[16384];
    ssize_t n = read(c->client, scratch, sizeof(scratch));
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        c->client_readable = false;
        return 0;
    }
    if (n <= 0)
        c->client_eof = true;
    else
        *moved += (size_t)n;
    return 1;
}

/* Relays both directions until the sockets block or the connection has
 * had its turn (then it waits in the ready list: no edge would come for
 * bytes already there). Passes half-closes on and ends the connection
 * when both directions are done. */
void relay_pump(struct proxy *p, struct conn *c)
{
    size_t moved = 0;
    int up = 1, down = 1;
    while ((up > 0 || down > 0) && moved < RELAY_TURN_MAX) {
        up = c->up_dropped
                 ? relay_drop_up(c, &moved)
                 : relay_direction(p, c->client, &c->client_readable, &c->client_eof, c->server,
                                   &c->server_writable, c->up, &c->up_pipe, &moved);
        size_t before_down = moved;
        down = relay_direction(p, c->server, &c->server_readable, &c->server_eof, c->client,
                               &c->client_writable, c->down, &c->down_pipe, &moved);
        /* After a dropped upload the drain timeout counts from the answer's
         * last bytes: a long answer still streaming is not cut off. */
        if (c->up_dropped && moved > before_down)
            c->since = time(NULL);
        /* A server that answers an upload early (413) and closes resets
         * the connection: writing to it fails, and reading gives what it
         * sent, then the reset. Its answer still goes to the client, which
         * waits for it while it sends. */
        if (up == -2) {
            c->up_dropped = c->up_shut = true;
            c->since = time(NULL);
            up = 1;
        }
        if (down == -1) {
            c->server_eof = true;
            down = 1;
        }
        if (up < 0 || down < 0) {
            conn_close(p, c);
            return;
        }
    }
    /* Pass half-closes on once everything before them is delivered. */
    if (c->client_eof && !c->up_shut && flow_pending(c->up, &c->up_pipe) == 0) {
        shutdown(c->server, SHUT_WR);
        c->up_shut = true;
    }
    if (c->server_eof && !c->down_shut && flow_pending(c->down, &c->down_pipe) == 0) {
        shutdown(c->client, SHUT_WR);
        c->down_shut = true;
    }
    /* After a dropped upload, the client closes once it has the answer. */
    if (c->up_shut && c->down_shut && (!c->up_dropped || c->client_eof)) {
        conn_close(p, c);
        return;
    }
    if ((up > 0 || down > 0) && !c->queued) {
        c->queued = true;
        p->queued++;
    }
}

/* The connection is established: from here on both sockets are
 * registered once, edge-triggered, for everything; no epoll_ctl() per
 * chunk. The readiness flags start optimistic (a wrong guess costs one
 * EAGAIN). */
void relay_start(struct proxy *p, struct conn *c)
{
    const uint32_t events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    struct epoll_event ev = {.events = events, .data.u64 = conn_token(p, c, 0)};
    epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, c->client, &ev);
    ev.data.u64 = conn_token(p, c, 1);
    epoll_ctl(p->epoll_fd, EPOLL_CTL_MOD, c->server, &ev);
    c->client_events = c->server_events = events;
    c->client_readable = c->client_writable = true;
    c->server_readable = c->server_writable = true;
    relay_pump(p, c);
}

void relay_event(struct proxy *p, struct conn *c, int side, uint32_t events)
{
    bool in = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
    bool out = events & (EPOLLOUT | EPOLLHUP | EPOLLERR);
    if (side == 0) {
        c->client_readable |= in;
        c->client_writable |= out;
    } else {
        c->server_readable |= in;
        c->server_writable |= out;
    }
    if (!c->queued)
        relay_pump(p, c);
}
