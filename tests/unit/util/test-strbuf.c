/* Unit tests for the growable string (src/util/strbuf.c): appends keep the
 * text whole and terminated across growth, and an empty append still gives
 * a string. */
#include "util/strbuf.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    struct strbuf sb = {0};
    ok(strbuf_append(&sb, "", 0) == 0 && sb.buf && sb.buf[0] == '\0' && sb.len == 0,
       "an empty append allocates an empty string");
    free(sb.buf);

    sb = (struct strbuf){0};
    char want[5001] = "";
    for (int i = 0; i < 1000; i++) {
        strbuf_puts(&sb, "abcd");
        strbuf_append(&sb, "e\0f", 1);
        memcpy(want + 5 * i, "abcde", 5);
    }
    is_int(sb.len, 5000, "5000 bytes after 2000 appends across many growths");
    is_str(sb.buf, want, "the text is every piece in order, terminated");
    ok(!sb.failed && sb.cap > sb.len, "not failed; room for the terminator");
    free(sb.buf);

    sb = (struct strbuf){.failed = true};
    ok(strbuf_puts(&sb, "x") < 0 && sb.buf == NULL && sb.len == 0,
       "a failed buffer refuses every later append");
    return tap_done();
}
