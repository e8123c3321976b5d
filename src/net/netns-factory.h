/* A small child process that lives inside the sandbox's user and network
 * namespaces and hands out sockets created there: the allowlist proxy's
 * listener on the sandbox's loopback, and for each published-port connection
 * a fresh socket that connects to the sandbox's 127.0.0.1:GUEST. Sockets keep
 * the network namespace they were created in, so the proxy (host namespace)
 * can accept() and connect() with them; nothing runs inside the sandbox.
 * Host context: started by the proxy process, joins the namespaces with
 * setns() (user first: the sandbox's user namespace is owned by our uid). */
#pragma once

#include "util/error.h"

#include <stdint.h>
#include <sys/types.h>

struct netns_factory {
    pid_t pid;
    int sock; /* SOCK_SEQPACKET to the factory, or -1 */
};

/* Starts the factory for the sandbox whose PID 1 is SANDBOX_PID. */
int netns_factory_start(pid_t sandbox_pid, struct netns_factory *f, struct cordon_error *err);
/* A listening TCP socket on 127.0.0.1:PORT inside the sandbox. */
int netns_factory_listener(struct netns_factory *f, uint16_t port, struct cordon_error *err);
/* An unconnected, non-blocking IPv4 TCP socket inside the sandbox. */
int netns_factory_socket(struct netns_factory *f, struct cordon_error *err);
/* The same, IPv6: a published port whose server listens on ::1 only. */
int netns_factory_socket6(struct netns_factory *f, struct cordon_error *err);
/* Waits (up to TIMEOUT_MS) until the sandbox has an IPv4 route out: pasta
 * configures the interface asynchronously. */
int netns_factory_wait_route(struct netns_factory *f, int timeout_ms, struct cordon_error *err);
void netns_factory_stop(struct netns_factory *f);
