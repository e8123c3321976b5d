/* `cordon verify NAME` for a `cordon run`/`cordon shell` session
 * (verify-server.h), one server for every backend. Host context,
 * unprivileged supervisor, inside the relay's single poll loop: the
 * control socket is one more source there. The audit is the one an MCP
 * session gets (supervisor/verify.c): the host reads the evidence of the
 * process the backend names, the probe in the sandbox gives the rows, and
 * the same code judges them. Everything the probe sends is untrusted: its
 * output kept is bounded (INIT_PROBE_OUTPUT_MAX) and an answer that does
 * not come in time is given up on. One audit at a time. */
#include "backend/verify-server.h"
#include "proto/init-channel.h"
#include "supervisor/control.h"
#include "supervisor/verify.h"
#include "util/cleanup.h"
#include "util/clock.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct verify_server {
    struct verify_server_spec spec;
    struct control *ctl;
    bool gone;       /* the init's channel closed */
    int exit_status; /* -1 while the command runs */
    /* The audit in flight. */
    struct verify_run *run;
    uint64_t conn;
    long long deadline_ms; /* 0: none */
    char *output;
    size_t output_len;
    bool output_cut;
};

int verify_server_open(const struct verify_server_spec *spec, struct verify_server **out,
                       struct cordon_error *err)
{
    struct verify_server *vs = calloc(1, sizeof(*vs));
    if (!vs)
        return error_set(err, ENOMEM, "control socket");
    *vs = (struct verify_server){.spec = *spec, .exit_status = -1};
    if (control_open(spec->state_dir_fd, spec->l->name, &vs->ctl, err) < 0) {
        free(vs);
        return -1;
    }
    *out = vs;
    return 0;
}

void verify_server_poll(struct verify_server *vs, struct pollfd *fds)
{
    for (int i = 0; i < VERIFY_SERVER_NFDS; i++)
        fds[i] = (struct pollfd){-1, 0, 0};
    if (!vs)
        return;
    fds[0] = (struct pollfd){control_fd(vs->ctl), POLLIN, 0};
    if (vs->run && vs->spec.ops->poll)
        vs->spec.ops->poll(vs, vs->spec.ctx, fds + 1);
}

int verify_server_timeout_ms(const struct verify_server *vs)
{
    if (!vs || !vs->run || vs->deadline_ms == 0)
        return -1;
    long long left = vs->deadline_ms - clock_now_ms();
    return left > 0 ? (int)left : 0;
}

bool verify_server_busy(const struct verify_server *vs)
{
    return vs && vs->run;
}

static void audit_end(struct verify_server *vs)
{
    if (vs->run && vs->spec.ops->end)
        vs->spec.ops->end(vs, vs->spec.ctx);
    verify_free(vs->run);
    vs->run = NULL;
    vs->conn = 0;
    vs->deadline_ms = 0;
    free(vs->output);
    vs->output = NULL;
    vs->output_len = 0;
    vs->output_cut = false;
}

void verify_server_fail(struct verify_server *vs, const char *why)
{
    if (!vs || !vs->run)
        return;
    control_reply_error(vs->ctl, vs->conn,
                        "sandbox %s: %s before the audit ended: nothing was audited",
                        vs->spec.l->name, why);
    audit_end(vs);
}

static void exited_why(const struct verify_server *vs, char *buf, size_t size)
{
    snprintf(buf, size, "its command exited (status %d)", vs->exit_status);
}

/* The refusals that need no work: another audit, a command that is gone. */
static bool audit_refused(struct verify_server *vs, uint64_t conn)
{
    if (vs->run) {
        control_reply_error(vs->ctl, conn, "a verify of this session is already running");
        return true;
    }
    if (vs->exit_status >= 0) {
        char why[64];
        exited_why(vs, why, sizeof(why));
        control_reply_error(vs->ctl, conn, "sandbox %s: %s: nothing to audit", vs->spec.l->name,
                            why);
        return true;
    }
    if (vs->spec.ops->init_name && vs->gone) {
        control_reply_error(vs->ctl, conn, "%s does not answer (its channel is closed)",
                            vs->spec.ops->init_name);
        return true;
    }
    return false;
}

static void audit_start(struct verify_server *vs, uint64_t conn)
{
    if (audit_refused(vs, conn))
        return;
    struct cordon_error err = {0};
    int agent = vs->spec.agent_pidfd;
    if (vs->spec.ops->agent_pidfd && (agent = vs->spec.ops->agent_pidfd(vs->spec.ctx, &err)) < 0) {
        control_reply_error(vs->ctl, conn, "%s", err.message);
        return;
    }
    struct verify_target t = {.name = vs->spec.l->name,
                              .l = vs->spec.l,
                              .agent_pidfd = agent,
                              .state_dir = vs->spec.state_dir,
                              .pid1_comm = "cordon-init",
                              .probe_via = vs->spec.ops->probe_via};
    _cleanup_free_ char *request = NULL;
    struct verify_run *run = NULL;
    if (verify_prepare_target(&t, &run, &request, &err) < 0) {
        control_reply_error(vs->ctl, conn, "%s", err.message);
        return;
    }
    vs->run = run;
    vs->conn = conn;
    size_t len = strlen(request);
    if (len > INIT_PROBE_REQUEST_MAX) {
        control_reply_error(vs->ctl, conn, "the probe's request is longer than %d bytes",
                            INIT_PROBE_REQUEST_MAX);
        audit_end(vs);
        return;
    }
    if (vs->spec.ops->start(vs, vs->spec.ctx, request, len, &err) < 0) {
        control_reply_error(vs->ctl, conn, "%s", err.message);
        audit_end(vs);
        return;
    }
    if (vs->run && vs->spec.ops->deadline_ms > 0)
        vs->deadline_ms = clock_now_ms() + vs->spec.ops->deadline_ms;
}

static void on_request(void *ctx, uint64_t conn, const char *op)
{
    struct verify_server *vs = ctx;
    if (control_run_request(vs->ctl, conn, op, vs->spec.l->name, vs->spec.shell, vs->spec.sb->pid,
                            vs->run != NULL))
        audit_start(vs, conn);
}

static void audit_overdue(struct verify_server *vs)
{
    if (vs->spec.ops->overdue) {
        vs->spec.ops->overdue(vs, vs->spec.ctx);
        return;
    }
    char why[128];
    snprintf(why, sizeof(why), "%s did not answer within %d s",
             vs->spec.ops->init_name ? vs->spec.ops->init_name : "the probe",
             vs->spec.ops->deadline_ms / 1000);
    verify_server_fail(vs, why);
}

void verify_server_handle(struct verify_server *vs, const struct pollfd *fds)
{
    if (!vs)
        return;
    if (vs->run && vs->spec.ops->handle)
        vs->spec.ops->handle(vs, vs->spec.ctx, fds + 1);
    if (vs->run && vs->deadline_ms != 0 && clock_now_ms() >= vs->deadline_ms)
        audit_overdue(vs);
    if (fds[0].revents & POLLIN)
        control_dispatch(vs->ctl, on_request, vs);
}

void verify_server_set_agent(struct verify_server *vs, int pidfd)
{
    if (vs && vs->run)
        verify_set_agent(vs->run, pidfd);
}

void verify_server_output(struct verify_server *vs, const char *data, size_t len)
{
    if (!vs || !vs->run || len == 0)
        return;
    size_t keep = len;
    if (vs->output_len + keep > INIT_PROBE_OUTPUT_MAX) {
        keep = INIT_PROBE_OUTPUT_MAX - vs->output_len;
        vs->output_cut = true;
    }
    if (keep == 0)
        return;
    char *grown = realloc(vs->output, vs->output_len + keep + 1);
    if (!grown) {
        vs->output_cut = true;
        return;
    }
    vs->output = grown;
    memcpy(vs->output + vs->output_len, data, keep);
    vs->output_len += keep;
    vs->output[vs->output_len] = '\0';
}

void verify_server_answer(struct verify_server *vs, const char *output, const char *end)
{
    if (!vs || !vs->run)
        return;
    json_t *report = verify_finish_init_probe(vs->run, output ? output : "", end);
    control_reply(vs->ctl, vs->conn, json_pack("{s:b, s:o}", "ok", 1, "report", report));
    audit_end(vs);
}

void verify_server_finish(struct verify_server *vs, const char *end)
{
    if (!vs || !vs->run)
        return;
    /* A probe killed at its deadline is judged as such ("timeout"): what
     * it printed before is beside the point. */
    char full[256];
    if (vs->output_cut && strcmp(end, "timeout") != 0)
        snprintf(full, sizeof(full), "%.128s (more than %d bytes of output: the rest dropped)", end,
                 INIT_PROBE_OUTPUT_MAX);
    else
        snprintf(full, sizeof(full), "%s", end);
    /* audit_end frees the output: it is judged first. */
    verify_server_answer(vs, vs->output, full);
}

void verify_server_exited(struct verify_server *vs, int status)
{
    if (!vs)
        return;
    vs->exit_status = status < 0 ? CORDON_EXIT_FAILURE : status;
    char why[64];
    exited_why(vs, why, sizeof(why));
    verify_server_fail(vs, why);
}

void verify_server_gone(struct verify_server *vs, const char *why)
{
    if (!vs)
        return;
    vs->gone = true;
    verify_server_fail(vs, why);
}

void verify_server_close(struct verify_server *vs)
{
    if (!vs)
        return;
    control_close(vs->ctl);
    audit_end(vs);
    free(vs);
}
