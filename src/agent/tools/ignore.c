/* Parsing and matching of gitignore lines, following the ignore crate that
 * ripgrep and fd share (GitignoreBuilder::add_line). Sandbox or host
 * context; no I/O: walk.c reads the files. */
#include "agent/tools/ignore.h"

#include "agent/tools/glob.h"
#include "util/cleanup.h"

#include <stdlib.h>
#include <string.h>

/* Most ignore lines are a name, an extension or a path without
 * wildcards: those are compared directly (the ignore crate's globset does
 * the same). Only ASCII patterns and ASCII paths take this way, where the
 * comparison and the glob's regex cannot disagree. */
enum rule_kind {
    RULE_GLOB,     /* anything else: the compiled glob */
    RULE_BASENAME, /* "**" "/NAME": the last component is NAME */
    RULE_SUFFIX,   /* "**" "/" "*SUFFIX": the last component ends with SUFFIX */
    RULE_PATH,     /* "PATH": the whole path is PATH */
};

struct ignore_rule {
    struct tool_glob *glob;
    bool negated;
    bool dir_only;
    enum rule_kind kind;
    char *lit; /* NAME, SUFFIX or PATH */
    size_t lit_len;
};

/* Plain ASCII without glob syntax (globset drops a lone '}', so it counts). */
static bool plain_ascii(const char *s, size_t len, bool slash_ok)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80 || c == 0 || strchr("*?[]{}\\", c) || (c == '/' && !slash_ok))
            return false;
    }
    return len > 0;
}

static void classify(struct ignore_rule *rule, const char *glob, size_t len)
{
    const char *lit = glob;
    size_t lit_len = len;
    rule->kind = RULE_GLOB;
    if (len > 4 && memcmp(glob, "**/*", 4) == 0 && plain_ascii(glob + 4, len - 4, false)) {
        rule->kind = RULE_SUFFIX;
        lit = glob + 4;
        lit_len = len - 4;
    } else if (len > 3 && memcmp(glob, "**/", 3) == 0 && plain_ascii(glob + 3, len - 3, false)) {
        rule->kind = RULE_BASENAME;
        lit = glob + 3;
        lit_len = len - 3;
    } else if (plain_ascii(glob, len, true)) {
        rule->kind = RULE_PATH;
    }
    if (rule->kind == RULE_GLOB)
        return;
    rule->lit = strndup(lit, lit_len);
    rule->lit_len = lit_len;
    if (!rule->lit)
        rule->kind = RULE_GLOB; /* the glob still answers */
}

static bool rule_matches(const struct ignore_rule *rule, const char *rel, size_t len,
                         const char *base, size_t base_len, bool ascii)
{
    if (!ascii || rule->kind == RULE_GLOB)
        return tool_glob_match(rule->glob, rel, len);
    switch (rule->kind) {
    case RULE_BASENAME:
        return base_len == rule->lit_len && memcmp(base, rule->lit, base_len) == 0;
    case RULE_SUFFIX:
        return base_len >= rule->lit_len &&
               memcmp(base + base_len - rule->lit_len, rule->lit, rule->lit_len) == 0;
    case RULE_PATH:
        return len == rule->lit_len && memcmp(rel, rule->lit, len) == 0;
    case RULE_GLOB:
        break;
    }
    return tool_glob_match(rule->glob, rel, len);
}

struct ignore_rules {
    struct ignore_rule *rules;
    size_t count, cap;
    bool is_override;
};

void ignore_rules_free(struct ignore_rules *rules)
{
    if (!rules)
        return;
    for (size_t i = 0; i < rules->count; i++) {
        tool_glob_free(rules->rules[i].glob);
        free(rules->rules[i].lit);
    }
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
    classify(&rule, glob, n);
    if (rules_push(r, rule) < 0) {
        tool_glob_free(rule.glob);
        free(rule.lit);
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
    size_t len = 0;
    bool ascii = true;
    for (; rel[len]; len++)
        ascii &= (unsigned char)rel[len] < 0x80;
    const char *slash = memrchr(rel, '/', len);
    const char *base = slash ? slash + 1 : rel;
    size_t base_len = len - (size_t)(base - rel);
    for (size_t i = rules->count; i-- > 0;) {
        const struct ignore_rule *rule = &rules->rules[i];
        if (rule->dir_only && !is_dir)
            continue;
        if (!rule_matches(rule, rel, len, base, base_len, ascii))
            continue;
        bool keep = rule->negated;
        if (rules->is_override)
            keep = !keep;
        return keep ? IGNORE_WHITELIST : IGNORE_IGNORE;
    }
    return IGNORE_NONE;
}
