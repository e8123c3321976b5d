/* `cordon trust`'s review (trust-review.h). Host context, unprivileged. The
 * file under review is agent-writable: nothing of it reaches the terminal
 * unescaped, so it cannot move the cursor, clear lines or reorder text to
 * look like something else. */
#include "config/trust-review.h"
#include "config/emit.h"
#include "util/cleanup.h"
#include "util/escape.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *value_text(json_t *value)
{
    /* ASCII only: a value from the file cannot carry invisible characters */
    return json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT | JSON_ENSURE_ASCII);
}

static int64_t limit_of(const struct cordon_config *cfg, enum cfg_key key)
{
    switch (key) {
    case CFG_LIMITS_MEMORY_MIB:
        return cfg->limits.memory_mib;
    case CFG_LIMITS_PIDS:
        return cfg->limits.pids;
    case CFG_LIMITS_OPEN_FILES:
        return cfg->limits.open_files;
    case CFG_LIMITS_FILE_SIZE_MIB:
        return cfg->limits.file_size_mib;
    case CFG_LIMITS_CPU_SECONDS:
        return cfg->limits.cpu_seconds;
    case CFG_LIMITS_BASH_TIMEOUT:
        return cfg->limits.bash_timeout;
    default:
        return 0;
    }
}

/* Why changing key from before to after weakens isolation, or NULL. */
static const char *weakens(enum cfg_key key, const struct cordon_config *before,
                           const struct cordon_config *after)
{
    switch (key) {
    case CFG_BACKEND:
        return "a different isolation backend";
    case CFG_WORKSPACE_READONLY:
        return after->workspace_readonly ? NULL : "the workspace becomes writable";
    case CFG_TOOLCHAIN_CACHES:
        return after->toolchain_caches ? "package caches shared with your other sandboxes" : NULL;
    case CFG_ENV_MODE:
        return after->env.mode > before->env.mode ? "host environment variables are forwarded"
                                                  : NULL;
    case CFG_ENV_ALLOW:
        return "these host environment variables are forwarded (allowlist mode)";
    case CFG_LIMITS_CPUS:
        return (after->limits.cpus == 0 && before->limits.cpus != 0) ||
                       (before->limits.cpus != 0 && after->limits.cpus > before->limits.cpus)
                   ? "a resource limit is raised or removed"
                   : NULL;
    case CFG_LIMITS_MEMORY_MIB:
    case CFG_LIMITS_PIDS:
    case CFG_LIMITS_OPEN_FILES:
    case CFG_LIMITS_FILE_SIZE_MIB:
    case CFG_LIMITS_CPU_SECONDS:
    case CFG_LIMITS_BASH_TIMEOUT: {
        int64_t was = limit_of(before, key), now = limit_of(after, key);
        return (now == 0 && was != 0) || (was != 0 && now > was)
                   ? "a resource limit is raised or removed"
                   : NULL;
    }
    case CFG_NETWORK_MODE:
        return after->network.mode > before->network.mode ? "the sandbox may reach the network"
                                                          : NULL;
    case CFG_NETWORK_ALLOW_HOSTS:
        return "the sandbox may reach these hosts (allowlist mode)";
    case CFG_NETWORK_PUBLISH_PORTS:
        return "ports of the sandbox are published on the host";
    case CFG_SKILLS_PATHS:
        return "the agent may read these host directories";
    case CFG_DOCKER_MODE:
        return after->docker.mode == CFG_DOCKER_DISABLED ? NULL
                                                         : "Docker inside the sandbox (vm backend)";
    case CFG_WORKSPACE_MODE:
        return after->workspace_mode == CFG_WORKSPACE_DIRECT
                   ? "the agent's changes reach the workspace without review"
                   : NULL;
    default:
        return NULL;
    }
}

static void write_origin(FILE *out, const struct cfg_origin *o, const char *was)
{
    if (was && o->line)
        fprintf(out, " (was %s; line %d)", was, o->line);
    else if (was)
        fprintf(out, " (was %s)", was);
    else if (o->line)
        fprintf(out, " (line %d)", o->line);
}

static int write_summary(FILE *out, const struct cordon_config *before,
                         const struct cordon_config *after)
{
    fputs("What trusting it changes ('!' marks what weakens isolation):\n", out);
    size_t changes = 0;
    for (int k = 0; k < CFG_KEY_COUNT; k++) {
        if (k == CFG_MOUNTS)
            continue;
        json_t *a = cfg_value_json(before, k), *b = cfg_value_json(after, k);
        bool same = json_equal(a, b);
        _cleanup_free_ char *was = same ? NULL : value_text(a);
        _cleanup_free_ char *now = same ? NULL : value_text(b);
        json_decref(a);
        json_decref(b);
        if (same)
            continue;
        if (!was || !now)
            return -1;
        const char *why = weakens(k, before, after);
        fprintf(out, "%c %s = %s", why ? '!' : ' ', cfg_key_name(k), now);
        write_origin(out, &after->origin[k], was);
        if (why)
            fprintf(out, ": %s", why);
        fputc('\n', out);
        changes++;
    }
    for (size_t i = 0; i < after->mounts.count; i++) {
        const struct cfg_mount *m = &after->mounts.items[i];
        if (m->origin.layer != CFG_LAYER_WORKSPACE)
            continue;
        json_t *host = json_string(m->host_path), *guest = json_string(m->guest_path);
        _cleanup_free_ char *h = host ? value_text(host) : NULL;
        _cleanup_free_ char *g = guest ? value_text(guest) : NULL;
        json_decref(host);
        json_decref(guest);
        if (!h || !g)
            return -1;
        fprintf(out, "! mount host %s at %s, %s", h, g, m->readonly ? "read-only" : "read-write");
        write_origin(out, &m->origin, NULL);
        fprintf(out, ": %s\n",
                m->readonly ? "a host path becomes readable in the sandbox"
                            : "a host path becomes writable from the sandbox");
        changes++;
    }
    if (changes == 0)
        fputs("  nothing: every value it sets is already in effect or locked by host policy\n",
              out);
    return 0;
}

int cfg_trust_review(const struct cfg_inputs *in, const char *data, size_t length,
                     char **ret_summary, struct cordon_error *err)
{
    struct cfg_inputs without = *in, with = *in;
    without.review_data = NULL;
    without.skip_workspace_file = true;
    with.review_data = data;
    with.review_length = length;
    with.skip_workspace_file = false;
    struct cordon_config before, after;
    struct cfg_warnings ignored = {0};
    int ret = cfg_resolve(&without, &before, &ignored, err);
    cfg_warnings_free(&ignored);
    if (ret < 0) {
        cfg_free(&before);
        return -1;
    }
    struct cordon_error refused = {0};
    ret = cfg_resolve(&with, &after, &ignored, &refused);
    cfg_warnings_free(&ignored);
    if (ret < 0) {
        /* trusting it is harmless (every session stops, naming the line),
         * and the user should know before saying yes */
        cfg_free(&before);
        cfg_free(&after);
        _cleanup_free_ char *reason = text_escape_visible(refused.message, strlen(refused.message),
                                                          TEXT_ESCAPE_KEEP_LAYOUT, NULL);
        if (!reason || asprintf(ret_summary,
                                "What trusting it changes:\n"
                                "! nothing runs: every session in this workspace would stop "
                                "with\n    %s\n",
                                reason) < 0)
            return error_set(err, ENOMEM, "trust review");
        return 0;
    }
    char *text = NULL;
    size_t size = 0;
    FILE *out = open_memstream(&text, &size);
    ret = out ? write_summary(out, &before, &after) : -1;
    if (out && fclose(out) != 0)
        ret = -1;
    cfg_free(&before);
    cfg_free(&after);
    if (ret < 0) {
        free(text);
        return error_set(err, ENOMEM, "trust review");
    }
    *ret_summary = text;
    return 0;
}
