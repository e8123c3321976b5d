/* The backend interface (docs/design.md "The backend interface"): a table of
 * operations chosen at run time by the configuration's backend name, so
 * that the supervisor, lifecycle, verify and the CLI never name a backend.
 * Operations marked optional may be NULL; callers check. Capabilities are a
 * separate field, so a query (cordon doctor) reads them without starting
 * anything. Host context (supervisor). */
#pragma once

#include "util/error.h"

#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

struct launch;
struct lifecycle;

/* Resource limits of a sandbox, whichever mechanism enforces them (cgroups
 * and rlimits on ns, QEMU's memory and vCPUs on vm, docker run's flags). */
struct sandbox_limits {
    long pids;          /* max processes in the sandbox; 0 = unlimited */
    long memory_mib;    /* 0 = unlimited */
    long file_size_mib; /* 0 = unlimited */
    long open_files;    /* 0 = inherit */
    long cpu_seconds;   /* per process; 0 = unlimited */
    double cpus;        /* CPU quota in cores; 0 = unlimited */
    long tmpfs_mib;     /* size of each writable tmpfs; 0 = the kernel's (half of RAM) */
    long tmpfs_inodes;  /* inodes of each writable tmpfs; 0 = the kernel's */
};

struct sandbox {
    const struct backend_ops *ops;
    pid_t pid;             /* the process that holds the sandbox (agent, QEMU, docker CLI) */
    int pidfd;             /* pidfd of pid: readable when it has exited */
    int channel_fd;        /* connected to the agent's protocol stream */
    char description[128]; /* human-readable: "vm (tcg, 2 vCPU, 1024 MiB)" */
    void *priv;            /* the backend's own state */
};

/* What a backend is, for the callers that used to ask for its name. */
enum backend_cap {
    /* A kernel of its own between the sandbox and the host's (vm): verify
     * reads the probe's kernel facts as the guest's, the host sees QEMU. */
    BACKEND_CAP_OWN_KERNEL = 1u << 0,
    /* network.publish_ports is honoured. */
    BACKEND_CAP_PUBLISH_PORTS = 1u << 1,
    /* cordon applies Landlock to the sandbox itself, on the host's kernel
     * (not so for vm: the guest's kernel; docker: the container). */
    BACKEND_CAP_HOST_LANDLOCK = 1u << 2,
    /* The sandbox shares the host's user namespace (docker). */
    BACKEND_CAP_HOST_USERNS = 1u << 3,
    /* A Docker daemon of the sandbox's own may answer inside (the vm
     * guest's dockerd, when verified as the guest's). */
    BACKEND_CAP_OWN_DOCKER = 1u << 4,
    /* Run mode: init takes --control, the probe channel on fd 3. */
    BACKEND_CAP_INIT_CONTROL = 1u << 5,
    /* Run mode: the terminal is made outside init (docker run -t), which
     * then only makes it the command's controlling one (--ctty, not --pty). */
    BACKEND_CAP_OUTER_TTY = 1u << 6,
    /* Run mode: the terminal's size is part of the start spec (the vm
     * guest's init makes the terminal at boot). */
    BACKEND_CAP_TERM_SIZE_AT_START = 1u << 7,
    /* workspace_mode = "review" (docs/review.md): the workspace inside can
     * be an overlay whose upper layer is in the state directory. */
    BACKEND_CAP_REVIEW = 1u << 8,
    /* The proxy's TLS interception reaches this sandbox: the session CA is
     * bound over the system bundle in its view (docs/network.md). */
    BACKEND_CAP_TLS_INTERCEPT = 1u << 10,
    /* Deny mode's refusing proxy is reachable inside at 127.0.0.1:3128
     * (ns through a listener inside, vm through its forwarder's ports,
     * docker through the proxy socket bound in): a client learns at once
     * why it has no network (docs/denials.md). */
    BACKEND_CAP_DENY_PROXY = 1u << 11,
    /* With TLS_INTERCEPT: the session CA travels in the boot spec and the
     * guest adds it to its own copy of the bundle (vm, whose shares are
     * directories only); without it the host's bundle file is bound over
     * NET_CA_BUNDLE as one of the sandbox's mounts (ns, docker). */
    BACKEND_CAP_TLS_CA_IN_SPEC = 1u << 12,
    /* network.host_services: the host's 127.0.0.1:PORT is reachable inside
     * at 127.0.0.1:PORT through the proxy (ns: its listener in the
     * namespace; vm, docker: the forwarder inside, docs/network.md). */
    BACKEND_CAP_HOST_SERVICES = 1u << 13,
    /* With DENY_PROXY: the refusing proxy may start on the sandbox's first
     * connection, its listener made by the sandbox's child and taken by the
     * host before anything runs (ns: spec.h deny_listener_port). */
    BACKEND_CAP_DEFERRED_DENY_PROXY = 1u << 14,
};

struct backend_caps {
    unsigned flags;        /* enum backend_cap */
    const char *host_side; /* what holds the sandbox, seen from the host: "agent", "QEMU" */
};

struct backend_ops {
    const char *name;
    struct backend_caps caps;
    /* Optional. 0 when this backend can run here; otherwise says what is
     * missing. */
    int (*probe)(struct cordon_error *err);
    /* Optional. Debug report of what this host offers (logged at start). */
    void (*report)(void);
    /* Optional. Checks launch_prepare runs once the configuration is
     * resolved, before anything is started (settings this backend cannot
     * honour, an agent binary it cannot run). */
    int (*check_launch)(const struct launch *l, struct cordon_error *err);
    /* Serve mode: starts the sandbox with the agent serving the protocol
     * (`cordon-agent serve`) and returns with sb->channel_fd connected to
     * it. */
    int (*start)(const struct launch *l, struct sandbox *sb, struct cordon_error *err);
    /* Optional. After the agent said hello, before any call: checks of
     * what the sandbox's maker (a daemon) made, from the host. */
    int (*check_started)(struct sandbox *sb, const struct launch *l, struct cordon_error *err);
    /* Optional. A pidfd of the agent itself when it is not sb->pid (the
     * container's PID 1 behind the docker CLI); owned by the sandbox. */
    int (*agent_pidfd)(struct sandbox *sb);
    /* Ends the sandbox (if still running; the agent was told to shut down
     * and its channel closed) and releases everything start() made.
     * Accepts a sandbox whose start() failed. */
    void (*stop)(struct sandbox *sb);
    /* Run mode (`cordon run`, `cordon shell`): starts agent_argv (`cordon-
     * agent init ... -- CMD`), attaches the terminal, relays signals and
     * the control socket until the command ends, tears down. Returns the
     * exit status for the user. */
    int (*run)(struct launch *l, struct lifecycle *lc, char **agent_argv, bool shell);
    /* Optional. In the watchdog, after the supervisor died and the
     * sandbox's process was killed: removes what else the backend made
     * (cgroups, a container, its part of the state directory at
     * state_dir_fd). After fork, before exit: allocates nothing. */
    void (*orphan_teardown)(const struct sandbox *sb, int state_dir_fd);
};

/* What a state file that names no backend was made by (before the name
 * was recorded, every sandbox was this backend's). */
#define BACKEND_LEGACY_NAME "ns"

/* The backend called name, or NULL. */
const struct backend_ops *backend_lookup(const char *name);
/* Adds to mask the signals a run-mode supervisor relays to the sandbox's
 * command (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2): one list for
 * every backend's relay. */
void backend_relayed_signals(sigset_t *mask);

/* Whether ops has every flag of caps. */
static inline bool backend_has(const struct backend_ops *ops, unsigned caps)
{
    return ops && (ops->caps.flags & caps) == caps;
}

/* ---- the host probe (backend/probe.h): what `cordon doctor` and backend =
 * "auto" ask each backend, by name ("ns", "vm", "docker"); NULL if none. ---- */
#include "backend/probe.h"
backend_host_probe_fn backend_probe_lookup(const char *name);
/* The probed backends, i < backend_probe_count(), indexed by enum
 * cfg_backend (auto excluded). */
size_t backend_probe_count(void);
const char *backend_probe_name(size_t i);
