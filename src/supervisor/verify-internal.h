/* What the files of the verify audit share (verify.c: the rows, the
 * probe's answer and the report; verify-probe.c: the host-side facts and
 * the probe request; verify-check-host.c and verify-check-sandbox.c: the
 * checks). Internal to src/supervisor/. Host context, unprivileged
 * supervisor. */
#pragma once

#include "supervisor/verify.h"
#include "util/cleanup.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#define PROBE_MARKER  "CORDON-PROBE "
#define MAX_LISTENERS 4
/* How long the proxy keeps quiet about the probe's targets. */
#define VERIFY_PROXY_QUIET_S 60
/* What the probe creates at each guarded git directory's top level. */
#define VERIFY_PLANT_NAME "cordon-verify-planted"

struct listener {
    int fd;
    char addr[INET_ADDRSTRLEN];
    int port;
};

struct verify_run {
    char *name;
    char *state_dir; /* NULL: a host session, no lock to check */
    const char *pid1_comm;
    const char *probe_via; /* how the probe was started, for the evidence */
    const struct launch *l;
    pid_t agent_pid;
    /* The agent's /proc/<pid>/environ, read with its other host-side facts
     * (a probe process does not outlive its answer). */
    int agent_env_rc;
    char agent_env_flagged[512];
    json_t *host;    /* host-side facts, for the evidence */
    json_t *request; /* what the probe was asked */
    struct listener listeners[MAX_LISTENERS];
    size_t nlisteners;
    json_t *checks;
    json_t *host_names; /* host path of each host_paths id */
};

/* --- rows --- */

static inline void row(struct verify_run *r, const char *check, const char *status, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));

static inline void row(struct verify_run *r, const char *check, const char *status, const char *fmt,
                       ...)
{
    char evidence[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(evidence, sizeof(evidence), fmt, ap);
    va_end(ap);
    json_array_append_new(r->checks, json_pack("{s:s, s:s, s:s}", "check", check, "status", status,
                                               "evidence", evidence));
}

/* Appends to a bounded evidence buffer. */
static inline void add(char *buf, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static inline void add(char *buf, size_t size, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 1 >= size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, size - len, fmt, ap);
    va_end(ap);
}

static inline const char *str(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "?";
}

bool sentinels_injected(void);
void flagged_in(char *const *env, char *out, size_t size, bool *probe_var);
json_t *host_paths(const struct launch *l, json_t *names);
bool zero_hex(const json_t *st, const char *key);
bool all_zero_caps(const json_t *st);
void check_env(struct verify_run *r, const json_t *p);
void check_secrets(struct verify_run *r);
void check_host_files(struct verify_run *r, const json_t *p);
bool backend_is(const struct verify_run *r, unsigned caps);
bool on_own_kernel(const struct verify_run *r);
void check_docker(struct verify_run *r, const json_t *p);
void check_ports(struct verify_run *r);
void check_seccomp(struct verify_run *r, const json_t *p);
void check_privileges(struct verify_run *r, const json_t *p);
void check_namespaces(struct verify_run *r, const json_t *p);
void check_processes(struct verify_run *r, const json_t *p);
void check_network(struct verify_run *r, const json_t *p);
void check_git_metadata(struct verify_run *r, const json_t *p);
void check_writes(struct verify_run *r, const json_t *p);
void check_landlock(struct verify_run *r, const json_t *p);
void check_ownership(struct verify_run *r);

/* The variables the sandbox must not see (set on the host by
 * verify_inject_sentinels) and the namespaces compared. */
extern const char *const verify_sentinel_names[5];
extern const char *const verify_ns_names[7];
