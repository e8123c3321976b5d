/* `cordon verify NAME` for a vm `cordon run`/`cordon shell` session
 * (run-vm-verify.h). Host context, unprivileged supervisor, inside
 * run-vm.c's single poll loop: the control socket is one more source there,
 * the probe's request goes to the guest's init on the channel and its
 * answer comes back as frames the relay hands here (agent/vm-probe.h).
 * The audit is the one a vm `cordon mcp` session gets (supervisor/verify.c:
 * the host-side evidence is QEMU's, the rows are the guest's), judged by
 * the same code as an ns `cordon run` session's probe. Everything the guest
 * sends is untrusted: frame types, ids and sizes are checked, the output
 * kept is bounded (INIT_PROBE_OUTPUT_MAX), and an answer that does not come
 * is given up on. One audit at a time. */
#include "backend/vm/run-vm-verify.h"
#include "proto/init-channel.h"
#include "proto/vm-frame.h"
#include "proto/vm-probe-frame.h"
#include "supervisor/control.h"
#include "supervisor/verify.h"
#include "util/cleanup.h"
#include "util/log.h"
#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct vm_verify {
    struct control *ctl;
    const struct launch *l;
    const struct sandbox *sb;
    const char *state_dir;
    int channel; /* -1 once the guest is gone */
    bool shell;
    int exit_status; /* -1 while the command runs */
    /* The audit in flight. */
    struct verify_run *run;
    uint64_t conn;
    json_int_t id; /* of the last request sent; the guest echoes it */
    long long deadline_ms;
    struct vm_probe_answer answer;
};

int vm_verify_open(const struct launch *l, struct lifecycle *lc, const struct sandbox *sb,
                   int channel, bool shell, struct vm_verify **out, struct cordon_error *err)
{
    struct vm_verify *v = calloc(1, sizeof(*v));
    if (!v)
        return error_set(err, ENOMEM, "control socket");
    *v = (struct vm_verify){.l = l,
                            .sb = sb,
                            .state_dir = lc->owner.dir,
                            .channel = channel,
                            .shell = shell,
                            .exit_status = -1};
    if (control_open(lc->owner.dir_fd, l->name, &v->ctl, err) < 0) {
        free(v);
        return -1;
    }
    *out = v;
    return 0;
}

int vm_verify_fd(const struct vm_verify *v)
{
    return v ? control_fd(v->ctl) : -1;
}

int vm_verify_timeout_ms(const struct vm_verify *v)
{
    if (!v || !v->run)
        return -1;
    long long left = v->deadline_ms - clock_now_ms();
    return left > 0 ? (int)left : 0;
}

static void audit_end(struct vm_verify *v)
{
    verify_free(v->run);
    v->run = NULL;
    v->conn = 0;
    vm_probe_answer_clear(&v->answer);
}

/* The audit in flight ends without a report. */
static void audit_fail(struct vm_verify *v, const char *why)
{
    if (!v->run)
        return;
    control_reply_error(v->ctl, v->conn,
                        "sandbox %s: %s before the audit ended: nothing was audited", v->l->name,
                        why);
    audit_end(v);
}

static void exited_why(const struct vm_verify *v, char *buf, size_t size)
{
    snprintf(buf, size, "its command exited (status %d)", v->exit_status);
}

static void start_audit(struct vm_verify *v, uint64_t conn)
{
    if (v->run) {
        control_reply_error(v->ctl, conn, "a verify of this session is already running");
        return;
    }
    if (v->exit_status >= 0) {
        char why[64];
        exited_why(v, why, sizeof(why));
        control_reply_error(v->ctl, conn, "sandbox %s: %s: nothing to audit", v->l->name, why);
        return;
    }
    if (v->channel < 0) {
        control_reply_error(v->ctl, conn,
                            "the guest's init does not answer (its channel is closed)");
        return;
    }
    /* The host-side evidence is QEMU's, as for a vm `cordon mcp` session;
     * the probe is the guest init's child. */
    struct verify_target t = {.name = v->l->name,
                              .l = v->l,
                              .agent_pidfd = v->sb->pidfd,
                              .state_dir = v->state_dir,
                              .pid1_comm = "cordon-init",
                              .probe_via = "the probe, a child of the guest's init"};
    struct cordon_error err = {0};
    _cleanup_free_ char *request = NULL;
    if (verify_prepare_target(&t, &v->run, &request, &err) < 0) {
        v->run = NULL;
        control_reply_error(v->ctl, conn, "%s", err.message);
        return;
    }
    v->conn = conn;
    if (strlen(request) > INIT_PROBE_REQUEST_MAX) {
        control_reply_error(v->ctl, conn, "the probe's request is longer than %d bytes",
                            INIT_PROBE_REQUEST_MAX);
        audit_end(v);
        return;
    }
    v->id++;
    json_t *m = vm_probe_request_new(v->id, request);
    /* The guest reads its channel from a loop that never blocks on the
     * probe: a write that fails means the guest is gone. */
    int rc = m ? vm_frame_write(v->channel, m) : -1;
    json_decref(m);
    if (rc < 0) {
        control_reply_error(v->ctl, conn, "the guest's init does not take the probe's request");
        audit_end(v);
        return;
    }
    vm_probe_answer_start(&v->answer, v->id);
    v->deadline_ms = clock_now_ms() + INIT_PROBE_TIMEOUT_MS + VM_VERIFY_GRACE_MS;
}

static void on_request(void *ctx, uint64_t conn, const char *op)
{
    struct vm_verify *v = ctx;
    if (control_run_request(v->ctl, conn, op, v->l->name, v->shell, v->sb->pid, v->run != NULL))
        start_audit(v, conn);
}

void vm_verify_dispatch(struct vm_verify *v)
{
    if (v)
        control_dispatch(v->ctl, on_request, v);
}

void vm_verify_tick(struct vm_verify *v)
{
    if (!v || !v->run || clock_now_ms() < v->deadline_ms)
        return;
    char why[128];
    snprintf(why, sizeof(why), "the guest's init did not answer within %d s",
             (INIT_PROBE_TIMEOUT_MS + VM_VERIFY_GRACE_MS) / 1000);
    audit_fail(v, why);
}

bool vm_verify_frame(struct vm_verify *v, const json_t *m)
{
    struct vm_probe_answer idle = {0};
    enum vm_probe_frame kind = vm_probe_answer_take(v && v->run ? &v->answer : &idle, m);
    if (kind != VM_PROBE_FRAME_END)
        return kind != VM_PROBE_FRAME_OTHER;
    const char *output = v->answer.output ? v->answer.output : "";
    /* The guest says so itself when it cut the output; one that sent more
     * than it may has its excess dropped here, and that is said too. */
    char end[VM_PROBE_END_MAX + 64];
    snprintf(end, sizeof(end), "%s%s", v->answer.end,
             v->answer.output_cut ? " (more output than the guest may send: dropped)" : "");
    json_t *report = verify_finish_init_probe(v->run, output, end);
    control_reply(v->ctl, v->conn, json_pack("{s:b, s:o}", "ok", 1, "report", report));
    audit_end(v);
    return true;
}

void vm_verify_exited(struct vm_verify *v, int status)
{
    if (!v)
        return;
    v->exit_status = status < 0 ? CORDON_EXIT_FAILURE : status;
    char why[64];
    exited_why(v, why, sizeof(why));
    audit_fail(v, why);
}

void vm_verify_gone(struct vm_verify *v, const char *why)
{
    if (!v)
        return;
    v->channel = -1;
    audit_fail(v, why);
}

void vm_verify_close(struct vm_verify *v)
{
    if (!v)
        return;
    control_close(v->ctl);
    audit_end(v);
    free(v);
}
