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
 * many others followed; FIRST (may be NULL) the first record. Returns the
 * number of records read. */
size_t net_denials_take(struct net_session *s, char *line, size_t size, struct net_denial *first);

#define NET_DENIAL_RULE_MAX (NET_DENIAL_HOST_MAX + 16)

/* The allow_hosts rules that would have allowed D (its name, with the
 * port when a rule for another port refused it; and the protected address
 * it resolved to): 0 when D's host cannot be quoted as a rule. */
size_t net_denial_rules(const struct net_denial *d, char rules[2][NET_DENIAL_RULE_MAX]);

/* Supervisor side: the user allowed PATTERN (an allow_hosts pattern) for
 * the rest of the session: sent to the proxy, which adds it to its rules
 * (in deny mode its refusing listener then allows exactly these). Only the
 * supervisor holds this socket; nothing in the sandbox can send on it. */
int net_session_allow(struct net_session *s, const char *pattern, struct cordon_error *err);
/* Supervisor side: refusals of HOST:PORT (cordon verify's own probe
 * targets) are not warned about on stderr nor reported in a result for
 * the next SECONDS; the audit logs still record them. */
void net_session_quiet(const struct net_session *s, const char *host_port, int seconds);

enum net_control_op { NET_CONTROL_ALLOW = 'A', NET_CONTROL_QUIET = 'Q' };
struct net_control {
    char op;
    int seconds;
    char text[NET_DENIAL_RULE_MAX];
};
/* Proxy side: one message from the supervisor; 1 read, 0 nothing pending,
 * -1 the supervisor closed its end. */
int net_control_receive(int fd, struct net_control *msg);

/* A host name or address that can be quoted in a suggested configuration
 * line as it is (letters, digits, '.', '-', '_', ':'). */
bool net_denial_plain_host(const char *host);

/* The line for one refusal D in MODE, MORE further refusals. */
void net_denial_line(const struct net_denial *d, enum net_mode mode, size_t more, char *line,
                     size_t size);
