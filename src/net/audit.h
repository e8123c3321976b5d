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

/* Appends one line {"time","session","event":"backend","backend","reason"}
 * to the audit log at path (opened O_APPEND, not following a symlink): what
 * backend = "auto" chose for the session, and why. Best effort. */
void net_audit_write_backend(const char *path, const char *session, const char *backend,
                             const char *reason);
