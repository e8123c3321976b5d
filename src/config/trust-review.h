/* What `cordon trust` shows before it trusts: a workspace file's content
 * with control and invisible characters escaped, and what trusting it would
 * change, each change marked when it weakens the sandbox's isolation. Host
 * context, unprivileged; the CLI prints what these return. */
#pragma once

#include "config/config.h"

#include <stddef.h>

/* data (length bytes) as text a terminal shows faithfully: printable ASCII,
 * newlines, tabs and valid UTF-8 stay; C0/C1 controls, DEL, bidirectional
 * and zero-width characters and invalid bytes become \xNN or \u{XXXX}.
 * malloc'd, or NULL on ENOMEM. */
char *cfg_escape_text(const char *data, size_t length);

/* Resolves the configuration as it is without the workspace file and as it
 * would be with data standing for it, trusted; *ret_summary (malloc'd) lists
 * every value that differs and each mount the file adds, one per line, or,
 * when the file would stop every session as a session start would (a
 * refused setting, a credential mount), that error naming file and line.
 * Fails when the configuration cannot be resolved without the file. */
int cfg_trust_review(const struct cfg_inputs *in, const char *data, size_t length,
                     char **ret_summary, struct cordon_error *err);
