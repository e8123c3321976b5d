/* libFuzzer target for what the sandbox sends the allowlist proxy: HTTP
 * request heads, SOCKS5 greetings and requests, and (as strings) allow_hosts
 * patterns and host names through the matcher. The first byte picks the
 * parser. Any bytes must give a result or an error, never a crash, overread
 * or leak. Built by scripts/fuzz.sh with clang; replayed over the seed
 * corpus in every normal test run by fuzz-replay.c. */
#include "net/allowlist.h"
#include "net/proxy-parse.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_http(const uint8_t *data, size_t size)
{
    struct http_request *req = malloc(sizeof(*req));
    if (!req)
        return;
    /* An exact-size heap copy, so ASan sees any read past the end. */
    char *copy = malloc(size ? size : 1);
    if (copy) {
        memcpy(copy, data, size);
        if (http_parse_request(copy, size, req) == PROXY_PARSE_DONE && !req->is_connect &&
            req->rewritten_length >= sizeof(req->rewritten))
            abort();
        free(copy);
    }
    free(req);
}

static void fuzz_socks(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return;
    memcpy(copy, data, size);
    size_t used = 0;
    const char *error = NULL;
    if (socks5_parse_greeting(copy, size, &used, &error) == PROXY_PARSE_DONE && used > size)
        abort();
    struct socks5_request req;
    if (socks5_parse_request(copy, size, &req) == PROXY_PARSE_DONE && req.length > size)
        abort();
    free(copy);
}

static void fuzz_allowlist(const uint8_t *data, size_t size)
{
    /* "pattern\nhost\nport": patterns are configuration, hosts come from
     * the sandbox. */
    char *text = malloc(size + 1);
    if (!text)
        return;
    memcpy(text, data, size);
    text[size] = '\0';
    char *host = strchr(text, '\n');
    if (host)
        *host++ = '\0';
    char *port_text = host ? strchr(host, '\n') : NULL;
    if (port_text)
        *port_text++ = '\0';
    struct allowlist al = {0};
    struct cordon_error err = {0};
    (void)allowlist_add(&al, text, &err);
    if (host) {
        struct allow_decision d;
        int port = port_text ? atoi(port_text) & 0xffff : 80;
        allowlist_check_request(&al, host, port, &d);
        struct allow_addr a;
        if (allow_addr_parse(host, &a))
            allowlist_check_address(&al, &a, port, &d);
        char h[PROXY_HOST_MAX + 1];
        int p;
        (void)proxy_split_authority(host, strlen(host), 80, h, &p);
    }
    allowlist_free(&al);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    switch (data[0] % 3) {
    case 0:
        fuzz_http(data + 1, size - 1);
        break;
    case 1:
        fuzz_socks(data + 1, size - 1);
        break;
    default:
        fuzz_allowlist(data + 1, size - 1);
        break;
    }
    return 0;
}
