/* network.http_rules: "METHOD host/path-pattern" entries, parsed from the
 * configuration and judged against each request head the TLS
 * interception reads (tls.c). Pure functions; the request's method and
 * path come from the sandbox and are untrusted. Host context (the
 * supervisor parses, the proxy process judges). */
#pragma once

#include "net/allowlist.h"
#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

#define NET_MAX_HTTP_RULES 128

/* One network.http_rules entry: "METHOD host/path-pattern". */
struct http_rule {
    char method[16]; /* "*": any */
    struct allowlist host;
    char path[512]; /* starts with '/'; '*' within a segment, a final '*' the rest */
    char text[600]; /* as written, for refusals */
};

/* Parses one rule, such as GET api.github.com/repos/STAR. */
int http_rule_parse(const char *text, struct http_rule *out, struct cordon_error *err);
/* Whether METHOD PATH (origin-form, query removed) matches the pattern. */
bool http_rule_path_match(const char *pattern, const char *path);

/* Whether PATH (query removed) has what a server decodes or normalises
 * into another path (dot segments, encoded slashes, dots or backslashes):
 * no rule matches such a path. */
bool http_rule_path_is_odd(const char *path);

enum http_rules_verdict {
    HTTP_RULES_NONE,    /* no rule names the host: the request passes */
    HTTP_RULES_ALLOWED, /* a rule of the host matches; REASON says which */
    HTTP_RULES_REFUSED, /* the host has rules and none matches; REASON says why */
};

/* Judges METHOD PATH to HOST:PORT against RULES[0..COUNT); ODD is
 * http_rule_path_is_odd(PATH). REASON gets the line for the audit log or
 * the refusal. */
enum http_rules_verdict http_rules_judge(const struct http_rule *rules, size_t count,
                                         const char *host, int port, const char *method,
                                         const char *path, bool odd, char *reason, size_t size);
