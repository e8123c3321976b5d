/* The vm backend's network (docs/vm-backend.md "Network"), host side:
 *   deny: no network device at all;
 *   open: a virtio-net device whose frames go to passt (user-mode TCP/IP,
 *     started by cordon, never by QEMU) over a socketpair, with the gateway
 *     not mapped to the host, so the host's loopback stays out of reach;
 *   allowlist: still no network device; the guest's 127.0.0.1:3128 is a
 *     forwarder that carries each connection over a virtio-serial port
 *     ("cordon.out.N") to a relay on the host, which hands it to cordon's
 *     checking proxy (the ns backend's, same audit log, TLS interception
 *     with the session CA the boot spec carries); deny mode's refusing
 *     proxy is reached the same way;
 *   host services (network.host_services, any mode): the guest's
 *     forwarder also listens on 127.0.0.1:PORT for each, and the relay
 *     hands those connections to the proxy's socket for PORT, which
 *     connects to the host's 127.0.0.1:PORT (as on ns, audit-logged);
 *   published ports (any mode): host listeners whose connections travel
 *     the other way over "cordon.in.N" ports to the guest's 127.0.0.1:PORT.
 * Host context (supervisor and its children). */
#pragma once

#include "net/net.h"
#include "backend/vm/vmux.h"
#include "util/error.h"

#include <jansson.h>
#include <limits.h>
#include <sys/types.h>

#define VM_NET_OUT_PORTS 8 /* connections to the proxy in flight at once */
#define VM_NET_IN_PORTS  4 /* connections to published ports in flight at once */
#define VM_NET_PORT_BASE 3 /* virtio-serial port numbers 0-2 are console, channel, stderr */

struct vm_net {
    const struct net_policy *policy;
    size_t n_out, n_in;
    int listen[VMUX_MAX_PORTS]; /* chardev listeners: out ports first, then in ports */
    int fds[VMUX_MAX_PORTS];
    int passt_qemu_fd; /* open mode: QEMU's end of the socketpair to passt */
    pid_t passt_pid, relay_pid;
    /* The proxy's record: the launch's session (policy->session), which
     * the supervisor drains for a tool result's refusal line, else own. */
    struct net_session own_proxy;
    struct net_session *proxy;
    /* TLS interception: the session CA's certificate for the boot spec
     * (the guest adds it to its bundle), or NULL. */
    char *ca_pem;
    char addr[16], gw[16]; /* open mode: the guest's IPv4 address and gateway */
    /* network.host_services: the proxy's sockets (dir/hs/PORT.sock), which
     * the relay connects the guest's connections to 127.0.0.1:PORT to. */
    char host_service_dir[PATH_MAX];
    int prefix;
};

void vm_net_init(struct vm_net *n, const struct net_policy *policy);
/* Before QEMU starts: the chardev listeners in DIR, passt (open mode) and
 * the proxy (allowlist, deny mode's refusing one), whose session CA the
 * boot spec then carries. */
int vm_net_prepare(struct vm_net *n, const char *dir, struct cordon_error *err);
/* QEMU's chardev id and the guest's port name of port I. */
void vm_net_port_names(const struct vm_net *n, size_t i, char *id, size_t idsize, char *name,
                       size_t namesize);
/* After QEMU started: accepts its connections to the chardev listeners. */
int vm_net_accept(struct vm_net *n, long long deadline_ms, struct cordon_error *err);
/* The boot spec's "net" object (NULL in plain deny mode). */
json_t *vm_net_spec(const struct vm_net *n);
/* After the guest booted: the port relay. */
int vm_net_start(struct vm_net *n, const char *dir, struct cordon_error *err);
/* Stops and reaps passt, the relay and the proxy; closes everything. */
void vm_net_stop(struct vm_net *n);
