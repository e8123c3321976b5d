/* Unit tests for the globset-compatible matcher (src/agent/tools/glob.c) and
 * gitignore rule sets (src/agent/tools/ignore.c). Expected answers were
 * checked against fd 8.6 / ripgrep 13 where they read the same glob. */
#include "agent/tools/glob.h"
#include "agent/tools/ignore.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEP TOOL_GLOB_LITERAL_SEPARATOR
#define CI  TOOL_GLOB_CASE_INSENSITIVE

static void check(const char *pattern, unsigned flags, const char *subject, bool want)
{
    struct cordon_error err = {0};
    struct tool_glob *g = NULL;
    if (tool_glob_compile(pattern, strlen(pattern), flags, &g, &err) < 0) {
        ok(false, "compile '%s': %s", pattern, err.message);
        return;
    }
    bool got = tool_glob_match(g, subject, strlen(subject));
    ok(got == want, "'%s' %s '%s'", pattern, want ? "matches" : "does not match", subject);
    tool_glob_free(g);
}

static void check_error(const char *pattern, const char *want)
{
    struct cordon_error err = {0};
    struct tool_glob *g = NULL;
    int r = tool_glob_compile(pattern, strlen(pattern), SEP, &g, &err);
    ok(r < 0 && !g, "'%s' is rejected", pattern);
    is_str(err.message, want, "error text for '%s'", pattern);
    tool_glob_free(g);
}

static void test_glob(void)
{
    check("*.ts", SEP, "a.ts", true);
    check("*.ts", SEP, "dir/a.ts", false);
    check("*.ts", 0, "dir/a.ts", true);
    check("*.ts", SEP, ".ts", true);
    check("?.c", SEP, "é.c", true); /* one character, two bytes */
    check("?.c", SEP, "/.c", false);
    check("**", SEP, "any/thing/at/all", true);
    check("**/*.json", SEP, "a.json", true);
    check("**/*.json", SEP, "x/y/a.json", true);
    check("**/*.json", SEP, "/abs/a.json", true);
    check("src/**/*.ts", SEP, "src/a.ts", true);
    check("src/**/*.ts", SEP, "src/x/y/a.ts", true);
    check("src/**/*.ts", SEP, "srcx/a.ts", false);
    check("a/**", SEP, "a/b/c", true);
    check("a/**", SEP, "a", false);
    check("a**", SEP, "abc", true);
    check("a**", SEP, "a/bc", false);
    check("*.{ts,js}", SEP, "x.js", true);
    check("*.{ts,js}", SEP, "x.rs", false);
    check("{a,b/c}", SEP, "b/c", true);
    check("[ab].txt", SEP, "b.txt", true);
    check("[!ab].txt", SEP, "c.txt", true);
    check("[^ab].txt", SEP, "a.txt", false);
    check("[]a]", SEP, "]", true);
    check("[a-]", SEP, "-", true);
    check("[a-c]x", SEP, "bx", true);
    check("\\*.txt", SEP, "*.txt", true);
    check("\\*.txt", SEP, "a.txt", false);
    check("a}", SEP, "a", true); /* globset drops a '}' that closes nothing */
    check("a,b", SEP, "a,b", true);
    check("README*", SEP, "readme.md", false);
    check("readme*", SEP | CI, "README.md", true);
    check("ÄBC", SEP | CI, "äbc", true);
    check("(x)+.$^|", SEP, "(x)+.$^|", true); /* regex syntax is literal */
    check("a.c", SEP, "abc", false);

    check_error("[", "unclosed character class; missing ']'");
    check_error("[]", "unclosed character class; missing ']'");
    check_error("[!]", "unclosed character class; missing ']'");
    check_error("a{", "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)");
    check_error("{a,{b}}", "nested alternate groups are not allowed");
    check_error("[z-a]", "invalid range; 'z' > 'a'");
    check_error("a\\", "dangling '\\'");
}

/* Hostile patterns must neither crash nor take long (PCRE2 match limit). */
static void test_glob_hostile(void)
{
    char pattern[4096], subject[4096];
    size_t n = 0;
    for (int i = 0; i < 200; i++) {
        pattern[n++] = '*';
        pattern[n++] = 'a';
    }
    pattern[n++] = 'b';
    pattern[n] = '\0';
    memset(subject, 'a', 3000);
    subject[3000] = '\0';
    struct cordon_error err = {0};
    struct tool_glob *g = NULL;
    ok(tool_glob_compile(pattern, n, 0, &g, &err) == 0, "long star pattern compiles");
    ok(g && !tool_glob_match(g, subject, 3000), "catastrophic pattern gives no match");
    tool_glob_free(g);
    g = NULL;
    ok(tool_glob_compile("\xff\xfe*", 3, SEP, &g, &err) < 0 || g,
       "invalid UTF-8 in a pattern does not crash");
    tool_glob_free(g);
}

static enum ignore_match match(const char *text, const char *rel, bool is_dir)
{
    struct ignore_rules *r = ignore_rules_parse(text, strlen(text), 1000);
    enum ignore_match m = ignore_rules_match(r, rel, is_dir);
    ignore_rules_free(r);
    return m;
}

static void test_ignore(void)
{
    is_int(match("*.log\n", "a.log", false), IGNORE_IGNORE, "basename pattern");
    is_int(match("*.log\n", "deep/x/a.log", false), IGNORE_IGNORE, "basename pattern at depth");
    is_int(match("*.log\n!keep.log\n", "keep.log", false), IGNORE_WHITELIST, "negation wins last");
    is_int(match("!keep.log\n*.log\n", "keep.log", false), IGNORE_IGNORE, "later line wins");
    is_int(match("/root.txt\n", "root.txt", false), IGNORE_IGNORE, "anchored at the root");
    is_int(match("/root.txt\n", "sub/root.txt", false), IGNORE_NONE, "anchored not deeper");
    is_int(match("gen/*.c\n", "gen/a.c", false), IGNORE_IGNORE, "inner slash anchors");
    is_int(match("gen/*.c\n", "src/gen/a.c", false), IGNORE_NONE, "inner slash anchors (2)");
    is_int(match("build/\n", "build", true), IGNORE_IGNORE, "directory-only on a directory");
    is_int(match("build/\n", "build", false), IGNORE_NONE, "directory-only on a file");
    is_int(match("a/**/b\n", "a/x/y/b", false), IGNORE_IGNORE, "** in the middle");
    is_int(match("a/**/b\n", "a/b", false), IGNORE_IGNORE, "** matches zero dirs");
    is_int(match("**/foo\n", "x/foo", false), IGNORE_IGNORE, "leading **/");
    is_int(match("# comment\n\n", "# comment", false), IGNORE_NONE, "comments and blanks");
    is_int(match("\\#hash\n", "#hash", false), IGNORE_IGNORE, "escaped hash");
    is_int(match("\\!bang\n", "!bang", false), IGNORE_IGNORE, "escaped bang");
    is_int(match("x.tmp   \n", "x.tmp", false), IGNORE_IGNORE, "trailing spaces dropped");
    is_int(match("x\\ \n", "x ", false), IGNORE_IGNORE, "escaped trailing space kept");
    is_int(match("*.txt\r\n", "a.txt", false), IGNORE_IGNORE, "CRLF ignore file");
    is_int(match("[\n*.o\n", "a.o", false), IGNORE_IGNORE, "a bad line is skipped");
    is_int(match("node_modules\n", "node_modules", true), IGNORE_IGNORE, "plain name on dir");

    struct cordon_error err = {0};
    struct ignore_rules *o = ignore_rules_parse_override("*.ts", &err);
    is_int(ignore_rules_match(o, "src/a.ts", false), IGNORE_WHITELIST, "override glob keeps");
    is_int(ignore_rules_match(o, "src/a.md", false), IGNORE_NONE, "override: no match");
    is_int((long long)ignore_rules_whitelists(o), 1, "override counts its whitelist");
    ignore_rules_free(o);
    o = ignore_rules_parse_override("!*.md", &err);
    is_int(ignore_rules_match(o, "a.md", false), IGNORE_IGNORE, "negated override ignores");
    is_int((long long)ignore_rules_whitelists(o), 0, "negated override whitelists nothing");
    ignore_rules_free(o);
}

/* A subject that does not end with the pattern's literal ending is refused
 * before the pattern runs: never a different answer from the pattern's. */
static void test_glob_suffix(void)
{
    check("**/d3/**/*.go", SEP | CI, "/t/ws/d3/x/a.GO", true);
    check("**/d3/**/*.go", SEP, "/t/ws/d3/x/a.GO", false);
    check("*.ks", SEP | CI, "a.\xe2\x84\xaas", true); /* KELVIN SIGN folds with k */
    check("*.S", SEP | CI, "a.\xc5\xbf", true);       /* LONG S folds with s */
    check("**/", SEP, "", true);
    check("a/**/", SEP, "a/", true);
    check("x\\*", SEP, "x*", true);
    check("*.{c,h}", SEP, "a.h", true);
    check("*.go", SEP, "go", false);
    static const char *const patterns[] = {
        "*.go", "**/*.go",   "**/d3/**/*.go", "*.GO",     "**/",   "a/**/",
        "a/**", "x\\*",      "*.{c,h}",       "*.[ch]",   "?o",    "*.ks",
        "*.Ks", "*s",        "*.tar.gz",      "src/*.rs", "*/",    "**",
        "a\\b", "*\xc3\xa9", "*.é",           "\\.go",    "*.go/",
    };
    static const char *const subjects[] = {
        "",
        "go",
        "a.go",
        "a.GO",
        "d3/a.go",
        "/t/d3/x/a.go",
        "/t/d3/x/a.Go",
        "a/",
        "a",
        "a/b/",
        "x*",
        "xy",
        "a.c",
        "a.h",
        "a.H",
        "a.\xe2\x84\xaas",
        "a.K\xc5\xbf",
        "s",
        "a.tar.gz",
        "src/main.rs",
        "x/",
        "ab",
        "a\\b",
        "\xc3\xa9",
        "a.\xc3\x89",
        ".go",
        "a.go/",
        "a.go\n",
        "\xff.go",
    };
    int differ = 0;
    for (size_t p = 0; p < sizeof(patterns) / sizeof(*patterns); p++) {
        for (unsigned flags = 0; flags < 4; flags++) {
            struct cordon_error err = {0};
            struct tool_glob *g = NULL;
            if (tool_glob_compile(patterns[p], strlen(patterns[p]), flags, &g, &err) < 0)
                continue;
            for (size_t i = 0; i < sizeof(subjects) / sizeof(*subjects); i++) {
                bool got = tool_glob_match(g, subjects[i], strlen(subjects[i]));
                if (got != tool_glob_match_pattern(g, subjects[i], strlen(subjects[i]))) {
                    if (differ++ < 5)
                        tap_diag("'%s' (flags %u) on '%s': %d", patterns[p], flags, subjects[i],
                                 got);
                }
            }
            tool_glob_free(g);
        }
    }
    ok(differ == 0,
       "the shortcut gives the pattern's own answer on %zu patterns x %zu subjects x 4 "
       "flag sets (%d differ)",
       sizeof(patterns) / sizeof(*patterns), sizeof(subjects) / sizeof(*subjects), differ);
}

int main(void)
{
    test_glob();
    test_glob_suffix();
    test_glob_hostile();
    test_ignore();
    return tap_done();
}
