/* The user's git identity for the sandbox's environment (git-identity.c).
 * Host context. */
#pragma once

#include "util/error.h"

/* Appends GIT_CONFIG_COUNT/KEY_n/VALUE_n for user.name, user.email and
 * format.signOff to *ENVP (a NULL-terminated, heap-allocated list), each
 * from REPO_CONFIG (the repository's config file; NULL: none) or else the
 * user's global git configuration as git reads it in WORKSPACE (its
 * includeIf "gitdir:" conditions). CACHE_DIR (NULL: none): where git's
 * answer is kept, keyed by the files' content, for files that include
 * nothing (no git process then). Adds nothing when *ENVP already sets git
 * configuration or identity variables, or when none is set. */
int git_identity_env_add(const char *workspace, const char *repo_config, const char *cache_dir,
                         char ***envp, struct cordon_error *err);
