/* Unit tests for the prompt escaping (src/util/escape.c): what a user reads
 * before approving a host call shows every hidden character as an escape. */
#include "util/escape.h"
#include "util/cleanup.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void check(const char *in, size_t len, unsigned flags, const char *want, size_t want_count,
                  const char *name)
{
    size_t count = 99;
    _cleanup_free_ char *got = text_escape_visible(in, len, flags, &count);
    is_str(got, want, "%s", name);
    is_int(count, want_count, "%s: counted", name);
    is_int(text_count_hidden(in, len, flags), want_count, "%s: text_count_hidden agrees", name);
}

#define S(lit) lit, sizeof(lit) - 1

int main(void)
{
    check(S("notes/todo.md"), 0, "notes/todo.md", 0, "plain ASCII passes");
    check(S("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80"), 0,
          "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80", 0,
          "visible non-ASCII (accents, CJK, emoji) passes");
    /* The classic: "evil\u202e" + "txt.exe" reads as "evilexe.txt". */
    check(S("evil\xe2\x80\xaetxt.exe"), 0, "evil\\u202etxt.exe", 1, "U+202E RLO is escaped");
    check(S("rm\x1b[2K -rf"), 0, "rm\\x1b[2K -rf", 1, "ESC (C0) is \\x1b");
    check(S("a\x7f"
            "b"),
          0, "a\\x7fb", 1, "DEL is \\x7f");
    check(S("a\xc2\x85"
            "b"),
          0, "a\\u0085b", 1, "C1 NEL is \\u0085");
    check(S("zero\xe2\x80\x8bwidth"), 0, "zero\\u200bwidth", 1, "U+200B zero-width space");
    check(S("\xef\xbb\xbf"
            "bom"),
          0, "\\ufeffbom", 1, "U+FEFF BOM");
    check(S("\xe2\x81\xa6x\xe2\x81\xa9"), 0, "\\u2066x\\u2069", 2, "bidi isolates U+2066/U+2069");
    check(S("\xd8\x9c\xe1\xa0\x8e"), 0, "\\u061c\\u180e", 2, "U+061C ALM and U+180E MVS");
    check(S("\xe2\x81\xa0\xe2\x81\xa4"), 0, "\\u2060\\u2064", 2, "word joiner, invisible plus");
    check(S("tag\xf3\xa0\x81\x81"), 0, "tag\\u{e0041}", 1, "tag character U+E0041 as \\u{...}");
    check(S("nb\xc2\xa0sp"), 0, "nb\\u00a0sp", 1, "no-break space U+00A0");
    check(S("\xe2\x80\xa8\xe2\x80\xa9"), 0, "\\u2028\\u2029", 2, "line/paragraph separators");
    check(S("\xe3\x85\xa4\xe1\x85\x9f"), 0, "\\u3164\\u115f", 2, "Hangul fillers U+3164, U+115F");
    check(S("\xe3\x80\x80"), 0, "\\u3000", 1, "ideographic space");
    check(S("x\xef\xb8\x8f"), 0, "x\\ufe0f", 1, "variation selector 16");
    check(S("\xee\x80\x80"), 0, "\\ue000", 1, "private use");
    check(S("bad\xff\xfe"), 0, "bad\\xff\\xfe", 2, "invalid UTF-8 byte by byte");
    check(S("\xc0\xaf"), 0, "\\xc0\\xaf", 2, "an overlong '/' is invalid, not a slash");
    check(S("\xed\xa0\x80"), 0, "\\xed\\xa0\\x80", 3, "an encoded surrogate is invalid");
    check(S("cut\xe2\x80"), 0, "cut\\xe2\\x80", 2, "a truncated sequence at the end");
    check(S("nul\0x"), 0, "nul\\x00x", 1, "NUL inside the text");
    check(S("a\nb\tc"), 0, "a\\x0ab\\x09c", 2, "newline and tab are escaped by default");
    check(S("a\nb\tc\x1b"), TEXT_ESCAPE_KEEP_LAYOUT, "a\nb\tc\\x1b", 1,
          "KEEP_LAYOUT: newline and tab pass, uncounted; ESC still escaped");
    check(S("a\\u202e"), TEXT_ESCAPE_BACKSLASH, "a\\\\u202e", 0,
          "BACKSLASH: a literal \\u202e cannot pass for an escape (not counted)");
    check(S("a\\b"), 0, "a\\b", 0, "without BACKSLASH a backslash passes (JSON has it doubled)");
    ok(text_codepoint_hidden(0x202e) && text_codepoint_hidden(0xe007f) &&
           !text_codepoint_hidden(' ') && !text_codepoint_hidden(0xe9),
       "text_codepoint_hidden: the set, not more");
    size_t count = 1;
    _cleanup_free_ char *empty = text_escape_visible("", 0, 0, &count);
    ok(empty && empty[0] == '\0' && count == 0, "empty text");
    return tap_done();
}
