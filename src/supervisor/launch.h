/* Turning "this workspace, this configuration" into an ns_spec: workspace
 * detection, configuration (every layer, resolved before any sandbox
 * exists), environment, home, protected paths, git metadata, extra mounts,
 * the agent binary and the sandbox's name. Host context; shared by
 * `cordon run`, `cordon shell`, `cordon tool` and `cordon mcp`. */
#pragma once

#include "backend/backend.h"
#include "backend/spec.h"
#include "config/config.h"
#include "net/net.h"
#include "supervisor/environ.h"
#include "supervisor/toolchain-cache.h"
#include "supervisor/workspace.h"

#define LAUNCH_MAX_PROTECTED 64
#define LAUNCH_MAX_MOUNTS    NS_MAX_EXTRA_MOUNTS

/* What the caller asks for: configuration flags, and the network's
 * per-run settings that are not configuration. */
struct launch_request {
    const char *const *session_sets; /* "key=value", NULL-terminated; may be NULL */
    const char *net_audit_log;       /* NULL: $XDG_STATE_HOME/cordon/network-audit.jsonl */
    const char *net_hosts_file;      /* NULL: the system resolver */
    const char *attach;              /* an existing kept sandbox's name, or NULL */
};

struct launch {
    struct workspace ws;
    struct cordon_config cfg;
    /* The configuration's backend (backend/backend.h). */
    const struct backend_ops *backend;
    /* Resource limits, for every backend (ns gets a copy in spec). */
    struct sandbox_limits limits;
    char **env;
    char *agent_path;
    char *home;
    char *etc_cache_root; /* <state root>/.etc, or NULL */
    char name[128];
    const char *protected_paths[LAUNCH_MAX_PROTECTED + 1];
    const char *git_dirs[3];
    struct ns_extra_mount mounts[LAUNCH_MAX_MOUNTS + 1]; /* + the CA bundle */
    /* TLS interception (ns backend): the host file bound over the
     * sandbox's NET_CA_BUNDLE (the host's bundle and the session CA),
     * removed at the end; NULL: none. */
    char *tls_bundle;
    const char *env_allow[256];
    struct net_policy net;
    struct net_session net_session; /* proxy / pasta, started with the sandbox */
    char *net_audit_log;
    struct ns_spec spec; /* argv, stdio and control_fd are the caller's to fill */
    /* The git metadata plan (lifecycle_begin), for verify; NULL if none. */
    struct gitguard *git;
    /* Run mode: the command gets a terminal (`cordon shell` on a terminal,
     * `--pty`), and, for a backend with BACKEND_CAP_TERM_SIZE_AT_START, the
     * host terminal's size (0 when there is none). */
    bool pty;
    unsigned short pty_rows, pty_cols;
    /* Which backend runs and why (backend = "auto" chose it, or who set
     * it): for --debug, `cordon mcp`'s status, verify and the audit log. */
    char backend_reason[1024];
    /* mounts[0..nmounts): the configured ones, then the toolchain caches */
    size_t nmounts;
    struct toolchain_caches caches;
};

/* The cordon-agent binary: next to cordon, else the installed one.
 * malloc'd; NULL with err filled when there is none. */
char *launch_find_agent(struct cordon_error *err);
/* Where /etc/cordon is: a test build honours CORDON_ETC_DIR. */
const char *launch_etc_dir(void);
/* Resolves the configuration for a workspace root (warnings are logged). */
int launch_resolve_config(const char *workspace, const char *const *session_sets,
                          struct cordon_config *cfg, struct cordon_error *err);

/* Detects the workspace of the current directory, resolves the
 * configuration with the given session settings ("key=value", may be NULL),
 * and prepares the sandbox's spec. Any error means nothing may run. */
int launch_prepare(const struct launch_request *req, struct launch *l, struct cordon_error *err);
/* Stops the network helpers and frees everything (after the sandbox ended). */
void launch_free(struct launch *l);
