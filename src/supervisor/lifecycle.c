/* Lifecycle: lock, watchdog, teardown. Host context, unprivileged.
 *
 * The watchdog is a detached grandchild in a session of its own (a process
 * group kill of the client does not reach it). It holds a pidfd for the
 * supervisor, the sandbox's pidfd, and a copy of the lock, so the session
 * stays "owned" until its teardown is complete. */
#include "supervisor/lifecycle.h"
#include "supervisor/review.h"
#include "supervisor/control.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WATCHDOG_KILL_TRIES 5

static int pidfd_open_(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int pidfd_kill(int pidfd, int sig)
{
    return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

/* The git metadata plan goes into the spec, and the protected paths it
 * covers (.git/hooks, .git/config) leave the list the backends bind. */
static int lifecycle_guard_git(struct lifecycle *lc, struct launch *l, struct cordon_error *err)
{
    if (l->cfg.workspace_readonly)
        return 0;
    lc->git = calloc(1, sizeof(*lc->git));
    if (!lc->git)
        return error_set(err, ENOMEM, "git metadata");
    if (gitguard_prepare(lc->git, &l->ws, l->name, lc->owner.dir_fd, lc->owner.dir, err) < 0) {
        gitguard_free(lc->git);
        free(lc->git);
        lc->git = NULL;
        return -1;
    }
    size_t kept = 0;
    for (size_t i = 0; l->protected_paths[i]; i++) {
        if (!gitguard_covers(lc->git, l->protected_paths[i])) {
            l->protected_paths[kept++] = l->protected_paths[i];
        } else if (gitguard_protect(lc->git, l->ws.view_root, l->protected_paths[i], err) < 0) {
            gitguard_free(lc->git);
            free(lc->git);
            lc->git = NULL;
            return -1;
        }
    }
    for (size_t i = 0; i < lc->git->ntrusted && kept < LAUNCH_MAX_PROTECTED; i++)
        l->protected_paths[kept++] = lc->git->trusted_paths[i];
    l->protected_paths[kept] = NULL;
    l->git = lc->git;
    l->spec.git_binds = lc->git->binds;
    l->spec.ngit_binds = lc->git->nbinds;
    return 0;
}

int lifecycle_begin(struct launch *l, struct lifecycle *lc, struct cordon_error *err)
{
    *lc = (struct lifecycle){
        .watchdog_pid = -1, .watchdog_pidfd = -1, .disarm_fd = -1, .net = &l->net_session};
    const struct cordon_config *cfg = &l->cfg;
    switch (cfg->teardown) {
    case CFG_TEARDOWN_STOP:
        lc->teardown = TEARDOWN_STOP;
        break;
    case CFG_TEARDOWN_NONE:
        lc->teardown = TEARDOWN_NONE;
        break;
    default:
        lc->teardown = TEARDOWN_REMOVE;
        break;
    }
    /* Explicitly named sandboxes default to "none": their record stays. */
    if (cfg->sandbox_name && cfg->origin[CFG_TEARDOWN].layer == CFG_LAYER_DEFAULT)
        lc->teardown = TEARDOWN_NONE;
    if (cfg->workspace_mode == CFG_WORKSPACE_REVIEW) {
        /* The pending changes outlive the session until applied or
         * discarded: teardown "remove" keeps the state directory. */
        if (lc->teardown == TEARDOWN_REMOVE)
            lc->teardown = TEARDOWN_STOP;
    }
    lc->gc_hours = (double)cfg->gc_hours;
    if (state_acquire(l->name, l->ws.root, cfg_enum_name(CFG_BACKEND, cfg->backend), &lc->owner,
                      err) < 0)
        return -1;
    /* Before the sandbox exists: whatever .cordon.toml holds at the end
     * that it did not hold now was written during the session. */
    if (trust_note_session_start(&lc->trust_guard, cfg->trust_guard_dir, l->ws.root, err) < 0) {
        state_release(&lc->owner, true);
        return -1;
    }
    /* A control socket here is a dead supervisor's: whoever serves one
     * (cordon mcp) binds its own, and nobody answers on this one. */
    control_unlink_stale(lc->owner.dir_fd);
    if (lifecycle_guard_git(lc, l, err) < 0) {
        struct cordon_error ignored;
        trust_note_session_end(&lc->trust_guard, &ignored);
        state_release(&lc->owner, true);
        return -1;
    }
    if (cfg->workspace_mode == CFG_WORKSPACE_REVIEW) {
        if (review_prepare(lc->owner.dir_fd, lc->owner.dir, l->ws.root,
                           (const char *const *)l->protected_paths, &lc->review_dir, err) < 0) {
            struct cordon_error ignored;
            trust_note_session_end(&lc->trust_guard, &ignored);
            state_release(&lc->owner, false);
            return -1;
        }
        l->spec.review_dir = lc->review_dir;
    }
    return 0;
}

/* The sweep of stale sessions runs off the start path, when a session ends
 * (in the supervisor, so nothing of cordon writes to the state root after
 * it exits), and at most once a minute: its cost grows with the number of
 * kept sessions. */
#define LIFECYCLE_GC_INTERVAL 60

static bool lifecycle_gc_due(void)
{
    struct cordon_error err;
    _cleanup_close_ int rootfd = state_root_open(NULL, &err);
    if (rootfd < 0)
        return false;
    struct stat st;
    if (fstatat(rootfd, ".gc-stamp", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        difftime(time(NULL), st.st_mtime) < LIFECYCLE_GC_INTERVAL &&
        difftime(time(NULL), st.st_mtime) >= 0)
        return false;
    int fd = openat(rootfd, ".gc-stamp", O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return true;
    futimens(fd, NULL);
    close(fd);
    return true;
}

static void lifecycle_gc(double hours, const char *own_name)
{
    if (!lifecycle_gc_due())
        return;
    size_t removed = 0;
    struct cordon_error gc_err;
    if (state_gc(hours, own_name, &removed, &gc_err) < 0)
        log_warn("garbage collection: %s", gc_err.message);
    else if (removed)
        log_debug("garbage collection removed %zu stale sandbox(es)", removed);
}

int lifecycle_persist(struct lifecycle *lc, struct launch *l, struct cordon_error *err)
{
    if (lc->teardown == TEARDOWN_REMOVE)
        return 0;
    static const struct {
        const char *name;
        mode_t mode;
    } dirs[] = {{"tmp", 01777}, {"home", 0700}};
    for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
        if (mkdirat(lc->owner.dir_fd, dirs[i].name, dirs[i].mode) < 0 && errno != EEXIST)
            return error_set(err, errno, "sandbox %s: creating its %s", l->name, dirs[i].name);
        /* fchmodat: mkdir's mode is filtered by the umask. */
        if (fchmodat(lc->owner.dir_fd, dirs[i].name, dirs[i].mode, AT_SYMLINK_NOFOLLOW) < 0 &&
            errno != EOPNOTSUPP)
            return error_set(err, errno, "sandbox %s: %s", l->name, dirs[i].name);
    }
    l->spec.persist_dir = lc->owner.dir;
    return 0;
}

/* What the watchdog tears down: the process that holds the sandbox (the
 * ns sandbox's init, QEMU, the docker CLI), then what the backend's
 * orphan_teardown removes (cgroups, the container, its part of the state
 * directory, which teardown "stop" would otherwise leave behind). */
struct watch_target {
    pid_t pid;
    int pidfd;
    const struct sandbox *sb;
};

/* The watchdog's body (grandchild, own session). Returns never. */
static void watchdog_run(int supervisor_pidfd, int disarm_fd, struct lifecycle *lc,
                         const struct watch_target *t, const struct launch *l)
{
    int sandbox_pidfd = t->pidfd;
    prctl(PR_SET_NAME, "cordon-watchdog");
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    /* A deferred proxy (net.h, net_session.defer) starts after this: it
     * dies with the supervisor through its parent-death signal alone (the
     * supervisor is single-threaded, so that is its exit), and holds
     * nothing that would outlive the sandbox. */
    int proxy_pidfd = l->net_session.proxy_pid > 0 ? pidfd_open_(l->net_session.proxy_pid) : -1;
    int pasta_pidfd = l->net_session.pasta_pid > 0 ? pidfd_open_(l->net_session.pasta_pid) : -1;
    struct pollfd p[2] = {{supervisor_pidfd, POLLIN, 0}, {disarm_fd, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0 && errno == EINTR)
            continue;
        break;
    }
    /* A graceful supervisor writes a byte before closing the pipe; a dying
     * one only closes it (the kernel closes its files before its pidfd
     * becomes readable, so EOF alone means death, not a disarm). The byte
     * counts even when the supervisor has exited by now too (it does not
     * wait for the watchdog of a generated name): both are then ready, and
     * tearing down again would remove the next run's container or rewrite
     * the state directory behind the supervisor's back. */
    if (p[1].revents & (POLLIN | POLLHUP)) {
        char byte;
        if (read(disarm_fd, &byte, 1) == 1)
            _exit(0);
    }
    /* The supervisor died without tearing down. */
    for (int tries = 0; tries < WATCHDOG_KILL_TRIES; tries++) {
        pidfd_kill(sandbox_pidfd, SIGKILL);
        struct pollfd s = {sandbox_pidfd, POLLIN, 0};
        if (poll(&s, 1, 200) > 0)
            break;
    }
    if (proxy_pidfd >= 0)
        pidfd_kill(proxy_pidfd, SIGKILL);
    if (pasta_pidfd >= 0)
        pidfd_kill(pasta_pidfd, SIGKILL);
    if (t->sb->ops && t->sb->ops->orphan_teardown)
        t->sb->ops->orphan_teardown(t->sb, lc->owner.dir_fd);
    struct cordon_error err;
    /* Nobody answers on the dead supervisor's control socket any more. */
    control_unlink_stale(lc->owner.dir_fd);
    state_set_status(&lc->owner, "stopped", 0, &err);
    state_release(&lc->owner, lc->teardown == TEARDOWN_REMOVE);
    _exit(0);
}

static int watchdog_arm(struct lifecycle *lc, const struct launch *l, const struct watch_target *t,
                        struct cordon_error *err);

int lifecycle_started(struct lifecycle *lc, const struct launch *l, const struct sandbox *sb,
                      struct cordon_error *err)
{
    struct watch_target t = {.pid = sb->pid, .pidfd = sb->pidfd, .sb = sb};
    return watchdog_arm(lc, l, &t, err);
}

static int watchdog_arm(struct lifecycle *lc, const struct launch *l, const struct watch_target *t,
                        struct cordon_error *err)
{
    if (state_set_status(&lc->owner, "running", t->pid, err) < 0)
        return -1;
    _cleanup_close_ int self = pidfd_open_(getpid());
    if (self < 0)
        return error_set(err, errno, "watchdog: pidfd_open");
    int disarm[2];
    if (pipe2(disarm, O_CLOEXEC) < 0)
        return error_set(err, errno, "watchdog: pipe");
    /* One fork and a session of its own: a process group kill of the
     * client does not reach it, and when the supervisor dies it is
     * reparented and goes on. The supervisor reaps it in lifecycle_end. */
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        close(disarm[0]);
        close(disarm[1]);
        return error_set(err, e, "watchdog: fork");
    }
    if (child == 0) {
        close(disarm[1]);
        if (setsid() < 0)
            _exit(1);
        /* Nothing of the supervisor's but what the watchdog needs: holding
         * the client's pipes or the agent channel would keep them open. */
        int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && devnull >= 0; fd++)
            dup2(devnull, fd);
        int keep[] = {self, t->pidfd, disarm[0], lc->owner.lock_fd, lc->owner.dir_fd};
        /* close_range over the gaps between the kept fds, in order. */
        for (size_t a = 0; a < ARRAY_SIZE(keep); a++) {
            for (size_t b = a + 1; b < ARRAY_SIZE(keep); b++) {
                if (keep[b] < keep[a]) {
                    int tmp = keep[a];
                    keep[a] = keep[b];
                    keep[b] = tmp;
                }
            }
        }
        unsigned from = 3;
        for (size_t k = 0; k < ARRAY_SIZE(keep); k++) {
            if (keep[k] < 0 || (unsigned)keep[k] < from)
                continue;
            if ((unsigned)keep[k] > from)
                close_range(from, (unsigned)keep[k] - 1, 0);
            from = (unsigned)keep[k] + 1;
        }
        close_range(from, ~0U, 0);
        watchdog_run(self, disarm[0], lc, t, l);
    }
    close(disarm[0]);
    pid_t grandchild = child;
    lc->watchdog_pid = grandchild;
    lc->watchdog_pidfd = pidfd_open_(grandchild);
    lc->disarm_fd = disarm[1];
    log_debug("watchdog %d armed for sandbox %s", grandchild, l->name);
    return 0;
}

void lifecycle_reap_later(struct lifecycle *lc, pid_t pid)
{
    if (pid <= 0)
        return;
    if (lc->nreap < ARRAY_SIZE(lc->reap)) {
        lc->reap[lc->nreap++] = pid;
        return;
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

void lifecycle_end(struct lifecycle *lc)
{
    if (lc->git) {
        gitguard_finish(lc->git);
        gitguard_free(lc->git);
        free(lc->git);
        lc->git = NULL;
    }
    long pending = lc->review_dir ? review_pending(lc->owner.name) : 0;
    if (pending > 0) {
        log_warn("review mode: %ld change(s) wait in sandbox %s: `cordon changes %s`, "
                 "`cordon diff %s`, then `cordon apply %s` or `cordon discard %s`",
                 pending, lc->owner.name, lc->owner.name, lc->owner.name, lc->owner.name,
                 lc->owner.name);
    }
    if (lc->review_dir) {
        free(lc->review_dir);
        lc->review_dir = NULL;
    }
    /* Every caller has ended the sandbox by now. */
    struct cordon_error guard_err;
    if (trust_note_session_end(&lc->trust_guard, &guard_err) < 0)
        log_warn("%s; review .cordon.toml before you trust it", guard_err.message);
    /* The helpers sent their end by the backend's teardown are gone before
     * the watchdog stands down and the name is free. */
    if (lc->net && lc->net->policy)
        net_session_reap(lc->net);
    for (size_t i = 0; i < lc->nreap; i++) {
        while (waitpid(lc->reap[i], NULL, 0) < 0 && errno == EINTR)
            ;
    }
    lc->nreap = 0;
    if (lc->disarm_fd >= 0) {
        ssize_t w = write(lc->disarm_fd, "d", 1);
        (void)w;
        close(lc->disarm_fd);
        lc->disarm_fd = -1;
        /* For a name someone may reuse at once, wait for the watchdog to let
         * go of its copy of the lock, so the name is free when we return. A
         * generated name is never reused: no need to wait. */
        if (lc->watchdog_pidfd >= 0 && lc->teardown != TEARDOWN_REMOVE) {
            struct pollfd p = {lc->watchdog_pidfd, POLLIN, 0};
            poll(&p, 1, 2000);
        }
    }
    if (lc->watchdog_pidfd >= 0) {
        /* Reaped now if it is already gone (it exits as soon as it reads the
         * disarm byte); otherwise the supervisor's exit reaps it. */
        siginfo_t si;
        waitid(P_PIDFD, (id_t)lc->watchdog_pidfd, &si, WEXITED | WNOHANG);
        close(lc->watchdog_pidfd);
    }
    lc->watchdog_pidfd = -1;
    if (lc->owner.lock_fd >= 0) {
        control_unlink_stale(lc->owner.dir_fd);
        bool remove = lc->teardown == TEARDOWN_REMOVE;
        struct cordon_error err;
        if (!remove)
            state_set_status(&lc->owner, "stopped", 0, &err);
        char name[sizeof(lc->owner.name)];
        memcpy(name, lc->owner.name, sizeof(name));
        state_release(&lc->owner, remove);
        lifecycle_gc(lc->gc_hours, name);
    }
}
