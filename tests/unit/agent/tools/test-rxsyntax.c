/* Unit tests for the Rust regex syntax pass (src/agent/tools/rxsyntax.c):
 * ripgrep 13's error texts and the PCRE2 spelling of accepted patterns. */
#include "agent/tools/rxsyntax.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void accepts(const char *pattern, const char *want)
{
    char *out = NULL;
    char *err = rx_check_rust_syntax(pattern, 0, &out);
    ok(!err, "'%s' is accepted", pattern);
    is_str(out, want, "'%s' for PCRE2", pattern);
    free(err);
    free(out);
}

static void rejects(const char *pattern, const char *want)
{
    char *out = NULL;
    char *err = rx_check_rust_syntax(pattern, 0, &out);
    /* TAP descriptions stay on one line. */
    const char *label = strchr(pattern, '\n') ? "(pattern with a newline)" : pattern;
    is_str(err, want, "error for '%s'", label);
    ok(!out, "no PCRE2 pattern for '%s'", label);
    free(err);
    free(out);
}

int main(void)
{
    accepts("foo", "foo");
    accepts("a**", "(?:a*)*");
    accepts("a*+b", "(?:a*)+b");
    accepts("(ab)*?c", "(ab)*?c");
    accepts("^*x", "(?:^)*x");
    accepts("\\u00e9\\U0001F600", "\\x{00e9}\\x{0001F600}");
    accepts("(?iu)a", "(?i)a");
    accepts("(?P<n>x)", "(?P<n>x)");
    accepts("[]a]", "[]a]");
    accepts("[[:alpha:]_]", "[A-Za-z_]");
    accepts("[[:^alpha:]]", "[[:^alpha:]]");
    accepts("x{2,3}?", "x{2,3}?");
    rejects("(", "regex parse error:\n    (\n    ^\nerror: unclosed group");
    rejects("é(", "regex parse error:\n    é(\n     ^\nerror: unclosed group");
    rejects("(a))", "regex parse error:\n    (a))\n       ^\nerror: unopened group");
    rejects("[^]", "regex parse error:\n    [^]\n    ^^^\nerror: unclosed character class");
    rejects("\\/", "regex parse error:\n    \\/\n    ^^\nerror: unrecognized escape sequence");
    rejects("a{2", "regex parse error:\n    a{2\n     ^^\nerror: unclosed counted repetition");
    rejects("(?=x)", "regex parse error:\n    (?=x)\n    ^^^\nerror: look-around, including "
                     "look-ahead and look-behind, is not supported\n\nConsider enabling PCRE2 "
                     "with the --pcre2 flag, which can handle backreferences\nand look-around.");
    rejects("a\nb", "the literal '\"\\n\"' is not allowed in a regex\n\nConsider enabling "
                    "multiline mode with the --multiline flag (or -U for short).\nWhen multiline "
                    "mode is enabled, new line characters can be matched.");
    char *out = NULL;
    char *err = rx_check_rust_syntax("a(b", 1, &out);
    ok(!err && out && strcmp(out, "a(b") == 0, "literal patterns pass unchanged");
    free(err);
    free(out);
    /* Deep nesting is bounded, not a stack overflow. */
    char deep[5000];
    memset(deep, '(', sizeof(deep) - 1);
    deep[sizeof(deep) - 1] = '\0';
    err = rx_check_rust_syntax(deep, 0, &out);
    ok(err != NULL && out == NULL, "5000 open groups are an error");
    free(err);
    return tap_done();
}
