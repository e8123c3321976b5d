/* Parsing and matching of gitignore lines, following the ignore crate that
 * ripgrep and fd share (GitignoreBuilder::add_line). Sandbox or host
 * context; no I/O: walk.c reads the files. */
#include "agent/tools/ignore.h"

#include "agent/tools/glob.h"
#include "util/cleanup.h"

#include <stdlib.h>
#include <string.h>

struct ignore_rule {
    struct tool_glob *glob;
    bool negated;
    bool dir_only;
};

struct ignore_rules {
    struct ignore_rule *rules;
    size_t count, cap;
    bool is_override;
};

void ignore_rules_free(struct ignore_rules *rules)
{
    if (!rules)
        return;
    for (size_t i = 0; i < rules->count; i++)
        tool_glob_free(rules->rules[i].glob);
    free(rules->rules);
    free(rules);
}

size_t ignore_rules_count(const struct ignore_rules *rules)
{
    return rules ? rules->count : 0;
}

size_t ignore_rules_whitelists(const struct ignore_rules *rules)
{
    size_t n = 0;
    for (size_t i = 0; rules && i < rules->count; i++)
        if (rules->rules[i].negated != rules->is_override)
            n++;
    return n;
}

static int rules_push(struct ignore_rules *r, struct ignore_rule rule)
{
    if (r->count == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        struct ignore_rule *p = realloc(r->rules, cap * sizeof(*p));
        if (!p)
            return -1;
        r->rules = p;
        r->cap = cap;
    }
    r->rules[r->count++] = rule;
    return 0;
}

/* One line, already without its newline. Returns -1 on allocation
 * failure; a line whose glob does not compile is skipped, or, when err is
 * given, is -2 with ripgrep's "error parsing glob" text in err. */
static int add_line(struct ignore_rules *r, const char *line, size_t len, struct cordon_error *err)
{
    const char *original = line;
    size_t original_len = len;
    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len == 0 || line[0] == '#')
        return 0;
    /* Trailing spaces are dropped unless escaped with a backslash. */
    while (len > 0 && line[len - 1] == ' ') {
        if (len >= 2 && line[len - 2] == '\\')
            break;
        len--;
    }
    if (len == 0)
        return 0;
    struct ignore_rule rule = {0};
    if (line[0] == '!') {
        rule.negated = true;
        line++;
        len--;
    } else if (len >= 2 && line[0] == '\\' && (line[1] == '!' || line[1] == '#')) {
        line++;
        len--;
    }
    if (len == 0)
        return 0;
    bool anchored = false;
    if (line[0] == '/') {
        anchored = true;
        line++;
        len--;
    }
    if (len > 0 && line[len - 1] == '/') {
        rule.dir_only = true;
        len--;
        /* "a\/" keeps its escaped slash. */
        if (len > 0 && line[len - 1] == '\\')
            len++;
    }
    if (len == 0)
        return 0;
    if (memchr(line, '/', len))
        anchored = true;
    _cleanup_free_ char *glob = malloc(len + 4);
    if (!glob)
        return -1;
    size_t n = 0;
    if (!anchored && !(len >= 3 && memcmp(line, "**/", 3) == 0)) {
        memcpy(glob, "**/", 3);
        n = 3;
    }
    memcpy(glob + n, line, len);
    n += len;
    struct cordon_error glob_err;
    if (tool_glob_compile(glob, n, TOOL_GLOB_LITERAL_SEPARATOR, &rule.glob, &glob_err) < 0) {
        if (!err)
            return 0;
        error_set(err, 0, "error parsing glob '%.*s': %s", (int)original_len, original,
                  glob_err.message);
        return -2;
    }
    if (rules_push(r, rule) < 0) {
        tool_glob_free(rule.glob);
        return -1;
    }
    return 0;
}

struct ignore_rules *ignore_rules_parse(const char *text, size_t len, size_t max_rules)
{
    struct ignore_rules *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    size_t pos = 0;
    while (pos < len && r->count < max_rules) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len;
        if (add_line(r, text + pos, end - pos, NULL) < 0) {
            ignore_rules_free(r);
            return NULL;
        }
        pos = end + 1;
    }
    return r;
}

struct ignore_rules *ignore_rules_parse_override(const char *glob, struct cordon_error *err)
{
    struct ignore_rules *r = calloc(1, sizeof(*r));
    if (!r) {
        error_set(err, 0, "out of memory");
        return NULL;
    }
    r->is_override = true;
    int ret = add_line(r, glob, strlen(glob), err);
    if (ret < 0) {
        ignore_rules_free(r);
        if (ret == -1)
            error_set(err, 0, "out of memory");
        return NULL;
    }
    return r;
}

enum ignore_match ignore_rules_match(const struct ignore_rules *rules, const char *rel, bool is_dir)
{
    if (!rules)
        return IGNORE_NONE;
    size_t len = strlen(rel);
    for (size_t i = rules->count; i-- > 0;) {
        const struct ignore_rule *rule = &rules->rules[i];
        if (rule->dir_only && !is_dir)
            continue;
        if (!tool_glob_match(rule->glob, rel, len))
            continue;
        bool keep = rule->negated;
        if (rules->is_override)
            keep = !keep;
        return keep ? IGNORE_WHITELIST : IGNORE_IGNORE;
    }
    return IGNORE_NONE;
}
