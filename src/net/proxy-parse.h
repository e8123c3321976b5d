/* Parsers for what a sandboxed client sends the allowlist proxy: an HTTP/1.x
 * request head (CONNECT authority-form or absolute-form http:// URLs) and
 * the SOCKS5 greeting and CONNECT request. Untrusted input from inside the
 * sandbox; pure functions over a bounded buffer, no allocation, fuzzed by
 * tests/fuzz/fuzz-proxy-parse.c. Host context (the proxy process). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PROXY_HOST_MAX 255
#define PROXY_HEAD_MAX 16384 /* a request head larger than this is refused */

enum proxy_parse_result {
    PROXY_PARSE_INCOMPLETE = 0,
    PROXY_PARSE_DONE = 1,
    PROXY_PARSE_ERROR = -1,
};

struct http_request {
    bool is_connect;
    char host[PROXY_HOST_MAX + 1]; /* without brackets for IPv6 */
    int port;
    size_t head_length; /* bytes of the head, including the blank line */
    /* Absolute-form requests: the head rewritten for the origin server
     * (origin-form target, Proxy-* headers removed, "Connection: close"). */
    char rewritten[PROXY_HEAD_MAX + 64];
    size_t rewritten_length;
    int status; /* on PROXY_PARSE_ERROR: the HTTP status to answer with */
    const char *error;
};

/* Parses the head at BUF[0..LEN). INCOMPLETE: read more (unless LEN reached
 * PROXY_HEAD_MAX, which is an error). */
enum proxy_parse_result http_parse_request(const char *buf, size_t len, struct http_request *req);

/* Splits "host:port", "[v6]:port" or "host" (DEFAULT_PORT) into its parts. */
bool proxy_split_authority(const char *text, size_t len, int default_port,
                           char host[PROXY_HOST_MAX + 1], int *port);

/* SOCKS5 (RFC 1928), no authentication. */
#define SOCKS5_REPLY_SUCCEEDED           0x00
#define SOCKS5_REPLY_GENERAL_FAILURE     0x01
#define SOCKS5_REPLY_NOT_ALLOWED         0x02
#define SOCKS5_REPLY_HOST_UNREACHABLE    0x04
#define SOCKS5_REPLY_CONNECTION_REFUSED  0x05
#define SOCKS5_REPLY_COMMAND_UNSUPPORTED 0x07
#define SOCKS5_REPLY_ADDRESS_UNSUPPORTED 0x08

struct socks5_request {
    char host[PROXY_HOST_MAX + 1]; /* a name, or an address in text form */
    int port;
    size_t length; /* bytes consumed */
    int reply;     /* on PROXY_PARSE_ERROR: the reply code to send */
    const char *error;
};

/* The greeting: version 5 and a method list that offers "no
 * authentication". *LENGTH: bytes consumed. */
enum proxy_parse_result socks5_parse_greeting(const uint8_t *buf, size_t len, size_t *length,
                                              const char **error);
enum proxy_parse_result socks5_parse_request(const uint8_t *buf, size_t len,
                                             struct socks5_request *req);

/* Cordon's own answer to a refused HTTP request (the proxy's, and the TLS
 * interception's inside the client's TLS): BODY gets "cordon: network:
 * REASON" and a newline, cut to BODY_SIZE - 1 bytes; HEAD the status line
 * and headers for it. *HEAD_LENGTH and *BODY_LENGTH get their lengths. */
void http_refusal_format(int status, const char *reason, char *head, size_t head_size,
                         size_t *head_length, char *body, size_t body_size, size_t *body_length);
