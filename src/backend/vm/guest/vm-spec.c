/* The boot spec (vm-spec.h): the supervisor's first frame on the channel
 * (vm.c builds it), waited for across a park for a snapshot, and the
 * command it describes. Guest context: the init, PID 1, the guest's root,
 * before any share is mounted or anything runs. */
#include "backend/vm/guest/vm-spec.h"
#include "backend/vm/guest/vm-guest.h"
#include "backend/vm/vm.h"
#include "proto/vm-frame.h"
#include "util/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char **json_strv(json_t *arr)
{
    size_t n = json_array_size(arr);
    char **v = calloc(n + 1, sizeof(char *));
    if (!v)
        guest_fail("out of memory");
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s)
            guest_fail("bad string array in the boot spec");
        v[i] = (char *)s;
    }
    return v;
}

/* The first frame on the channel. An EOF before the first byte: the
 * port's "host connected" state was still settling (seen about once in ten
 * TCG boots under load, after guest_port_wait_host had seen it connected); wait
 * for it again. */
static json_t *read_first_frame(void)
{
    json_t *msg = NULL;
    long long deadline = clock_now_ms() + GUEST_PORT_WAIT_MS;
    while (!(msg = vm_frame_read(guest_channel, -1)) && errno == ECONNRESET &&
           clock_now_ms() < deadline) {
        usleep(2000);
        guest_port_wait_host(guest_channel, VM_PORT_CHANNEL, deadline);
    }
    if (!msg)
        guest_fail("reading the boot spec: %s", strerror(errno));
    return msg;
}

/* The boot spec. Before it, the host may ask the guest to park for a
 * snapshot (vm-snapshot.c): the answer is sent and the spec awaited, and
 * the host saves the guest in between. Nothing of a session exists then:
 * no share is mounted (a mounted 9p export blocks QEMU's migration), no
 * tmpfs, no process but this one, no byte of the spec read. */
json_t *guest_boot_spec_read(void)
{
    json_t *spec = read_first_frame();
    const char *t = json_string_value(json_object_get(spec, "t"));
    if (t && strcmp(t, "park") == 0) {
        json_decref(spec);
        json_t *parked = json_pack("{s:s}", "t", "parked");
        if (!parked || vm_frame_write(guest_channel, parked) < 0)
            guest_fail("reporting the park: %s", strerror(errno));
        json_decref(parked);
        spec = read_first_frame();
        t = json_string_value(json_object_get(spec, "t"));
    }
    if (!t || strcmp(t, "boot") != 0)
        guest_fail("expected the boot spec, got another frame");
    return spec;
}

void guest_command_from_spec(json_t *spec, struct guest_command *c)
{
    *c = (struct guest_command){
        .argv = json_strv(json_object_get(spec, "argv")),
        .env = json_strv(json_object_get(spec, "env")),
        .cwd = json_string_value(json_object_get(spec, "cwd")),
        .uid = (uid_t)json_integer_value(json_object_get(spec, "uid")),
        .gid = (gid_t)json_integer_value(json_object_get(spec, "gid")),
        .rlimits = json_object_get(spec, "rlimits"),
        .home = json_string_value(json_object_get(spec, "home")),
        .workspace = json_string_value(json_object_get(spec, "workspace")),
        .workspace_readonly = json_is_true(json_object_get(spec, "workspace_readonly")),
        .shares = json_object_get(spec, "shares"),
        .no_seccomp = json_is_true(json_object_get(spec, "test_no_seccomp")),
        .winsize = json_object_get(spec, "winsize"),
    };
    if (!c->argv[0])
        guest_fail("empty argv in the boot spec");
}

bool guest_command_init_mode(struct guest_command *c)
{
    if (!c->argv[1] || strcmp(c->argv[1], "init") != 0)
        return false;
    /* Skip init's own options up to "--"; --pty is the only one that
     * matters here. */
    char **cmd = c->argv + 2;
    for (; *cmd && strcmp(*cmd, "--") != 0; cmd++)
        c->pty = c->pty || strcmp(*cmd, "--pty") == 0;
    if (!*cmd || !cmd[1])
        guest_fail("init: no command given");
    c->argv = cmd + 1;
    return true;
}
