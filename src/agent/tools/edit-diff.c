/* Fuzzy normalisation and pi's numbered line diff (edit-diff.h). Sandbox or
 * host context. */
#include "agent/tools/edit-diff.h"
#include "util/cleanup.h"
#include "util/strbuf.h"

#include <stdbool.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <utf8proc.h>

/* JavaScript's String#trimEnd whitespace (after NFKC most spaces are ' '). */
static size_t js_space_len_before(const char *s, size_t end)
{
    if (end >= 1 && strchr(" \t\v\f\r", s[end - 1]) && s[end - 1])
        return 1;
    if (end >= 3) {
        const unsigned char *p = (const unsigned char *)s + end - 3;
        if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf) /* U+FEFF */
            return 3;
        if (p[0] == 0xe1 && p[1] == 0x9a && p[2] == 0x80) /* U+1680 */
            return 3;
        if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) /* U+2028/9 */
            return 3;
    }
    return 0;
}

char *edit_fuzzy_normalize(const char *text, size_t len, size_t *out_len)
{
    _cleanup_free_ char *copy = strndup(text, len);
    if (!copy)
        return NULL;
    _cleanup_free_ char *nfkc = (char *)utf8proc_NFKC((const utf8proc_uint8_t *)copy);
    if (!nfkc)
        return NULL;
    size_t n = strlen(nfkc);
    char *out = malloc(n + 1);
    if (!out)
        return NULL;
    size_t o = 0, line_start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && nfkc[i] != '\n')
            continue;
        size_t end = i, w;
        while (end > line_start && (w = js_space_len_before(nfkc, end)) > 0 &&
               end - w >= line_start)
            end -= w;
        for (size_t j = line_start; j < end;) {
            const unsigned char *p = (const unsigned char *)nfkc + j;
            if (end - j >= 3 && p[0] == 0xe2 && p[1] == 0x80 && (p[2] >= 0x98 && p[2] <= 0x9b)) {
                out[o++] = '\'';
                j += 3;
            } else if (end - j >= 3 && p[0] == 0xe2 && p[1] == 0x80 &&
                       (p[2] >= 0x9c && p[2] <= 0x9f)) {
                out[o++] = '"';
                j += 3;
            } else if (end - j >= 3 &&
                       ((p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0x90 && p[2] <= 0x95) ||
                        (p[0] == 0xe2 && p[1] == 0x88 && p[2] == 0x92))) {
                out[o++] = '-';
                j += 3;
            } else {
                out[o++] = nfkc[j++];
            }
        }
        if (i < n)
            out[o++] = '\n';
        line_start = i + 1;
    }
    out[o] = '\0';
    *out_len = o;
    return out;
}

struct line_tokens {
    const char **start;
    size_t *len;
    size_t count;
};

/* diffLines' tokens: each line with its "\n"; a final empty token dropped. */
static int tokenize(const char *s, size_t n, struct line_tokens *t)
{
    size_t cap = 1;
    for (size_t i = 0; i < n; i++)
        cap += s[i] == '\n';
    t->start = calloc(cap, sizeof(*t->start));
    t->len = calloc(cap, sizeof(*t->len));
    t->count = 0;
    if (!t->start || !t->len)
        return -1;
    size_t pos = 0;
    while (pos < n) {
        const char *nl = memchr(s + pos, '\n', n - pos);
        size_t l = nl ? (size_t)(nl - (s + pos)) + 1 : n - pos;
        t->start[t->count] = s + pos;
        t->len[t->count++] = l;
        pos += l;
    }
    return 0;
}

static bool token_equal(const struct line_tokens *a, size_t i, const struct line_tokens *b,
                        size_t j)
{
    return a->len[i] == b->len[j] && memcmp(a->start[i], b->start[j], a->len[i]) == 0;
}

/* A component chain as jsdiff builds it (newest first). */
struct component {
    size_t count;
    int kind; /* 0 common, 1 added, -1 removed */
    struct component *prev;
};

struct path {
    long old_pos;
    struct component *last;
};

struct arena {
    struct component **blocks;
    size_t nblocks;
};

static struct component *component_new(struct arena *a, size_t count, int kind,
                                       struct component *prev)
{
    struct component *c = malloc(sizeof(*c));
    struct component **grown = realloc(a->blocks, (a->nblocks + 1) * sizeof(*grown));
    if (!c || !grown) {
        free(c);
        if (grown)
            a->blocks = grown;
        return NULL;
    }
    a->blocks = grown;
    a->blocks[a->nblocks++] = c;
    *c = (struct component){count, kind, prev};
    return c;
}

static long extract_common(struct arena *a, struct path *p, const struct line_tokens *o,
                           const struct line_tokens *n, long diagonal)
{
    long old_pos = p->old_pos, new_pos = old_pos - diagonal;
    size_t common = 0;
    while (new_pos + 1 < (long)n->count && old_pos + 1 < (long)o->count &&
           token_equal(o, (size_t)old_pos + 1, n, (size_t)new_pos + 1)) {
        new_pos++;
        old_pos++;
        common++;
    }
    if (common)
        p->last = component_new(a, common, 0, p->last);
    p->old_pos = old_pos;
    return new_pos;
}

static struct component *add_to_path(struct arena *a, const struct path *p, int kind)
{
    struct component *last = p->last;
    if (last && last->kind == kind)
        return component_new(a, last->count + 1, kind, last->prev);
    return component_new(a, 1, kind, last);
}

static void out_line(struct strbuf *b, char sign, size_t width, size_t num, const char *text,
                     size_t text_len)
{
    char head[64];
    int n = num ? snprintf(head, sizeof(head), "%c%*zu ", sign, (int)width, num)
                : snprintf(head, sizeof(head), "%c%*s ", sign, (int)width, "");
    if (b->len)
        strbuf_append(b, "\n", 1);
    strbuf_append(b, head, (size_t)n);
    strbuf_append(b, text, text_len);
}

/* jsdiff's Myers search with its tie-breaking: the component chain of the
 * shortest edit script (newest first), NULL when both are empty or out of
 * memory. The components live in the arena. */
static struct component *diff_components(struct arena *a, const struct line_tokens *o,
                                         const struct line_tokens *n)
{
    long max_edit = (long)(o->count + n->count);
    _cleanup_free_ struct path *best = calloc((size_t)(2 * max_edit + 3), sizeof(*best));
    _cleanup_free_ bool *alive = calloc((size_t)(2 * max_edit + 3), sizeof(*alive));
    if (!best || !alive)
        return NULL;
    long off = max_edit + 1;
    best[off] = (struct path){-1, NULL};
    alive[off] = true;
    long new_pos = extract_common(a, &best[off], o, n, 0);
    if (best[off].old_pos + 1 >= (long)o->count && new_pos + 1 >= (long)n->count)
        return best[off].last;
    long min_diag = LONG_MIN, max_diag = LONG_MAX;
    for (long d = 1; d <= max_edit; d++) {
        long lo = min_diag > -d ? min_diag : -d, hi = max_diag < d ? max_diag : d;
        for (long k = lo; k <= hi; k += 2) {
            struct path *remove = alive[off + k - 1] ? &best[off + k - 1] : NULL;
            struct path *add = alive[off + k + 1] ? &best[off + k + 1] : NULL;
            struct path remove_copy = remove ? *remove : (struct path){0};
            if (remove)
                alive[off + k - 1] = false;
            bool can_add = false;
            if (add) {
                long add_new_pos = add->old_pos - k;
                can_add = add_new_pos >= 0 && add_new_pos < (long)n->count;
            }
            bool can_remove = remove && remove_copy.old_pos + 1 < (long)o->count;
            if (!can_add && !can_remove) {
                alive[off + k] = false;
                continue;
            }
            struct path base;
            if (!can_remove || (can_add && remove_copy.old_pos < add->old_pos)) {
                base.old_pos = add->old_pos;
                base.last = add_to_path(a, add, 1);
            } else {
                base.old_pos = remove_copy.old_pos + 1;
                base.last = add_to_path(a, &remove_copy, -1);
            }
            new_pos = extract_common(a, &base, o, n, k);
            if (base.old_pos + 1 >= (long)o->count && new_pos + 1 >= (long)n->count)
                return base.last;
            best[off + k] = base;
            alive[off + k] = true;
            if (base.old_pos + 1 >= (long)o->count && k - 1 < max_diag)
                max_diag = k - 1;
            if (new_pos + 1 >= (long)n->count && k + 1 > min_diag)
                min_diag = k + 1;
        }
    }
    return NULL;
}

/* Where the rendering stands: the next line numbers and tokens of each
 * side, the number column's width. */
struct render {
    struct strbuf out;
    const struct line_tokens *o, *n;
    size_t width, old_num, new_num, old_tok, new_tok;
};

/* Line j of a component's tokens, without its newline. */
static size_t line_len(const struct line_tokens *src, size_t at)
{
    return src->len[at] - (src->start[at][src->len[at] - 1] == '\n');
}

static void render_context_line(struct render *r, const struct line_tokens *src, size_t at)
{
    out_line(&r->out, ' ', r->width, r->old_num++, src->start[at], line_len(src, at));
    r->new_num++;
}

/* An added or removed component: every line, numbered on its side. */
static void render_change(struct render *r, const struct component *c,
                          const struct line_tokens *src, size_t first)
{
    for (size_t j = 0; j < c->count; j++) {
        size_t at = first + j;
        if (c->kind == 1)
            out_line(&r->out, '+', r->width, r->new_num++, src->start[at], line_len(src, at));
        else
            out_line(&r->out, '-', r->width, r->old_num++, src->start[at], line_len(src, at));
    }
}

/* A common component: up to 4 lines of context after the change before it
 * and before the change after it, "..." for what is left out. */
static void render_common(struct render *r, size_t nlines, const struct line_tokens *src,
                          size_t first, bool last_was_change, bool next_change)
{
    const size_t context = 4;
    size_t show_to = 0, gap_from = 0, gap_to = 0; /* [from, to) */
    size_t tail_from = nlines;
    if (last_was_change && next_change) {
        if (nlines <= context * 2) {
            show_to = nlines;
        } else {
            show_to = context;
            gap_from = context;
            gap_to = nlines - context;
            tail_from = nlines - context;
        }
    } else if (last_was_change) {
        show_to = nlines < context ? nlines : context;
        gap_from = show_to;
        gap_to = nlines;
    } else if (next_change) {
        gap_to = nlines > context ? nlines - context : 0;
        tail_from = gap_to;
    } else {
        gap_to = nlines;
    }
    for (size_t j = 0; j < show_to; j++)
        render_context_line(r, src, first + j);
    if (gap_to > gap_from) {
        if (last_was_change || next_change)
            out_line(&r->out, ' ', r->width, 0, "...", 3);
        r->old_num += gap_to - gap_from;
        r->new_num += gap_to - gap_from;
    }
    if (last_was_change && next_change && nlines <= context * 2)
        tail_from = nlines;
    for (size_t j = tail_from; j < nlines && next_change; j++)
        render_context_line(r, src, first + j);
}

static size_t count_lines(const char *text, size_t len)
{
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    return lines;
}

/* pi's numbered diff of the components (oldest first). */
static void render_diff(struct render *r, struct component *const *list, size_t ncomp,
                        size_t *first_changed_line)
{
    bool last_was_change = false;
    strbuf_append(&r->out, "", 0);
    for (size_t i = 0; i < ncomp; i++) {
        const struct component *c = list[i];
        /* The lines of this part: its tokens without their newlines. */
        const struct line_tokens *src = c->kind == -1 ? r->o : r->n;
        size_t first = c->kind == -1 ? r->old_tok : r->new_tok;
        if (c->kind != 1)
            r->old_tok += c->count;
        if (c->kind != -1)
            r->new_tok += c->count;
        if (c->kind != 0) {
            if (!*first_changed_line)
                *first_changed_line = r->new_num;
            render_change(r, c, src, first);
            last_was_change = true;
            continue;
        }
        bool next_change = i + 1 < ncomp && list[i + 1]->kind != 0;
        render_common(r, c->count, src, first, last_was_change, next_change);
        last_was_change = false;
    }
}

char *edit_diff_string(const char *old_text, size_t old_len, const char *new_text, size_t new_len,
                       size_t *first_changed_line)
{
    struct line_tokens o = {0}, n = {0};
    struct arena a = {0};
    struct component **list = NULL;
    struct render r = {.o = &o, .n = &n, .old_num = 1, .new_num = 1};
    *first_changed_line = 0;
    if (tokenize(old_text, old_len, &o) < 0 || tokenize(new_text, new_len, &n) < 0)
        goto done;
    struct component *result = diff_components(&a, &o, &n);
    size_t ncomp = 0;
    for (struct component *c = result; c; c = c->prev)
        ncomp++;
    list = calloc(ncomp + 1, sizeof(*list));
    if (!list)
        goto done;
    size_t idx = ncomp;
    for (struct component *c = result; c; c = c->prev)
        list[--idx] = c;
    size_t old_lines = count_lines(old_text, old_len), new_lines = count_lines(new_text, new_len);
    size_t max_line = old_lines > new_lines ? old_lines : new_lines;
    r.width = (size_t)snprintf(NULL, 0, "%zu", max_line);
    render_diff(&r, list, ncomp, first_changed_line);
done:
    for (size_t i = 0; i < a.nblocks; i++)
        free(a.blocks[i]);
    free(a.blocks);
    free(list);
    free(o.start);
    free(o.len);
    free(n.start);
    free(n.len);
    return r.out.buf;
}
