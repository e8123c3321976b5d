/* TCP connections over virtio-serial ports, one per port at a time (see
 * vmux.h for the frames). Runs in the guest (forwarder, child of the
 * guest's init) and on the host (relay, child of the supervisor); the other
 * side is never trusted: frames are bounded by VMUX_DATA_MAX and a frame
 * that breaks the protocol takes its port out of service. */
#include "backend/vm/vmux.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void vmux_init(struct vmux *m, vmux_connect_fn connect, void *ctx)
{
    memset(m, 0, sizeof(*m));
    m->connect = connect;
    m->ctx = ctx;
}

int vmux_add_port(struct vmux *m, int dev, bool initiator, struct cordon_error *err)
{
    if (m->nports >= VMUX_MAX_PORTS)
        return error_set(err, E2BIG, "vmux: too many ports");
    if (fcntl(dev, F_SETFL, fcntl(dev, F_GETFL) | O_NONBLOCK) < 0)
        return error_set(err, errno, "vmux: fcntl");
    struct vmux_port *p = &m->ports[m->nports++];
    memset(p, 0, sizeof(*p));
    p->dev = dev;
    p->sock = -1;
    p->initiator = initiator;
    return 0;
}

int vmux_connect_local(const struct sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, sa, len) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int vmux_add_listener(struct vmux *m, int fd, uint16_t port, struct cordon_error *err)
{
    if (m->nlisteners >= VMUX_MAX_LISTEN)
        return error_set(err, E2BIG, "vmux: too many listeners");
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
        return error_set(err, errno, "vmux: fcntl");
    m->listeners[m->nlisteners++] = (struct vmux_listener){fd, port};
    return 0;
}

static void frame_set(struct vmux_port *p, int type, const void *data, size_t len)
{
    p->out[0] = (unsigned char)type;
    p->out[1] = (unsigned char)(len >> 8);
    p->out[2] = (unsigned char)len;
    if (len)
        memcpy(p->out + VMUX_HEADER, data, len);
    p->out_len = VMUX_HEADER + len;
    p->out_off = 0;
}

static void close_sock(struct vmux_port *p)
{
    if (p->sock >= 0)
        close(p->sock);
    p->sock = -1;
}

/* The connection is over on both sides and nothing is left to send. */
static void maybe_free(struct vmux_port *p)
{
    if (p->busy && p->sent_end && p->got_end && p->out_len == 0) {
        close_sock(p);
        p->busy = false;
        p->drop_input = false;
    }
}

/* A protocol violation or a failed device: the port leaves service. */
static void port_dead(struct vmux_port *p)
{
    close_sock(p);
    if (p->dev >= 0)
        close(p->dev);
    p->dev = -1;
    p->busy = false;
}

/* Our side ends the stream: END after a clean EOF, RESET after an error
 * (then the peer's data is dropped until its END arrives). Queued behind a
 * frame still being written. */
static void send_end(struct vmux_port *p, bool reset)
{
    if (p->sent_end)
        return;
    p->sent_end = true;
    if (reset) {
        p->drop_input = true;
        close_sock(p);
    }
    /* out is empty whenever this is called (see the callers). */
    frame_set(p, reset ? VMUX_FRAME_RESET : VMUX_FRAME_END, NULL, 0);
}

/* A complete frame from the peer in p->in. Returns false when it breaks the
 * protocol. DATA may stay partly unwritten (p->data_off); the caller keeps
 * the frame until the socket took all of it. */
static bool frame_handle(struct vmux *m, struct vmux_port *p)
{
    int type = p->in[0];
    size_t len = (size_t)p->in[1] << 8 | p->in[2];
    switch (type) {
    case VMUX_FRAME_OPEN: {
        if (p->initiator || p->busy || len != 2)
            return false;
        uint16_t port = (uint16_t)(p->in[3] << 8 | p->in[4]);
        p->busy = true;
        p->sent_end = p->got_end = p->drop_input = false;
        p->sock = m->connect(m, port, m->ctx);
        if (p->sock < 0 && p->out_len == 0)
            send_end(p, true);
        return true;
    }
    case VMUX_FRAME_DATA:
        if (!p->busy || p->got_end)
            return false;
        if (p->drop_input || p->sock < 0) {
            p->data_off = len;
            return true;
        }
        while (p->data_off < len) {
            ssize_t n = write(p->sock, p->in + VMUX_HEADER + p->data_off, len - p->data_off);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && errno == EAGAIN)
                return true;
            if (n <= 0) {
                /* The connection is gone: drop the rest, tell the peer. */
                p->data_off = len;
                if (p->out_len == 0)
                    send_end(p, true);
                else
                    close_sock(p), p->drop_input = true;
                return true;
            }
            p->data_off += (size_t)n;
        }
        return true;
    case VMUX_FRAME_END:
    case VMUX_FRAME_RESET:
        if (!p->busy || p->got_end || len != 0)
            return false;
        p->got_end = true;
        if (type == VMUX_FRAME_RESET) {
            close_sock(p);
            p->drop_input = true;
        } else if (p->sock >= 0) {
            shutdown(p->sock, SHUT_WR);
        }
        /* A side whose socket is gone owes its own end now. */
        if (p->sock < 0 && !p->sent_end && p->out_len == 0)
            send_end(p, false);
        maybe_free(p);
        return true;
    default:
        return false;
    }
}

static size_t payload_len(const struct vmux_port *p)
{
    return (size_t)p->in[1] << 8 | p->in[2];
}

/* One read or write on the port's device, retried on EINTR: > 0 bytes
 * done; 0 when it would block; -1 when the device failed or closed (the
 * port is dead then). */
static ssize_t dev_io(struct vmux_port *p, bool write_out, unsigned char *buf, size_t len)
{
    ssize_t n;
    do {
        n = write_out ? write(p->dev, buf, len) : read(p->dev, buf, len);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return 0;
    if (n <= 0) {
        port_dead(p);
        return -1;
    }
    return n;
}

/* Reads what there is of the next frame and handles it once complete. */
static void dev_readable(struct vmux *m, struct vmux_port *p)
{
    for (;;) {
        if (p->in_len >= VMUX_HEADER && payload_len(p) > VMUX_DATA_MAX) {
            port_dead(p);
            return;
        }
        size_t need = p->in_len < VMUX_HEADER ? VMUX_HEADER : VMUX_HEADER + payload_len(p);
        if (p->in_len == need && p->in_len >= VMUX_HEADER)
            break; /* complete (a DATA frame still being written to the socket) */
        ssize_t n = dev_io(p, false, p->in + p->in_len, need - p->in_len);
        if (n <= 0)
            return;
        p->in_len += (size_t)n;
    }
    if (p->data_off > 0)
        return; /* already handled; waiting for the socket */
    if (!frame_handle(m, p)) {
        port_dead(p);
        return;
    }
    if (p->in[0] == VMUX_FRAME_DATA && p->data_off < payload_len(p))
        return; /* the socket is full: wait for POLLOUT */
    p->in_len = 0;
    p->data_off = 0;
}

/* The socket took more of a pending DATA frame. */
static void sock_writable(struct vmux *m, struct vmux_port *p)
{
    size_t len = payload_len(p);
    (void)frame_handle(m, p); /* DATA: continues from data_off */
    if (p->data_off >= len) {
        p->in_len = 0;
        p->data_off = 0;
    }
}

static void sock_readable(struct vmux_port *p)
{
    unsigned char buf[VMUX_DATA_MAX];
    ssize_t n;
    do {
        n = read(p->sock, buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n > 0) {
        frame_set(p, VMUX_FRAME_DATA, buf, (size_t)n);
        return;
    }
    send_end(p, n < 0);
}

static void dev_writable(struct vmux_port *p)
{
    while (p->out_off < p->out_len) {
        ssize_t n = dev_io(p, true, p->out + p->out_off, p->out_len - p->out_off);
        if (n <= 0)
            return;
        p->out_off += (size_t)n;
    }
    p->out_len = p->out_off = 0;
    /* An end owed while the frame was in the way. */
    if (p->busy && !p->sent_end && p->sock < 0)
        send_end(p, p->drop_input);
    maybe_free(p);
}

static struct vmux_port *free_initiator(struct vmux *m)
{
    for (size_t i = 0; i < m->nports; i++) {
        struct vmux_port *p = &m->ports[i];
        if (p->initiator && p->dev >= 0 && !p->busy)
            return p;
    }
    return NULL;
}

static void listener_readable(struct vmux *m, struct vmux_listener *l)
{
    struct vmux_port *p = free_initiator(m);
    if (!p)
        return;
    int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
        return;
    p->busy = true;
    p->sent_end = p->got_end = p->drop_input = false;
    p->sock = fd;
    unsigned char port[2] = {(unsigned char)(l->port >> 8), (unsigned char)l->port};
    frame_set(p, VMUX_FRAME_OPEN, port, sizeof(port));
}

void vmux_run(struct vmux *m)
{
    struct pollfd pfd[2 * VMUX_MAX_PORTS + VMUX_MAX_LISTEN];
    for (;;) {
        size_t n = 0, live = 0;
        for (size_t i = 0; i < m->nports; i++) {
            struct vmux_port *p = &m->ports[i];
            live += p->dev >= 0;
            bool data_pending = p->in_len > 0 && p->in_len >= VMUX_HEADER &&
                                p->in[0] == VMUX_FRAME_DATA &&
                                p->in_len == VMUX_HEADER + ((size_t)p->in[1] << 8 | p->in[2]);
            short dev_ev = (short)((!data_pending ? POLLIN : 0) | (p->out_len ? POLLOUT : 0));
            short sock_ev = 0;
            if (p->sock >= 0 && p->busy) {
                if (!p->sent_end && p->out_len == 0)
                    sock_ev |= POLLIN;
                if (data_pending)
                    sock_ev |= POLLOUT;
            }
            pfd[n++] = (struct pollfd){p->dev, dev_ev, 0};
            pfd[n++] = (struct pollfd){sock_ev ? p->sock : -1, sock_ev, 0};
        }
        if (live == 0)
            return;
        bool room = free_initiator(m) != NULL;
        for (size_t i = 0; i < m->nlisteners; i++)
            pfd[n++] = (struct pollfd){room ? m->listeners[i].fd : -1, POLLIN, 0};
        if (poll(pfd, n, -1) < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        for (size_t i = 0; i < m->nports; i++) {
            struct vmux_port *p = &m->ports[i];
            short dev = pfd[2 * i].revents, sock = pfd[2 * i + 1].revents;
            if (p->dev < 0)
                continue;
            if (dev & POLLOUT)
                dev_writable(p);
            if (p->dev >= 0 && (dev & (POLLIN | POLLHUP | POLLERR)))
                dev_readable(m, p);
            if (p->dev >= 0 && p->sock >= 0 && (sock & (POLLOUT | POLLERR | POLLHUP)) &&
                p->in_len > 0)
                sock_writable(m, p);
            if (p->dev >= 0 && p->sock >= 0 && (sock & (POLLIN | POLLHUP | POLLERR)) &&
                !p->sent_end && p->out_len == 0)
                sock_readable(p);
            if (p->dev >= 0 && p->out_len)
                dev_writable(p);
        }
        for (size_t i = 0; i < m->nlisteners; i++) {
            if (pfd[2 * m->nports + i].revents & POLLIN)
                listener_readable(m, &m->listeners[i]);
        }
    }
}
