/* Unit tests for the edit tool's pure steps (src/agent/tools/edit-text.c)
 * and its numbered diff (edit-diff.c). The expected diffs are what the
 * implementation produced before it was split into steps (commit a3b0969),
 * which tests/e2e holds against pi's own edit tool. */
#include "agent/tools/edit-diff.h"
#include "agent/tools/edit-text.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void test_to_lf(void)
{
    size_t n = 99;
    char *s = edit_to_lf("a\r\nb\rc\n\r\n", 10, &n);
    is_str(s, "a\nb\nc\n\n", "CRLF and lone CR become LF");
    is_int((int)n, 8, "its length");
    free(s);
    s = edit_to_lf("", 0, &n);
    is_str(s, "", "empty stays empty");
    is_int((int)n, 0, "of length 0");
    free(s);
}

static void test_restore_endings(void)
{
    size_t n = 0;
    char *s = edit_restore_endings("a\nb\n", 4, true, true, &n);
    ok(n == 9 && memcmp(s,
                        "\xef\xbb\xbf"
                        "a\r\nb\r\n",
                        9) == 0,
       "BOM and CRLF restored");
    free(s);
    s = edit_restore_endings("a\nb", 3, false, false, &n);
    ok(n == 3 && memcmp(s, "a\nb", 3) == 0, "LF file without BOM unchanged");
    free(s);
}

static void test_splice_and_overlap(void)
{
    const char *base = "one two three";
    struct edit_match m[] = {
        {8, 1, 5, "3", 1},
        {0, 0, 3, "1", 1},
    };
    is_int((int)edit_sort_matches(m, 2), 0, "disjoint edits do not overlap");
    is_int((int)m[0].edit, 0, "sorted by position");
    size_t n = 0;
    char *s = edit_splice(base, strlen(base), m, 2, &n);
    ok(s && n == 7 && memcmp(s, "1 two 3", 7) == 0, "both replaced");
    free(s);
    struct edit_match o[] = {
        {4, 0, 5, "x", 1},
        {0, 1, 6, "y", 1},
    };
    size_t at = edit_sort_matches(o, 2);
    is_int((int)at, 1, "overlap found at the second match");
    ok(o[at - 1].edit == 1 && o[at].edit == 0, "naming edits[1] and edits[0]");
}

static void test_locate(void)
{
    char *fuzzy = NULL;
    size_t fuzzy_len = 0, index = 0, length = 0, occurrences = 0;
    ok(edit_locate("abc abc", 7, "bc", 2, &fuzzy, &fuzzy_len, &index, &length, &occurrences),
       "exact text found");
    ok(index == 1 && length == 2 && occurrences == 2, "first at 1, two occurrences");
    free(fuzzy);
    fuzzy = NULL;
    ok(!edit_locate("abc", 3, "x", 1, &fuzzy, &fuzzy_len, &index, &length, &occurrences),
       "missing text not found");
    free(fuzzy);
    fuzzy = NULL;
    /* Trailing spaces are not in the normalised base: found there. */
    ok(edit_locate("a\nb\n", 4, "a  \nb", 5, &fuzzy, &fuzzy_len, &index, &length, &occurrences),
       "fuzzy text found in a normalised base");
    ok(index == 0 && length == 3 && occurrences == 1, "at 0, its normalised length");
    free(fuzzy);
}

static void test_diff(void)
{
    static const struct {
        const char *old_text, *new_text, *diff;
        size_t first;
    } cases[] = {
        {"a\nb\nc\n", "a\nB\nc\n", " 1 a\n-2 b\n+2 B\n 3 c", 2},
        {"", "x\n", "+1 x", 1},
        {"x\n", "", "-1 x", 1},
        {"same\n", "same\n", "", 0},
        {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\n18\n19\n20\n",
         "1\n2\n3\n4\n5\nsix\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n17\neighteen\n19\n20\n",
         "    ...\n  2 2\n  3 3\n  4 4\n  5 5\n- 6 6\n+ 6 six\n  7 7\n  8 8\n  9 9\n 10 10\n    "
         "...\n 14 14\n 15 15\n 16 16\n 17 17\n-18 18\n+18 eighteen\n 19 19\n 20 20",
         6},
        {"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
         "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n",
         "+ 1 0\n  1 1\n  2 2\n  3 3\n  4 4\n    ...\n  9 9\n 10 10\n 11 11\n 12 12\n+14 13", 1},
        {"a\nb\nc\nd\ne\nf\ng\n", "a\nc\nb\nd\nx\ny\ng",
         " 1 a\n-2 b\n 3 c\n+3 b\n 4 d\n-5 e\n-6 f\n-7 g\n+5 x\n+6 y\n+7 g", 2},
        {"no newline", "no newline at end", "-1 no newline\n+1 no newline at end", 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t first = 99;
        char *d = edit_diff_string(cases[i].old_text, strlen(cases[i].old_text), cases[i].new_text,
                                   strlen(cases[i].new_text), &first);
        is_str(d, cases[i].diff, "diff %zu", i);
        is_int((int)first, (int)cases[i].first, "diff %zu: first changed line", i);
        free(d);
    }
}

int main(void)
{
    test_to_lf();
    test_restore_endings();
    test_splice_and_overlap();
    test_locate();
    test_diff();
    return tap_done();
}
