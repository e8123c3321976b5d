/* Unit tests for the egress secrets' substitution (net/secrets.h): bound
 * hosts, leaks to other hosts, the header rule, look-alike placeholders,
 * sizes, and loading values (file, command, bad values). */
#include "net/secrets.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

static const char *const api_hosts[] = {"api.test"};
static const char *const any_hosts[] = {"*.test"};

static struct net_secret spec_api = {.name = "API",
                                     .from = "env:CORDON_TEST_SECRET_API",
                                     .header = "Authorization",
                                     .plain_http = true,
                                     .hosts = api_hosts,
                                     .host_count = 1};
static struct net_secret spec_any = {.name = "ANY",
                                     .from = "env:CORDON_TEST_SECRET_ANY",
                                     .plain_http = true,
                                     .hosts = any_hosts,
                                     .host_count = 1};

static enum secrets_verdict run(const struct proxy_secret *list, size_t n, const char *host,
                                const char *head, char *out, size_t size, char *reason)
{
    size_t len = 0;
    enum secrets_verdict v =
        secrets_apply(list, n, host, 80, true, head, strlen(head), out, size, &len, reason, 512);
    if (out && v == SECRETS_SUBST)
        out[len] = '\0';
    return v;
}

int main(void)
{
    struct cordon_error err = {0};
    ok(net_secret_placeholder("API", spec_api.placeholder, &err) == 0, "placeholder made");
    ok(net_secret_placeholder("ANY", spec_any.placeholder, &err) == 0, "second placeholder made");
    ok(strncmp(spec_api.placeholder, "cordon-secret-API-", 18) == 0 &&
           strlen(spec_api.placeholder) == 18 + 32,
       "placeholder is cordon-secret-NAME-<32 hex>: %s", spec_api.placeholder);
    char again[NET_PLACEHOLDER_MAX];
    net_secret_placeholder("API", again, &err);
    ok(strcmp(again, spec_api.placeholder) != 0, "a new placeholder each time");

    setenv("CORDON_TEST_SECRET_API", "real-api-value", 1);
    setenv("CORDON_TEST_SECRET_ANY", "real-any-value\n", 1);
    struct proxy_secret list[2];
    ok(proxy_secret_load(&spec_api, &list[0], &err) == 0, "env: value loads");
    ok(proxy_secret_load(&spec_any, &list[1], &err) == 0, "env: value with a newline loads");
    is_str(list[1].value, "real-any-value", "one trailing newline is dropped");

    char head[512], out[4096], reason[512];
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n",
             spec_api.placeholder);
    ok(run(list, 2, "api.test", head, out, sizeof(out), reason) == SECRETS_SUBST,
       "bound host: substituted");
    is_str(out, "GET / HTTP/1.1\r\nAuthorization: Bearer real-api-value\r\n\r\n",
           "the value replaces the placeholder exactly");
    ok(run(list, 2, "API.TEST", head, out, sizeof(out), reason) == SECRETS_SUBST,
       "host names match case-insensitively");
    ok(run(list, 2, "evil.test", head, NULL, 0, reason) == SECRETS_LEAK, "other host: a leak");
    ok(strstr(reason, "secret API") && !strstr(reason, "real-api-value"),
       "the reason names the secret, never the value: %s", reason);
    ok(run(list, 2, "api.test.evil", head, NULL, 0, reason) == SECRETS_LEAK,
       "look-alike host: a leak");

    snprintf(head, sizeof(head), "GET /?t=%s HTTP/1.1\r\n\r\n", spec_api.placeholder);
    ok(run(list, 2, "api.test", head, NULL, 0, reason) == SECRETS_LEAK,
       "header rule: placeholder in the request line refused");
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nX-Authorization: %s\r\n\r\n",
             spec_api.placeholder);
    ok(run(list, 2, "api.test", head, NULL, 0, reason) == SECRETS_LEAK,
       "header rule: a header that only ends in the name is refused");
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\n%s: x\r\n\r\n", spec_api.placeholder);
    ok(run(list, 2, "api.test", head, NULL, 0, reason) == SECRETS_LEAK,
       "header rule: placeholder as a header name refused");
    snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nauthorization: %s\r\nX: %s\r\n\r\n",
             spec_api.placeholder, spec_api.placeholder);
    ok(run(list, 2, "api.test", head, NULL, 0, reason) == SECRETS_LEAK,
       "header rule: one good and one stray occurrence is refused");

    snprintf(head, sizeof(head), "POST /%s HTTP/1.1\r\nX: %s%s\r\n\r\n", spec_any.placeholder,
             spec_any.placeholder, spec_any.placeholder);
    ok(run(list, 2, "x.test", head, out, sizeof(out), reason) == SECRETS_SUBST,
       "no header rule: anywhere in the head");
    is_str(out, "POST /real-any-value HTTP/1.1\r\nX: real-any-valuereal-any-value\r\n\r\n",
           "every occurrence replaced");

    char partial[NET_PLACEHOLDER_MAX];
    snprintf(partial, sizeof(partial), "%.*s", (int)strlen(spec_any.placeholder) - 1,
             spec_any.placeholder);
    snprintf(head, sizeof(head), "GET /%s HTTP/1.1\r\n\r\n", partial);
    ok(run(list, 2, "evil.other", head, NULL, 0, reason) == SECRETS_NONE,
       "a cut placeholder is no placeholder (nothing to leak)");
    ok(run(list, 2, "evil.other", "GET / HTTP/1.1\r\n\r\n", NULL, 0, reason) == SECRETS_NONE,
       "no placeholder: untouched");

    snprintf(head, sizeof(head), "GET /%s HTTP/1.1\r\n\r\n", spec_any.placeholder);
    ok(run(list, 2, "x.test", head, out, 20, reason) == SECRETS_TOOBIG,
       "a head that does not fit once filled is refused");

    spec_any.plain_http = false;
    snprintf(head, sizeof(head), "GET /%s HTTP/1.1\r\n\r\n", spec_any.placeholder);
    ok(run(list, 2, "x.test", head, NULL, 0, reason) == SECRETS_LEAK && strstr(reason, "cleartext"),
       "without plain_http a cleartext request is refused: %s", reason);
    size_t n0 = 0;
    ok(secrets_apply(list, 2, "x.test", 443, false, head, strlen(head), out, sizeof(out), &n0,
                     reason, sizeof(reason)) == SECRETS_SUBST,
       "... and substituted when the request is not cleartext");
    spec_any.plain_http = true;

    /* Loading: file, command, bad values. */
    char path[] = "/tmp/cordon-test-secret-XXXXXX";
    int fd = mkstemp(path);
    ok(fd >= 0 && write(fd, "from-file\r\n", 11) == 11, "secret file written");
    close(fd);
    char from[128];
    snprintf(from, sizeof(from), "file:%s", path);
    struct net_secret spec_file = {.name = "F", .from = from, .hosts = api_hosts, .host_count = 1};
    struct proxy_secret loaded;
    ok(proxy_secret_load(&spec_file, &loaded, &err) == 0 && strcmp(loaded.value, "from-file") == 0,
       "file: value loads, CRLF dropped");
    proxy_secret_free(&loaded);
    fd = open(path, O_WRONLY | O_TRUNC);
    ok(fd >= 0 && write(fd, "a\nb", 3) == 3, "secret file with a line break");
    close(fd);
    ok(proxy_secret_load(&spec_file, &loaded, &err) < 0 && strstr(err.message, "line break") &&
           !strstr(err.message, "a\nb"),
       "a value with a line break is refused, without the value: %s", err.message);
    unlink(path);
    struct net_secret spec_cmd = {
        .name = "C", .from = "command:echo from-command", .hosts = api_hosts, .host_count = 1};
    ok(proxy_secret_load(&spec_cmd, &loaded, &err) == 0 &&
           strcmp(loaded.value, "from-command") == 0,
       "command: value loads");
    proxy_secret_free(&loaded);
    struct net_secret spec_fail = {
        .name = "C", .from = "command:exit 3", .hosts = api_hosts, .host_count = 1};
    ok(proxy_secret_load(&spec_fail, &loaded, &err) < 0 && strstr(err.message, "exit status 3"),
       "a failing command is an error: %s", err.message);
    struct net_secret spec_big = {.name = "C",
                                  .from = "command:head -c 9000 /dev/zero | tr '\\0' a",
                                  .hosts = api_hosts,
                                  .host_count = 1};
    ok(proxy_secret_load(&spec_big, &loaded, &err) < 0 && strstr(err.message, "longer than"),
       "a value over 8192 bytes is refused: %s", err.message);
    struct net_secret spec_empty = {
        .name = "E", .from = "command:true", .hosts = api_hosts, .host_count = 1};
    ok(proxy_secret_load(&spec_empty, &loaded, &err) < 0 && strstr(err.message, "empty"),
       "an empty value is refused");
    proxy_secret_free(&list[0]);
    proxy_secret_free(&list[1]);
    return tap_done();
}
