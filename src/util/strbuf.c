/* The growable string (strbuf.h). */
#include "util/strbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Room for MORE bytes and the terminator, doubling from 64. */
static bool strbuf_reserve(struct strbuf *sb, size_t more)
{
    size_t need = sb->len + more + 1;
    if (need < more)
        return false;
    if (need <= sb->cap)
        return true;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need && cap <= SIZE_MAX / 2)
        cap *= 2;
    char *grown = cap < need ? NULL : realloc(sb->buf, cap);
    if (grown) {
        sb->buf = grown;
        sb->cap = cap;
    }
    return grown != NULL;
}

int strbuf_append(struct strbuf *sb, const void *s, size_t n)
{
    if (sb->failed || !strbuf_reserve(sb, n)) {
        sb->failed = true;
        return -1;
    }
    if (n)
        memcpy(sb->buf + sb->len, s, n);
    sb->len += n;
    sb->buf[sb->len] = '\0';
    return 0;
}

int strbuf_puts(struct strbuf *sb, const char *s)
{
    return strbuf_append(sb, s, strlen(s));
}
