/* gitignore rules as ripgrep and fd apply them (the ignore crate): one rule
 * set per ignore file, matched against paths relative to the file's
 * directory; the last matching line wins. Walk-level precedence (deeper
 * directories first, .rgignore/.fdignore over .ignore over .gitignore over
 * .git/info/exclude) lives in walk.c. Sandbox or host context. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

enum ignore_match {
    IGNORE_NONE = 0,
    IGNORE_IGNORE,    /* a rule says: leave this path out */
    IGNORE_WHITELIST, /* a negated rule ("!pat") says: keep it */
};

struct ignore_rules;

/* Parses ignore-file text (lines split on '\n', '\r' before it dropped).
 * Lines whose glob does not compile are skipped, as git and ripgrep do.
 * Returns NULL only on allocation failure. Text beyond `max_rules` rules is
 * dropped (a bound for hostile files). */
struct ignore_rules *ignore_rules_parse(const char *text, size_t len, size_t max_rules);
/* Same, for override globs (rg --glob): a plain glob whitelists and "!glob"
 * ignores, the inverse of a gitignore line. */
struct ignore_rules *ignore_rules_parse_override(const char *glob, struct cordon_error *err);
void ignore_rules_free(struct ignore_rules *rules);
size_t ignore_rules_count(const struct ignore_rules *rules);
/* How many rules keep what they match (for overrides: the plain globs).
 * When an override set has any, files matching none of them are left out. */
size_t ignore_rules_whitelists(const struct ignore_rules *rules);

/* rel: path relative to the rule file's directory, no leading "/" or "./". */
enum ignore_match ignore_rules_match(const struct ignore_rules *rules, const char *rel,
                                     bool is_dir);
