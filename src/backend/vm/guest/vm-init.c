/* cordon-agent as the microVM's init (PID 1 of the guest, root in the guest,
 * started by the kernel from the initramfs as /init). Early boot: devtmpfs,
 * /proc, /sys, the modules listed in /cordon/modules, the virtio-serial
 * channel; then the boot spec from the supervisor (first frame on the
 * channel) says what to build: the 9p shares at the same paths as on the
 * host (read-only or read-write), fresh tmpfs /tmp /run /var/tmp
 * /var/lib/docker and home, protected paths bound read-only, loopback up,
 * the root made read-only. It answers {"t":"booted"} and continues into the
 * requested mode:
 *   - "init -- CMD...": runs CMD as the host user with its stdin/stdout on
 *     the virtio console (hvc0) and stderr on its own port, reports
 *     {"t":"exit","status":N} on the channel and powers off; with "init
 *     --pty", CMD has a terminal of the guest's instead, its master relayed
 *     over hvc0 (vm-pty.c);
 *   - anything else: re-executes the agent with that argv, the channel as
 *     fd 3 (the agent protocol's stream).
 * Whatever runs for the user (CMD above, or the agent and all it starts) is
 * confined first: guest_confine_user() (vm-command.c: no capability,
 * no_new_privs, Landlock, the ns backend's seccomp filter); the init and
 * dockerd are not.
 * A failure before the channel exists ends in a kernel panic (QEMU exits,
 * -no-reboot); after, it is reported as {"t":"error","message":...}.
 * The steps live beside this file: vm-guest.c (the channel, failing,
 * mounts, modules, ports), vm-spec.c (the boot spec), vm-view.c (the view),
 * vm-fresh.c (a restored guest made fresh), vm-guest-net.c (the network),
 * vm-command.c (confining and running the user's processes), vm-relay.c
 * ("init" mode's relay). */
#include "backend/vm/guest/vm-init.h"
#include "backend/vm/guest/vm-command.h"
#include "backend/vm/guest/vm-docker.h"
#include "backend/vm/guest/vm-fresh.h"
#include "backend/vm/guest/vm-guest-net.h"
#include "backend/vm/guest/vm-guest.h"
#include "backend/vm/guest/vm-relay.h"
#include "backend/vm/guest/vm-spec.h"
#include "backend/vm/guest/vm-view.h"
#include "proto/vm-frame.h"
#include "backend/vm/vm.h"
#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/utsname.h>
#include <unistd.h>

#define CHANNEL_FD 3

/* Docker inside the guest (vm-docker.c), when the boot spec asks for it.
 * "require" fails the boot when the daemon does not come up; "auto" only
 * reports. Returns the summary for the boot answer, or NULL. */
static json_t *start_docker(json_t *spec, gid_t gid)
{
    json_t *docker = json_object_get(spec, "docker");
    if (!json_is_true(json_object_get(docker, "start")))
        return NULL;
    /* The allowlist proxy's variables (set by cordon, src/net/net.c), so
     * that the daemon's pulls take the same road as the agent's traffic. */
    static const char *const proxy_vars[] = {
        "HTTP_PROXY=", "HTTPS_PROXY=", "NO_PROXY=", "http_proxy=", "https_proxy=", "no_proxy="};
    json_t *penv = json_array();
    json_t *env = json_object_get(spec, "env");
    for (size_t i = 0; i < json_array_size(env); i++) {
        const char *e = json_string_value(json_array_get(env, i));
        for (size_t j = 0; e && j < ARRAY_SIZE(proxy_vars); j++)
            if (strncmp(e, proxy_vars[j], strlen(proxy_vars[j])) == 0)
                json_array_append_new(penv, json_string(e));
    }
    json_object_set_new(docker, "proxy_env", penv);
    char reason[700];
    json_t *summary = NULL;
    int fds[] = {guest_channel, -1};
    if (vm_docker_guest_start(docker, gid, fds, reason, sizeof(reason), &summary) == 0)
        return summary;
    const char *mode = json_string_value(json_object_get(docker, "mode"));
    if (mode && strcmp(mode, "require") == 0)
        guest_fail("docker.mode = \"require\": the guest's Docker daemon is not available: %s",
                   reason);
    return json_pack("{s:s,s:s}", "state", "unavailable", "detail", reason);
}

/* Until the channel: devtmpfs, the console as stdio, /proc, /sys, the
 * modules, the channel's port. */
static void early_boot(void)
{
    if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") < 0 && errno != EBUSY)
        guest_poweroff();
    int console = open("/dev/console", O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (console >= 0) {
        for (int fd = 0; fd < 3; fd++)
            dup2(console, fd);
        if (console > 2)
            close(console);
    }
    guest_mount_or_fail("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    guest_mount_or_fail("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    struct cordon_error err;
    if (guest_load_modules("/cordon/modules", &err) < 0)
        guest_fail("%s", err.message);
    guest_channel = guest_open_port(VM_PORT_CHANNEL);
}

/* The session built from the spec (its view, fresh start, Docker and
 * network), then {"t":"booted"} with where the guest's part of the start
 * went. */
static void session_setup(json_t *spec, const struct guest_command *c)
{
    /* Where the guest's part of a start goes, for the host's --debug
     * (monotonic: the clock is set in between). */
    long long t_spec = clock_now_ms();
    guest_view_build(spec, c->uid, c->gid);
    long long t_view = clock_now_ms();
    guest_fresh_start(spec);
    guest_agent_view_link();
    long long t_fresh = clock_now_ms();
    json_t *docker = start_docker(spec, c->gid);
    long long t_docker = clock_now_ms();
    guest_net_setup(json_object_get(spec, "net"));
    long long t_net = clock_now_ms();

    struct utsname u;
    uname(&u);
    json_t *booted =
        json_pack("{s:s,s:s,s:{s:I,s:I,s:I,s:I}}", "t", "booted", "kernel", u.release, "ms", "view",
                  (json_int_t)(t_view - t_spec), "fresh", (json_int_t)(t_fresh - t_view), "docker",
                  (json_int_t)(t_docker - t_fresh), "net", (json_int_t)(t_net - t_docker));
    if (booted && docker)
        json_object_set_new(booted, "docker", docker);
    if (!booted || vm_frame_write(guest_channel, booted) < 0)
        guest_fail("reporting the boot: %s", strerror(errno));
    json_decref(booted);
}

/* Other modes than "init": the agent itself, PID 1 still, the channel as
 * fd 3, with the user's identity, limits and restrictions (guest_confine_user,
 * as the ns backend's agent has): nothing it runs needs the guest's root. */
static void exec_agent(const struct guest_command *c) __attribute__((noreturn));

static void exec_agent(const struct guest_command *c)
{
    if (dup2(guest_channel, CHANNEL_FD) < 0)
        guest_fail("dup2: %s", strerror(errno));
    if (c->cwd && chdir(c->cwd) < 0)
        guest_fail("chdir %s: %s", c->cwd, strerror(errno));
    guest_apply_limits(c->rlimits);
    struct cordon_error err;
    if (guest_confine_user(c, &err) < 0)
        guest_fail("confining the agent (uid %u): %s", c->uid, err.message);
    execve("/init", c->argv, c->env);
    guest_fail("exec /init: %s", strerror(errno));
}

bool vm_init_is_guest(int argc, char **argv)
{
    return argc >= 1 && strcmp(argv[0], "/init") == 0 && getpid() == 1;
}

int vm_init_main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    early_boot();
    json_t *spec = guest_boot_spec_read();
    struct guest_command c;
    guest_command_from_spec(spec, &c);
    session_setup(spec, &c);
    if (guest_command_init_mode(&c))
        guest_run_relayed(&c);
    exec_agent(&c);
}
