/* The MCP server's review requests (server.c): cordon/review,
 * cordon/reviewApply, cordon/reviewDiff and the rewind or discard that
 * restarts the sandbox on its review layer. Host context, unprivileged. */
#include "mcp/server-internal.h"
#include "supervisor/review.h"
#include "config.h"
#include "mcp/jsonrpc.h"
#include "mcp/tools-list.h"
#include "agent/tools/path.h"
#include "agent/tools/registry.h"
#include "supervisor/control.h"
#include "supervisor/launch.h"
#include "supervisor/route.h"
#include "supervisor/workspace.h"
#include "supervisor/session.h"
#include "supervisor/state.h"
#include "supervisor/verify.h"
#include "net/denial.h"
#include "util/cleanup.h"
#include "util/escape.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

static void review_report_json(void *ctx, const char *what, const char *path, const char *why)
{
    json_array_append_new(ctx, json_pack("{s:s, s:s, s:o}", "outcome", what, "path", path, "reason",
                                         why ? json_string(why) : json_null()));
}

/* cordon/reviewChanges and cordon/reviewApply: the user's review, reachable
 * only by the client's own code (custom methods, never a tool: the model
 * cannot apply its own changes). */
static void on_review_diff(struct server *s, json_t *id, char *const *paths, size_t npaths);

void on_review(struct server *s, json_t *id, json_t *params, bool apply, bool diff)
{
    if (!s->session || !s->have_cfg || s->cfg.workspace_mode != CFG_WORKSPACE_REVIEW) {
        reply_error(s, id, RPC_INVALID_PARAMS,
                    "this session is not in review mode (workspace_mode = \"review\")");
        return;
    }
    json_t *given = params ? json_object_get(params, "paths") : NULL;
    char *paths[64];
    size_t npaths = 0;
    size_t i;
    json_t *v;
    if (given && !json_is_array(given)) {
        reply_error(s, id, RPC_INVALID_PARAMS, "paths must be an array of strings");
        return;
    }
    json_array_foreach (given, i, v) {
        if (!json_is_string(v) || npaths == 64) {
            reply_error(s, id, RPC_INVALID_PARAMS, "paths: at most 64 strings");
            return;
        }
        paths[npaths++] = (char *)json_string_value(v);
    }
    if (diff) {
        on_review_diff(s, id, paths, npaths);
        return;
    }
    struct review r;
    struct cordon_error err = {0};
    if (review_open(session_name(s->session), &r, &err) < 0) {
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    json_t *out = json_array();
    int rc;
    if (apply) {
        /* The session runs: apply takes exactly the checkpoint the client
         * showed (reviewChanges' "checkpoint"), never what the sandbox
         * wrote since. */
        json_t *at = params ? json_object_get(params, "checkpoint") : NULL;
        r.expect_as_of = json_is_integer(at) ? (long)json_integer_value(at) : -1;
        rc = review_apply(&r, paths, npaths, review_report_json, out, &err);
    } else {
        rc = review_scan(&r, &err);
        for (size_t k = 0; rc == 0 && k < r.count && json_array_size(out) < 10000; k++) {
            const struct review_change *c = &r.changes[k];
            if (!review_selected(c, paths, npaths))
                continue;
            json_array_append_new(out,
                                  json_pack("{s:s, s:s, s:o, s:b, s:o}", "kind",
                                            review_kind_name(c->kind), "path", c->path, "from",
                                            c->from ? json_string(c->from) : json_null(),
                                            "conflict", c->conflict, "refused",
                                            c->refused ? json_string(c->refused) : json_null()));
        }
    }
    long as_of = r.as_of;
    review_close(&r);
    if (rc < 0) {
        json_decref(out);
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    send_msg(s, rpc_result(json_incref(id), json_pack("{s:o, s:I}", apply ? "results" : "changes",
                                                      out, "checkpoint", (json_int_t)as_of)));
}

/* The largest diff cordon/reviewDiff returns (the rest is cut, said so). */
#define REVIEW_DIFF_MAX (1024 * 1024)

/* cordon/reviewDiff {paths?}: the unified diff `cordon diff NAME` prints
 * (no colour), at most REVIEW_DIFF_MAX bytes. */
static void on_review_diff(struct server *s, json_t *id, char *const *paths, size_t npaths)
{
    struct review r;
    struct cordon_error err = {0};
    if (review_open(session_name(s->session), &r, &err) < 0 || review_scan(&r, &err) < 0) {
        review_close(&r);
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    FILE *tmp = tmpfile();
    int rc = tmp ? review_diff(&r, paths, npaths, false, false, tmp, &err)
                 : error_set(&err, errno, "cannot create a temporary file for the diff");
    long as_of = r.as_of;
    review_close(&r);
    if (!tmp) {
        reply_error(s, id, RPC_INTERNAL_ERROR, "%s", err.message);
        return;
    }
    long size = ftell(tmp);
    size_t want = size > REVIEW_DIFF_MAX ? REVIEW_DIFF_MAX : size > 0 ? (size_t)size : 0;
    char *text = malloc(want + 1);
    size_t got = text && fseek(tmp, 0, SEEK_SET) == 0 ? fread(text, 1, want, tmp) : 0;
    fclose(tmp);
    if (!text) {
        reply_error(s, id, RPC_INTERNAL_ERROR, "out of memory");
        return;
    }
    text[got] = '\0';
    /* diff(1) writes the files' bytes: JSON needs UTF-8, so invalid
     * sequences are escaped (a cut in the middle of one too). */
    _cleanup_free_ char *valid = text_escape_visible(text, got, TEXT_ESCAPE_KEEP_LAYOUT, NULL);
    free(text);
    json_t *res = json_pack("{s:s, s:b, s:I}", "diff", valid ? valid : "", "truncated",
                            size > REVIEW_DIFF_MAX, "bytes", (json_int_t)(size > 0 ? size : 0));
    if (rc < 0)
        json_object_set_new(res, "error", json_string(err.message));
    /* the checkpoint shown, which cordon/reviewApply takes */
    json_object_set_new(res, "checkpoint", json_integer(as_of));
    send_msg(s, rpc_result(json_incref(id), res));
}

/* cordon/reviewRewind {to: N} and cordon/reviewDiscard: they change the
 * upper layer, which the kernel's overlay must not have changed under it, so
 * the sandbox is stopped (its processes end: they are not rewound), the
 * layer rewound or emptied, and the sandbox started again under the same
 * name. Refused while a tool call runs. */
void on_review_restart(struct server *s, json_t *id, json_t *params, bool rewind)
{
    long to = 0;
    if (rewind) {
        json_t *v = params ? json_object_get(params, "to") : NULL;
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > 1000000000) {
            reply_error(s, id, RPC_INVALID_PARAMS,
                        "cordon/reviewRewind: to must be a checkpoint number (0 or more)");
            return;
        }
        to = (long)json_integer_value(v);
    }
    for (int i = 0; i < MAX_PENDING; i++) {
        if (s->pending[i].used) {
            reply_error(s, id, RPC_INVALID_PARAMS, "a tool call is still running: %s after it ends",
                        rewind ? "rewind" : "discard");
            return;
        }
    }
    char name[128];
    snprintf(name, sizeof(name), "%s", session_name(s->session));
    if (!s->pinned_sets) {
        size_t n = 0;
        while (s->opts->request.session_sets && s->opts->request.session_sets[n])
            n++;
        char **sets = calloc(n + 2, sizeof(char *));
        bool failed = !sets;
        for (size_t i = 0; !failed && i < n; i++)
            failed = !(sets[i] = strdup(s->opts->request.session_sets[i]));
        if (!failed && asprintf(&sets[n], "sandbox_name=\"%s\"", name) < 0) {
            sets[n] = NULL;
            failed = true;
        }
        if (failed) {
            for (size_t i = 0; sets && sets[i]; i++)
                free(sets[i]);
            free(sets);
            reply_error(s, id, RPC_INTERNAL_ERROR, "out of memory");
            return;
        }
        s->pinned = s->opts->request;
        s->pinned.session_sets = (const char *const *)sets;
        s->pinned_sets = sets;
    }
    stop_session(s);
    struct review r;
    struct cordon_error err = {0};
    int rc = review_open(name, &r, &err);
    if (rc == 0)
        rc = rewind ? review_rewind(&r, to, &err) : review_discard(&r, &err);
    review_close(&r);
    enum route_state before = s->state;
    s->state = before == ROUTE_OFF ? ROUTE_OFF : ROUTE_STARTING;
    s->session_tried = false;
    start_session(s);
    if (rc < 0) {
        reply_error(s, id, RPC_INVALID_PARAMS, "%s", err.message);
        return;
    }
    json_t *st = status_json(s);
    json_object_set_new(st, rewind ? "rewoundTo" : "discarded",
                        rewind ? json_integer(to) : json_true());
    json_object_set_new(st, "processesEnded", json_true());
    send_msg(s, rpc_result(json_incref(id), st));
}
