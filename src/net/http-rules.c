/* network.http_rules (see http-rules.h): parsing an entry, matching a
 * path pattern, and judging one request of an intercepted connection.
 * Host context; the method and path judged are the sandbox's. */
#include "net/http-rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int http_rule_parse(const char *text, struct http_rule *out, struct cordon_error *err)
{
    *out = (struct http_rule){0};
    snprintf(out->text, sizeof(out->text), "%s", text);
    const char *sp = strchr(text, ' ');
    size_t mlen = sp ? (size_t)(sp - text) : 0;
    if (!sp || mlen == 0 || mlen >= sizeof(out->method))
        return error_set(err, EINVAL,
                         "network.http_rules: %s: expected \"METHOD host/path\" (GET "
                         "api.example.com/repos/*)",
                         text);
    for (size_t i = 0; i < mlen; i++) {
        char ch = text[i];
        if (!((ch >= 'A' && ch <= 'Z') || (mlen == 1 && ch == '*')))
            return error_set(err, EINVAL,
                             "network.http_rules: %s: the method must be upper case (GET, POST) "
                             "or *",
                             text);
    }
    memcpy(out->method, text, mlen);
    const char *hp = sp + 1;
    while (*hp == ' ')
        hp++;
    const char *slash = strchr(hp, '/');
    size_t hlen = slash ? (size_t)(slash - hp) : strlen(hp);
    char host[300];
    if (hlen == 0 || hlen >= sizeof(host))
        return error_set(err, EINVAL, "network.http_rules: %s: no host", text);
    memcpy(host, hp, hlen);
    host[hlen] = '\0';
    const char *path = slash ? slash : "/*";
    if (strlen(path) >= sizeof(out->path) || strpbrk(path, " \t?#"))
        return error_set(err, EINVAL,
                         "network.http_rules: %s: the path must be one word without ? or #", text);
    snprintf(out->path, sizeof(out->path), "%s", path);
    if (allowlist_add(&out->host, host, err) < 0)
        return error_prefix(err, "network.http_rules: %s", text);
    return 0;
}

bool http_rule_path_match(const char *pat, const char *path)
{
    for (;;) {
        if (*pat == '\0')
            return *path == '\0';
        if (*pat == '*') {
            if (pat[1] == '\0')
                return true; /* a final '*': the rest, any depth */
            for (const char *s = path;; s++) {
                if (http_rule_path_match(pat + 1, s))
                    return true;
                if (*s == '\0' || *s == '/')
                    return false;
            }
        }
        if (*pat != *path)
            return false;
        pat++;
        path++;
    }
}

/* The server decodes and normalises the path: a rule checked on the
 * raw text would pass /repos/../user. Dot segments and encoded
 * slashes, dots or backslashes are refused outright. */
bool http_rule_path_is_odd(const char *path)
{
    bool odd = strchr(path, '\\') != NULL || strstr(path, "//") != NULL;
    for (const char *s = path; *s && !odd; s++) {
        if (s[0] == '%' && s[1] && s[2]) {
            char hex[3] = {s[1], s[2], 0};
            long v = strtol(hex, NULL, 16);
            odd = v == '.' || v == '/' || v == '\\' || v == '%';
        }
        if (s[0] == '/' && s[1] == '.' &&
            (s[2] == '\0' || s[2] == '/' || (s[2] == '.' && (s[3] == '\0' || s[3] == '/'))))
            odd = true;
    }
    return odd;
}

/* Method and path rules of this host: one must match. */
enum http_rules_verdict http_rules_judge(const struct http_rule *rules, size_t count,
                                         const char *host, int port, const char *method,
                                         const char *path, bool odd, char *reason, size_t size)
{
    bool ruled = false;
    const char *first_rule = NULL;
    for (size_t i = 0; i < count; i++) {
        struct allow_decision d;
        allowlist_check_request(&rules[i].host, host, port, &d);
        if (!d.allowed)
            continue;
        if (!ruled)
            first_rule = rules[i].text;
        ruled = true;
        if ((strcmp(rules[i].method, "*") == 0 || strcmp(rules[i].method, method) == 0) && !odd &&
            http_rule_path_match(rules[i].path, path)) {
            snprintf(reason, size, "%s %s%.200s allowed by network.http_rules \"%.300s\"", method,
                     host, path, rules[i].text);
            return HTTP_RULES_ALLOWED;
        }
    }
    if (!ruled)
        return HTTP_RULES_NONE;
    if (odd)
        snprintf(reason, size,
                 "%s %s%.200s refused: the path has dot segments or encoded separators, "
                 "which network.http_rules do not match",
                 method, host, path);
    else
        snprintf(reason, size,
                 "%s %s%.200s refused: no network.http_rules entry for %s allows it (the "
                 "first is \"%.300s\")",
                 method, host, path, host, first_rule);
    return HTTP_RULES_REFUSED;
}
