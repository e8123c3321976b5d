/* `cordon ls`, `cordon rm NAME`, `cordon gc [--hours N]`: the sandboxes
 * cordon made, as recorded under the state root. Host context. */
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/review.h"
#include "supervisor/launch.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void format_age(time_t started, char *buf, size_t len)
{
    double age = difftime(time(NULL), started);
    if (age < 120)
        snprintf(buf, len, "%.0fs", age);
    else if (age < 7200)
        snprintf(buf, len, "%.0fm", age / 60);
    else if (age < 172800)
        snprintf(buf, len, "%.0fh", age / 3600);
    else
        snprintf(buf, len, "%.0fd", age / 86400);
}

/* The session's audit log: every tool call, one JSON line (docs/verify.md). */
static void ls_log_path(const char *root, const char *name, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s/audit.jsonl", root, name);
}

/* What the user can do to get back to it; the same words the pi
 * extension's /cordon status uses. */
static const char *ls_attach_hint(const struct state_entry *e)
{
    static char hint[STATE_NAME_MAX * 2 + 128];
    if (strcmp(e->status, "running") == 0 || strcmp(e->status, "starting") == 0)
        snprintf(hint, sizeof(hint), "running: its client holds it; `cordon verify %s` audits it",
                 e->name);
    else
        snprintf(hint, sizeof(hint),
                 "`cordon mcp --attach %s` goes back in (its home and /tmp); `cordon rm %s` "
                 "removes it",
                 e->name, e->name);
    return hint;
}

struct state_options {
    bool json;
    double hours; /* gc: -1 for gc_hours */
};

static void ls_usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out, "usage: cordon ls [--json]\n\n"
                 "Lists the sandboxes cordon made, running and stopped.\n");
}

const struct cli_option cli_ls_options[] = {
    CLI_FLAG("--json", "as JSON", struct state_options, json),
    {0},
};

int cmd_ls(int argc, char **argv)
{
    struct state_options opts = {0};
    const struct cli_parser parser = {.usage = ls_usage, .ctx = &opts, .options = cli_ls_options};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_usage_status(parsed);
    bool json = opts.json;
    struct cordon_error err = {0};
    struct state_entry *entries;
    size_t n;
    if (state_list(&entries, &n, &err) < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    _cleanup_free_ char *root = NULL;
    if (state_root(&root, &err) < 0) {
        log_error("%s", err.message);
        free(entries);
        return CORDON_EXIT_FAILURE;
    }
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++) {
            char log_path[PATH_MAX + 64];
            ls_log_path(root, entries[i].name, log_path, sizeof(log_path));
            json_array_append_new(
                arr, json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:s, s:s, s:s}", "name",
                               entries[i].name, "state", entries[i].status, "backend",
                               entries[i].backend, "workspace", entries[i].workspace, "owner_pid",
                               entries[i].locked ? (int)entries[i].owner_pid : 0, "started",
                               (json_int_t)entries[i].started, "command", entries[i].command, "log",
                               log_path, "attach", ls_attach_hint(&entries[i])));
        }
        char *text = json_dumps(arr, JSON_INDENT(2));
        puts(text ? text : "[]");
        free(text);
        json_decref(arr);
    } else {
        printf("%-32s %-9s %-7s %-8s %-5s %s\n", "NAME", "STATE", "BACKEND", "OWNER", "AGE",
               "WORKSPACE");
        for (size_t i = 0; i < n; i++) {
            char age[16], owner[16] = "-";
            format_age(entries[i].started, age, sizeof(age));
            if (entries[i].locked)
                snprintf(owner, sizeof(owner), "%d", entries[i].owner_pid);
            printf("%-32s %-9s %-7s %-8s %-5s %s\n", entries[i].name, entries[i].status,
                   entries[i].backend, owner, age, entries[i].workspace);
            long pending = review_pending(entries[i].name);
            if (pending >= 0)
                printf("  review: %ld pending change(s) (cordon changes %s)\n", pending,
                       entries[i].name);
            char log_path[PATH_MAX + 64];
            ls_log_path(root, entries[i].name, log_path, sizeof(log_path));
            if (entries[i].command[0])
                printf("    command  %s\n", entries[i].command);
            printf("    log      %s\n", log_path);
            printf("    attach   %s\n", ls_attach_hint(&entries[i]));
        }
    }
    free(entries);
    return 0;
}

static void rm_usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out, "usage: cordon rm NAME...\n\n"
                 "Removes the state of stopped sandboxes; a running one is refused.\n");
}

int cmd_rm(int argc, char **argv)
{
    /* Options first: every argument from the first name on is a name. */
    const struct cli_parser parser = {.usage = rm_usage, .options_first = true};
    int first;
    int parsed = cli_parse(&parser, argc, argv, &first);
    if (parsed == CLI_PARSE_OK && first == argc) {
        rm_usage(stderr, NULL);
        parsed = CLI_PARSE_ERROR;
    }
    if (parsed != CLI_PARSE_OK)
        return cli_usage_status(parsed);
    int status = 0;
    for (int i = first; i < argc; i++) {
        struct cordon_error err = {0};
        if (state_remove(argv[i], &err) < 0) {
            log_error("%s", err.message);
            status = CORDON_EXIT_FAILURE;
        } else {
            printf("%s\n", argv[i]);
        }
    }
    return status;
}

static void gc_usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out, "usage: cordon gc [--hours N]\n\n"
                 "Removes cordon sandboxes that are not running, whose lock can be\n"
                 "taken and that are older than N hours (default: gc_hours).\n");
}

static int set_hours(void *ctx, const char *option, const char *value)
{
    (void)option;
    struct state_options *opts = ctx;
    char *end;
    opts->hours = strtod(value, &end);
    if (*end || opts->hours < 0) {
        fprintf(stderr, "cordon: gc: --hours expects a non-negative number\n");
        return -1;
    }
    return 0;
}

const struct cli_option cli_gc_options[] = {
    {.name = "--hours", .value = CLI_TEXT, .help = "age in hours", .handle = set_hours},
    {0},
};

int cmd_gc(int argc, char **argv)
{
    struct state_options opts = {.hours = -1};
    const struct cli_parser parser = {.usage = gc_usage, .ctx = &opts, .options = cli_gc_options};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_usage_status(parsed);
    double hours = opts.hours;
    struct cordon_error err = {0};
    if (hours < 0) {
        struct workspace ws;
        struct cordon_config cfg;
        if (workspace_detect(NULL, &ws, &err) == 0) {
            if (launch_resolve_config(ws.root, NULL, &cfg, &err) == 0) {
                hours = (double)cfg.gc_hours;
                cfg_free(&cfg);
            }
            workspace_free(&ws);
        }
        if (hours < 0)
            hours = 24;
    }
    size_t removed = 0;
    if (state_gc(hours, NULL, &removed, &err) < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    printf("removed %zu sandbox(es) older than %g hours\n", removed, hours);
    return 0;
}
