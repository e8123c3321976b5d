/* Unit tests for the proxy's HTTP and SOCKS5 parsers. */
#include "net/proxy-parse.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static enum proxy_parse_result http(const char *text, struct http_request *req)
{
    return http_parse_request(text, strlen(text), req);
}

static void test_http(void)
{
    struct http_request *req = malloc(sizeof(*req));
    is_int(http("CONNECT www.example.test:443 HTTP/1.1\r\nHost: x\r\n\r\nTLS", req),
           PROXY_PARSE_DONE, "CONNECT parses");
    ok(req->is_connect, "is CONNECT");
    is_str(req->host, "www.example.test", "CONNECT host");
    is_int(req->port, 443, "CONNECT port");
    is_int(req->head_length, strlen("CONNECT www.example.test:443 HTTP/1.1\r\nHost: x\r\n\r\n"),
           "head length excludes the bytes after it");
    is_int(http("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\n\r\n", req), PROXY_PARSE_DONE,
           "CONNECT to an IPv6 literal");
    is_str(req->host, "2001:db8::1", "IPv6 host without brackets");
    is_int(http("CONNECT www.example.test HTTP/1.1\r\n\r\n", req), PROXY_PARSE_ERROR,
           "CONNECT without a port is refused");
    is_int(req->status, 400, "with 400");
    is_int(http("CONNECT www.example.test:443 HTTP/1.1\r\nHost: x\r\n", req),
           PROXY_PARSE_INCOMPLETE, "incomplete head");

    is_int(http("GET http://Web.Test:8111/a/b?c=d HTTP/1.1\r\nHost: evil.test\r\n"
                "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
                "Accept: */*\r\nConnection: keep-alive\r\n\r\nBODY",
                req),
           PROXY_PARSE_DONE, "absolute-form GET parses");
    ok(!req->is_connect, "not CONNECT");
    is_str(req->host, "Web.Test", "host from the URL");
    is_int(req->port, 8111, "port from the URL");
    is_str(
        req->rewritten,
        "GET /a/b?c=d HTTP/1.1\r\nHost: Web.Test:8111\r\nAccept: */*\r\nConnection: close\r\n\r\n",
        "rewritten to origin-form; Host from the URL; Proxy-* and Connection dropped");
    is_int(http("GET http://web.test HTTP/1.0\r\n\r\n", req), PROXY_PARSE_DONE,
           "no path, default port");
    is_int(req->port, 80, "default port 80");
    is_str(req->rewritten, "GET / HTTP/1.0\r\nHost: web.test\r\nConnection: close\r\n\r\n",
           "path '/' added");
    is_int(http("GET http://web.test?q=1 HTTP/1.1\r\n\r\n", req), PROXY_PARSE_DONE, "query only");
    ok(strncmp(req->rewritten, "GET /?q=1 HTTP/1.1\r\n", 20) == 0, "query gets a '/' in front");

    static const char *const bad[] = {
        "GET /local HTTP/1.1\r\n\r\n",
        "GET https://web.test/ HTTP/1.1\r\n\r\n",
        "GET http://user:pw@web.test/ HTTP/1.1\r\n\r\n",
        "GET http://web.test:99999/ HTTP/1.1\r\n\r\n",
        "GET http://web.test:/ HTTP/1.1\r\n\r\n",
        "GET http://we b.test/ HTTP/1.1\r\n\r\n",
        "get http://web.test/ HTTP/1.1\r\n\r\n",
        "GET http://web.test/ HTTP/2.0\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\n folded\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\nNoColon\r\n\r\n",
        "GET http://web.test/ HTTP/1.1\r\nA: b\nc\r\n\r\n",
        "GET http://[::1/ HTTP/1.1\r\n\r\n",
        "GET  http://web.test/ HTTP/1.1\r\n\r\n",
        "\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ok(http(bad[i], req) == PROXY_PARSE_ERROR && req->status >= 400, "refused (%d %s): %.*s",
           req->status, req->error ? req->error : "", (int)strcspn(bad[i], "\r"), bad[i]);
    }
    char nul[] = "GET http://web.test/ HTTP/1.1\r\nA: \0b\r\n\r\n";
    is_int(http_parse_request(nul, sizeof(nul) - 1, req), PROXY_PARSE_ERROR, "NUL in head");

    size_t big = PROXY_HEAD_MAX + 100;
    char *huge = malloc(big);
    memset(huge, 'a', big);
    memcpy(huge, "GET http://web.test/ HTTP/1.1\r\nX: ", 35);
    is_int(http_parse_request(huge, big, req), PROXY_PARSE_ERROR, "oversized head refused");
    is_int(req->status, 431, "with 431");
    free(huge);
    free(req);
}

static void test_socks(void)
{
    size_t used = 0;
    const char *error = NULL;
    const uint8_t greet[] = {5, 2, 2, 0};
    is_int(socks5_parse_greeting(greet, 4, &used, &error), PROXY_PARSE_DONE, "greeting");
    is_int(used, 4, "greeting length");
    is_int(socks5_parse_greeting(greet, 3, &used, &error), PROXY_PARSE_INCOMPLETE,
           "partial greeting");
    const uint8_t auth_only[] = {5, 1, 2};
    is_int(socks5_parse_greeting(auth_only, 3, &used, &error), PROXY_PARSE_ERROR,
           "no no-auth method");
    const uint8_t v4[] = {4, 1, 0};
    is_int(socks5_parse_greeting(v4, 3, &used, &error), PROXY_PARSE_ERROR, "SOCKS4 refused");

    struct socks5_request req;
    const uint8_t name[] = {5, 1, 0, 3, 8, 'w', 'e', 'b', '.', 't', 'e', 's', 't', 0x1f, 0x90};
    is_int(socks5_parse_request(name, sizeof(name), &req), PROXY_PARSE_DONE, "domain request");
    is_str(req.host, "web.test", "domain");
    is_int(req.port, 8080, "port");
    is_int(req.length, sizeof(name), "length");
    is_int(socks5_parse_request(name, sizeof(name) - 1, &req), PROXY_PARSE_INCOMPLETE,
           "partial request");
    const uint8_t ip4[] = {5, 1, 0, 1, 198, 51, 100, 7, 0, 80};
    is_int(socks5_parse_request(ip4, sizeof(ip4), &req), PROXY_PARSE_DONE, "IPv4 request");
    is_str(req.host, "198.51.100.7", "IPv4 text");
    const uint8_t ip6[] = {5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0,
                           0, 0, 0, 0, 0,    0,    0,    0,    1, 1, 187};
    is_int(socks5_parse_request(ip6, sizeof(ip6), &req), PROXY_PARSE_DONE, "IPv6 request");
    is_str(req.host, "2001:db8:0:0:0:0:0:1", "IPv6 text");
    is_int(req.port, 443, "IPv6 port");
    const uint8_t bind[] = {5, 2, 0, 1, 1, 2, 3, 4, 0, 80};
    is_int(socks5_parse_request(bind, sizeof(bind), &req), PROXY_PARSE_ERROR, "BIND refused");
    is_int(req.reply, SOCKS5_REPLY_COMMAND_UNSUPPORTED, "with 0x07");
    const uint8_t badtype[] = {5, 1, 0, 9, 0, 0, 0, 0, 0, 0};
    is_int(socks5_parse_request(badtype, sizeof(badtype), &req), PROXY_PARSE_ERROR,
           "unknown address type");
    is_int(req.reply, SOCKS5_REPLY_ADDRESS_UNSUPPORTED, "with 0x08");
    const uint8_t badname[] = {5, 1, 0, 3, 3, 'a', '/', 'b', 0, 80};
    is_int(socks5_parse_request(badname, sizeof(badname), &req), PROXY_PARSE_ERROR,
           "invalid characters in a name");
    const uint8_t port0[] = {5, 1, 0, 1, 1, 2, 3, 4, 0, 0};
    is_int(socks5_parse_request(port0, sizeof(port0), &req), PROXY_PARSE_ERROR, "port 0");
}

int main(void)
{
    test_http();
    test_socks();
    return tap_done();
}
