/* Refusals the proxy reports to its supervisor, so that a tool call's
 * result can end with one line naming the destination, the rule that
 * refused it and the configuration line that would allow it. The proxy
 * (host context, a child of the supervisor) sends one record per policy
 * refusal on the SOCK_SEQPACKET socket it also reported readiness on; the
 * supervisor drains it without blocking when a result arrives. The host
 * names and reasons come from the sandbox's requests: the line is built
 * from them only after they are checked (net_denial_line). */
#pragma once

#include "net/net.h"

#include <stdbool.h>
#include <stddef.h>

#define NET_DENIAL_HOST_MAX   255
#define NET_DENIAL_REASON_MAX 1023

struct net_denial {
    char protocol[16];
    char host[NET_DENIAL_HOST_MAX + 1];
    char address[48]; /* the refused address (a protected one), or "" */
    int port;
    char reason[NET_DENIAL_REASON_MAX + 1];
};

/* Proxy side: one record, never blocking (a supervisor that does not read
 * loses the newest reports, not the proxy's time). FD < 0: nothing. */
void net_denial_send(int fd, const char *protocol, const char *host, int port, const char *address,
                     const char *reason);

/* Supervisor side: reads every pending record; LINE gets the one line for
 * a tool result ("" when nothing was refused): the first refusal and how
 * many others followed. Returns the number of records read. */
size_t net_denials_take(struct net_session *s, char *line, size_t size);

/* A host name or address that can be quoted in a suggested configuration
 * line as it is (letters, digits, '.', '-', '_', ':'). */
bool net_denial_plain_host(const char *host);

/* The line for one refusal D in MODE, MORE further refusals. */
void net_denial_line(const struct net_denial *d, enum net_mode mode, size_t more, char *line,
                     size_t size);
