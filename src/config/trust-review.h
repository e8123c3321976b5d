/* What `cordon trust` shows before it trusts, besides the file's content
 * (escaped with util/escape.h): what trusting it would change, each change
 * marked when it weakens the sandbox's isolation. Host context,
 * unprivileged; the CLI prints what this returns. */
#pragma once

#include "config/config.h"

#include <stddef.h>

/* Resolves the configuration as it is without the workspace file and as it
 * would be with data standing for it, trusted; *ret_summary (malloc'd) lists
 * every value that differs and each mount the file adds, one per line, or,
 * when the file would stop every session as a session start would (a
 * refused setting, a credential mount), that error naming file and line.
 * Fails when the configuration cannot be resolved without the file. */
int cfg_trust_review(const struct cfg_inputs *in, const char *data, size_t length,
                     char **ret_summary, struct cordon_error *err);
