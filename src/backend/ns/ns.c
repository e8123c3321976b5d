/* The namespace backend's start sequence. Runs in the supervisor (host,
 * unprivileged) up to clone3(); the child then builds the view while
 * privileged only inside its new user namespace, drops everything and execs
 * cordon-agent as the sandbox's PID 1. Setup failures travel back over a
 * socketpair as a struct cordon_error, so the user sees the child's exact
 * step, path and errno; a clean exec closes the socket (CLOEXEC), which the
 * parent reads as success. */
#include "backend/ns/ns.h"
#include "confine/seccomp-filter.h"
#include "confine/seccomp-notify.h"
#include "supervisor/sock-guard.h"
#include "confine/privs.h"
#include "agent/init.h"
#include "confine/landlock.h"
#include "backend/ns/ns-limits.h"
#include "backend/ns/ns-mount.h"
#include "config.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Everything the child needs, prepared before clone. */
struct ns_child {
    const struct ns_spec *spec;
    struct ns_mount_plan plan;
    struct sock_fprog seccomp;
    struct ns_rlimits rlimits;
    struct ns_cgroup_join cgroups;
    int landlock_abi;
    const char *landlock_writable[8 + NS_MAX_EXTRA_MOUNTS + 3];
    int sync_fd; /* child's end of the sync socketpair */
    struct cordon_error err;
};

static int write_proc_file(pid_t pid, const char *name, const char *value, struct cordon_error *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return error_set(err, errno, "user namespace: open %s", path);
    size_t len = strlen(value);
    if (write(fd, value, len) != (ssize_t)len)
        return error_set(err, errno, "user namespace: write %s", path);
    return 0;
}

/* Child: loopback up, nothing else (the new network namespace has no route
 * anywhere). */
static int loopback_up_in_child(struct cordon_error *err)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return error_set_raw(err, errno, "loopback: socket", NULL);
    struct ifreq ifr = {0};
    memcpy(ifr.ifr_name, "lo", 3);
    if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0 ||
        (ifr.ifr_flags |= IFF_UP | IFF_RUNNING, ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)) {
        int e = errno;
        close(fd);
        return error_set_raw(err, e, "loopback: bring up", "lo");
    }
    close(fd);
    return 0;
}

/* Where the child keeps the refusing proxy's listener for the host to
 * take (pidfd_getfd): above stdio and the control socket, below the
 * numbers arrange_fds_in_child moves things to. */
#define NS_DENY_LISTENER_FD 5

/* Child, after its fds are arranged: listens on 127.0.0.1:port in the
 * sandbox's network namespace for the refusing proxy (spec.h
 * deny_listener_port). Close-on-exec, and init closes it before it
 * starts anything: nothing inside holds it. */
static int deny_listener_in_child(uint16_t port, struct cordon_error *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return error_set_raw(err, errno, "the refusing proxy's listener: socket", NULL);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 || listen(fd, 128) < 0 ||
        (fd != NS_DENY_LISTENER_FD && dup3(fd, NS_DENY_LISTENER_FD, O_CLOEXEC) < 0)) {
        int e = errno;
        close(fd);
        return error_set_raw(err, e, "the refusing proxy's listener on 127.0.0.1", NULL);
    }
    if (fd != NS_DENY_LISTENER_FD)
        close(fd);
    return 0;
}

/* Child: fds 0-2 from spec->stdio, the control socket as 3, and nothing else
 * survives exec (the sync socket is CLOEXEC). */
static int arrange_fds_in_child(struct ns_child *c, struct cordon_error *err)
{
    int wanted[4] = {c->spec->stdio[0], c->spec->stdio[1], c->spec->stdio[2], c->spec->control_fd};
    int moved[4];
    /* Move sources above the range first so dup2 cannot clobber them. */
    for (int i = 0; i < 4; i++) {
        moved[i] = -1;
        if (wanted[i] < 0)
            continue;
        moved[i] = fcntl(wanted[i], F_DUPFD_CLOEXEC, 10);
        if (moved[i] < 0)
            return error_set_raw(err, errno, "dup stdio", NULL);
    }
    int sync_fd = fcntl(c->sync_fd, F_DUPFD_CLOEXEC, 10);
    if (sync_fd < 0)
        return error_set_raw(err, errno, "dup sync fd", NULL);
    c->sync_fd = sync_fd;
    for (int i = 0; i < 4; i++) {
        if (moved[i] < 0)
            continue;
        if (dup2(moved[i], i) < 0)
            return error_set_raw(err, errno, "dup2", NULL);
    }
    /* Everything else (including the originals) closes at exec. */
    if (close_range(moved[3] < 0 ? 3 : 4, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        return error_set_raw(err, errno, "close_range", NULL);
    return 0;
}

/* Child, PID 1 of the new PID namespace, privileged in the new user
 * namespace only. Returns only on failure (after filling c->err). */
static void child_setup_and_exec(struct ns_child *c)
{
    struct cordon_error *err = &c->err;
    /* Die with the supervisor; a dead parent before this point shows as EOF
     * on the sync socket below. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0) {
        error_set_raw(err, errno, "set parent-death signal", NULL);
        return;
    }
    /* The supervisor blocks the signals it relays; nothing inside inherits
     * that mask. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* First word from the parent: the id maps are written. The parent then
     * sets up networking while we build the view (two cores do the two
     * halves at once). */
    char go;
    if (read(c->sync_fd, &go, 1) != 1)
        _exit(CORDON_EXIT_FAILURE);
    /* Into the sandbox's cgroups before anything else: nothing this
     * process or its descendants do escapes the limits. (After the maps,
     * so that a failure here reaches the user as this step's.) */
    if (ns_cgroups_join_in_child(&c->cgroups, err) < 0)
        return;
    if (sethostname(c->spec->name ? "cordon" : "cordon", 6) < 0) {
        error_set_raw(err, errno, "sethostname", NULL);
        return;
    }
    if (loopback_up_in_child(err) < 0)
        return;
    if (ns_mount_plan_apply_in_child(&c->plan, err) < 0)
        return;
    if (ns_limits_apply_in_child(&c->rlimits, err) < 0)
        return;
    if (arrange_fds_in_child(c, err) < 0)
        return;
    if (c->spec->deny_listener_port && deny_listener_in_child(c->spec->deny_listener_port, err) < 0)
        return;
    /* Second word: we are in our cgroups, so the cgroup namespace's root is
     * that cgroup, and the network is ready before anything runs. */
    if (read(c->sync_fd, &go, 1) != 1)
        _exit(CORDON_EXIT_FAILURE);
    if (unshare(CLONE_NEWCGROUP) < 0) {
        error_set_raw(err, errno, "unshare cgroup namespace", NULL);
        return;
    }
    /* A session of its own: the sandbox has no controlling terminal, so it
     * cannot reach the user's (TIOCSTI needs one too). */
    if (setsid() < 0) {
        error_set_raw(err, errno, "setsid", NULL);
        return;
    }
    /* No capability survives, and exec cannot give any back (securebits
     * locked: uid 0 inside gains nothing from exec, no ambient raise). */
    if (privs_drop_all(false, 0, 0, err) < 0)
        return;
    if (ns_landlock_apply_in_child(c->landlock_abi, c->landlock_writable, err) < 0)
        return;
#if !CORDON_UNSAFE_NO_SECCOMP
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &c->seccomp) < 0) {
        error_set_raw(err, errno, "load seccomp filter", NULL);
        return;
    }
    /* The socket guard's filter, last: the supervisor takes its listener
     * (pidfd_getfd) and starts the guard before anything runs under it. */
    if (ns_sock_guard_handoff_in_child(c->sync_fd, err) < 0)
        return;
#endif
    if (c->spec->init_in_process) {
        /* PID 1 stays this process: it was never anything but cordon's own
         * code, is not dumpable, and is under the same filter as the
         * command. Nothing of the host is reachable from its memory. */
        int argc = 0;
        while (c->spec->argv[argc])
            argc++;
        /* No exec will close the supervisor's descriptors for us: close
         * them now. This closes the sync socket too, which the parent reads
         * as "started". */
        if (close_range(c->spec->control_fd >= 0 ? 4 : 3, ~0U, 0) < 0) {
            error_set_raw(err, errno, "close_range", NULL);
            return;
        }
        agent_init_run(argc, (char **)c->spec->argv, c->spec->envp);
    }
    /* The agent is bound read-only into the view (ns-mount.c): its
     * /proc/<pid>/exe leads to a read-only mount, so nothing inside can
     * overwrite it (the CVE-2019-5736 class), without copying the binary
     * into memory at every start. */
    execve(NS_AGENT_VIEW_PATH, c->spec->argv, c->spec->envp);
    error_set_raw(err, errno, "exec cordon-agent", NS_AGENT_VIEW_PATH);
}

void ns_probe_report(void)
{
    int abi = ns_landlock_abi();
    if (abi > 0)
        log_debug("landlock: available (ABI %d), applied as a second layer", abi);
    else
        log_debug("landlock: not available on this kernel (%s); the mount namespace is the "
                  "only filesystem boundary",
                  strerrorname_np(-abi) ? strerrorname_np(-abi) : "unknown");
}

/* Host: the listener and the sock_diag socket taken out of the child
 * (before its go: it closes them then), and the sandbox's user namespace. */
struct guard_fds {
    int listener, diag, userns, mntns;
};

static void guard_fds_close(struct guard_fds *g)
{
    if (g->listener >= 0)
        close(g->listener);
    if (g->diag >= 0)
        close(g->diag);
    if (g->userns >= 0)
        close(g->userns);
    if (g->mntns >= 0)
        close(g->mntns);
    *g = (struct guard_fds){-1, -1, -1, -1};
}

static int take_guard_fds(struct ns_sandbox *sb, const void *msg, struct guard_fds *g,
                          struct cordon_error *err)
{
    struct ns_guard_fds fds;
    memcpy(&fds, msg, sizeof(fds));
    if (fds.magic != NS_GUARD_FDS_MAGIC)
        return error_set(err, EPROTO, "sandbox setup: a garbled message from the child");
    g->listener = (int)syscall(SYS_pidfd_getfd, sb->pidfd, fds.listener_fd, 0);
    if (g->listener < 0)
        return error_set(err, errno, "socket guard: taking the seccomp listener (pidfd_getfd)");
    g->diag = (int)syscall(SYS_pidfd_getfd, sb->pidfd, fds.diag_fd, 0);
    if (g->diag < 0)
        return error_set(err, errno, "socket guard: taking the sock_diag socket (pidfd_getfd)");
    char userns_path[64];
    snprintf(userns_path, sizeof(userns_path), "/proc/%d/ns/user", sb->pid);
    g->userns = open(userns_path, O_RDONLY | O_CLOEXEC);
    if (g->userns < 0)
        return error_set(err, errno, "socket guard: %s", userns_path);
    /* Held by the guard until it exits (sock-guard.h hold_fd). Without it
     * PID 1's exit tears the view down, which only costs time. */
    char mntns_path[64];
    snprintf(mntns_path, sizeof(mntns_path), "/proc/%d/ns/mnt", sb->pid);
    g->mntns = open(mntns_path, O_RDONLY | O_CLOEXEC);
    return 0;
}

/* Host, with the guard's fds: the refusing proxy's listener out of the
 * child, to its owner (spec.h deny_listener_port). */
static int take_deny_listener(const struct ns_spec *spec, struct ns_sandbox *sb,
                              struct cordon_error *err)
{
    if (!spec->deny_listener_port)
        return 0;
    int fd = (int)syscall(SYS_pidfd_getfd, sb->pidfd, NS_DENY_LISTENER_FD, 0);
    if (fd < 0)
        return error_set(err, errno, "network: taking the refusing proxy's listener (pidfd_getfd)");
    spec->on_deny_listener(fd, spec->on_namespaces_ready_ctx);
    return 0;
}

/* Host: starts the socket guard (sock-guard.h) on the taken fds. The child
 * may already run under the filter: until the guard reads the listener,
 * the sandbox's socket calls wait in the kernel, and if the guard cannot
 * start, the sandbox is killed (the caller's failure path). */
static int start_sock_guard(const struct ns_spec *spec, struct ns_sandbox *sb,
                            const struct guard_fds *fds, struct cordon_error *err)
{
    size_t nallow = spec->sockets_allow ? spec->nsockets_allow : 0;
    struct sock_guard_spec g = {.listener_fd = fds->listener,
                                .diag_fd = fds->diag,
                                .userns_fd = fds->userns,
                                .hold_fd = fds->mntns,
                                .pid1 = sb->pid,
                                .workspace = spec->workspace,
                                .allow = spec->sockets_allow,
                                .nallow = nallow};
    if (sock_guard_start(&g, &sb->sock_guard_pid, err) < 0)
        return -1;
    log_debug("socket guard: pid %d (%zu socket%s allowed by sockets.allow)", sb->sock_guard_pid,
              nallow, nallow == 1 ? "" : "s");
    return 0;
}

/* What Landlock leaves writable: the places the view makes writable (the
 * fixed scratch places, home, a writable workspace, a linked worktree's git
 * directories, [[mounts]] with readonly = false). */
static void landlock_writable_list(const struct ns_spec *spec, struct ns_child *c)
{
    size_t n = 0;
    static const char *const always[] = {"/tmp", "/var/tmp", "/run", "/dev"};
    for (size_t i = 0; i < ARRAY_SIZE(always); i++)
        c->landlock_writable[n++] = always[i];
    c->landlock_writable[n++] = spec->home;
    if (!spec->workspace_readonly)
        c->landlock_writable[n++] = spec->workspace_view;
    for (size_t i = 0; !spec->workspace_readonly && spec->git_dirs && spec->git_dirs[i] && i < 2;
         i++)
        c->landlock_writable[n++] = spec->git_dirs[i];
    for (size_t i = 0; i < spec->nmounts && i < NS_MAX_EXTRA_MOUNTS; i++) {
        if (!spec->mounts[i].readonly)
            c->landlock_writable[n++] = spec->mounts[i].guest_path;
    }
    c->landlock_writable[n] = NULL;
}

/* Where a start's time went, for --debug. */
struct start_timing {
    long long begin, plan, seccomp, prepared, cgroups_prep, go;
};

/* Host, before clone: everything the child will only read. */
static int prepare_child(const struct ns_spec *spec, uid_t uid, gid_t gid, struct ns_child *c,
                         struct start_timing *t, struct cordon_error *err)
{
    t->begin = log_now_us();
    if (ns_mount_plan_build(spec, uid, gid, &c->plan, err) < 0)
        return -1;
    t->plan = log_now_us();
    ns_seccomp_program(&c->seccomp);
    t->seccomp = log_now_us();
    ns_limits_prepare(&spec->limits, &c->rlimits);
    c->landlock_abi = ns_landlock_abi();
    landlock_writable_list(spec, c);
    t->prepared = log_now_us();
    return 0;
}

/* Host: clone3 into the new namespaces; the child never returns from
 * here. Returns the child's pid (its pidfd in *pidfd) or -1. */
static pid_t clone_child(struct ns_child *c, int parent_end, int *pidfd, struct cordon_error *err)
{
    struct clone_args args = {
        .flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                 CLONE_NEWUTS | CLONE_PIDFD,
        .pidfd = (uint64_t)(uintptr_t)pidfd,
        .exit_signal = SIGCHLD,
    };
    pid_t pid = (pid_t)syscall(SYS_clone3, &args, sizeof(args));
    if (pid < 0) {
        error_set(err, errno,
                  "creating the sandbox namespaces (clone3 with user, mount, pid, net, ipc, uts)%s",
                  errno == EPERM || errno == ENOSPC
                      ? "; unprivileged user namespaces may be disabled "
                        "(sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces, "
                        "AppArmor, a container's seccomp profile)"
                      : "");
        error_hint_doctor(err);
        return -1;
    }
    if (pid == 0) {
        close(parent_end);
        child_setup_and_exec(c);
        /* Only failures get here. */
        ssize_t w = write(c->sync_fd, &c->err, sizeof(c->err));
        (void)w;
        _exit(CORDON_EXIT_FAILURE);
    }
    return pid;
}

/* Host: the child's uid and gid maps (the invoking user's ids only). */
static int write_id_maps(pid_t pid, uid_t uid, gid_t gid, struct cordon_error *err)
{
    char map[64];
    snprintf(map, sizeof(map), "%u %u 1\n", uid, uid);
    if (write_proc_file(pid, "setgroups", "deny", err) < 0 ||
        write_proc_file(pid, "uid_map", map, err) < 0) {
        error_hint_doctor(err);
        return -1;
    }
    snprintf(map, sizeof(map), "%u %u 1\n", gid, gid);
    return write_proc_file(pid, "gid_map", map, err);
}

/* Host, between the maps and the go: the child in its cgroups, then the
 * network hook (it sets up while the child builds the view). */
static int attach_child(const struct ns_spec *spec, struct ns_sandbox *sb, struct ns_child *c,
                        long long cgroups_prep, struct cordon_error *err)
{
    long long tc = log_now_us();
    if (ns_cgroups_attach(&c->cgroups, sb->pid, sb, err) < 0)
        return -1;
    log_debug("timing: cgroups %lld us (prepared before clone in %lld us)", log_now_us() - tc,
              cgroups_prep);
    if (strstr(sb->limits_applied, "NO LIMIT"))
        log_warn("running as root without a pids cgroup: the process limit cannot be enforced "
                 "(the kernel exempts root from RLIMIT_NPROC)");
    if (spec->on_namespaces_ready &&
        spec->on_namespaces_ready(sb->pid, spec->on_namespaces_ready_ctx, err) < 0)
        return -1;
#if CORDON_UNSAFE_NO_SECCOMP
    /* No guard step: the child execs after the go. */
    if (spec->on_before_exec && spec->on_before_exec(spec->on_namespaces_ready_ctx, err) < 0)
        return -1;
#endif
    return 0;
}

static ssize_t read_child(int fd, struct cordon_error *child_err)
{
    ssize_t n;
    do {
        n = read(fd, child_err, sizeof(*child_err));
    } while (n < 0 && errno == EINTR);
    return n;
}

/* Host, after the go: the guard's fds out of the child, what the network
 * hook started ready (the proxy's listeners inside), the guard's start
 * while the child execs, and the child's last word: 0 (exec closed the
 * socket: the agent runs) or -1 with its error. */
static int await_exec(const struct ns_spec *spec, struct ns_sandbox *sb, int fd,
                      struct cordon_error *err)
{
    struct cordon_error child_err;
    ssize_t n = read_child(fd, &child_err);
    if (n == (ssize_t)sizeof(struct ns_guard_fds)) {
        struct guard_fds fds = {-1, -1, -1, -1};
        if (take_guard_fds(sb, &child_err, &fds, err) < 0 ||
            take_deny_listener(spec, sb, err) < 0 ||
            (spec->on_before_exec &&
             spec->on_before_exec(spec->on_namespaces_ready_ctx, err) < 0)) {
            guard_fds_close(&fds);
            return -1;
        }
        send(fd, "s", 1, MSG_NOSIGNAL);
        int guard_rc = start_sock_guard(spec, sb, &fds, err);
        guard_fds_close(&fds);
        if (guard_rc < 0)
            return -1;
        n = read_child(fd, &child_err);
    } else if (n == 0 && !CORDON_UNSAFE_NO_SECCOMP) {
        /* An exec without the guard's word: never, but fail closed. */
        return error_set(err, EPROTO, "sandbox setup: the socket guard's filter was not loaded");
    }
    if (n == 0)
        return 0;
    if (n != (ssize_t)sizeof(child_err))
        return error_set(err, n < 0 ? errno : EPROTO, "sandbox setup: lost contact with the child");
    child_err.message[sizeof(child_err.message) - 1] = '\0';
    *err = child_err;
    error_prefix(err, "sandbox setup");
    /* a step the kernel refuses (a mount, seccomp, Landlock in a user
     * namespace) is this host's, not the configuration's */
    if (err->errnum == EPERM || err->errnum == EACCES || err->errnum == ENOSYS ||
        err->errnum == EOPNOTSUPP || err->errnum == EINVAL)
        error_hint_doctor(err);
    return -1;
}

int ns_sandbox_start(const struct ns_spec *spec, struct ns_sandbox *sb, struct cordon_error *err)
{
    *sb = (struct ns_sandbox){.pid = -1, .pidfd = -1, .sock_guard_pid = -1};
    struct ns_child c = {.spec = spec, .sync_fd = -1, .cgroups = {.fds = {-1, -1, -1}}};
    struct start_timing t = {0};
    int rc = -1;
    int sync[2] = {-1, -1};
    uid_t uid = geteuid();
    gid_t gid = getegid();

    if (prepare_child(spec, uid, gid, &c, &t, err) < 0)
        return -1;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync) < 0) {
        error_set(err, errno, "socketpair");
        goto out;
    }
    c.sync_fd = sync[1];
    long long tc = log_now_us();
    int pidfd = -1;
    pid_t pid = -1;
    if (ns_cgroups_prepare(spec, sb, &c.cgroups, err) == 0) {
        t.cgroups_prep = log_now_us() - tc;
        pid = clone_child(&c, sync[0], &pidfd, err);
    }
    if (pid < 0) {
        ns_cgroups_join_close(&c.cgroups);
        ns_cgroups_remove(sb);
        goto out;
    }
    close(sync[1]);
    sync[1] = -1;
    ns_cgroups_join_close(&c.cgroups);
    sb->pid = pid;
    sb->pidfd = pidfd;

    if (write_id_maps(pid, uid, gid, err) < 0)
        goto fail_child;
    /* A child that failed already has closed its end: its error is then
     * waiting to be read, and a failed send only means "go and read it". */
    bool child_alive = send(sync[0], "m", 1, MSG_NOSIGNAL) == 1;
    if (attach_child(spec, sb, &c, t.cgroups_prep, err) < 0)
        goto fail_child;
    t.go = log_now_us();
    if (child_alive)
        send(sync[0], "g", 1, MSG_NOSIGNAL);
    if (await_exec(spec, sb, sync[0], err) < 0)
        goto fail_child;
    rc = 0;
    log_debug("timing: plan %lld us (%zu operations), seccomp %lld us, "
              "clone+maps+cgroups %lld us, view+exec %lld us",
              t.plan - t.begin, c.plan.count, t.seccomp - t.plan, t.go - t.prepared,
              log_now_us() - t.go);
    log_debug("/etc: the prepared copy under %s", spec->etc_cache_root);
    goto out;
fail_child:
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    ns_sandbox_release(sb);
out:
    if (sync[0] >= 0)
        close(sync[0]);
    if (sync[1] >= 0)
        close(sync[1]);
    ns_mount_plan_free(&c.plan);
    return rc;
}

void ns_sandbox_release_async(struct ns_sandbox *sb, pid_t *guard)
{
    *guard = sb->sock_guard_pid;
    if (*guard > 0)
        kill(*guard, SIGKILL);
    sb->sock_guard_pid = -1;
    ns_sandbox_release(sb);
}

void ns_sandbox_release(struct ns_sandbox *sb)
{
    sock_guard_stop(sb->sock_guard_pid);
    sb->sock_guard_pid = -1;
    ns_cgroups_remove(sb);
    if (sb->pidfd >= 0)
        close(sb->pidfd);
    sb->pidfd = -1;
    sb->pid = -1;
}
