/* A growable byte string that stays NUL-terminated, for the builders that
 * assemble text piece by piece (a regex, a listing, a diff). Any context
 * except between clone() and exec (it allocates). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialised is empty. After a failed allocation `failed` is set,
 * the text stays as it was and every later append is a no-op, so a
 * builder may check once at the end. The caller frees buf. */
struct strbuf {
    char *buf; /* NULL until the first append */
    size_t len, cap;
    bool failed;
};

/* Appends N bytes of S (N may be 0: buf is then allocated and ""): 0, or
 * -1 once the buffer has failed. */
int strbuf_append(struct strbuf *sb, const void *s, size_t n);
/* strbuf_append of the string S. */
int strbuf_puts(struct strbuf *sb, const char *s);
