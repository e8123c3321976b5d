/* Unit tests for the allowlist matcher: every pattern form, look-alike
 * domains, ports, CIDR v4/v6, protected ranges and DNS rebinding. */
#include "net/allowlist.h"
#include "tap.h"

#include <string.h>

static struct allowlist make(const char *const *patterns)
{
    struct allowlist al = {0};
    struct cordon_error err = {0};
    for (const char *const *p = patterns; *p; p++) {
        if (allowlist_add(&al, *p, &err) < 0)
            tap_diag("unexpected: %s", err.message);
    }
    return al;
}

static bool request(const struct allowlist *al, const char *host, int port)
{
    struct allow_decision d;
    allowlist_check_request(al, host, port, &d);
    return d.allowed;
}

static bool address(const struct allowlist *al, const char *addr, int port)
{
    struct allow_addr a;
    if (!allow_addr_parse(addr, &a))
        return false;
    struct allow_decision d;
    allowlist_check_address(al, &a, port, &d);
    return d.allowed;
}

static void test_names(void)
{
    static const char *const p[] = {"*.example.test", "api.other.test:443", "Exact.Test.", NULL};
    struct allowlist al = make(p);
    ok(request(&al, "www.example.test", 80), "*.example.test allows a subdomain");
    ok(request(&al, "a.b.example.test", 8080), "*.example.test allows a deeper subdomain");
    ok(!request(&al, "example.test", 80), "*.example.test refuses the bare domain");
    ok(!request(&al, "evil-example.test", 80), "*.example.test refuses evil-example.test");
    ok(!request(&al, "www.evil-example.test", 80), "refuses www.evil-example.test");
    ok(!request(&al, "example.test.evil.test", 80), "refuses example.test.evil.test");
    ok(!request(&al, ".example.test", 80), "refuses an empty first label");
    ok(request(&al, "WWW.Example.TEST.", 80), "names compare case-insensitively, trailing dot");
    ok(request(&al, "api.other.test", 443), "exact name with its port");
    ok(!request(&al, "api.other.test", 80), "exact name, other port refused");
    ok(!request(&al, "x.api.other.test", 443), "an exact name does not cover subdomains");
    ok(request(&al, "exact.test", 1), "pattern normalised (case, trailing dot)");
    ok(!request(&al, "exact.test\n", 80), "control characters refused");
    ok(!request(&al, "exact.test%00", 80), "percent-encoding is not decoded");
    ok(!request(&al, "", 80), "empty host refused");
    struct allow_decision d;
    allowlist_check_request(&al, "evil-example.test", 80, &d);
    ok(strstr(d.reason, "no allow_hosts rule matches evil-example.test:80") != NULL,
       "the refusal names the host and port: %s", d.reason);
    allowlist_check_request(&al, "api.other.test", 80, &d);
    ok(strstr(d.reason, "'api.other.test:443' allows port 443 only") != NULL,
       "a port refusal names the rule: %s", d.reason);
    allowlist_check_request(&al, "www.example.test", 80, &d);
    ok(strstr(d.reason, "'*.example.test'") != NULL, "an allow names the rule: %s", d.reason);
    allowlist_free(&al);
}

static void test_addresses(void)
{
    static const char *const p[] = {"198.51.100.7",        "203.0.113.0/24:8080", "10.1.0.0/16",
                                    "[2001:db8::/32]:443", "2001:db8:ffff::1",    NULL};
    struct allowlist al = make(p);
    ok(request(&al, "198.51.100.7", 80), "exact IPv4 address");
    ok(!request(&al, "198.51.100.8", 80), "neighbouring IPv4 address refused");
    ok(request(&al, "203.0.113.200", 8080), "IPv4 CIDR with port");
    ok(!request(&al, "203.0.113.200", 80), "IPv4 CIDR, other port refused");
    ok(!request(&al, "203.0.114.1", 8080), "outside the IPv4 CIDR refused");
    ok(request(&al, "2001:db8:1::5", 443), "IPv6 CIDR with port");
    ok(request(&al, "[2001:db8:1::5]", 443), "bracketed IPv6 literal");
    ok(!request(&al, "2001:db9::1", 443), "outside the IPv6 CIDR refused");
    ok(request(&al, "2001:db8:ffff::1", 22), "bare IPv6 address, any port");
    ok(!request(&al, "127.1", 80), "inet_aton shorthand is not an address (and not listed)");
    ok(!request(&al, "0x7f000001", 80), "hex address form is not an address");
    ok(request(&al, "10.1.2.3", 80), "private CIDR listed explicitly");
    ok(address(&al, "10.1.2.3", 80), "listed private range passes the address check");
    ok(!address(&al, "10.2.0.1", 80), "unlisted private address refused after resolution");
    allowlist_free(&al);
}

static void test_protected(void)
{
    static const char *const p[] = {"*.example.test", "rebind.test", NULL};
    struct allowlist al = make(p);
    ok(request(&al, "rebind.test", 80), "name listed");
    ok(!address(&al, "127.0.0.1", 80), "DNS rebinding: a listed name resolving to 127.0.0.1");
    ok(!address(&al, "127.3.4.5", 80), "127.0.0.0/8");
    ok(!address(&al, "0.0.0.0", 80), "0.0.0.0 (reaches the local host)");
    ok(!address(&al, "::1", 80), "::1");
    ok(!address(&al, "::", 80), "::");
    ok(!address(&al, "::ffff:127.0.0.1", 80), "IPv4-mapped loopback");
    ok(!address(&al, "169.254.169.254", 80), "link-local (cloud metadata)");
    ok(!address(&al, "fe80::1", 80), "IPv6 link-local");
    ok(!address(&al, "10.0.0.1", 80), "RFC 1918 10/8");
    ok(!address(&al, "172.16.5.4", 80), "RFC 1918 172.16/12");
    ok(address(&al, "172.32.0.1", 80), "172.32.0.1 is outside 172.16/12");
    ok(!address(&al, "192.168.1.1", 80), "RFC 1918 192.168/16");
    ok(!address(&al, "fd12::1", 80), "ULA");
    ok(!address(&al, "224.0.0.1", 80), "multicast");
    ok(address(&al, "198.51.100.1", 80), "a public address passes");
    ok(address(&al, "2001:db8::1", 80), "a public IPv6 address passes");
    struct allow_addr a;
    allow_addr_parse("127.0.0.1", &a);
    struct allow_decision d;
    allowlist_check_address(&al, &a, 80, &d);
    ok(strstr(d.reason, "loopback") && strstr(d.reason, "rebinding"), "the refusal says why: %s",
       d.reason);
    /* The host's own addresses count as protected. */
    allow_addr_parse("198.51.100.99", &al.host_addrs[al.host_addr_count++]);
    ok(!address(&al, "198.51.100.99", 80), "one of the host's own addresses");
    allowlist_free(&al);

    static const char *const q[] = {"127.0.0.1:8111", "[::1]", NULL};
    al = make(q);
    ok(address(&al, "127.0.0.1", 8111), "loopback passes when listed with its port");
    ok(!address(&al, "127.0.0.1", 8112), "listed loopback, other port refused");
    ok(address(&al, "::1", 22), "::1 listed");
    allowlist_free(&al);
}

static void test_bad_patterns(void)
{
    static const char *const bad[] = {"",
                                      "*",
                                      "*.",
                                      "a.*.test",
                                      "exa mple.test",
                                      "host:0",
                                      "host:65536",
                                      "host:http",
                                      "10.0.0.0/33",
                                      "::1/129",
                                      "[::1",
                                      "[::1]x",
                                      "1.2.3.4/",
                                      "a..b",
                                      "*example.test",
                                      "[nothost]:80",
                                      NULL};
    for (const char *const *p = bad; *p; p++) {
        struct allowlist al = {0};
        struct cordon_error err = {0};
        ok(allowlist_add(&al, *p, &err) < 0 && strstr(err.message, "allow_hosts"),
           "pattern '%s' refused: %s", *p, err.message);
        allowlist_free(&al);
    }
    struct allowlist al = {0};
    struct cordon_error err = {0};
    ok(allowlist_add(&al, "*.example.test:443", &err) == 0 && al.rules[0].port == 443 &&
           al.rules[0].kind == ALLOW_SUBDOMAINS,
       "*.domain:port parses");
    allowlist_free(&al);
}

static void test_presets(void)
{
    static const char *const pats[] = {"@npm", "@github", NULL};
    struct allowlist al = make(pats);
    ok(request(&al, "registry.npmjs.org", 443), "@npm: registry.npmjs.org:443");
    ok(!request(&al, "registry.npmjs.org", 80), "@npm: not port 80");
    ok(!request(&al, "evil.registry.npmjs.org", 443), "@npm: no subdomains");
    ok(request(&al, "codeload.github.com", 443), "@github: codeload.github.com:443");
    ok(!request(&al, "gist.github.com", 443), "@github: not gist.github.com");
    ok(request(&al, "github.com", 22), "@github: github.com:22 (git over ssh)");
    ok(request(&al, "ssh.github.com", 443), "@github: ssh.github.com:443 (ssh on 443)");
    ok(!request(&al, "github.com", 2222), "@github: not github.com:2222");
    ok(!request(&al, "gist.github.com", 22), "@github: not gist.github.com:22");
    ok(!request(&al, "api.github.com", 22), "@github: not api.github.com:22");
    struct allow_decision d;
    allowlist_check_request(&al, "api.github.com", 443, &d);
    ok(d.allowed && strstr(d.reason, "from @github"), "the rule names its preset: %s", d.reason);
    allowlist_free(&al);
    struct allowlist bad = {0};
    struct cordon_error err = {0};
    ok(allowlist_add(&bad, "@nope", &err) < 0 && strstr(err.message, "unknown preset"),
       "unknown preset refused: %s", err.message);
    ok(allowlist_add(&bad, "@npmx", &err) < 0, "a preset name is matched whole");
    allowlist_free(&bad);
    for (const char *const *n =
             (const char *const[]){"@npm", "@pypi", "@crates", "@go", "@debian", "@github", NULL};
         *n; n++)
        ok(allowlist_preset(*n) && allowlist_preset(*n)[0], "preset %s has hosts", *n);
}

int main(void)
{
    test_presets();
    test_names();
    test_addresses();
    test_protected();
    test_bad_patterns();
    return tap_done();
}
