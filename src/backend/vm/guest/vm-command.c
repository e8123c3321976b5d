/* How every process started for the user in the guest is confined and
 * executed (vm-command.h): the command of `cordon run`, the probe of
 * `cordon verify NAME`, and the agent itself. Guest context: a child forked
 * by the init (PID 1, the guest's root), or the init just before it
 * becomes the agent; nothing here allocates. */
#include "backend/vm/guest/vm-command.h"
#include "backend/vm/guest/vm-pty.h"
#include "agent/path-prune.h"
#include "confine/landlock.h"
#include "confine/privs.h"
#include "confine/seccomp-filter.h"
#include "config.h"
#include "proto/init-channel.h"
#include "util/cleanup.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

extern char **environ;

/* Every process started for the user (the agent and all it runs, or the
 * command of `cordon run`) runs as the ns sandbox's do: the host user's
 * uid (uid 0 when cordon runs as root: root of a guest whose every
 * capability is gone), no capability and no way back (securebits locked,
 * empty bounding set), no_new_privs, Landlock where the guest kernel has
 * it (writes only to the workspace, /tmp, /var/tmp, /run, /dev and home)
 * and the ns backend's seccomp filter (no mount, umount, pivot_root,
 * unshare, setns, keyctl, bpf...). The guest's root could otherwise undo
 * the read-only binds over protected paths. The guest init, the Docker
 * daemon and the port forwarder were started before and keep theirs.
 * Returns -1 with err filled; no allocation. */
int guest_confine_user(const struct guest_command *c, struct cordon_error *err)
{
    /* Landlock first, while still the guest's root: its rules open the
     * writable places, which the user may not be able to reach (a home
     * below a root-owned directory); restricting itself needs no
     * no_new_privs with CAP_SYS_ADMIN. */
    const char *writable[32];
    size_t n = 0;
    static const char *const always[] = {"/tmp", "/var/tmp", "/run", "/dev"};
    for (size_t i = 0; i < ARRAY_SIZE(always); i++)
        writable[n++] = always[i];
    if (c->home && c->home[0] == '/')
        writable[n++] = c->home;
    if (c->workspace && c->workspace[0] == '/' && !c->workspace_readonly)
        writable[n++] = c->workspace;
    /* Every share mounted read-write (a linked worktree's git directories,
     * [[mounts]] with readonly = false): the mounts say what is writable,
     * Landlock must not take it back. */
    for (size_t i = 0; i < json_array_size(c->shares) && n + 1 < ARRAY_SIZE(writable); i++) {
        json_t *sh = json_array_get(c->shares, i);
        const char *path = json_string_value(json_object_get(sh, "path"));
        if (path && path[0] == '/' && !json_is_true(json_object_get(sh, "ro")))
            writable[n++] = path;
    }
    writable[n] = NULL;
    if (ns_landlock_apply_in_child(ns_landlock_abi(), writable, err) < 0)
        return -1;
    if (privs_drop_all(true, c->uid, c->gid, err) < 0)
        return -1;
    if (CORDON_UNSAFE_NO_SECCOMP || (CORDON_TEST_HOOKS && c->no_seccomp))
        return 0;
    struct sock_fprog prog;
    ns_seccomp_program(&prog);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
        return error_set_raw(err, errno, "load seccomp filter", NULL);
    return 0;
}

static void set_limit(int resource, json_int_t value, rlim_t unit)
{
    if (value <= 0)
        return;
    struct rlimit rl = {(rlim_t)value * unit, (rlim_t)value * unit};
    setrlimit(resource, &rl);
}

/* The limits the ns backend applies to its sandbox, from the boot spec. */
void guest_apply_limits(json_t *r)
{
    set_limit(RLIMIT_NOFILE, json_integer_value(json_object_get(r, "nofile")), 1);
    set_limit(RLIMIT_FSIZE, json_integer_value(json_object_get(r, "fsize_mib")), 1 << 20);
    set_limit(RLIMIT_CPU, json_integer_value(json_object_get(r, "cpu")), 1);
    set_limit(RLIMIT_NPROC, json_integer_value(json_object_get(r, "nproc")), 1);
}

/* The limits, the user's confinement and the working directory, in the
 * forked child of a command or a probe (what names it in a failure). */
static void confine_in_child(const struct guest_command *c, const char *what)
{
    guest_apply_limits(c->rlimits);
    struct cordon_error err;
    if (guest_confine_user(c, &err) < 0) {
        fprintf(stderr, "cordon: confining the %s (uid %u): %s\n", what, c->uid, err.message);
        _exit(CORDON_EXIT_FAILURE);
    }
    if (c->cwd && chdir(c->cwd) < 0) {
        fprintf(stderr, "cordon: chdir %s: %s\n", c->cwd, strerror(errno));
        _exit(CORDON_EXIT_FAILURE);
    }
}

/* In the forked child: its stdio (pipes, or the terminal's slave as its
 * controlling terminal), the host user's identity, the limits the ns
 * backend applies, then exec. */
void guest_exec_command(const struct guest_command *c, int in, int out, int errfd,
                        const char *slave)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setsid();
    if (slave) {
        if (vm_pty_attach_in_child(slave) < 0) {
            fprintf(stderr, "cordon: terminal %s: %s\n", slave, strerror(errno));
            _exit(CORDON_EXIT_FAILURE);
        }
    } else {
        dup2(in, 0);
        dup2(out, 1);
        dup2(errfd, 2);
    }
    confine_in_child(c, "command");
    agent_path_prune(c->env); /* the guest's view, as on ns (path-prune.c) */
    environ = c->env;
    execvp(c->argv[0], c->argv);
    int e = errno;
    fprintf(stderr, "cordon: %s: %s\n", c->argv[0], strerror(e));
    _exit(e == ENOENT ? CORDON_EXIT_NOT_FOUND : CORDON_EXIT_CANNOT_EXEC);
}

/* The probe of `cordon verify NAME` (vm-probe.c), in its forked child:
 * the command's own confinement step, then the agent's probe mode from
 * where the ns view keeps the agent (vm-view.c guest_agent_view_link). */
void guest_exec_probe(const void *ctx)
{
    const struct guest_command *c = ctx;
    confine_in_child(c, "probe");
    char *argv[] = {"cordon-agent", "probe", NULL};
    execve(NS_AGENT_VIEW_PATH, argv, c->env);
    fprintf(stderr, "cordon: exec %s: %s\n", NS_AGENT_VIEW_PATH, strerror(errno));
    _exit(CORDON_EXIT_CANNOT_EXEC);
}
