/* The edit tool's pure text steps (edit-text.h). Sandbox or host context. */
#include "agent/tools/edit-text.h"
#include "agent/tools/edit-diff.h"
#include "util/cleanup.h"

#include <stdlib.h>
#include <string.h>

char *edit_to_lf(const char *s, size_t len, size_t *out_len)
{
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\r') {
            out[o++] = '\n';
            if (i + 1 < len && s[i + 1] == '\n')
                i++;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

static const char *find_bytes(const char *hay, size_t hay_len, const char *needle, size_t n)
{
    return n ? memmem(hay, hay_len, needle, n) : hay;
}

static size_t count_occurrences(const char *hay, size_t hay_len, const char *needle, size_t n)
{
    size_t count = 0;
    const char *p = hay, *end = hay + hay_len;
    while ((p = memmem(p, (size_t)(end - p), needle, n))) {
        count++;
        p += n;
    }
    return count;
}

int edit_locate(const char *base, size_t base_len, const char *old_text, size_t old_len,
                char **base_fuzzy, size_t *base_fuzzy_len, size_t *index, size_t *length,
                size_t *occurrences)
{
    const char *at = find_bytes(base, base_len, old_text, old_len);
    size_t match_len = old_len;
    size_t fl = 0;
    _cleanup_free_ char *fo = edit_fuzzy_normalize(old_text, old_len, &fl);
    if (!at) {
        if (!*base_fuzzy)
            *base_fuzzy = edit_fuzzy_normalize(base, base_len, base_fuzzy_len);
        const char *fat = fo && *base_fuzzy ? memmem(*base_fuzzy, *base_fuzzy_len, fo, fl) : NULL;
        /* pi matches in the normalised space of base; base is already
         * normalised whenever a fuzzy match was needed. */
        if (fat && *base_fuzzy_len == base_len && memcmp(*base_fuzzy, base, base_len) == 0) {
            at = base + (fat - *base_fuzzy);
            match_len = fl;
        }
    }
    if (!at)
        return 0;
    if (!*base_fuzzy)
        *base_fuzzy = edit_fuzzy_normalize(base, base_len, base_fuzzy_len);
    *occurrences =
        fo && *base_fuzzy && fl ? count_occurrences(*base_fuzzy, *base_fuzzy_len, fo, fl) : 1;
    *index = (size_t)(at - base);
    *length = match_len;
    return 1;
}

static int compare_matches(const void *a, const void *b)
{
    const struct edit_match *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

size_t edit_sort_matches(struct edit_match *matches, size_t count)
{
    qsort(matches, count, sizeof(*matches), compare_matches);
    for (size_t i = 1; i < count; i++)
        if (matches[i - 1].index + matches[i - 1].length > matches[i].index)
            return i;
    return 0;
}

char *edit_splice(const char *base, size_t base_len, const struct edit_match *matches, size_t count,
                  size_t *out_len)
{
    size_t cap = base_len + 1;
    for (size_t i = 0; i < count; i++)
        cap += matches[i].new_len;
    char *result = malloc(cap);
    if (!result)
        return NULL;
    size_t rl = 0, pos = 0;
    for (size_t i = 0; i < count; i++) {
        memcpy(result + rl, base + pos, matches[i].index - pos);
        rl += matches[i].index - pos;
        memcpy(result + rl, matches[i].new_text, matches[i].new_len);
        rl += matches[i].new_len;
        pos = matches[i].index + matches[i].length;
    }
    memcpy(result + rl, base + pos, base_len - pos);
    rl += base_len - pos;
    *out_len = rl;
    return result;
}

char *edit_restore_endings(const char *text, size_t len, bool bom, bool crlf, size_t *out_len)
{
    size_t lf_count = 0;
    for (size_t i = 0; i < len; i++)
        lf_count += text[i] == '\n';
    char *out = malloc(len + (crlf ? lf_count : 0) + 4);
    if (!out)
        return NULL;
    size_t o = 0;
    if (bom) {
        memcpy(out, "\xef\xbb\xbf", 3);
        o = 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (crlf && text[i] == '\n')
            out[o++] = '\r';
        out[o++] = text[i];
    }
    *out_len = o;
    return out;
}
