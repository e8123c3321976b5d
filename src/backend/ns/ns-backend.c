/* The ns backend's entry in the backend table: serve mode over a socket
 * pair, stop, the watchdog's clean-up of cgroups, launch checks. Run mode is
 * run-ns.c. Host context (supervisor). */
#include "backend/ns/ns.h"
#include "supervisor/launch.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Docker runs only inside the vm backend's guest (src/backend/vm/guest/
 * vm-docker.c): the ns backend has no daemon of its own and never reaches
 * the host's. */
static int ns_check_launch(const struct launch *l, struct cordon_error *err)
{
    const struct cordon_config *cfg = &l->cfg;
    if (cfg->docker.mode == CFG_DOCKER_REQUIRE)
        return error_set(err, 0,
                         "docker.mode = \"require\" (set by %s): the ns backend has no Docker "
                         "daemon inside (the vm backend's guest runs its own: backend = \"vm\")",
                         cfg->origin[CFG_DOCKER_MODE].file
                             ? cfg->origin[CFG_DOCKER_MODE].file
                             : cfg_layer_name(cfg->origin[CFG_DOCKER_MODE].layer));
    if (cfg->docker.mode == CFG_DOCKER_AUTO)
        log_debug("docker: unavailable: the ns backend has no Docker daemon inside (the vm "
                  "backend's guest runs its own)");
    return 0;
}

/* The agent serves on one end of a socket pair (fd 3 inside); its stdin and
 * stdout are /dev/null, its stderr the supervisor's. */
static int ns_serve_start(const struct launch *l, struct sandbox *sb, struct cordon_error *err)
{
    *sb = (struct sandbox){.ops = &ns_backend_ops, .pid = -1, .pidfd = -1, .channel_fd = -1};
    struct ns_sandbox *ns = calloc(1, sizeof(*ns));
    if (!ns)
        return error_set(err, ENOMEM, "sandbox");
    ns->pidfd = -1;
    sb->priv = ns;
    static char *const agent_argv[] = {"cordon-agent", "serve", NULL};
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
        return error_set(err, errno, "socketpair");
    sb->channel_fd = pair[0];
    int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0) {
        close(pair[1]);
        return error_set(err, errno, "/dev/null");
    }
    struct ns_spec spec = l->spec;
    spec.argv = agent_argv;
    spec.stdio[0] = devnull;
    spec.stdio[1] = devnull;
    spec.stdio[2] = 2;
    spec.control_fd = pair[1];
    int rc = ns_sandbox_start(&spec, ns, err);
    close(pair[1]);
    close(devnull);
    if (rc < 0)
        return -1;
    sb->pid = ns->pid;
    sb->pidfd = ns->pidfd;
    snprintf(sb->description, sizeof(sb->description), "ns (pid %d)", (int)ns->pid);
    log_debug("sandbox %s: limits: %s", l->name, ns->limits_applied);
    return 0;
}

static void ns_stop(struct sandbox *sb)
{
    struct ns_sandbox *ns = sb->priv;
    fs_close(&sb->channel_fd);
    if (ns && ns->pid > 0) {
        proc_end(ns->pid, ns->pidfd, 0);
        ns_sandbox_release(ns);
    } else if (ns && ns->pidfd >= 0) {
        close(ns->pidfd);
    }
    free(ns);
    sb->priv = NULL;
    sb->pid = -1;
    sb->pidfd = -1;
}

/* The watchdog's part: the cgroups empty out once the processes are gone. */
static void ns_orphan_teardown(const struct sandbox *sb, int state_dir_fd)
{
    const struct ns_sandbox *ns = sb->priv;
    for (size_t i = 0; ns && i < sizeof(ns->cgroup_paths) / sizeof(ns->cgroup_paths[0]); i++) {
        for (int tries = 0; ns->cgroup_paths[i] && tries < 50; tries++) {
            if (rmdir(ns->cgroup_paths[i]) == 0 || errno != EBUSY)
                break;
            usleep(20000);
        }
    }
}

const struct backend_ops ns_backend_ops = {
    .name = "ns",
    .caps = {.flags = BACKEND_CAP_PUBLISH_PORTS | BACKEND_CAP_HOST_LANDLOCK |
                      BACKEND_CAP_INIT_CONTROL | BACKEND_CAP_REVIEW | BACKEND_CAP_TLS_INTERCEPT |
                      BACKEND_CAP_DENY_PROXY | BACKEND_CAP_HOST_SERVICES |
                      BACKEND_CAP_DEFERRED_DENY_PROXY,
             .host_side = "agent"},
    .report = ns_probe_report,
    .check_launch = ns_check_launch,
    .start = ns_serve_start,
    .stop = ns_stop,
    .run = ns_run,
    .orphan_teardown = ns_orphan_teardown,
};
