/* The second seccomp program of the ns backend: the socket calls that can
 * name a unix socket by path (connect, sendto with an address, sendmsg,
 * sendmmsg) go to the socket guard (src/supervisor/sock-guard.c) instead of
 * the kernel. Built here (hand-written BPF, a dozen instructions); loaded in
 * the child right after the main filter, with a listener the supervisor
 * takes before exec (docs/sockets.md). */
#pragma once

#include "util/error.h"

#include <linux/filter.h>
#include <stdint.h>

/* The program (static storage). */
void ns_seccomp_notify_program(struct sock_fprog *prog);

/* Child, between clone() and exec, after no_new_privs: loads the program
 * with a new listener and returns the listener's fd (close-on-exec), or
 * -1 with err filled (no allocation). */
int ns_seccomp_notify_load_in_child(struct cordon_error *err);

/* The message that hands the guard's fds over: their numbers in the
 * sender's table, for the receiver's pidfd_getfd. */
#define NS_GUARD_FDS_MAGIC 0x636f7264u
struct ns_guard_fds {
    uint32_t magic;
    int listener_fd;
    int diag_fd;
};

/* Child (or the docker backend's agent, confining itself), after the main
 * filter: opens a NETLINK_SOCK_DIAG socket in the current network namespace,
 * loads the socket-guard filter, writes both fd numbers to sync_fd with a
 * plain write() and waits for one byte back (by then the other side holds
 * the fds and the guard runs: every sendmsg() from here on needs it), then
 * closes both. No allocation. */
int ns_sock_guard_handoff_in_child(int sync_fd, struct cordon_error *err);
