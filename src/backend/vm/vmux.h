/* TCP connections carried over virtio-serial ports, one connection per port
 * at a time, for the vm backend's network (docs/vm-backend.md "Network"):
 * the allowlist proxy reached from the guest, and published ports reached
 * from the host. The same engine runs on both sides: in the guest (a child
 * of the guest's init, no privileges) and on the host (a child of the
 * supervisor). Each port carries frames of a 3-byte header (type, 16-bit
 * big-endian length) and a payload:
 *   OPEN  (payload: the 16-bit port to connect to, responder side)
 *   DATA  (payload: up to VMUX_DATA_MAX bytes)
 *   END   (the sender will send no more data: a half-close)
 *   RESET (END, and the sender drops whatever arrives: an abort)
 * A port is free again once each side has sent and received END or RESET;
 * ordering on the port guarantees that the next OPEN follows them. Every
 * port has its own virtqueues, so a stalled connection holds back only its
 * own port (no multiplexing, no window accounting). Frames from the other
 * side are not trusted: an unknown type, an oversized length or an OPEN on
 * a busy port ends that connection. Any context; no allocation after
 * vmux_add_port. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define VMUX_MAX_PORTS   24
#define VMUX_MAX_LISTEN  33
#define VMUX_DATA_MAX    16384
#define VMUX_HEADER      3
#define VMUX_FRAME_OPEN  1
#define VMUX_FRAME_DATA  2
#define VMUX_FRAME_END   3
#define VMUX_FRAME_RESET 4

struct vmux;

/* Responder side: a new connection for OPEN(port); returns a connected
 * (or connecting) stream socket, or -1 to refuse (the peer gets RESET). */
typedef int (*vmux_connect_fn)(struct vmux *m, uint16_t port, void *ctx);

struct vmux_port {
    int dev;        /* the port: virtio-serial device (guest) or chardev socket (host) */
    int sock;       /* the connection it carries, or -1 */
    bool initiator; /* this side opens connections on it */
    bool busy;
    bool sent_end, got_end;
    bool drop_input;                               /* after our RESET: discard the peer's data */
    unsigned char in[VMUX_HEADER + VMUX_DATA_MAX]; /* frame being read from dev */
    size_t in_len;
    unsigned char out[VMUX_HEADER + VMUX_DATA_MAX]; /* frame being written to dev */
    size_t out_len, out_off;
    size_t data_off; /* DATA payload of in[] already written to sock */
};

struct vmux_listener {
    int fd;
    uint16_t port; /* sent in OPEN */
};

struct vmux {
    struct vmux_port ports[VMUX_MAX_PORTS];
    size_t nports;
    struct vmux_listener listeners[VMUX_MAX_LISTEN];
    size_t nlisteners;
    vmux_connect_fn connect;
    void *ctx;
};

void vmux_init(struct vmux *m, vmux_connect_fn connect, void *ctx);
/* Adds a port (made non-blocking); initiator: this side accepts on the
 * listeners and opens connections on it. */
int vmux_add_port(struct vmux *m, int dev, bool initiator, struct cordon_error *err);
/* Adds a listening socket whose connections go out on an initiator port
 * with OPEN(port). */
int vmux_add_listener(struct vmux *m, int fd, uint16_t port, struct cordon_error *err);
/* For a vmux_connect_fn: a stream socket of sa's family connected to sa
 * with a blocking connect (a local peer, loopback or AF_UNIX, accepts or
 * refuses at once), then made non-blocking; -1 when it fails. */
int vmux_connect_local(const struct sockaddr *sa, socklen_t len);
/* Runs until every port's device has failed or closed (the VM is gone). */
void vmux_run(struct vmux *m);
