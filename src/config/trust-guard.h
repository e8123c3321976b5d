/* The trust guard: remembers which content of a workspace's .cordon.toml a
 * sandboxed session created or changed, so that cordon never nudges the user
 * to trust a file the agent wrote. Kept in the user's configuration
 * directory ($XDG_CONFIG_HOME/cordon/trust-guard/), outside every workspace
 * and covered by the rule that no writable mount overlaps that directory.
 * Host context, unprivileged, in the supervisor (session start and end) and
 * the CLI (configuration resolution, `cordon trust`).
 *
 * Each session leaves a pending record while it runs (the file's hash at its
 * start), so a session whose supervisor died still counts; at its end a
 * changed file's new hash becomes a "written" marker. */
#pragma once

#include "config/sha256.h"
#include "util/error.h"

#include <stdbool.h>

#define TRUST_GUARD_HASH_SIZE (2 * SHA256_DIGEST_SIZE + 1)

struct trust_guard {
    bool armed;
    char *dir;       /* the guard directory */
    char *workspace; /* canonical workspace root */
    char *pending;   /* the pending record's name in dir; NULL when none */
    /* the file's sha256 at the start; "-" absent, "?" unreadable */
    char start[TRUST_GUARD_HASH_SIZE];
    long long started; /* wall-clock seconds */
};

/* The hash of <workspace>/.cordon.toml as the guard records it: 64 hex
 * digits, "-" when there is no such file, "?" when it cannot be read (a
 * symlink, not a regular file, too large). */
void trust_guard_hash_file(const char *workspace, char hash[TRUST_GUARD_HASH_SIZE]);

/* Session start, before the sandbox exists: hashes the file and leaves the
 * pending record. Settles the pending records of dead sessions of the same
 * workspace first. On failure nothing is left behind. */
int trust_note_session_start(struct trust_guard *g, const char *guard_dir, const char *workspace,
                             struct cordon_error *err);
/* Session end, after the sandbox is gone: a file that differs from the start
 * gets its marker, then the pending record goes. Safe on an unarmed guard.
 * When the marker cannot be written the pending record stays (it keeps the
 * file flagged) and err says why. */
int trust_note_session_end(struct trust_guard *g, struct cordon_error *err);

/* Whether the content with this hash (64 hex) of <workspace>/.cordon.toml
 * was created or changed by a sandboxed session: a marker for it, a session
 * (running, or dead without an end) that started with other content, or a
 * session of an enclosing workspace during which the file last changed
 * (its ctime). */
int trust_guard_written(const char *guard_dir, const char *workspace, const char *hash,
                        bool *ret_written, struct cordon_error *err);

/* After the user reviewed and trusted the file: drops the workspace's
 * markers and the records of its dead sessions. */
int trust_guard_forget(const char *guard_dir, const char *workspace, struct cordon_error *err);
