/* The second seccomp program of the ns backend: the socket calls that can
 * name a unix socket by path (connect, sendto with an address, sendmsg,
 * sendmmsg) go to the socket guard (src/supervisor/sock-guard.c) instead of
 * the kernel. Built here (hand-written BPF, a dozen instructions); loaded in
 * the child right after the main filter, with a listener the supervisor
 * takes before exec (docs/sockets.md). */
#pragma once

#include "util/error.h"

#include <linux/filter.h>

/* The program (static storage). */
void ns_seccomp_notify_program(struct sock_fprog *prog);

/* Child, between clone() and exec, after no_new_privs: loads the program
 * with a new listener and returns the listener's fd (close-on-exec), or
 * -1 with err filled (no allocation). */
int ns_seccomp_notify_load_in_child(struct cordon_error *err);
