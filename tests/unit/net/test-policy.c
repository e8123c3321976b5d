/* Unit tests for the network policy's command-line forms and the proxy
 * environment. */
#include "net/net.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void test_publish(void)
{
    struct net_publish p;
    struct cordon_error err = {0};
    ok(net_publish_parse("8080:80", &p, &err) == 0 && strcmp(p.bind, "127.0.0.1") == 0 &&
           p.host_port == 8080 && p.guest_port == 80,
       "HOST:GUEST binds 127.0.0.1");
    ok(net_publish_parse("0.0.0.0:8080:80", &p, &err) == 0 && strcmp(p.bind, "0.0.0.0") == 0,
       "BIND:HOST:GUEST");
    ok(net_publish_parse("[::1]:8080:80", &p, &err) == 0 && strcmp(p.bind, "::1") == 0 &&
           p.host_port == 8080,
       "[v6]:HOST:GUEST");
    static const char *const bad[] = {"80",       "a:80",     "8080:0",  "8080:70000",
                                      "host:1:2", "[::1:1:2", "1:2:3:4", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        ok(net_publish_parse(bad[i], &p, &err) < 0 && strstr(err.message, "publish"),
           "'%s' refused: %s", bad[i], err.message);
}

static void test_mode(void)
{
    enum net_mode m;
    struct cordon_error err = {0};
    ok(net_mode_parse("allowlist", &m, &err) == 0 && m == NET_MODE_ALLOWLIST, "allowlist");
    ok(net_mode_parse("open", &m, &err) == 0 && m == NET_MODE_OPEN, "open");
    ok(net_mode_parse("deny", &m, &err) == 0 && m == NET_MODE_DENY, "deny");
    ok(net_mode_parse("none", &m, &err) < 0 && strstr(err.message, "deny, allowlist or open"),
       "unknown mode refused: %s", err.message);
}

static void test_env(void)
{
    char **env = calloc(4, sizeof(char *));
    env[0] = strdup("PATH=/bin");
    env[1] = strdup("HTTP_PROXY=http://host-proxy:1");
    struct net_policy policy = {.mode = NET_MODE_ALLOWLIST};
    struct cordon_error err = {0};
    ok(net_env_add(&policy, &env, &err) == 0, "env added");
    int http = 0, https = 0, all = 0, no = 0, lower = 0, host_proxy = 0;
    for (char **e = env; *e; e++) {
        http += strcmp(*e, "HTTP_PROXY=http://127.0.0.1:3128") == 0;
        https += strcmp(*e, "HTTPS_PROXY=http://127.0.0.1:3128") == 0;
        all += strcmp(*e, "ALL_PROXY=socks5h://127.0.0.1:3128") == 0;
        no += strcmp(*e, "NO_PROXY=localhost,127.0.0.1") == 0;
        lower += strcmp(*e, "https_proxy=http://127.0.0.1:3128") == 0;
        host_proxy += strstr(*e, "host-proxy") != NULL;
    }
    ok(http == 1 && https == 1 && all == 1 && no == 1 && lower == 1,
       "HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, NO_PROXY and lower-case forms, once each");
    ok(host_proxy == 0, "the host's proxy setting is replaced");
    for (char **e = env; *e; e++)
        free(*e);
    free(env);
}

int main(void)
{
    test_publish();
    test_mode();
    test_env();
    return tap_done();
}
