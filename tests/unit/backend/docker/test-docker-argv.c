/* Unit tests of a pure builder: the docker backend's `docker run` argv
 * (backend/docker/docker-run.c), from a launch that launch_prepare made in
 * a scratch workspace, without a daemon. What the tests hold it to is what
 * the container must never lack: every capability dropped, no new
 * privileges, a read-only root, no network in deny mode, the configured
 * limits, the user's uid, and the agent as the entry point serving on its
 * stdio. Host context, any uid. */
#include "backend/docker/docker-run.h"
#include "supervisor/launch.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The index of the first argv entry equal to want, or -1. */
static int find(const struct docker_args *a, const char *want)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], want) == 0)
            return (int)i;
    return -1;
}

/* The entry after the first flag, or "" when there is none. */
static const char *after(const struct docker_args *a, const char *flag)
{
    int i = find(a, flag);
    return i >= 0 && (size_t)i + 1 < a->n ? a->v[i + 1] : "";
}

/* Whether flag is followed by value anywhere (flags given more than once). */
static bool has_pair(const struct docker_args *a, const char *flag, const char *value)
{
    for (size_t i = 0; i + 1 < a->n; i++)
        if (strcmp(a->v[i], flag) == 0 && strcmp(a->v[i + 1], value) == 0)
            return true;
    return false;
}

int main(void)
{
    char root[] = "/tmp/cordon-docker-argv-XXXXXX";
    if (!mkdtemp(root))
        tap_bail("mkdtemp");
    char ws[256], home[256], etc[256], state[256], cmd[600];
    snprintf(ws, sizeof(ws), "%s/ws", root);
    snprintf(home, sizeof(home), "%s/home", root);
    snprintf(etc, sizeof(etc), "%s/etc", root);
    snprintf(state, sizeof(state), "%s/state", root);
    if (mkdir(ws, 0700) < 0 || mkdir(home, 0700) < 0 || mkdir(etc, 0700) < 0 ||
        mkdir(state, 0700) < 0)
        tap_bail("mkdir");
    /* The socket guard's socket is bound by the session before the argv is
     * built (docker.c); here a listening socket stands in for it. */
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%.80s/" DOCKER_GUARD_SOCKET, state) >=
        sizeof(sa.sun_path))
        tap_bail("socket path too long");
    int guard = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (guard < 0 || bind(guard, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(guard, 1) < 0)
        tap_bail("guard socket");
    /* So is deny mode's refusing proxy's socket (docker.c start_proxy). */
    struct sockaddr_un pa = {.sun_family = AF_UNIX};
    if ((size_t)snprintf(pa.sun_path, sizeof(pa.sun_path), "%.80s/" DOCKER_PROXY_SOCKET, state) >=
        sizeof(pa.sun_path))
        tap_bail("socket path too long");
    int proxy = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (proxy < 0 || bind(proxy, (struct sockaddr *)&pa, sizeof(pa)) < 0 || listen(proxy, 1) < 0)
        tap_bail("proxy socket");
    snprintf(cmd, sizeof(cmd), "git init -q '%s'", ws);
    if (system(cmd) != 0 || chdir(ws) < 0)
        tap_bail("git init");
    tap_launch_env(home, etc);

    const char *sets[] = {"limits.memory_mib=512", "limits.pids=100", "limits.cpus=1.5",
                          "network.mode=deny", NULL};
    struct launch_request req = {sets, NULL, NULL, NULL};
    struct launch l;
    struct cordon_error err = {0};
    if (launch_prepare(&req, &l, &err) < 0)
        tap_bail("launch_prepare: %s", err.message);

    char *const serve[] = {"cordon-agent", "serve", NULL};
    struct docker_args a = {0};
    int rc = docker_run_argv(&l, "/usr/bin/docker", "argv-test", state, serve, true, &a, &err);
    is_int(rc, 0, "docker_run_argv builds an argv without a daemon");
    if (rc < 0) {
        tap_diag("%s", err.message);
    } else {
        is_str(a.v[0], "/usr/bin/docker", "argv[0] is the pinned CLI");
        is_str(a.v[1], "run", "... running a container");
        ok(find(&a, "--rm") > 0, "the container is removed when it ends");
        is_str(after(&a, "--cap-drop"), "ALL", "every capability is dropped");
        ok(has_pair(&a, "--security-opt", "no-new-privileges"), "no new privileges");
        ok(find(&a, "--read-only") > 0, "the image's root is read-only");
        is_str(after(&a, "--network"), "none", "deny mode: no network at all");
        char proxy_mount[600];
        snprintf(proxy_mount, sizeof(proxy_mount),
                 "type=bind,source=%s/" DOCKER_PROXY_SOCKET ",target=" DOCKER_PROXY_PATH
                 ",readonly",
                 state);
        ok(has_pair(&a, "--mount", proxy_mount),
           "deny mode: the refusing proxy's socket is bound in, read-only");
        is_str(after(&a, "--proxy-socket"), DOCKER_PROXY_PATH,
               "... and the forwarder serves it on 127.0.0.1:3128");
        is_str(after(&a, "--memory"), "512m", "limits.memory_mib becomes --memory");
        is_str(after(&a, "--pids-limit"), "100", "limits.pids becomes --pids-limit");
        is_str(after(&a, "--cpus"), "1.5", "limits.cpus becomes --cpus");
        char user[64];
        snprintf(user, sizeof(user), "%u:%u", (unsigned)getuid(), (unsigned)getgid());
        is_str(after(&a, "--user"), user, "the container runs as the user's own uid and gid");
        is_str(after(&a, "--name"), "argv-test", "the container is named after the session");
        int i = find(&a, "serve");
        ok(i > 0 && (size_t)i + 1 < a.n && strcmp(a.v[i + 1], "--stdio") == 0,
           "serve mode: the agent serves on its stdio");
        ok(a.v[a.n] == NULL, "the argv is NULL-terminated");
        bool no_run_mode = true;
        for (size_t k = 0; k < a.n; k++)
            if (strcmp(a.v[k], "init") == 0)
                no_run_mode = false;
        ok(no_run_mode, "serve mode carries no init argv");
    }
    docker_args_free(&a);

    /* Run mode: the caller's init argv, no --stdio. */
    char *const run[] = {"cordon-agent", "init", "--", "true", NULL};
    struct docker_args b = {0};
    rc = docker_run_argv(&l, "/usr/bin/docker", "argv-test", state, run, false, &b, &err);
    is_int(rc, 0, "run mode builds too");
    if (rc == 0) {
        ok(find(&b, "--stdio") < 0, "run mode: no --stdio");
        int i = find(&b, "init");
        ok(i > 0 && (size_t)i + 2 < b.n && strcmp(b.v[i + 1], "--") == 0 &&
               strcmp(b.v[i + 2], "true") == 0,
           "run mode: the command follows init --");
    }
    docker_args_free(&b);

    /* Review mode: the workspace is the daemon's overlay volume over the
     * session's layer; no bind of the host's workspace or of a directory on
     * a protected path's way (it would write the host beneath the overlay);
     * a path the overlay's option syntax cannot carry refuses. */
    char review[300], upper[320], work[320], want[1400], hooks[600], dotgit[600];
    snprintf(review, sizeof(review), "%s/review", state);
    snprintf(upper, sizeof(upper), "%s/upper", review);
    snprintf(work, sizeof(work), "%s/work", review);
    if (mkdir(review, 0700) < 0 || mkdir(upper, 0700) < 0 || mkdir(work, 0700) < 0)
        tap_bail("mkdir review");
    l.spec.review_dir = review;
    struct docker_args c = {0};
    rc = docker_run_argv(&l, "/usr/bin/docker", "argv-test", state, serve, true, &c, &err);
    is_int(rc, 0, "review mode builds");
    if (rc < 0)
        tap_diag("%s", err.message);
    snprintf(want, sizeof(want),
             "type=volume,target=%s,volume-nocopy,volume-driver=local,volume-opt=type=overlay,"
             "volume-opt=device=overlay,\"volume-opt=o=lowerdir=%s,upperdir=%s/upper,"
             "workdir=%s/work,userxattr,redirect_dir=nofollow,metacopy=off,index=off\"",
             l.spec.workspace_view, l.spec.workspace, review, review);
    ok(has_pair(&c, "--mount", want), "review mode: the workspace is the overlay volume");
    snprintf(want, sizeof(want), "type=bind,source=%s,target=%s", l.spec.workspace,
             l.spec.workspace_view);
    ok(!has_pair(&c, "--mount", want), "review mode: no bind of the host's workspace");
    snprintf(dotgit, sizeof(dotgit), "type=bind,source=%s/.git,target=%s/.git", l.spec.workspace,
             l.spec.workspace_view);
    ok(!has_pair(&c, "--mount", dotgit), "review mode: .git (on the way to .git/hooks) not bound");
    struct docker_args e = {0};
    l.spec.review_dir = NULL;
    ok(docker_run_argv(&l, "/usr/bin/docker", "argv-test", state, serve, true, &e, &err) == 0 &&
           has_pair(&e, "--mount", dotgit),
       "... where direct mode pins it with a bind of the host's");
    docker_args_free(&e);
    l.spec.review_dir = review;
    snprintf(hooks, sizeof(hooks), "type=bind,source=%s/.git/hooks,target=%s/.git/hooks,readonly",
             l.spec.workspace, l.spec.workspace_view);
    ok(has_pair(&c, "--mount", hooks), "review mode: .git/hooks bound read-only");
    docker_args_free(&c);
    char odd[340];
    snprintf(odd, sizeof(odd), "%s/re:view", state);
    l.spec.review_dir = odd;
    struct docker_args d = {0};
    rc = docker_run_argv(&l, "/usr/bin/docker", "argv-test", state, serve, true, &d, &err);
    ok(rc < 0 && strstr(err.message, "overlay's options cannot carry"),
       "review mode: a ':' in the layer's path refuses, with the reason");
    docker_args_free(&d);
    l.spec.review_dir = NULL;
    launch_free(&l);
    close(guard);
    close(proxy);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0)
        tap_diag("could not remove %s", root);
    return tap_done();
}
