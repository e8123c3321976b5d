/* cordon's resolved configuration: the layers of docs/configuration.md
 * merged into one typed struct, with where every value came from. Resolved
 * completely, in the CLI or supervisor (host context, unprivileged), before
 * any sandbox exists; any error fails closed. docs/configuration.md documents
 * every key. */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Layers, lowest first. The last two are host-owned: they win and lock. */
enum cfg_layer {
    CFG_LAYER_DEFAULT,
    CFG_LAYER_USER,         /* $XDG_CONFIG_HOME/cordon/config.toml */
    CFG_LAYER_WORKSPACE,    /* <workspace>/.cordon.toml, only when trusted */
    CFG_LAYER_ENVIRONMENT,  /* CORDON_* */
    CFG_LAYER_SESSION,      /* --set key=value and named flags */
    CFG_LAYER_HOST_DEFAULT, /* /etc/cordon/default.toml, then .../policy/default.toml */
    CFG_LAYER_HOST_PROJECT, /* .../policy/projects/<slug>-<hash>.toml */
    CFG_LAYER_COUNT,
};

/* Every key, in the order `cordon config` prints them. */
enum cfg_key {
    CFG_BACKEND,
    CFG_FALLBACK_MODE,
    CFG_ALLOW_HOST_EXECUTION,
    CFG_ROUTE_TOOLS,
    CFG_TEARDOWN,
    CFG_GC_HOURS,
    CFG_WORKSPACE_READONLY,
    CFG_WORKSPACE_MODE, /* top-level keys first: `cordon config` prints in this order */
    CFG_PROTECTED_PATHS,
    CFG_SANDBOX_NAME,
    CFG_TOOLCHAIN_CACHES, /* top-level: printed before the first [table] */
    CFG_ENV_MODE,
    CFG_ENV_ALLOW,
    CFG_LIMITS_CPUS,
    CFG_LIMITS_MEMORY_MIB,
    CFG_LIMITS_PIDS,
    CFG_LIMITS_OPEN_FILES,
    CFG_LIMITS_FILE_SIZE_MIB,
    CFG_LIMITS_CPU_SECONDS,
    CFG_LIMITS_BASH_TIMEOUT,
    CFG_LIMITS_TMPFS_MIB,
    CFG_LIMITS_TMPFS_INODES,
    CFG_ETC_EXTRA,
    CFG_NETWORK_MODE,
    CFG_NETWORK_ALLOW_HOSTS,
    CFG_NETWORK_PUBLISH_PORTS,
    CFG_NETWORK_UPSTREAM_PROXY,
    CFG_NETWORK_NO_PROXY,
    CFG_NETWORK_HOST_SERVICES, /* after its section's others: `cordon config` prints in this order */
    CFG_NETWORK_HTTP_RULES,
    CFG_NETWORK_CA_FILE,
    CFG_MOUNTS,
    CFG_SKILLS_PATHS,
    CFG_SOCKETS_ALLOW,
    CFG_DOCKER_MODE,
    CFG_DOCKER_HOST,
    CFG_DOCKER_IMAGE,
    CFG_SECRETS,
    CFG_BACKEND_FLOOR,
    CFG_KEY_COUNT,
};

/* CFG_BACKEND_AUTO is resolved by launch_prepare into one of the others
 * (backend/probe.h, docs/doctor.md). */
enum cfg_backend { CFG_BACKEND_NS, CFG_BACKEND_VM, CFG_BACKEND_DOCKER, CFG_BACKEND_AUTO };
/* backend_floor: the weakest backend a session may run on (host-owned
 * layers only); the values of enum probe_floor. */
enum cfg_backend_floor { CFG_FLOOR_ANY, CFG_FLOOR_NS, CFG_FLOOR_KERNEL_BOUNDARY };
enum cfg_fallback { CFG_FALLBACK_BLOCK, CFG_FALLBACK_HOST };
enum cfg_teardown { CFG_TEARDOWN_REMOVE, CFG_TEARDOWN_STOP, CFG_TEARDOWN_NONE };
enum cfg_env_mode { CFG_ENV_STRICT, CFG_ENV_ALLOWLIST, CFG_ENV_PASSTHROUGH };
enum cfg_network_mode { CFG_NETWORK_DENY, CFG_NETWORK_ALLOWLIST, CFG_NETWORK_OPEN };
enum cfg_docker_mode { CFG_DOCKER_AUTO, CFG_DOCKER_REQUIRE, CFG_DOCKER_DISABLED };
enum cfg_workspace_mode { CFG_WORKSPACE_DIRECT, CFG_WORKSPACE_REVIEW };

/* Where a value came from. file is a path, an environment variable name
 * ("CORDON_LIMITS__PIDS") or "--set"; line is 0 when there is none. */
struct cfg_origin {
    enum cfg_layer layer;
    char *file;
    int line;
    bool locked; /* set by a host-owned layer; lower layers cannot change it */
};

struct cfg_strings {
    char **items;
    size_t count;
};

struct cfg_port {
    char bind[64]; /* IPv4 or IPv6 literal; "127.0.0.1" when not given */
    uint16_t host_port;
    uint16_t guest_port;
};

struct cfg_ports {
    struct cfg_port *items;
    size_t count;
};

struct cfg_mount {
    char *host_path;  /* absolute, normalised */
    char *guest_path; /* absolute, normalised; host_path when not given */
    bool readonly;    /* true unless the file says readonly = false */
    struct cfg_origin origin;
};

struct cfg_mounts {
    struct cfg_mount *items;
    size_t count;
};

/* [[secrets]] (docs/secrets.md): a value the proxy puts into requests to
 * HOSTS in place of a per-session placeholder; the sandbox's variable NAME
 * holds only the placeholder. Never from the workspace file. */
struct cfg_secret {
    char *name;      /* environment variable inside the sandbox */
    char *from;      /* "env:VAR", "file:/abs/path" or "command:shell text" */
    char *header;    /* NULL: substituted anywhere in the request head */
    bool plain_http; /* the value may go out in cleartext (http://) */
    struct cfg_strings hosts;
    struct cfg_origin origin;
};

struct cfg_secrets {
    struct cfg_secret *items;
    size_t count;
};

struct cordon_config {
    int backend;       /* enum cfg_backend */
    int fallback_mode; /* enum cfg_fallback */
    bool allow_host_execution;
    struct cfg_strings route_tools; /* subset of read write edit ls find grep bash */
    int teardown;                   /* enum cfg_teardown */
    int64_t gc_hours;
    bool workspace_readonly;
    int workspace_mode; /* enum cfg_workspace_mode (docs/review.md) */
    /* relative to the workspace; always includes .git/hooks, .git/config and
     * .cordon.toml whatever the layers say */
    struct cfg_strings protected_paths;
    char *sandbox_name; /* NULL: a generated cordon-<pid>-<random> */
    struct {
        int mode; /* enum cfg_env_mode */
        struct cfg_strings allow;
    } env;
    struct {
        double cpus; /* 0: no limit */
        int64_t memory_mib, pids, open_files, file_size_mib, cpu_seconds;
        int64_t bash_timeout; /* seconds; 0: no default timeout (as pi) */
        /* each writable tmpfs (/tmp, /var/tmp, /run, /dev/shm, home): MiB
         * (0: derived, cfg_tmpfs_mib()) and inodes */
        int64_t tmpfs_mib, tmpfs_inodes;
    } limits;
    struct {
        /* entries below /etc added to the curated view (never from the
         * workspace file; normalised relative paths) */
        struct cfg_strings extra;
    } etc;
    struct {
        int mode; /* enum cfg_network_mode */
        struct cfg_strings allow_hosts;
        struct cfg_ports publish_ports;
        /* "host:port" of an HTTP proxy every allowed connection is chained
         * through (NULL: none), except to no_proxy patterns. Never from
         * the workspace file. */
        char *upstream_proxy;
        struct cfg_strings no_proxy;
        /* "127.0.0.1:PORT" services of the host's loopback reachable inside
         * at the same address and port (never from the workspace file) */
        struct cfg_strings host_services;
        /* "METHOD host/path" rules for intercepted HTTPS hosts, and the
         * CA file upstream certificates are verified against (NULL: the
         * host's store). Never from the workspace file. */
        struct cfg_strings http_rules;
        char *ca_file;
    } network;
    struct cfg_mounts mounts;
    struct cfg_strings skills_paths;
    /* unix sockets in the workspace the sandbox may connect to although
     * nothing inside bound them (relative to the workspace; never from the
     * workspace file; docs/sockets.md) */
    struct {
        struct cfg_strings allow;
    } sockets;
    struct {
        int mode; /* enum cfg_docker_mode */
        /* the docker backend's daemon: "unix:///path" (never from the
         * workspace file), and the image its containers run */
        char *host;
        char *image; /* NULL: not set (the docker backend refuses to start) */
    } docker;
    struct cfg_secrets secrets;
    int backend_floor; /* enum cfg_backend_floor; set only by host-owned layers */
    /* npm, pip, cargo, go, maven and gradle caches in the sandbox's home,
     * kept by cordon under $XDG_CACHE_HOME/cordon/toolchain/; off by
     * default: the home stays empty (docs/toolchains.md) */
    bool toolchain_caches;

    struct cfg_origin origin[CFG_KEY_COUNT];

    /* the places resolution looked at (for `cordon config --where`) */
    char *workspace;      /* canonical workspace root */
    char *user_file;      /* $XDG_CONFIG_HOME/cordon/config.toml */
    char *workspace_file; /* <workspace>/.cordon.toml */
    char *host_default_files[2];
    char *project_policy_file; /* whether or not it exists */
    char *trust_file;
    char *trust_guard_dir;  /* trust-guard.h: what sandboxed sessions wrote */
    bool workspace_trusted; /* the workspace file was read */
};

struct cfg_inputs {
    const char *workspace;           /* canonical root (workspace_detect) */
    char *const *environ;            /* for CORDON_*; NULL: none */
    const char *const *session_sets; /* "key=value", NULL-terminated; NULL: none */
    const char *xdg_config_home;     /* NULL: $home/.config */
    const char *home;                /* required when xdg_config_home is NULL */
    const char *etc_dir;             /* NULL: /etc/cordon */
    /* `cordon trust`'s preview: review_data stands for the workspace file,
     * as if trusted; skip_workspace_file leaves the workspace file out (what
     * applies while it is not trusted). */
    const char *review_data;
    size_t review_length;
    bool skip_workspace_file;
};

struct cfg_warnings {
    char **items;
    size_t count;
};

/* Resolves every layer into out. On failure out is left empty (cfg_free is
 * still safe) and err names the file, line and reason. Warnings (ignored
 * lower-layer values of locked keys, an untrusted or changed workspace file,
 * unknown CORDON_* variables close to a key) are appended to warnings. */
int cfg_resolve(const struct cfg_inputs *in, struct cordon_config *out,
                struct cfg_warnings *warnings, struct cordon_error *err);
void cfg_free(struct cordon_config *cfg);
void cfg_warnings_free(struct cfg_warnings *warnings);

/* Validates one file against the schema as the given layer would (the
 * workspace layer's restrictions apply for CFG_LAYER_WORKSPACE). workspace
 * may be NULL for layers other than the workspace's. */
int cfg_check_file(const char *path, enum cfg_layer layer, const char *workspace,
                   struct cordon_error *err);

/* Names, for messages and output. */
const char *cfg_key_name(enum cfg_key key); /* "limits.pids" */
const char *cfg_layer_name(enum cfg_layer layer);
/* The enum value's spelling ("ns", "block" ...) for enum keys, else NULL. */
const char *cfg_enum_name(enum cfg_key key, int value);

/* True when the environment name may never be forwarded into a sandbox
 * (DOCKER_*, COMPOSE_*, loader and shell start-up variables ...). */
bool cfg_env_name_protected(const char *name);
bool cfg_routes_tool(const struct cordon_config *cfg, const char *tool);

/* The writable tmpfs mounts every backend gives a sandbox (/tmp, /var/tmp,
 * /run, /dev/shm, the home): their sizes together never exceed
 * limits.memory_mib (cfg_resolve refuses a configuration that would). */
#define CFG_TMPFS_MOUNTS 5
/* Without limits.tmpfs_mib, the size of each when memory is unlimited. */
#define CFG_TMPFS_DEFAULT_MIB 512
/* The effective size of each tmpfs in MiB: limits.tmpfs_mib, or else an
 * eighth of limits.memory_mib (at least 1), or CFG_TMPFS_DEFAULT_MIB when
 * memory is unlimited. */
int64_t cfg_tmpfs_mib(const struct cordon_config *cfg);

/* The host-owned project override for a canonical workspace path:
 * <xdg_config_home>/cordon/policy/projects/<slug>-<16 hex of sha256>.toml */
int cfg_project_policy_path(const char *xdg_config_home, const char *workspace, char **ret_path,
                            struct cordon_error *err);
