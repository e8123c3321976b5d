/* HTTP proxy request heads and SOCKS5 messages from inside the sandbox.
 * Untrusted input; every length is checked against the buffer before use.
 * Host context (the proxy process). */
#include "net/proxy-parse.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char *find_head_end(const char *buf, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++) {
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n')
            return buf + i + 4;
    }
    return NULL;
}

static enum proxy_parse_result http_error(struct http_request *req, int status, const char *why)
{
    req->status = status;
    req->error = why;
    return PROXY_PARSE_ERROR;
}

bool proxy_split_authority(const char *text, size_t len, int default_port,
                           char host[PROXY_HOST_MAX + 1], int *port)
{
    const char *host_start = text, *host_end, *port_start = NULL;
    const char *end = text + len;
    if (len == 0)
        return false;
    if (text[0] == '[') {
        const char *close = memchr(text, ']', len);
        if (!close)
            return false;
        host_start = text + 1;
        host_end = close;
        if (close + 1 < end) {
            if (close[1] != ':')
                return false;
            port_start = close + 2;
        }
    } else {
        const char *colon = memchr(text, ':', len);
        host_end = colon ? colon : end;
        if (colon)
            port_start = colon + 1;
    }
    size_t hlen = (size_t)(host_end - host_start);
    if (hlen == 0 || hlen > PROXY_HOST_MAX)
        return false;
    for (const char *p = host_start; p < host_end; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(isalnum(c) || c == '.' || c == '-' || c == '_' || (text[0] == '[' && c == ':')))
            return false;
    }
    memcpy(host, host_start, hlen);
    host[hlen] = '\0';
    if (!port_start) {
        if (default_port <= 0)
            return false;
        *port = default_port;
        return true;
    }
    if (port_start >= end || end - port_start > 5)
        return false;
    int v = 0;
    for (const char *p = port_start; p < end; p++) {
        if (!isdigit((unsigned char)*p))
            return false;
        v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 65535)
        return false;
    *port = v;
    return true;
}

static bool header_is(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);
    return len > n && line[n] == ':' && strncasecmp(line, name, n) == 0;
}

/* Appends to req->rewritten; false when it would not fit. */
static bool append(struct http_request *req, const char *data, size_t len)
{
    if (req->rewritten_length + len >= sizeof(req->rewritten))
        return false;
    memcpy(req->rewritten + req->rewritten_length, data, len);
    req->rewritten_length += len;
    req->rewritten[req->rewritten_length] = '\0';
    return true;
}

enum proxy_parse_result http_parse_request(const char *buf, size_t len, struct http_request *req)
{
    memset(req, 0, sizeof(*req));
    if (len > PROXY_HEAD_MAX)
        len = PROXY_HEAD_MAX;
    const char *end = find_head_end(buf, len);
    if (!end) {
        if (len >= PROXY_HEAD_MAX)
            return http_error(req, 431, "request head too large");
        /* A head must be text: refuse binary early rather than buffering it. */
        if (memchr(buf, '\0', len))
            return http_error(req, 400, "NUL byte in request head");
        return PROXY_PARSE_INCOMPLETE;
    }
    req->head_length = (size_t)(end - buf);
    if (memchr(buf, '\0', req->head_length))
        return http_error(req, 400, "NUL byte in request head");

    /* Request line: METHOD SP TARGET SP HTTP/1.x CRLF */
    const char *line_end = memchr(buf, '\r', req->head_length);
    if (line_end[1] != '\n' || memchr(buf, '\n', (size_t)(line_end - buf)))
        return http_error(req, 400, "malformed request line");
    const char *sp1 = memchr(buf, ' ', (size_t)(line_end - buf));
    if (!sp1 || sp1 == buf || sp1 - buf > 16)
        return http_error(req, 400, "malformed request line");
    for (const char *p = buf; p < sp1; p++) {
        if (!isupper((unsigned char)*p))
            return http_error(req, 400, "malformed method");
    }
    const char *target = sp1 + 1;
    const char *sp2 = memchr(target, ' ', (size_t)(line_end - target));
    if (!sp2 || sp2 == target)
        return http_error(req, 400, "malformed request line");
    const char *version = sp2 + 1;
    size_t version_len = (size_t)(line_end - version);
    if (version_len != 8 || strncmp(version, "HTTP/1.", 7) != 0 ||
        (version[7] != '0' && version[7] != '1'))
        return http_error(req, 400, "unsupported HTTP version");
    size_t method_len = (size_t)(sp1 - buf);
    size_t target_len = (size_t)(sp2 - target);

    if (method_len == 7 && strncmp(buf, "CONNECT", 7) == 0) {
        req->is_connect = true;
        if (!proxy_split_authority(target, target_len, 0, req->host, &req->port))
            return http_error(req, 400, "CONNECT needs host:port");
        return PROXY_PARSE_DONE;
    }
    if (target_len >= 8 && strncasecmp(target, "https://", 8) == 0)
        return http_error(req, 400, "https:// URLs go through CONNECT");
    if (target_len < 7 || strncasecmp(target, "http://", 7) != 0)
        return http_error(req, 400, "not a proxy request (expected an absolute http:// URL)");
    const char *authority = target + 7;
    const char *target_end = target + target_len;
    const char *path = authority;
    while (path < target_end && *path != '/' && *path != '?' && *path != '#')
        path++;
    if (memchr(authority, '@', (size_t)(path - authority)))
        return http_error(req, 400, "credentials in the URL are not forwarded");
    if (!proxy_split_authority(authority, (size_t)(path - authority), 80, req->host, &req->port))
        return http_error(req, 400, "malformed host in URL");

    /* Origin-form head for the server. Host comes from the URL that was
     * checked, never from a header the client chose. */
    bool fits = append(req, buf, method_len + 1);
    if (path == target_end || *path != '/')
        fits = fits && append(req, "/", 1);
    fits = fits && append(req, path, (size_t)(target_end - path)) && append(req, " ", 1) &&
           append(req, version, version_len) && append(req, "\r\nHost: ", 8) &&
           append(req, authority, (size_t)(path - authority)) && append(req, "\r\n", 2);
    const char *line = line_end + 2;
    const char *head_end = buf + req->head_length - 2; /* the final CRLF */
    while (fits && line < head_end) {
        const char *eol = memchr(line, '\r', (size_t)(head_end - line));
        if (!eol || eol[1] != '\n')
            return http_error(req, 400, "bare CR in header");
        size_t llen = (size_t)(eol - line);
        if (llen == 0 || line[0] == ' ' || line[0] == '\t' || !memchr(line, ':', llen))
            return http_error(req, 400, "malformed header line");
        if (memchr(line, '\n', llen))
            return http_error(req, 400, "bare LF in header");
        if (!header_is(line, llen, "Host") && !header_is(line, llen, "Proxy-Connection") &&
            !header_is(line, llen, "Proxy-Authorization") && !header_is(line, llen, "Connection") &&
            !header_is(line, llen, "Keep-Alive"))
            fits = append(req, line, llen + 2);
        line = eol + 2;
    }
    /* One request per connection: a second request on a kept-alive
     * connection could name another host than the one checked. */
    fits = fits && append(req, "Connection: close\r\n\r\n", 21);
    if (!fits)
        return http_error(req, 431, "request head too large");
    return PROXY_PARSE_DONE;
}

enum proxy_parse_result socks5_parse_greeting(const uint8_t *buf, size_t len, size_t *length,
                                              const char **error)
{
    if (len < 2)
        return PROXY_PARSE_INCOMPLETE;
    if (buf[0] != 5) {
        *error = "not SOCKS version 5";
        return PROXY_PARSE_ERROR;
    }
    size_t n = buf[1];
    if (len < 2 + n)
        return PROXY_PARSE_INCOMPLETE;
    *length = 2 + n;
    if (!memchr(buf + 2, 0, n)) {
        *error = "client offers no method without authentication";
        return PROXY_PARSE_ERROR;
    }
    return PROXY_PARSE_DONE;
}

static enum proxy_parse_result socks_error(struct socks5_request *req, int reply, const char *why)
{
    req->reply = reply;
    req->error = why;
    return PROXY_PARSE_ERROR;
}

enum proxy_parse_result socks5_parse_request(const uint8_t *buf, size_t len,
                                             struct socks5_request *req)
{
    memset(req, 0, sizeof(*req));
    if (len < 5)
        return PROXY_PARSE_INCOMPLETE;
    if (buf[0] != 5 || buf[2] != 0)
        return socks_error(req, SOCKS5_REPLY_GENERAL_FAILURE, "malformed SOCKS5 request");
    size_t need;
    switch (buf[3]) {
    case 1:
        need = 4 + 4 + 2;
        break;
    case 3:
        need = 4 + 1 + (size_t)buf[4] + 2;
        break;
    case 4:
        need = 4 + 16 + 2;
        break;
    default:
        return socks_error(req, SOCKS5_REPLY_ADDRESS_UNSUPPORTED, "unknown address type");
    }
    if (len < need)
        return PROXY_PARSE_INCOMPLETE;
    req->length = need;
    if (buf[1] != 1)
        return socks_error(req, SOCKS5_REPLY_COMMAND_UNSUPPORTED, "only CONNECT is supported");
    if (buf[3] == 1) {
        snprintf(req->host, sizeof(req->host), "%u.%u.%u.%u", buf[4], buf[5], buf[6], buf[7]);
    } else if (buf[3] == 4) {
        int n = 0;
        for (int i = 0; i < 16; i += 2)
            n += snprintf(req->host + n, sizeof(req->host) - (size_t)n, "%s%x", i ? ":" : "",
                          (unsigned)(buf[4 + i] << 8 | buf[5 + i]));
    } else {
        size_t nlen = buf[4];
        if (nlen == 0)
            return socks_error(req, SOCKS5_REPLY_GENERAL_FAILURE, "empty host name");
        for (size_t i = 0; i < nlen; i++) {
            unsigned char c = buf[5 + i];
            if (!(isalnum(c) || c == '.' || c == '-' || c == '_' || c == ':'))
                return socks_error(req, SOCKS5_REPLY_GENERAL_FAILURE, "invalid host name");
        }
        memcpy(req->host, buf + 5, nlen);
        req->host[nlen] = '\0';
    }
    req->port = buf[need - 2] << 8 | buf[need - 1];
    if (req->port == 0)
        return socks_error(req, SOCKS5_REPLY_GENERAL_FAILURE, "port 0");
    return PROXY_PARSE_DONE;
}

void http_refusal_format(int status, const char *reason, char *head, size_t head_size,
                         size_t *head_length, char *body, size_t body_size, size_t *body_length)
{
    const char *title = status == 403   ? "Forbidden"
                        : status == 431 ? "Request Header Fields Too Large"
                        : status == 502 ? "Bad Gateway"
                        : status == 504 ? "Gateway Timeout"
                                        : "Bad Request";
    int blen = snprintf(body, body_size, "cordon: network: %s\n", reason);
    if (blen < 0 || (size_t)blen >= body_size)
        blen = (int)body_size - 1;
    int hlen = snprintf(head, head_size,
                        "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: %d\r\nConnection: close\r\n\r\n",
                        status, title, blen);
    *head_length = (size_t)hlen;
    *body_length = (size_t)blen;
}
