/* The allowlist proxy's policy (issue 8): which destinations a sandbox may
 * reach. Patterns are exact names, "*.domain" (subdomains only), IPv4/IPv6
 * addresses and CIDR ranges, each with an optional ":port". Resolved
 * addresses get a second check: loopback, link-local, private and the host's
 * own addresses pass only when an address rule lists them, so a listed name
 * that resolves to 127.0.0.1 is refused (DNS rebinding). Host context (the
 * proxy process); pure functions, no I/O except allowlist_load_host_addresses. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ALLOW_NAME_MAX 253
#define ALLOW_TEXT_MAX 300

enum allow_kind {
    ALLOW_EXACT,      /* "example.test" */
    ALLOW_SUBDOMAINS, /* "*.example.test": a.example.test, not example.test */
    ALLOW_ADDRESS,    /* "10.0.0.0/8", "::1", "[2001:db8::/32]:443" */
};

/* An address in one form for both families: IPv4 as ::ffff:a.b.c.d. */
struct allow_addr {
    uint8_t bytes[16];
};

struct allow_rule {
    enum allow_kind kind;
    char name[ALLOW_NAME_MAX + 1]; /* lower-case, no trailing dot; the domain for SUBDOMAINS */
    struct allow_addr addr;
    int prefix;                    /* in bits of the 128-bit form */
    int port;                      /* 0: any port */
    char text[ALLOW_TEXT_MAX + 1]; /* the pattern as written, for messages */
};

#define ALLOW_MAX_HOST_ADDRS 64

struct allowlist {
    struct allow_rule *rules;
    size_t count;
    /* The host's own addresses (getifaddrs), refused like loopback. */
    struct allow_addr host_addrs[ALLOW_MAX_HOST_ADDRS];
    size_t host_addr_count;
};

struct allow_decision {
    bool allowed;
    /* The rule that allowed, or why it was refused, naming the rule or the
     * protected range: shown to the client and written to the audit log. */
    char reason[1024];
};

/* The hosts of a preset ("@npm", "@pypi", "@crates", "@go", "@debian",
 * "@github"; NULL-terminated "host:port" patterns), or NULL. */
const char *const *allowlist_preset(const char *name);
/* "@npm, @pypi, ..." for messages. */
const char *allowlist_preset_names(void);
/* Parses one pattern (or a preset, which adds its hosts) and appends it;
 * errors name the pattern. */
int allowlist_add(struct allowlist *al, const char *pattern, struct cordon_error *err);
void allowlist_free(struct allowlist *al);
/* Records the host's own interface addresses as protected. */
int allowlist_load_host_addresses(struct allowlist *al, struct cordon_error *err);

/* Parses an address literal (IPv4, IPv6, optionally in brackets). */
bool allow_addr_parse(const char *text, struct allow_addr *out);
bool allow_addr_is_v4(const struct allow_addr *a);
void allow_addr_from_sockaddr(const void *sockaddr, struct allow_addr *out);
void allow_addr_format(const struct allow_addr *a, char *buf, size_t size);

/* Step 1, before resolution: is HOST:PORT as the client asked for it (a name
 * or an address literal) listed? */
void allowlist_check_request(const struct allowlist *al, const char *host, int port,
                             struct allow_decision *d);
/* Step 2, for each resolved address: refuses loopback, link-local, private,
 * unspecified, multicast and the host's own addresses unless an address rule
 * covers ADDR:PORT. */
void allowlist_check_address(const struct allowlist *al, const struct allow_addr *addr, int port,
                             struct allow_decision *d);
