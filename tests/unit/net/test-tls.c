/* Unit tests for network.http_rules (net/tls.h): parsing and the path
 * patterns ('*' within one segment, a final '*' covering the rest). */
#include "net/tls.h"
#include "tap.h"

#include <string.h>

static bool rule_ok(const char *text)
{
    struct http_rule r;
    struct cordon_error err = {0};
    bool good = http_rule_parse(text, &r, &err) == 0;
    allowlist_free(&r.host);
    return good;
}

int main(void)
{
    const char *pulls = "/repos/me/*/pulls";
    ok(http_rule_path_match(pulls, "/repos/me/x/pulls"), "a middle * matches one segment");
    ok(!http_rule_path_match(pulls, "/repos/me/x/y/pulls"), "... never two");
    ok(!http_rule_path_match(pulls, "/repos/me/x/pulls/1"), "... and the rest must match");
    ok(!http_rule_path_match(pulls, "/repos/you/x/pulls"), "literal segments must match");
    ok(http_rule_path_match("/repos/*", "/repos/a/b/c"), "a final * covers any depth");
    ok(http_rule_path_match("/repos/*", "/repos/"), "... and nothing");
    ok(!http_rule_path_match("/repos/*", "/repository"), "... but only below the prefix");
    ok(!http_rule_path_match("/user", "/user/keys"), "without *, the whole path");
    ok(http_rule_path_match("/a*b/c", "/axxb/c"), "* inside a segment");
    ok(!http_rule_path_match("/a*b/c", "/ax/xb/c"), "... that does not cross /");

    struct http_rule r;
    struct cordon_error err = {0};
    ok(http_rule_parse("POST api.github.com/repos/me/*/pulls", &r, &err) == 0, "a rule parses");
    is_str(r.method, "POST", "... its method");
    is_str(r.path, "/repos/me/*/pulls", "... its path");
    struct allow_decision d;
    allowlist_check_request(&r.host, "api.github.com", 443, &d);
    ok(d.allowed, "... its host");
    allowlist_check_request(&r.host, "evil.github.com", 443, &d);
    ok(!d.allowed, "... and no other");
    allowlist_free(&r.host);
    ok(rule_ok("* api.test/x"), "* as the method: any");
    ok(rule_ok("GET *.example.com/v1/*"), "a wildcard host");
    ok(!rule_ok("get api.test/x"), "a lower-case method is refused");
    ok(!rule_ok("GET"), "a rule without a host is refused");
    ok(!rule_ok("GET api.test/x?y=1"), "a query in the pattern is refused");
    ok(!rule_ok("GETTINGVERYLONGMETHOD api.test/x"), "an overlong method is refused");
    return tap_done();
}
