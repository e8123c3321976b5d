/* `cordon tool NAME 'JSON-ARGS'` and `cordon tool --batch`: the seven tools
 * run in a sandbox of the current workspace, results printed as JSON
 * ({content, details, isError}, pi's bytes). Host context. */
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/session.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH_LINE_MAX  (64u << 20)
#define BATCH_IN_FLIGHT 64

static void usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out,
            "usage: cordon tool [OPTIONS] NAME 'JSON-ARGS'\n"
            "       cordon tool [OPTIONS] --batch < calls.jsonl\n\n"
            "Runs one of the tools read, write, edit, ls, find, grep, bash in a sandbox\n"
            "of the current workspace and prints {content, details, isError} as JSON.\n"
            "--batch reads one call per line ({\"id\":..., \"tool\":..., \"args\":{...}})\n"
            "and prints one result per line ({\"id\":..., \"content\":..., ...}) as each\n"
            "completes, all in one sandbox.\n\n%s",
            cli_config_flags_help);
}

static void print_result(json_t *id, const struct tool_result *res)
{
    _cleanup_free_ char *body = tool_result_to_json(res);
    if (!body)
        return;
    if (!id) {
        printf("%s\n", body);
    } else {
        _cleanup_free_ char *idtxt = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
        printf("{\"id\":%s,%s\n", idtxt ? idtxt : "null", body + 1);
    }
    fflush(stdout);
}

struct batch {
    struct session *s;
    json_t *ids[BATCH_IN_FLIGHT + 1]; /* slot -> caller's id */
    /* slot -> what the audit log records of the call */
    char tools[BATCH_IN_FLIGHT + 1][32];
    json_t *args[BATCH_IN_FLIGHT + 1];
    long long started_us[BATCH_IN_FLIGHT + 1];
    int in_flight;
};

/* Every way of running tools writes the session's audit log. */
static void batch_audit(struct batch *b, const struct session_event *ev)
{
    const char *outcome = ev->kind != SESSION_RESULT ? "failed"
                          : ev->result->is_error     ? "error"
                                                     : "ok";
    session_audit_call(b->s, b->tools[ev->id], b->args[ev->id], "sandbox", outcome,
                       (double)(log_now_us() - b->started_us[ev->id]) / 1000.0, ev->exit_code);
    json_decref(b->args[ev->id]);
    b->args[ev->id] = NULL;
}

static void batch_event(void *ctx, const struct session_event *ev)
{
    struct batch *b = ctx;
    if (ev->id <= 0 || ev->id > BATCH_IN_FLIGHT || !b->ids[ev->id])
        return;
    if (ev->kind == SESSION_UPDATE)
        return;
    batch_audit(b, ev);
    if (ev->kind == SESSION_RESULT) {
        print_result(b->ids[ev->id], ev->result);
    } else {
        json_t *line = json_pack("{s:O, s:s}", "id", b->ids[ev->id], "error", ev->message);
        _cleanup_free_ char *txt = json_dumps(line, JSON_COMPACT);
        printf("%s\n", txt);
        json_decref(line);
    }
    json_decref(b->ids[ev->id]);
    b->ids[ev->id] = NULL;
    b->in_flight--;
}

static int batch_submit(struct batch *b, const char *line, size_t len, long lineno)
{
    json_error_t jerr;
    json_t *call = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    const char *tool = call ? json_string_value(json_object_get(call, "tool")) : NULL;
    json_t *args = call ? json_object_get(call, "args") : NULL;
    if (!call || !tool || (args && !json_is_object(args))) {
        printf("{\"id\":null,\"error\":\"line %ld: expected {\\\"tool\\\":NAME, "
               "\\\"args\\\":{...}}%s\"}\n",
               lineno, call ? "" : " (invalid JSON)");
        json_decref(call);
        return 0;
    }
    int slot = 1;
    while (slot <= BATCH_IN_FLIGHT && b->ids[slot])
        slot++;
    json_t *id = json_object_get(call, "id");
    b->ids[slot] = id ? json_incref(id) : json_integer(lineno);
    snprintf(b->tools[slot], sizeof(b->tools[slot]), "%s", tool);
    b->args[slot] = args ? json_incref(args) : NULL;
    b->started_us[slot] = log_now_us();
    b->in_flight++;
    struct cordon_error err;
    int rc = session_send_call(b->s, slot, tool, args, &err);
    json_decref(call);
    if (rc < 0) {
        log_error("%s", err.message);
        return -1;
    }
    return 0;
}

/* Submits the complete lines in buf while there is room in flight; the
 * rest waits in buf for a result to free a slot. */
static int batch_drain(struct batch *b, char *buf, size_t *len, long *lineno)
{
    if (!buf || *len == 0)
        return 0;
    char *start = buf, *nl;
    while (b->in_flight < BATCH_IN_FLIGHT &&
           (nl = memchr(start, '\n', *len - (size_t)(start - buf)))) {
        (*lineno)++;
        if (nl > start && batch_submit(b, start, (size_t)(nl - start), *lineno) < 0)
            return -1;
        start = nl + 1;
    }
    *len -= (size_t)(start - buf);
    memmove(buf, start, *len);
    return 0;
}

static int run_batch(struct session *s)
{
    struct batch b = {.s = s};
    struct cordon_error err;
    _cleanup_free_ char *buf = NULL;
    size_t len = 0, cap = 0;
    bool in_eof = false;
    long lineno = 0;
    int sfd = session_channel_fd(s);
    while (!in_eof || b.in_flight > 0 || len > 0) {
        /* Lines read earlier but held back while 64 calls were in flight. */
        if (batch_drain(&b, buf, &len, &lineno) < 0)
            return CORDON_EXIT_FAILURE;
        if (in_eof && len > 0 && b.in_flight < BATCH_IN_FLIGHT && !memchr(buf, '\n', len)) {
            /* The last line, without a newline. */
            if (batch_submit(&b, buf, len, ++lineno) < 0)
                return CORDON_EXIT_FAILURE;
            len = 0;
        }
        if (in_eof && b.in_flight == 0 && len == 0)
            break;
        bool can_read = !in_eof && b.in_flight < BATCH_IN_FLIGHT;
        struct pollfd p[3] = {{sfd, POLLIN | (session_wants_write(s) ? POLLOUT : 0), 0},
                              {can_read ? 0 : -1, POLLIN, 0},
                              {session_net_fd(s), POLLIN, 0}};
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return CORDON_EXIT_FAILURE;
        }
        if (p[2].revents)
            session_net_ready(s);
        if ((p[0].revents & POLLOUT) && session_on_writable(s, &err) < 0)
            goto fail;
        if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
            session_on_readable(s, batch_event, &b, &err) < 0)
            goto fail;
        if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
            if (len + 65536 > cap) {
                if (cap >= BATCH_LINE_MAX + 65536) {
                    log_error("batch: a line is longer than %u bytes", BATCH_LINE_MAX);
                    return CORDON_EXIT_FAILURE;
                }
                cap = cap ? cap * 2 : 131072;
                char *grown = realloc(buf, cap);
                if (!grown)
                    return CORDON_EXIT_FAILURE;
                buf = grown;
            }
            ssize_t n = read(0, buf + len, cap - len);
            if (n <= 0)
                in_eof = true;
            else
                len += (size_t)n;
        }
    }
    return 0;
fail:
    log_error("%s", err.message);
    return CORDON_EXIT_FAILURE;
}

struct tool_options {
    bool batch;
};

const struct cli_option cli_tool_options[] = {
    CLI_FLAG("--batch", "one call per line on stdin", struct tool_options, batch),
    {0},
};

int cmd_tool(int argc, char **argv)
{
    struct cli_sets sets = {0};
    struct tool_options opts = {0};
    const struct cli_parser parser = {.command = "tool",
                                      .word = "option",
                                      .usage = usage,
                                      .ctx = &opts,
                                      .options = cli_tool_options,
                                      .sets = &sets,
                                      .options_first = true};
    int i;
    int parsed = cli_parse(&parser, argc, argv, &i);
    if (parsed != CLI_PARSE_OK)
        return cli_parse_status(parsed);
    bool batch = opts.batch;
    json_t *args = NULL;
    const char *name = NULL;
    if (!batch) {
        if (argc - i < 1 || argc - i > 2) {
            usage(stderr, NULL);
            cli_sets_free(&sets);
            return CORDON_EXIT_FAILURE;
        }
        name = argv[i];
        json_error_t jerr;
        args =
            argc - i == 2 ? json_loads(argv[i + 1], JSON_REJECT_DUPLICATES, &jerr) : json_object();
        if (!args || !json_is_object(args)) {
            fprintf(stderr, "cordon: tool: the arguments must be a JSON object%s%s\n",
                    args ? "" : ": ", args ? "" : jerr.text);
            json_decref(args);
            cli_sets_free(&sets);
            return CORDON_EXIT_FAILURE;
        }
    }
    struct cordon_error err = {0};
    struct session *s;
    struct launch_request req = {(const char *const *)sets.items, sets.net_audit_log,
                                 sets.net_hosts_file, NULL};
    int started = session_start(&req, &s, &err);
    cli_sets_free(&sets);
    if (started < 0) {
        log_error("%s", err.message);
        json_decref(args);
        return CORDON_EXIT_FAILURE;
    }
    int rc = 0;
    if (batch) {
        rc = run_batch(s);
    } else {
        struct tool_result res = {0};
        if (session_call_sync(s, name, args, &res, &err) < 0) {
            log_error("%s", err.message);
            rc = CORDON_EXIT_FAILURE;
        } else {
            print_result(NULL, &res);
            tool_result_clear(&res);
        }
    }
    json_decref(args);
    session_stop(s);
    return rc;
}
