/* Egress secrets (docs/secrets.md): the sandbox's variable holds a
 * per-session placeholder; the proxy puts the real value into requests to
 * the secret's hosts only, and refuses a request that carries a
 * placeholder anywhere else (an attempted leak). The real value is read in
 * the proxy process (host context, never forked into the sandbox) and
 * never written anywhere the sandbox can read. */
#pragma once

#include "net/allowlist.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

#define NET_MAX_SECRETS     32
#define NET_SECRET_MAX      8192 /* bytes of one value */
#define NET_PLACEHOLDER_MAX 128
#define NET_SECRET_NAME_MAX 64

/* One [[secrets]] entry as the launcher hands it over (strings borrowed). */
struct net_secret {
    const char *name;   /* the sandbox's variable */
    const char *from;   /* env:VAR, file:PATH, command:TEXT */
    const char *header; /* NULL: anywhere in the request head */
    bool plain_http;    /* may be put into cleartext requests (http://) */
    const char *const *hosts;
    size_t host_count;
    char placeholder[NET_PLACEHOLDER_MAX]; /* what the sandbox sees */
};

/* The proxy's loaded form. */
struct proxy_secret {
    const struct net_secret *spec;
    char *value; /* NUL-terminated, no control characters */
    size_t value_length;
    size_t placeholder_length;
    struct allowlist hosts;
};

/* A fresh placeholder for NAME: "cordon-secret-NAME-<32 hex>" (random per
 * session, so it is useless outside it). */
int net_secret_placeholder(const char *name, char out[NET_PLACEHOLDER_MAX],
                           struct cordon_error *err);
/* Checks the entry (name length, hosts) before anything starts. */
int net_secret_validate(const struct net_secret *s, struct cordon_error *err);
/* Reads the value (proxy process): env:VAR from this process's
 * environment, file:PATH, or the standard output of `/bin/sh -c TEXT`
 * (30 s at most). One trailing newline is dropped; an empty value or one
 * with control characters is an error naming the secret, never the value. */
int proxy_secret_load(const struct net_secret *s, struct proxy_secret *out,
                      struct cordon_error *err);
void proxy_secret_free(struct proxy_secret *s);

enum secrets_verdict {
    SECRETS_NONE,   /* no placeholder in the head */
    SECRETS_SUBST,  /* placeholders for this host: substituted into OUT */
    SECRETS_LEAK,   /* a placeholder bound to other hosts: refuse, log */
    SECRETS_TOOBIG, /* the substituted head does not fit OUT */
};

/* Looks for placeholders in the request head HEAD[0..LEN) bound for
 * HOST:PORT, sent in cleartext when PLAIN (a secret without plain_http is
 * then refused, like a leak: the value would cross the network readable). With OUT, writes the head with every placeholder replaced by
 * its value (*OUT_LENGTH); OUT may be NULL to only decide. REASON names
 * the secret and the rule (never the value). */
enum secrets_verdict secrets_apply(const struct proxy_secret *list, size_t count, const char *host,
                                   int port, bool plain, const char *head, size_t len, char *out,
                                   size_t out_size, size_t *out_length, char *reason,
                                   size_t reason_size);
