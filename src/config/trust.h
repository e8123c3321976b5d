/* The trust record: which workspaces' .cordon.toml the user accepted, pinned
 * to the file's SHA-256 at the time, kept outside every workspace in
 * $XDG_CONFIG_HOME/cordon/trust.json. Host context, unprivileged. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>

struct cfg_trust_entry {
    char *workspace;  /* canonical path */
    char *sha256;     /* of .cordon.toml when trusted; NULL: there was none */
    char *trusted_at; /* RFC 3339, UTC */
};

struct cfg_trust_list {
    struct cfg_trust_entry *items;
    size_t count;
};

/* A missing record is an empty list; an unreadable or malformed one, or one
 * writable by group or others, is an error. */
int cfg_trust_read(const char *trust_file, struct cfg_trust_list *ret, struct cordon_error *err);
void cfg_trust_list_free(struct cfg_trust_list *list);
const struct cfg_trust_entry *cfg_trust_find(const struct cfg_trust_list *list,
                                             const char *workspace);

/* Trusts workspace, pinning the current content of <workspace>/.cordon.toml. */
int cfg_trust_add(const char *trust_file, const char *workspace, struct cordon_error *err);
/* Trusts workspace, pinning the given hash (64 hex; NULL: no file), that of
 * the content the user reviewed, whatever the file holds by now. */
int cfg_trust_pin(const char *trust_file, const char *workspace, const char *sha256,
                  struct cordon_error *err);
int cfg_trust_remove(const char *trust_file, const char *workspace, bool *ret_removed,
                     struct cordon_error *err);

/* Reads <workspace>/.cordon.toml without following a symlink. *ret_exists is
 * false (and 0 returned) when there is no such file. */
int cfg_read_workspace_file(const char *path, char **ret_data, size_t *ret_length, bool *ret_exists,
                            struct cordon_error *err);
