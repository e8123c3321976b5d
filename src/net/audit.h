/* The network audit log: one JSON object per line for every decision the
 * proxy makes (allowed or denied, with the rule or the reason). Host context
 * (the proxy process). */
#pragma once

#include <stdbool.h>

struct net_audit_record {
    const char *session;
    const char *protocol; /* "http-connect", "http", "socks5", "publish" */
    const char *host;     /* as the client asked for it */
    int port;
    const char *address; /* the address connected to, or NULL */
    bool allowed;
    const char *reason;
};

/* Appends one line to FD (O_APPEND: lines from several sessions do not
 * interleave). FD < 0: nothing. */
void net_audit_write(int fd, const struct net_audit_record *r);
