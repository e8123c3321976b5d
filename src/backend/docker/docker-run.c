/* The container's view and the `docker run` command line (docker-run.h):
 * flags, limits, tmpfs, and the binds (workspace, protected paths, git
 * directories, [[mounts]]). Host context, supervisor.
 *
 * Every host path handed to docker is a string the daemon resolves later,
 * as root: each is opened here first with openat2(RESOLVE_NO_SYMLINKS), so a
 * symlink refuses the start as it does on ns. What remains is the race
 * between that check and the daemon's own resolution (the docs say so). */
#include "backend/docker/docker-run.h"
#include "backend/etc-allowlist.h"
#include "backend/overlay.h"
#include "backend/view.h"
#include "util/cleanup.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define DOCKER_MAX_BINDS 256

int docker_args_add(struct docker_args *a, const char *fmt, ...)
{
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        char **v = realloc(a->v, cap * sizeof(*v));
        if (!v)
            return -1;
        a->v = v;
        a->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    int rc = vasprintf(&a->v[a->n], fmt, ap);
    va_end(ap);
    if (rc < 0)
        return -1;
    a->v[++a->n] = NULL;
    return 0;
}

void docker_args_free(struct docker_args *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    *a = (struct docker_args){0};
}

/* openat2 with no symlink anywhere, the last component included (O_PATH |
 * O_NOFOLLOW alone would open a trailing symlink itself): ELOOP. */
static int openat2_nofollow(int dirfd, const char *path, int flags, unsigned long long resolve)
{
    int fd = fs_openat2(dirfd, path, flags | O_NOFOLLOW,
                        resolve | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode)) {
        close(fd);
        errno = ELOOP;
        return -1;
    }
    return fd;
}

/* A host path handed to the daemon: it must exist and no component may be
 * a symlink (the daemon, root, would follow it). */
static int check_host_path(const char *path, const char *what, struct cordon_error *err)
{
    if (strpbrk(path, ",\"\n"))
        return error_set(err, EINVAL,
                         "docker: %s %s contains ',', '\"' or a newline, which docker's --mount "
                         "syntax cannot carry",
                         what, path);
    int fd = openat2_nofollow(AT_FDCWD, path, O_PATH, 0);
    if (fd < 0 && errno == ELOOP)
        return error_set(err, ELOOP,
                         "docker: %s %s is a symlink or reached through one; the daemon would "
                         "follow it: name its real path",
                         what, path);
    if (fd < 0)
        return error_set(err, errno, "docker: %s %s", what, path);
    close(fd);
    return 0;
}

struct binds {
    struct {
        char *source, *target;
        bool readonly;
    } items[DOCKER_MAX_BINDS];
    size_t n;
    /* Review mode: the workspace (the daemon's overlay, review_mount). */
    const char *review_ws;
};

/* One bind per target; asked twice for a target (a directory on the way
 * to one protected path, and protected itself), read-only wins. */
static int bind_add(struct binds *b, const char *source, const char *target, bool readonly,
                    struct cordon_error *err)
{
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->items[i].target, target) == 0) {
            b->items[i].readonly |= readonly;
            return 0;
        }
    }
    if (b->n >= DOCKER_MAX_BINDS)
        return error_set(err, E2BIG, "docker: more than %d binds", DOCKER_MAX_BINDS);
    if (strpbrk(target, ",\"\n"))
        return error_set(err, EINVAL,
                         "docker: %s contains ',', '\"' or a newline, which docker's --mount "
                         "syntax cannot carry",
                         target);
    b->items[b->n].source = strdup(source);
    b->items[b->n].target = strdup(target);
    b->items[b->n].readonly = readonly;
    b->n++;
    if (!b->items[b->n - 1].source || !b->items[b->n - 1].target)
        return error_set(err, ENOMEM, "docker");
    return 0;
}

static int binds_emit(const struct binds *b, struct docker_args *a, struct cordon_error *err)
{
    for (size_t i = 0; i < b->n; i++) {
        if (docker_args_add(a, "--mount") < 0 ||
            docker_args_add(a, "type=bind,source=%s,target=%s%s", b->items[i].source,
                            b->items[i].target, b->items[i].readonly ? ",readonly" : "") < 0)
            return error_set(err, ENOMEM, "docker");
    }
    return 0;
}

static void binds_free(struct binds *b)
{
    for (size_t i = 0; i < b->n; i++) {
        free(b->items[i].source);
        free(b->items[i].target);
    }
    b->n = 0;
}

/* Keeps rel (under host_base, seen at view_base) read-only. Each directory
 * on the way is bound over itself first: a mount point cannot be renamed
 * (EBUSY), so `mv .git .git-old; mkdir -p .git/hooks` cannot escape the
 * protection. A symlink on the way refuses the start, as on ns. */
static int protect(struct binds *b, const char *host_base, const char *view_base, const char *rel,
                   bool readonly_ancestors, struct cordon_error *err)
{
    _cleanup_close_ int dirfd = openat2_nofollow(AT_FDCWD, host_base, O_PATH | O_DIRECTORY, 0);
    if (dirfd < 0)
        return errno == ENOENT ? 0 : error_set(err, errno, "docker: protect: %s", host_base);
    /* The whole way is checked first: nothing is bound for a path that is
     * not there (a .git file is no directory to pin on the way to
     * .git/hooks, and must keep its own read-only bind). */
    size_t ends[PATH_MAX / 2];
    size_t nends = 0;
    const char *p = rel;
    for (;;) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        if (len == 0 || len > NAME_MAX || nends >= ARRAY_SIZE(ends))
            return error_set(err, EINVAL, "docker: protected path %s", rel);
        char component[NAME_MAX + 1];
        memcpy(component, p, len);
        component[len] = '\0';
        bool last = !slash || !slash[1];
        int fd = openat2_nofollow(dirfd, component, last ? O_PATH : O_PATH | O_DIRECTORY,
                                  RESOLVE_BENEATH);
        if (fd < 0) {
            if (errno == ENOENT || errno == ENOTDIR)
                return 0; /* nothing there to protect */
            if (errno == ELOOP)
                return error_set(err, ELOOP,
                                 "docker: protected path %s/%s is a symlink or reached through "
                                 "one; refusing to start",
                                 host_base, rel);
            return error_set(err, errno, "docker: protected path %s/%s", host_base, rel);
        }
        close(dirfd);
        dirfd = fd;
        ends[nends++] = (size_t)(p - rel) + len;
        if (last)
            break;
        p = slash + 1;
    }
    for (size_t i = 0; i < nends; i++) {
        char source[PATH_MAX * 2], target[PATH_MAX * 2];
        snprintf(source, sizeof(source), "%s/%.*s", host_base, (int)ends[i], rel);
        snprintf(target, sizeof(target), "%s/%.*s", view_base, (int)ends[i], rel);
        bool last = i + 1 == nends;
        /* Review mode: a directory on the way is the overlay's; a bind of
         * the host's would let the agent write the host beneath it. Apply
         * never writes a protected path (review.c), so a path made anew in
         * the layer stays there. */
        if (!last && b->review_ws && strcmp(host_base, b->review_ws) == 0)
            continue;
        if (bind_add(b, source, target, last || readonly_ancestors, err) < 0)
            return -1;
    }
    return 0;
}

/* The agent confines itself as the ns backend confines its sandbox,
 * under Docker's profile and mounts: Landlock with the same writable
 * places, then cordon's own seccomp filter. */
int docker_confine_argv(const struct launch *l, struct docker_args *a, struct cordon_error *err)
{
    const struct ns_spec *spec = &l->spec;
    bool ro = spec->workspace_readonly;
    if (docker_args_add(a, "--confine") < 0 || docker_args_add(a, "--chdir") < 0 ||
        docker_args_add(a, "%s", spec->cwd) < 0)
        return error_set(err, ENOMEM, "docker");
    const char *writable[8 + 2 + LAUNCH_MAX_MOUNTS];
    size_t n = 0;
    static const char *const always[] = {"/tmp", "/var/tmp", "/run", "/dev"};
    for (size_t i = 0; i < ARRAY_SIZE(always); i++)
        writable[n++] = always[i];
    writable[n++] = spec->home;
    if (!ro)
        writable[n++] = spec->workspace_view;
    for (size_t i = 0; !ro && spec->git_dirs && spec->git_dirs[i] && i < 2; i++)
        writable[n++] = spec->git_dirs[i];
    for (size_t i = 0; i < spec->nmounts && i < LAUNCH_MAX_MOUNTS; i++) {
        if (!spec->mounts[i].readonly)
            writable[n++] = spec->mounts[i].guest_path;
    }
    for (size_t i = 0; i < n; i++) {
        if (docker_args_add(a, "--writable") < 0 || docker_args_add(a, "%s", writable[i]) < 0)
            return error_set(err, ENOMEM, "docker");
    }
    return 0;
}

/* The agent's network forwarder (agent/docker-net.c), before --confine:
 * only the container's PID 1 runs it, never a `docker exec` of the agent. */
bool docker_net_has_proxy(const struct net_policy *policy)
{
    return policy->mode == NET_MODE_ALLOWLIST || net_deny_reporter(policy);
}

static int docker_net_args(const struct launch *l, struct docker_args *a)
{
    if (docker_net_has_proxy(&l->net) &&
        (docker_args_add(a, "--proxy-socket") < 0 || docker_args_add(a, DOCKER_PROXY_PATH) < 0))
        return -1;
    if (l->net.publish_count > 0 &&
        (docker_args_add(a, "--publish-dir") < 0 || docker_args_add(a, DOCKER_PUBLISH_PATH) < 0))
        return -1;
    for (size_t i = 0; i < l->net.publish_count; i++) {
        if (docker_args_add(a, "--publish-port") < 0 ||
            docker_args_add(a, "%u", l->net.publish[i].guest_port) < 0)
            return -1;
    }
    if (l->net.host_service_count > 0 && (docker_args_add(a, "--host-service-dir") < 0 ||
                                          docker_args_add(a, DOCKER_HOST_SERVICE_PATH) < 0))
        return -1;
    for (size_t i = 0; i < l->net.host_service_count; i++) {
        if (docker_args_add(a, "--host-service") < 0 ||
            docker_args_add(a, "%u", l->net.host_services[i]) < 0)
            return -1;
    }
    return 0;
}

/* Review mode (docs/review.md "Backends"): the workspace is an overlay the
 * daemon mounts (the local volume driver's "type=overlay"), lower the host's
 * workspace, upper and work the session's review/upper and review/work, with
 * the options cordon mounts it with itself (backend/overlay.h), so the layer
 * is the one review.c reads: user.overlay.* markers, whiteouts as 0/0
 * devices (the daemon's root makes them; the user may unlink them), files
 * the container's uid (the user's) creates. An anonymous volume: --rm, and
 * `docker rm -v` at teardown, remove it and unmount the overlay. nocopy: the
 * image's files at the view's path are not copied into the layer. Overlay's
 * option syntax splits on ',' and ':' and takes '\' as an escape, docker's
 * --mount splits on ',' outside '"': a path holding any is refused. */
static int review_mount(const struct view_op *op, struct docker_args *a, struct cordon_error *err)
{
    const char *paths[] = {op->source, op->layer, op->target};
    for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
        if (strpbrk(paths[i], ",:\\\"\n="))
            return error_set(err, EINVAL,
                             "docker: review mode: %s contains ',', ':', '=', '\\', '\"' or a "
                             "newline, which the overlay's options cannot carry",
                             paths[i]);
    }
    char layer[PATH_MAX];
    snprintf(layer, sizeof(layer), "%s/upper", op->layer);
    if (check_host_path(layer, "the review layer", err) < 0)
        return -1;
    snprintf(layer, sizeof(layer), "%s/work", op->layer);
    if (check_host_path(layer, "the review layer", err) < 0)
        return -1;
    if (docker_args_add(a, "--mount") < 0 ||
        docker_args_add(a,
                        "type=volume,target=%s,volume-nocopy,volume-driver=local,"
                        "volume-opt=type=overlay,volume-opt=device=overlay,"
                        "\"volume-opt=o=lowerdir=%s,upperdir=%s/upper,workdir=%s/work,"
                        "%s\"",
                        op->target, op->source, op->layer, op->layer, REVIEW_OVERLAY_OPTIONS) < 0)
        return error_set(err, ENOMEM, "docker");
    return 0;
}

/* One operation of the view plan (backend/view.h) as a bind or review
 * mode's overlay volume; each host path checked right before. */
static int view_op_add(const struct view_plan *view, const struct view_op *op, struct binds *b,
                       struct docker_args *a, struct cordon_error *err)
{
    bool ro = view->workspace_readonly;
    switch (op->kind) {
    case VIEW_WORKSPACE:
        if (check_host_path(op->source, "the workspace", err) < 0)
            return -1;
        return bind_add(b, op->source, op->target, op->readonly, err);
    case VIEW_REVIEW:
        b->review_ws = op->source;
        if (check_host_path(op->source, "the workspace", err) < 0)
            return -1;
        return review_mount(op, a, err);
    case VIEW_PROTECT:
        return protect(b, op->source, op->target, op->rel, ro, err);
    case VIEW_GIT_BIND:
        /* The git metadata plan (supervisor/gitguard.h): copies in the
         * state directory, and the host's objects/, refs/ ... bound over
         * them. The daemon resolves each source again;
         * docker_sandbox_check_git() checks what it bound before the agent
         * serves a call (cordon mcp). */
        if (check_host_path(op->source, "the git metadata", err) < 0)
            return -1;
        return bind_add(b, op->source, op->target, ro || op->readonly, err);
    case VIEW_GIT_DIR:
        if (op->covered)
            return 0;
        if (check_host_path(op->source, "the git directory", err) < 0)
            return -1;
        return bind_add(b, op->source, op->target, op->readonly, err);
    case VIEW_MOUNT:
        if (check_host_path(op->source, "the mount", err) < 0)
            return -1;
        return bind_add(b, op->source, op->target, op->readonly, err);
    }
    return error_set(err, EINVAL, "docker: unknown view operation %d", (int)op->kind);
}

/* The workspace, its protected paths, the git metadata, [[mounts]]. */
static int view_binds_add(const struct ns_spec *spec, struct binds *b, struct docker_args *a,
                          struct cordon_error *err)
{
    struct view_plan view;
    if (view_plan_build(spec, &view, err) < 0)
        return -1;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < view.count; i++)
        rc = view_op_add(&view, &view.ops[i], b, a, err);
    view_plan_free(&view);
    return rc;
}

/* `docker run` with everything: flags, binds, tmpfs, limits, image, agent. */
/* The container's fixed flags (no network, no capability, no new
 * privileges, a read-only root, the user's uid, the agent as entry point)
 * and the configured limits. True when an allocation failed. */
static bool run_flags_add(const struct launch *l, const char *cli, const char *name,
                          const char *state_dir, bool serve, struct docker_args *a)
{
    const struct cordon_config *cfg = &l->cfg;
    bool oom = false;
    oom |= docker_args_add(a, "%s", cli) < 0;
    oom |= docker_args_add(a, "run") < 0 || docker_args_add(a, "-i") < 0 ||
           docker_args_add(a, "--rm") < 0;
    /* A terminal (--pty): the container's own, made by the runtime on its
     * devpts; the CLI relays it and the window size (run-docker.c). */
    if (l->pty && !serve)
        oom |= docker_args_add(a, "-t") < 0;
    oom |= docker_args_add(a, "--name") < 0 || docker_args_add(a, "%s", name) < 0;
    oom |= docker_args_add(a, "--label") < 0 ||
           docker_args_add(a, "io.cordon.session=%s", l->name) < 0;
    oom |= docker_args_add(a, "--pull") < 0 || docker_args_add(a, "never") < 0;
    oom |= docker_args_add(a, "--network") < 0 || docker_args_add(a, "none") < 0;
    /* The daemon's default on cgroup v1 is the host's cgroup namespace. */
    oom |= docker_args_add(a, "--cgroupns") < 0 || docker_args_add(a, "private") < 0;
    oom |= docker_args_add(a, "--cap-drop") < 0 || docker_args_add(a, "ALL") < 0;
    oom |= docker_args_add(a, "--security-opt") < 0 || docker_args_add(a, "no-new-privileges") < 0;
    oom |= docker_args_add(a, "--user") < 0 || docker_args_add(a, "%u:%u", getuid(), getgid()) < 0;
    oom |= docker_args_add(a, "--read-only") < 0;
    oom |= docker_args_add(a, "--log-driver") < 0 || docker_args_add(a, "none") < 0;
    /* An image's HEALTHCHECK would run commands beside the agent, outside
     * its Landlock and seccomp layers. */
    oom |= docker_args_add(a, "--no-healthcheck") < 0;
    oom |= docker_args_add(a, "--env-file") < 0 || docker_args_add(a, "%s/env", state_dir) < 0;
    oom |= docker_args_add(a, "--entrypoint") < 0 || docker_args_add(a, DOCKER_AGENT_PATH) < 0;
    if (cfg->limits.pids > 0)
        oom |= docker_args_add(a, "--pids-limit") < 0 ||
               docker_args_add(a, "%lld", (long long)cfg->limits.pids) < 0;
    if (cfg->limits.memory_mib > 0)
        oom |= docker_args_add(a, "--memory") < 0 ||
               docker_args_add(a, "%lldm", (long long)cfg->limits.memory_mib) < 0 ||
               docker_args_add(a, "--memory-swap") < 0 ||
               docker_args_add(a, "%lldm", (long long)cfg->limits.memory_mib) < 0;
    if (cfg->limits.cpus > 0)
        oom |= docker_args_add(a, "--cpus") < 0 || docker_args_add(a, "%g", cfg->limits.cpus) < 0;
    if (cfg->limits.open_files > 0)
        oom |= docker_args_add(a, "--ulimit") < 0 ||
               docker_args_add(a, "nofile=%lld:%lld", (long long)cfg->limits.open_files,
                               (long long)cfg->limits.open_files) < 0;
    if (cfg->limits.file_size_mib > 0)
        oom |= docker_args_add(a, "--ulimit") < 0 ||
               docker_args_add(a, "fsize=%lld:%lld", (long long)cfg->limits.file_size_mib << 20,
                               (long long)cfg->limits.file_size_mib << 20) < 0;
    if (cfg->limits.cpu_seconds > 0)
        oom |= docker_args_add(a, "--ulimit") < 0 ||
               docker_args_add(a, "cpu=%lld:%lld", (long long)cfg->limits.cpu_seconds,
                               (long long)cfg->limits.cpu_seconds) < 0;
    return oom;
}

/* The scratch places: /tmp, /var/tmp, /run, /dev/shm and HOME, each
 * bounded; a kept sandbox's /tmp and HOME from its state directory. */
static int scratch_add(const struct ns_spec *spec, struct binds *b, struct docker_args *a,
                       struct cordon_error *err)
{
    /* Scratch: /tmp, /var/tmp, /run and HOME (kept in the state directory
     * for a sandbox that outlives its session). */
    static const char *const scratch[] = {"/tmp", "/var/tmp", "/run"};
    /* Each tmpfs bounded (config.h CFG_TMPFS_MOUNTS); the container's
     * memory limit counts their pages too. */
    char bounds[64];
    snprintf(bounds, sizeof(bounds), ",size=%ldm,nr_inodes=%ld", spec->limits.tmpfs_mib,
             spec->limits.tmpfs_inodes);
    for (size_t i = 0; i < ARRAY_SIZE(scratch); i++) {
        if (spec->persist_dir && strcmp(scratch[i], "/tmp") == 0)
            continue;
        if (docker_args_add(a, "--tmpfs") < 0 ||
            docker_args_add(a, "%s:rw,nosuid,nodev,mode=%s%s", scratch[i],
                            strcmp(scratch[i], "/run") == 0 ? "0755" : "1777", bounds) < 0)
            return error_set(err, ENOMEM, "docker");
    }
    /* /dev/shm is the daemon's own tmpfs (64 MiB unless told). */
    if (docker_args_add(a, "--shm-size") < 0 ||
        docker_args_add(a, "%ldm", spec->limits.tmpfs_mib) < 0)
        return error_set(err, ENOMEM, "docker");
    if (strpbrk(spec->home, ",:\"\n")) {
        return error_set(err, EINVAL, "docker: HOME %s contains ',', ':', '\"' or a newline",
                         spec->home);
    }
    if (spec->persist_dir) {
        char src[PATH_MAX * 2];
        snprintf(src, sizeof(src), "%s/tmp", spec->persist_dir);
        if (check_host_path(src, "the kept /tmp", err) < 0 ||
            bind_add(b, src, "/tmp", false, err) < 0)
            return -1;
        snprintf(src, sizeof(src), "%s/home", spec->persist_dir);
        if (check_host_path(src, "the kept home", err) < 0 ||
            bind_add(b, src, spec->home, false, err) < 0)
            return -1;
    } else if (docker_args_add(a, "--tmpfs") < 0 ||
               docker_args_add(a, "%s:rw,nosuid,nodev,mode=0700,uid=%u,gid=%u%s", spec->home,
                               getuid(), getgid(), bounds) < 0) {
        return error_set(err, ENOMEM, "docker");
    }

    return 0;
}

int docker_run_argv(const struct launch *l, const char *cli, const char *name,
                    const char *state_dir, char *const *agent_argv, bool serve,
                    struct docker_args *a, struct cordon_error *err)
{
    const struct cordon_config *cfg = &l->cfg;
    const struct ns_spec *spec = &l->spec;
    if (run_flags_add(l, cli, name, state_dir, serve, a))
        return error_set(err, ENOMEM, "docker");

    _cleanup_free_ struct binds *bp = calloc(1, sizeof(*bp));
    if (!bp)
        return error_set(err, ENOMEM, "docker");
    struct binds *b = bp;
    int rc = -1;
    if (scratch_add(spec, b, a, err) < 0)
        goto out;
    /* The agent, read-only; cordon's sockets; then the view (the workspace at
     * its lexical path ...). */
    if (check_host_path(l->agent_path, "the agent", err) < 0 ||
        bind_add(b, l->agent_path, DOCKER_AGENT_PATH, true, err) < 0)
        goto out;
    if (docker_net_has_proxy(&l->net)) {
        char sock[PATH_MAX];
        snprintf(sock, sizeof(sock), "%s/" DOCKER_PROXY_SOCKET, state_dir);
        if (check_host_path(sock, "the proxy socket", err) < 0 ||
            bind_add(b, sock, DOCKER_PROXY_PATH, true, err) < 0)
            goto out;
    }
    /* ssh through the proxy (etc-allowlist.h): the image's /etc is its
     * own, so only this one file of it is replaced. */
    if (net_ssh_proxied(&l->net)) {
        char conf[PATH_MAX];
        snprintf(conf, sizeof(conf), "%s/ssh/ssh_config", state_dir);
        _cleanup_close_ int dir = open(state_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0 || etc_write_ssh_config(dir) < 0) {
            error_set(err, errno, "docker: writing %s", conf);
            goto out;
        }
        if (bind_add(b, conf, "/etc/ssh/ssh_config", true, err) < 0)
            goto out;
    }
    if (l->net.publish_count > 0) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/" DOCKER_PUBLISH_DIR, state_dir);
        if (check_host_path(dir, "the publish directory", err) < 0 ||
            bind_add(b, dir, DOCKER_PUBLISH_PATH, false, err) < 0)
            goto out;
    }
    if (l->net.host_service_count > 0) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/" DOCKER_HOST_SERVICE_DIR, state_dir);
        if (check_host_path(dir, "the host services' directory", err) < 0 ||
            bind_add(b, dir, DOCKER_HOST_SERVICE_PATH, true, err) < 0)
            goto out;
    }
    {
        char sock[PATH_MAX];
        snprintf(sock, sizeof(sock), "%s/" DOCKER_GUARD_SOCKET, state_dir);
        if (check_host_path(sock, "the socket guard's socket", err) < 0 ||
            bind_add(b, sock, DOCKER_GUARD_PATH, true, err) < 0)
            goto out;
    }
    if (view_binds_add(spec, b, a, err) < 0)
        goto out;
    if (binds_emit(b, a, err) < 0)
        goto out;
    /* The image, then the agent's arguments: its network forwarder (PID 1
     * only), its confinement, then its mode. */
    if (docker_args_add(a, "%s", cfg->docker.image) < 0 || docker_args_add(a, "--sock-guard") < 0 ||
        docker_args_add(a, DOCKER_GUARD_PATH) < 0 || docker_net_args(l, a) < 0)
        goto oom;
    if (docker_confine_argv(l, a, err) < 0)
        goto out;
    if (docker_args_add(a, "--") < 0)
        goto oom;
    for (size_t i = 1; agent_argv[i]; i++) {
        if (docker_args_add(a, "%s", agent_argv[i]) < 0)
            goto oom;
        if (serve && i == 1 && docker_args_add(a, "--stdio") < 0)
            goto oom;
    }
    rc = 0;
    goto out;
oom:
    error_set(err, ENOMEM, "docker");
out:
    binds_free(b);
    return rc;
}
