/* Unit tests for pi's path rules and the UTF-8 helpers
 * (src/agent/tools/path.c). */
#include "agent/tools/path.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void check_resolve(const char *in, const char *want)
{
    struct tool_env env = {.cwd = "/work/proj", .home = "/home/u"};
    char *got = tool_resolve_path(in, &env);
    is_str(got, want, "resolve '%s'", in);
    free(got);
}

static void test_resolve(void)
{
    check_resolve("a.txt", "/work/proj/a.txt");
    check_resolve("@a.txt", "/work/proj/a.txt");
    check_resolve("./x/../y//z/", "/work/proj/y/z");
    check_resolve("../../../..", "/");
    check_resolve("", "/work/proj");
    check_resolve("~", "/home/u");
    check_resolve("~/k", "/home/u/k");
    check_resolve("~x", "/work/proj/~x");
    check_resolve("/abs/../kept//as/is/", "/abs/../kept//as/is/");
    check_resolve("a\xc2\xa0"
                  "b\xe2\x80\xaf"
                  "c\xe3\x80\x80",
                  "/work/proj/a b c ");
}

static void check_sanitize(const char *in, size_t len, const char *want, const char *what)
{
    size_t out_len = 0;
    char *got = utf8_sanitize(in, len, &out_len);
    is_str(got, want, "sanitize: %s", what);
    is_int(out_len, strlen(want), "sanitize length: %s", what);
    free(got);
}

#define R "\xef\xbf\xbd"

static void test_sanitize(void)
{
    check_sanitize("h\xc3\xa9llo", 6, "h\xc3\xa9llo", "valid text unchanged");
    /* Node: a E2 82 b F0 9F 98 ED A0 80 C0 AF F4 90 80 80 E2 */
    static const char bad[] = "a\xe2\x82"
                              "b\xf0\x9f\x98\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80\xe2";
    check_sanitize(bad, sizeof(bad) - 1, "a" R "b" R R R R R R R R R R R,
                   "maximal subparts, surrogates, overlongs, > U+10FFFF");
    size_t nul_len = 0;
    char *nul = utf8_sanitize("x\0y", 3, &nul_len);
    ok(nul_len == 3 && memcmp(nul, "x\0y", 3) == 0, "sanitize keeps an embedded NUL");
    free(nul);
    is_int(utf8_incomplete_tail("ab\xe2\x82", 4), 2, "incomplete 3-byte tail");
    is_int(utf8_incomplete_tail("ab\xf0", 3), 1, "incomplete 4-byte lead");
    is_int(utf8_incomplete_tail("ab\xe2\x82\xac", 5), 0, "complete tail");
    is_int(utf8_incomplete_tail("ab\xed\xa0", 4), 0, "a surrogate prefix is not kept");
}

static void test_utf16(void)
{
    is_int(utf16_length("abc", 3), 3, "ascii");
    is_int(utf16_length("\xc3\xa9", 2), 1, "e-acute is one unit");
    is_int(utf16_length("\xf0\x9f\x98\x80", 4), 2, "emoji is a surrogate pair");
}

int main(void)
{
    test_resolve();
    test_sanitize();
    test_utf16();
    return tap_done();
}
