/* TLS interception for hosts with secrets or HTTP rules bound
 * (docs/secrets.md "HTTPS"). Host context: the proxy process only. A
 * per-session CA is made here when the proxy starts; its private key
 * never leaves this process (only the certificate is written, into the
 * session's CA bundle that the sandbox reads). Leaf certificates are made
 * on demand for the host of each intercepted CONNECT and cached for the
 * session. Each intercepted connection runs in a thread of its own with
 * blocking I/O: TLS with the client (the leaf), TLS with the destination
 * (verified against the host's store or network.ca_file, name checked),
 * and every request head in between checked against the rules and given
 * the secrets' values exactly as plain HTTP is. Other hosts stay plain
 * CONNECT tunnels in the event loop (proxy.c). */
#pragma once

#include "net/allowlist.h"
#include "net/http-rules.h"
#include "net/secrets.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

#define TLS_MAX_INTERCEPTED 128 /* connections intercepted at once */

struct tls_state;

struct tls_config {
    const struct proxy_secret *secrets;
    size_t secret_count;
    const struct http_rule *rules;
    size_t rule_count;
    const char *ca_file; /* NULL: the host's default store */
    int audit_fd;
    const char *session_name;
};

/* Makes the session CA and the contexts. */
int tls_start(const struct tls_config *cfg, struct tls_state **out, struct cordon_error *err);
/* The CA certificate, PEM (malloc'd). */
char *tls_ca_pem(struct tls_state *t, struct cordon_error *err);
/* Whether connections to HOST:PORT are intercepted (a secret or a rule
 * names the host). */
bool tls_wants(const struct tls_config *cfg, const char *host, int port);
/* Takes over CLIENT (the sandbox's socket, "200 Connection established"
 * already sent) and SERVER (connected to HOST:PORT, or a tunnel to it
 * through the upstream proxy): a thread of its own does the rest and
 * closes both. Returns -1 (fds still the caller's) when no thread can be
 * started or TLS_MAX_INTERCEPTED are running. */
int tls_intercept(struct tls_state *t, int client, int server, const char *host, int port,
                  struct cordon_error *err);
