/* The sandbox's environment (docs/configuration.md, [env]): strict by default, an
 * explicit allowlist, or passthrough; Docker, Compose and loader variables are
 * always removed. Host context. */
#pragma once

#include "util/error.h"

#include <stdbool.h>

enum env_mode { ENV_MODE_STRICT, ENV_MODE_ALLOWLIST, ENV_MODE_PASSTHROUGH };

/* True for names that no mode and no configuration may forward. */
bool env_name_is_protected(const char *name);

/* Builds a NULL-terminated, malloc'd KEY=VALUE array from host_environ.
 * allow: extra names for ENV_MODE_ALLOWLIST (NULL-terminated, may be NULL).
 * home: the HOME inside the sandbox. Free with env_free(). */
int env_build(enum env_mode mode, char *const *host_environ, const char *const *allow,
              const char *home, char ***out, struct cordon_error *err);
void env_free(char **env);
