/* Unit tests for pi's truncation rules (src/agent/tools/truncate.c). Expected
 * values were produced by pi 0.73.1's truncate.js. */
#include "agent/tools/truncate.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

static void test_format_size(void)
{
    static const struct {
        size_t bytes;
        const char *want;
    } cases[] = {
        {0, "0B"},          {1023, "1023B"},       {1024, "1.0KB"},    {1075, "1.0KB"},
        {1076, "1.1KB"},    {1280, "1.3KB"},       {3328, "3.3KB"},    {51200, "50.0KB"},
        {52428, "51.2KB"},  {1048575, "1024.0KB"}, {1048576, "1.0MB"}, {1572864, "1.5MB"},
        {1625292, "1.5MB"}, {10538189, "10.1MB"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        is_str(format_size(cases[i].bytes, buf, sizeof(buf)), cases[i].want, "formatSize(%zu)",
               cases[i].bytes);
}

static char *json_of(const struct truncation *t)
{
    json_t *j = truncation_to_json(t);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return s;
}

static void test_head(void)
{
    struct truncation t;
    const char *s = "ab\ncd\nef";
    truncate_head(s, strlen(s), 0, 5, &t);
    char *j = json_of(&t);
    is_str(j,
           "{\"content\":\"ab\\ncd\",\"truncated\":true,\"truncatedBy\":\"bytes\",\"totalLines\":3,"
           "\"totalBytes\":8,\"outputLines\":2,\"outputBytes\":5,\"lastLinePartial\":false,"
           "\"firstLineExceedsLimit\":false,\"maxLines\":2000,\"maxBytes\":5}",
           "head: whole lines up to the byte limit, keys in pi's order");
    free(j);

    s = "abcdef\ncd";
    truncate_head(s, strlen(s), 0, 5, &t);
    ok(t.first_line_exceeds_limit && t.content_len == 0 && t.output_lines == 0,
       "head: a first line over the limit gives empty content");

    s = "a\nb\nc\n";
    truncate_head(s, strlen(s), 0, 0, &t);
    ok(!t.truncated && t.total_lines == 4, "head: trailing newline is an empty last line");
    j = json_of(&t);
    ok(strstr(j, "\"truncatedBy\":null") != NULL, "head: truncatedBy null when not truncated");
    free(j);

    truncate_head(s, strlen(s), 2, 0, &t);
    ok(t.truncated_by == TRUNCATE_BY_LINES && t.content_len == 3 && t.output_lines == 2,
       "head: line limit keeps 'a\\nb'");
}

static void test_tail(void)
{
    struct truncation t;
    const char *s = "aaa\nbbbb\ncc";
    truncate_tail(s, strlen(s), 2, 0, &t);
    is_int(t.content_len, 7, "tail: last two lines");
    ok(strncmp(t.content, "bbbb\ncc", 7) == 0, "tail: content is 'bbbb\\ncc'");
    ok(t.truncated_by == TRUNCATE_BY_LINES, "tail: by lines");

    s = "a\n\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9";
    truncate_tail(s, strlen(s), 0, 5, &t);
    char *j = json_of(&t);
    is_str(j,
           "{\"content\":\"\xc3\xa9\xc3\xa9\",\"truncated\":true,\"truncatedBy\":\"bytes\","
           "\"totalLines\":2,\"totalBytes\":22,\"outputLines\":1,\"outputBytes\":4,"
           "\"lastLinePartial\":true,\"firstLineExceedsLimit\":false,\"maxLines\":2000,"
           "\"maxBytes\":5}",
           "tail: partial last line cut at a character boundary");
    free(j);
}

int main(void)
{
    test_format_size();
    test_head();
    test_tail();
    return tap_done();
}
