/* Parsing and matching of allow_hosts patterns and the protected address
 * ranges. Host context, inside the allowlist proxy process; no I/O except
 * reading the host's interface addresses. */
#include "net/allowlist.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

bool allow_addr_is_v4(const struct allow_addr *a)
{
    return memcmp(a->bytes, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0;
}

bool allow_addr_parse(const char *text, struct allow_addr *out)
{
    char buf[INET6_ADDRSTRLEN + 2];
    size_t len = strlen(text);
    if (len >= sizeof(buf))
        return false;
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        memcpy(buf, text + 1, len - 2);
        buf[len - 2] = '\0';
    } else {
        memcpy(buf, text, len + 1);
    }
    struct in_addr v4;
    /* inet_pton, not inet_aton: "127.1" and "0x7f.0.0.1" are names here,
     * never addresses in disguise. */
    if (inet_pton(AF_INET, buf, &v4) == 1) {
        memcpy(out->bytes, v4_mapped_prefix, sizeof(v4_mapped_prefix));
        memcpy(out->bytes + 12, &v4, 4);
        return true;
    }
    struct in6_addr v6;
    if (strchr(buf, ':') && inet_pton(AF_INET6, buf, &v6) == 1) {
        memcpy(out->bytes, &v6, 16);
        return true;
    }
    return false;
}

void allow_addr_from_sockaddr(const void *sockaddr, struct allow_addr *out)
{
    const struct sockaddr *sa = sockaddr;
    memset(out, 0, sizeof(*out));
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = sockaddr;
        memcpy(out->bytes, v4_mapped_prefix, sizeof(v4_mapped_prefix));
        memcpy(out->bytes + 12, &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = sockaddr;
        memcpy(out->bytes, &in6->sin6_addr, 16);
    }
}

void allow_addr_format(const struct allow_addr *a, char *buf, size_t size)
{
    if (allow_addr_is_v4(a))
        inet_ntop(AF_INET, a->bytes + 12, buf, (socklen_t)size);
    else
        inet_ntop(AF_INET6, a->bytes, buf, (socklen_t)size);
}

static bool addr_in_prefix(const struct allow_addr *a, const struct allow_addr *net, int prefix)
{
    int full = prefix / 8, rest = prefix % 8;
    if (memcmp(a->bytes, net->bytes, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a->bytes[full] & mask) == (net->bytes[full] & mask);
}

static void addr_mask(struct allow_addr *a, int prefix)
{
    for (int bit = prefix; bit < 128; bit++)
        a->bytes[bit / 8] &= (uint8_t) ~(0x80 >> (bit % 8));
}

static int parse_port(const char *s, int *port)
{
    if (!*s || strlen(s) > 5)
        return -1;
    int v = 0;
    for (const char *p = s; *p; p++) {
        if (!isdigit((unsigned char)*p))
            return -1;
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 65535)
        return -1;
    *port = v;
    return 0;
}

/* Lower-cases NAME into OUT without a trailing dot; false unless it is a
 * syntactically valid DNS name (letters, digits, '-', '_', labels of 1-63). */
static bool name_normalise(const char *name, char out[ALLOW_NAME_MAX + 1])
{
    size_t len = strlen(name);
    if (len > 0 && name[len - 1] == '.')
        len--;
    if (len == 0 || len > ALLOW_NAME_MAX)
        return false;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '.') {
            if (label == 0)
                return false;
            label = 0;
        } else if (isalnum(c) || c == '-' || c == '_') {
            if (++label > 63)
                return false;
        } else {
            return false;
        }
        out[i] = (char)tolower(c);
    }
    out[len] = '\0';
    return label > 0;
}

static int parse_address_rule(struct allow_rule *r, const char *text, struct cordon_error *err,
                              const char *pattern)
{
    char buf[INET6_ADDRSTRLEN + 8];
    if (strlen(text) >= sizeof(buf))
        return error_set(err, EINVAL, "allow_hosts '%s': not an address", pattern);
    strcpy(buf, text);
    char *slash = strchr(buf, '/');
    int max = 128;
    if (slash)
        *slash = '\0';
    if (!allow_addr_parse(buf, &r->addr))
        return error_set(err, EINVAL, "allow_hosts '%s': '%s' is not an IPv4 or IPv6 address",
                         pattern, buf);
    bool v4 = allow_addr_is_v4(&r->addr);
    r->prefix = 128;
    if (slash) {
        const char *p = slash + 1;
        int v = 0;
        if (!*p || strlen(p) > 3)
            goto bad_prefix;
        for (; *p; p++) {
            if (!isdigit((unsigned char)*p))
                goto bad_prefix;
            v = v * 10 + (*p - '0');
        }
        max = v4 ? 32 : 128;
        if (v > max)
            goto bad_prefix;
        r->prefix = v4 ? 96 + v : v;
        addr_mask(&r->addr, r->prefix);
    }
    r->kind = ALLOW_ADDRESS;
    return 0;
bad_prefix:
    return error_set(err, EINVAL, "allow_hosts '%s': bad prefix length (0-%d)", pattern,
                     v4 ? 32 : 128);
}

/* The presets (docs/network.md "Presets"): the names each client contacts
 * for its usual work, nothing more. */
struct preset {
    const char *name;
    const char *const *hosts;
};
static const char *const preset_npm[] = {"registry.npmjs.org:443", NULL};
static const char *const preset_pypi[] = {"pypi.org:443", "files.pythonhosted.org:443", NULL};
static const char *const preset_crates[] = {"index.crates.io:443", "static.crates.io:443",
                                            "crates.io:443", NULL};
static const char *const preset_go[] = {"proxy.golang.org:443", "sum.golang.org:443", NULL};
static const char *const preset_debian[] = {"deb.debian.org:80", "deb.debian.org:443",
                                            "security.debian.org:80", "security.debian.org:443",
                                            NULL};
static const char *const preset_github[] = {"github.com:443",
                                            "github.com:22",      /* git over ssh */
                                            "ssh.github.com:443", /* ssh on 443 */
                                            "api.github.com:443",
                                            "codeload.github.com:443",
                                            "objects.githubusercontent.com:443",
                                            "raw.githubusercontent.com:443",
                                            "release-assets.githubusercontent.com:443",
                                            NULL};
static const struct preset presets[] = {
    {"@npm", preset_npm}, {"@pypi", preset_pypi},     {"@crates", preset_crates},
    {"@go", preset_go},   {"@debian", preset_debian}, {"@github", preset_github},
};

const char *const *allowlist_preset(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(presets); i++)
        if (strcmp(presets[i].name, name) == 0)
            return presets[i].hosts;
    return NULL;
}

const char *allowlist_preset_names(void)
{
    return "@npm, @pypi, @crates, @go, @debian, @github";
}

int allowlist_add(struct allowlist *al, const char *pattern, struct cordon_error *err)
{
    if (pattern[0] == '@') {
        const char *const *hosts = allowlist_preset(pattern);
        if (!hosts)
            return error_set(err, EINVAL, "allow_hosts '%.64s': unknown preset (known: %s)",
                             pattern, allowlist_preset_names());
        for (size_t i = 0; hosts[i]; i++) {
            if (allowlist_add(al, hosts[i], err) < 0)
                return -1;
            /* Refusals and the audit log name the preset it came from. */
            struct allow_rule *added = &al->rules[al->count - 1];
            char text[ALLOW_TEXT_MAX + 1];
            snprintf(text, sizeof(text), "%s (from %s)", hosts[i], pattern);
            snprintf(added->text, sizeof(added->text), "%s", text);
        }
        return 0;
    }
    struct allow_rule r = {0};
    size_t len = strlen(pattern);
    if (len == 0 || len > ALLOW_TEXT_MAX)
        return error_set(err, EINVAL, "allow_hosts: empty or overlong pattern");
    snprintf(r.text, sizeof(r.text), "%s", pattern);

    char host[ALLOW_TEXT_MAX + 1];
    const char *port_text = NULL;
    if (pattern[0] == '[') {
        const char *close = strchr(pattern, ']');
        if (!close)
            return error_set(err, EINVAL, "allow_hosts '%s': missing ']'", pattern);
        size_t hlen = (size_t)(close - pattern - 1);
        memcpy(host, pattern + 1, hlen);
        host[hlen] = '\0';
        if (close[1] == ':')
            port_text = close + 2;
        else if (close[1] != '\0')
            return error_set(err, EINVAL, "allow_hosts '%s': unexpected text after ']'", pattern);
        if (parse_address_rule(&r, host, err, pattern) < 0)
            return -1;
    } else {
        const char *colon = strchr(pattern, ':');
        if (colon && strchr(colon + 1, ':')) {
            /* Bare IPv6 (several colons): no port; use [addr]:port for one. */
            if (parse_address_rule(&r, pattern, err, pattern) < 0)
                return -1;
        } else {
            size_t hlen = colon ? (size_t)(colon - pattern) : len;
            memcpy(host, pattern, hlen);
            host[hlen] = '\0';
            if (colon)
                port_text = colon + 1;
            struct allow_addr probe;
            char probe_text[ALLOW_TEXT_MAX + 1];
            snprintf(probe_text, sizeof(probe_text), "%s", host);
            char *slash = strchr(probe_text, '/');
            if (slash)
                *slash = '\0';
            if (slash || allow_addr_parse(probe_text, &probe)) {
                if (parse_address_rule(&r, host, err, pattern) < 0)
                    return -1;
            } else if (strncmp(host, "*.", 2) == 0) {
                if (!name_normalise(host + 2, r.name) || strchr(host + 2, '*'))
                    return error_set(err, EINVAL, "allow_hosts '%s': not a valid domain after '*.'",
                                     pattern);
                r.kind = ALLOW_SUBDOMAINS;
            } else {
                if (!name_normalise(host, r.name))
                    return error_set(err, EINVAL,
                                     "allow_hosts '%s': not a host name, address or '*.domain' "
                                     "(a '*' is allowed only as the first label)",
                                     pattern);
                r.kind = ALLOW_EXACT;
            }
        }
    }
    if (port_text && parse_port(port_text, &r.port) < 0)
        return error_set(err, EINVAL, "allow_hosts '%s': bad port '%s' (1-65535)", pattern,
                         port_text);
    struct allow_rule *grown = realloc(al->rules, (al->count + 1) * sizeof(*grown));
    if (!grown)
        return error_set(err, ENOMEM, "allow_hosts");
    al->rules = grown;
    al->rules[al->count++] = r;
    return 0;
}

void allowlist_free(struct allowlist *al)
{
    free(al->rules);
    al->rules = NULL;
    al->count = 0;
}

int allowlist_load_host_addresses(struct allowlist *al, struct cordon_error *err)
{
    struct ifaddrs *list = NULL;
    if (getifaddrs(&list) < 0)
        return error_set(err, errno, "reading the host's addresses (getifaddrs)");
    for (struct ifaddrs *i = list; i && al->host_addr_count < ALLOW_MAX_HOST_ADDRS;
         i = i->ifa_next) {
        if (!i->ifa_addr ||
            (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
            continue;
        allow_addr_from_sockaddr(i->ifa_addr, &al->host_addrs[al->host_addr_count++]);
    }
    freeifaddrs(list);
    return 0;
}

static bool rule_port_matches(const struct allow_rule *r, int port)
{
    return r->port == 0 || r->port == port;
}

static const struct allow_rule *find_address_rule(const struct allowlist *al,
                                                  const struct allow_addr *a, int port)
{
    for (size_t i = 0; i < al->count; i++) {
        const struct allow_rule *r = &al->rules[i];
        if (r->kind == ALLOW_ADDRESS && rule_port_matches(r, port) &&
            addr_in_prefix(a, &r->addr, r->prefix))
            return r;
    }
    return NULL;
}

static bool name_matches(const struct allow_rule *r, const char *name)
{
    if (r->kind == ALLOW_EXACT)
        return strcmp(r->name, name) == 0;
    if (r->kind != ALLOW_SUBDOMAINS)
        return false;
    size_t n = strlen(name), d = strlen(r->name);
    /* "*.example.test" needs at least one label and a dot in front of the
     * domain: not "example.test", not "evil-example.test". */
    return n > d + 1 && name[n - d - 1] == '.' && strcmp(name + n - d, r->name) == 0;
}

void allowlist_check_request(const struct allowlist *al, const char *host, int port,
                             struct allow_decision *d)
{
    *d = (struct allow_decision){0};
    struct allow_addr a;
    if (allow_addr_parse(host, &a)) {
        const struct allow_rule *r = find_address_rule(al, &a, port);
        char text[INET6_ADDRSTRLEN];
        allow_addr_format(&a, text, sizeof(text));
        if (r) {
            d->allowed = true;
            snprintf(d->reason, sizeof(d->reason), "allowed by rule '%s'", r->text);
        } else {
            snprintf(d->reason, sizeof(d->reason),
                     "denied: no allow_hosts rule lists the address %s port %d (an address "
                     "literal needs an address or CIDR rule)",
                     text, port);
        }
        return;
    }
    char name[ALLOW_NAME_MAX + 1];
    if (!name_normalise(host, name)) {
        snprintf(d->reason, sizeof(d->reason), "denied: '%.200s' is not a valid host name", host);
        return;
    }
    const struct allow_rule *port_mismatch = NULL;
    for (size_t i = 0; i < al->count; i++) {
        const struct allow_rule *r = &al->rules[i];
        if (!name_matches(r, name))
            continue;
        if (rule_port_matches(r, port)) {
            d->allowed = true;
            snprintf(d->reason, sizeof(d->reason), "allowed by rule '%s'", r->text);
            return;
        }
        if (!port_mismatch)
            port_mismatch = r;
    }
    if (port_mismatch)
        snprintf(d->reason, sizeof(d->reason),
                 "denied: rule '%s' allows port %d only, not %d (no allow_hosts rule matches "
                 "%s:%d)",
                 port_mismatch->text, port_mismatch->port, port, name, port);
    else
        snprintf(d->reason, sizeof(d->reason), "denied: no allow_hosts rule matches %s:%d", name,
                 port);
}

struct protected_range {
    const char *net;
    int prefix; /* of the 128-bit form */
    const char *what;
};

static const struct protected_range protected_ranges[] = {
    {"0.0.0.0", 96 + 8, "an unspecified ('this network') address"},
    {"127.0.0.0", 96 + 8, "a loopback address"},
    {"169.254.0.0", 96 + 16, "a link-local address"},
    {"10.0.0.0", 96 + 8, "a private (RFC 1918) address"},
    {"172.16.0.0", 96 + 12, "a private (RFC 1918) address"},
    {"192.168.0.0", 96 + 16, "a private (RFC 1918) address"},
    {"100.64.0.0", 96 + 10, "a shared (carrier-grade NAT) address"},
    {"224.0.0.0", 96 + 4, "a multicast address"},
    {"240.0.0.0", 96 + 4, "a reserved or broadcast address"},
    {"::", 128, "an unspecified address"},
    {"::1", 128, "a loopback address"},
    {"fe80::", 10, "a link-local address"},
    {"fc00::", 7, "a unique local (ULA) address"},
    {"ff00::", 8, "a multicast address"},
    /* NAT64 embeds an IPv4 address; its target cannot be judged here. */
    {"64:ff9b::", 96, "a NAT64 address"},
};

static const char *protected_reason(const struct allowlist *al, const struct allow_addr *a)
{
    for (size_t i = 0; i < ARRAY_SIZE(protected_ranges); i++) {
        struct allow_addr net;
        if (allow_addr_parse(protected_ranges[i].net, &net) &&
            addr_in_prefix(a, &net, protected_ranges[i].prefix))
            return protected_ranges[i].what;
    }
    for (size_t i = 0; i < al->host_addr_count; i++) {
        if (memcmp(a->bytes, al->host_addrs[i].bytes, 16) == 0)
            return "one of the host's own addresses";
    }
    return NULL;
}

void allowlist_check_address(const struct allowlist *al, const struct allow_addr *addr, int port,
                             struct allow_decision *d)
{
    *d = (struct allow_decision){0};
    const char *what = protected_reason(al, addr);
    if (!what) {
        d->allowed = true;
        snprintf(d->reason, sizeof(d->reason), "allowed: public address");
        return;
    }
    const struct allow_rule *r = find_address_rule(al, addr, port);
    if (r) {
        d->allowed = true;
        snprintf(d->reason, sizeof(d->reason), "allowed by rule '%s'", r->text);
        return;
    }
    char text[INET6_ADDRSTRLEN];
    allow_addr_format(addr, text, sizeof(text));
    snprintf(d->reason, sizeof(d->reason),
             "denied: %s is %s; only an address or CIDR rule in allow_hosts allows it "
             "(protection against DNS rebinding)",
             text, what);
}
