/* The sandbox's spec as launch_prepare (supervisor/launch.c) makes it:
 * the view (workspace, protected paths, git metadata, mounts), limits, the
 * agent and its stdio. Read by every backend (the ns backend runs it as
 * is; vm and docker translate it), hence below them all; the name is the
 * ns backend's, the first to read it. Host context. */
#pragma once

#include "backend/backend.h"
#include "proto/init-channel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gitguard_bind;

/* At most this many [[mounts]] (launch.c refuses more). */
#define NS_MAX_EXTRA_MOUNTS 64

struct ns_extra_mount {
    const char *host_path;
    const char *guest_path;
    bool readonly;
};

struct ns_spec {
    const char *workspace;      /* canonical host path of the workspace root */
    const char *workspace_view; /* where it appears inside (lexical path) */
    const char *cwd;            /* starting directory inside the sandbox */
    const char *home;           /* HOME inside (an empty writable tmpfs) */
    /* When set, /tmp and home are this host directory's tmp/ and home/
     * (a sandbox kept by teardown stop/none), not fresh tmpfs. */
    const char *persist_dir;
    /* Review mode (docs/review.md): the workspace inside is an overlay with
     * the host's as its read-only lower layer and this host directory's
     * upper/ and work/ above it. NULL: the workspace is bound directly. */
    const char *review_dir;
    bool workspace_readonly;
    /* Workspace-relative paths kept read-only (NULL-terminated). */
    const char *const *protected_paths;
    /* Host directories outside the workspace bound read-write at the same path
     * with their hooks/ and config kept read-only: the git metadata of linked
     * worktrees and submodules (NULL-terminated, may be NULL). */
    const char *const *git_dirs;
    /* The sandbox's view of the git metadata (supervisor/gitguard.h), in
     * order; when set it replaces git_dirs and the .git protected paths. */
    const struct gitguard_bind *git_binds;
    size_t ngit_binds;
    /* [[mounts]] from configuration (already validated), count entries. */
    const struct ns_extra_mount *mounts;
    size_t nmounts;
    struct sandbox_limits limits;
    const char *agent_path; /* host path of cordon-agent */
    char *const *argv;      /* agent argv (argv[0] is the agent's name) */
    /* For "init" argv: run the init in the set-up child itself instead of
     * exec'ing cordon-agent (no second binary to load at start). */
    bool init_in_process;
    char *const *envp; /* agent environment */
    int stdio[3];      /* become fds 0, 1, 2 inside */
    int control_fd;    /* becomes fd 3 inside, or -1 */
    const char *name;  /* sandbox name (cgroup and hostname) */
    /* Where the curated /etc is prepared once and reused (etc-cache.c). */
    const char *etc_cache_root;
    /* etc.extra: entries below /etc added to the curated view. */
    char *const *etc_extra;
    size_t netc_extra;
    /* /etc/ssh/ssh_config sends ssh through the proxy (net_ssh_proxied()). */
    bool ssh_proxied;
    /* Called on the host once the sandbox's namespaces exist and its id maps
     * are written, before anything runs inside (network set-up: joining the
     * sandbox's network namespace, starting pasta). May be NULL. */
    int (*on_namespaces_ready)(pid_t pid, void *ctx, struct cordon_error *err);
    void *on_namespaces_ready_ctx;
    /* Called on the host (with on_namespaces_ready_ctx) after the child has
     * built the view and before it may exec: waits for what
     * on_namespaces_ready started without waiting (the proxy's listeners
     * inside). A failure stops the start. May be NULL. */
    int (*on_before_exec)(void *ctx, struct cordon_error *err);
    /* Nonzero: the child listens on 127.0.0.1:deny_listener_port in the
     * sandbox's network namespace (before its filters, after the view),
     * and the host takes that listener before anything runs and gives it
     * to on_deny_listener (with on_namespaces_ready_ctx), which owns it
     * from then on: the refusing proxy starts on its first connection
     * (net_session_defer). */
    uint16_t deny_listener_port;
    void (*on_deny_listener)(int fd, void *ctx);
    /* sockets.allow: workspace-relative unix sockets the sandbox may
     * connect to although no socket of its own is bound there
     * (nsockets_allow entries; docs/sockets.md). */
    const char *const *sockets_allow;
    size_t nsockets_allow;
};
