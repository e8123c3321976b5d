/* `cordon changes`, `diff`, `apply`, `discard`: the review layer of a
 * review-mode session (docs/review.md). Host context, as the user. */
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/review.h"
#include "supervisor/state.h"
#include "supervisor/undo.h"
#include "util/cleanup.h"
#include "util/escape.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A path as the user reads it: control, bidi and invisible characters
 * escaped (a file name is the agent's choice). */
static void put_path(FILE *out, const char *path)
{
    _cleanup_free_ char *vis = text_escape_visible(path, strlen(path), TEXT_ESCAPE_BACKSLASH, NULL);
    fputs(vis ? vis : "?", out);
}

static const char *type_word(char t)
{
    return t == 'd' ? "directory" : t == 'l' ? "symlink" : t == 'f' ? "file" : "nothing";
}

struct review_args {
    const char *name;
    char **paths;
    size_t npaths;
    bool stat_only;
    int color; /* -1 auto */
    bool json;
    bool force; /* rewind --force (direct mode) */
    long call;  /* --call N, or 0 */
    long to;    /* rewind --to N, or -1 */
    long at;    /* apply --at N: the checkpoint of a running session shown */
    const char *usage;
};

static void review_usage(FILE *out, void *ctx)
{
    fputs(((struct review_args *)ctx)->usage, out);
}

static void review_unknown(void *ctx, const char *arg)
{
    (void)ctx;
    fprintf(stderr, "cordon: error: unknown option %s\n", arg);
}

/* NAME, then the paths. */
static int review_operand(void *ctx, const char *arg)
{
    struct review_args *a = ctx;
    if (!a->name)
        a->name = arg;
    else
        a->paths[a->npaths++] = (char *)arg;
    return 0;
}

static int set_color(void *ctx, const char *option, const char *value)
{
    (void)value;
    bool off = strcmp(option, "--no-color") == 0 || strcmp(option, "--color=never") == 0;
    ((struct review_args *)ctx)->color = !off;
    return 0;
}

/* --call N, --to N, --at N */
static int set_number(void *ctx, const char *option, const char *value)
{
    struct review_args *a = ctx;
    char *end;
    long v = strtol(value, &end, 10);
    if (*end || v < 0) {
        fprintf(stderr, "cordon: error: %s wants a number, not %s\n", option, value);
        return -1;
    }
    *(option[2] == 'c' ? &a->call : option[2] == 'a' ? &a->at : &a->to) = v;
    return 0;
}

/* Every review command takes these; each lists (and documents) its own,
 * the others are hidden (hidden: 1). */
#define REVIEW_STAT(hidden_)                                                                       \
    {                                                                                              \
        .name = "--stat", .help = "a summary per file", .hidden = hidden_,                         \
        .store = CLI_STORE_FLAG, .at = offsetof(struct review_args, stat_only)                     \
    }
#define REVIEW_COLOR(hidden_)                                                                      \
    {.name = "--color",                                                                            \
     .alias = "--color=always",                                                                    \
     .help = "colour even off a terminal",                                                         \
     .hidden = hidden_,                                                                            \
     .handle = set_color},                                                                         \
    {                                                                                              \
        .name = "--no-color", .alias = "--color=never", .help = "no colour", .hidden = hidden_,    \
        .handle = set_color                                                                        \
    }
#define REVIEW_NUMBER(option, text, hidden_)                                                       \
    {                                                                                              \
        .name = option, .value = CLI_TEXT, .help = text, .hidden = hidden_, .handle = set_number   \
    }
#define REVIEW_CALL(hidden_) REVIEW_NUMBER("--call", "what tool call N changed", hidden_)
#define REVIEW_AT(hidden_)   REVIEW_NUMBER("--at", "a running session's checkpoint shown", hidden_)
#define REVIEW_TO(hidden_)   REVIEW_NUMBER("--to", "the tool call to return to", hidden_)
#define REVIEW_FORCE                                                                               \
    {                                                                                              \
        .name = "--force", .help = "direct mode: restore a file changed since, too",               \
        .store = CLI_STORE_FLAG, .at = offsetof(struct review_args, force)                         \
    }
#define REVIEW_JSON                                                                                \
    {                                                                                              \
        .name = "--json", .hidden = true, .store = CLI_STORE_FLAG,                                 \
        .at = offsetof(struct review_args, json)                                                   \
    }

const struct cli_option cli_changes_options[] = {
    REVIEW_CALL(0), REVIEW_STAT(1), REVIEW_COLOR(1), REVIEW_AT(1), REVIEW_TO(1), REVIEW_JSON, {0},
};
const struct cli_option cli_diff_options[] = {
    REVIEW_STAT(0), REVIEW_COLOR(0), REVIEW_CALL(0), REVIEW_AT(1), REVIEW_TO(1), REVIEW_JSON, {0},
};
const struct cli_option cli_apply_options[] = {
    REVIEW_AT(0), REVIEW_STAT(1), REVIEW_COLOR(1), REVIEW_CALL(1), REVIEW_TO(1), REVIEW_JSON, {0},
};
/* discard, fork */
const struct cli_option cli_review_options[] = {
    REVIEW_STAT(1), REVIEW_COLOR(1), REVIEW_CALL(1), REVIEW_AT(1), REVIEW_TO(1), REVIEW_JSON, {0},
};
const struct cli_option cli_rewind_options[] = {
    REVIEW_TO(0),   REVIEW_FORCE, REVIEW_STAT(1), REVIEW_COLOR(1),
    REVIEW_CALL(1), REVIEW_AT(1), REVIEW_JSON,    {0},
};

static const char rewind_usage[] =
    "usage: cordon rewind NAME --to N [--force]\n"
    "  returns stopped review-mode sandbox NAME's workspace to its state after tool call N\n"
    "  (0: before the first call). Files only: processes are not rewound.\n"
    "  Direct mode: puts back what the write and edit tools replaced after call N, in the\n"
    "  workspace itself; a file something else changed since is refused unless --force.\n";

/* 1: help printed; -1: refused (said why); 0: NAME in a->name. "--" ends
 * the options: what follows are paths. */
static int parse(int argc, char **argv, struct review_args *a, const char *usage,
                 const struct cli_option *options)
{
    char **paths = a->paths;
    *a = (struct review_args){.color = -1, .paths = paths, .to = -1, .at = -1, .usage = usage};
    const struct cli_parser parser = {.usage = review_usage,
                                      .ctx = a,
                                      .options = options,
                                      .unknown = review_unknown,
                                      .dash_dash = true,
                                      .operands = review_operand};
    int next;
    int parsed = cli_parse(&parser, argc, argv, &next);
    if (parsed != CLI_PARSE_OK)
        return parsed == CLI_PARSE_HELP ? 1 : -1;
    for (int i = next; i < argc; i++)
        a->paths[a->npaths++] = argv[i];
    if (!a->name) {
        fprintf(stderr, "%s", usage);
        return -1;
    }
    return 0;
}

/* A review command: its arguments parsed (NAME, PATHs, the options), then
 * run. */
static int review_command(int argc, char **argv, const char *usage,
                          const struct cli_option *options, int (*run)(struct review_args a))
{
    _cleanup_free_ char **paths = calloc((size_t)argc + 1, sizeof(char *));
    if (!paths)
        return CORDON_EXIT_FAILURE;
    struct review_args a = {.paths = paths};
    int p = parse(argc, argv, &a, usage, options);
    if (p != 0)
        return p > 0 ? 0 : CORDON_EXIT_FAILURE;
    return run(a);
}

/* A running session is shown as of its last checkpoint: say which, and
 * how to apply exactly that. */
static void say_as_of(const struct review *r)
{
    if (r->running && r->as_of > 0)
        fprintf(stderr,
                "cordon: sandbox %s is running: its changes as of tool call %ld (apply exactly "
                "these with `cordon apply %s --at %ld`)\n",
                r->name, r->as_of, r->name, r->as_of);
    else if (r->running)
        fprintf(stderr,
                "cordon: sandbox %s is running and no tool call has ended yet: what it holds "
                "now, still changing (nothing to apply until a call ends or it stops)\n",
                r->name);
}

static int open_review(const struct review_args *a, struct review *r)
{
    struct cordon_error err = {0};
    if (review_open(a->name, r, &err) < 0 || review_scan(r, &err) < 0) {
        log_error("%s", err.message);
        review_close(r);
        return -1;
    }
    say_as_of(r);
    return 0;
}

static int call_changes(const struct review_args *a, bool diff, bool color);

static const char changes_usage[] =
    "usage: cordon changes NAME [PATH...] [--call N]\n"
    "  the changes review-mode sandbox NAME holds apart from the workspace:\n"
    "  A added, M modified, D deleted, R renamed, T mode changed, ? never applied\n"
    "  --call N: what tool call N changed (its checkpoint against the one before)\n";

static int changes_run(struct review_args a)
{
    if (a.call)
        return call_changes(&a, false, false);
    struct review r;
    if (open_review(&a, &r) < 0)
        return CORDON_EXIT_FAILURE;
    size_t shown = 0;
    for (size_t i = 0; i < r.count; i++) {
        const struct review_change *c = &r.changes[i];
        if (!review_selected(c, a.paths, a.npaths))
            continue;
        shown++;
        printf("%s  ", review_kind_name(c->kind));
        if (c->kind == REVIEW_RENAMED) {
            put_path(stdout, c->from);
            fputs(" -> ", stdout);
        }
        put_path(stdout, c->path);
        char t = c->kind == REVIEW_DELETED ? c->old_type : c->type;
        if (t == 'd')
            fputc('/', stdout);
        if (t == 'l')
            fputs(" (symlink)", stdout);
        if (t == 'l' && c->kind != REVIEW_DELETED && c->link) {
            fputs(" -> ", stdout);
            put_path(stdout, c->link);
        }
        if (c->kind == REVIEW_MODE)
            printf(" (mode %03o -> %03o)", (unsigned)c->old_mode, (unsigned)c->new_mode);
        else if (c->kind == REVIEW_MODIFIED && c->old_type != c->type)
            printf(" (%s -> %s)", type_word(c->old_type), type_word(c->type));
        else if (c->kind == REVIEW_MODIFIED && c->type == 'f' && c->old_mode != c->new_mode)
            printf(" (mode %03o -> %03o)", (unsigned)c->old_mode, (unsigned)c->new_mode);
        if (c->kind == REVIEW_SKIPPED)
            fputs(" (not a file, directory or symlink: never applied)", stdout);
        if (c->refused)
            printf(" [never applied: %s]", c->refused);
        else if (c->conflict)
            fputs(" [conflict: the host changed it since the session started]", stdout);
        fputc('\n', stdout);
    }
    if (!shown)
        fprintf(stderr, "no pending changes in sandbox %s\n", a.name);
    review_close(&r);
    return 0;
}

int cmd_changes(int argc, char **argv)
{
    return review_command(argc, argv, changes_usage, cli_changes_options, changes_run);
}

/* ---- diff ---- */

struct call_ctx {
    const struct review_args *a;
    bool diff, color;
    size_t shown;
};

static void call_one(void *ctx, char kind, const char *path, int old_fd, int new_fd)
{
    struct call_ctx *c = ctx;
    if (c->a->npaths) {
        struct review_change probe = {.path = (char *)path};
        if (!review_selected(&probe, c->a->paths, c->a->npaths))
            return;
    }
    c->shown++;
    _cleanup_free_ char *vis = text_escape_visible(path, strlen(path), TEXT_ESCAPE_BACKSLASH, NULL);
    if (!c->diff) {
        printf("%c  %s%s\n", kind == 'U' ? 'M' : kind, vis ? vis : "?",
               kind == 'U' ? " (back to the host's version)" : "");
        (void)old_fd;
        return;
    }
    if (old_fd < 0 && new_fd < 0) {
        printf("%c %s\n", kind, vis ? vis : "?");
        return;
    }
    char la[PATH_MAX + 8], lb[PATH_MAX + 8];
    snprintf(la, sizeof(la), old_fd >= 0 ? "a/%s" : "/dev/null", vis ? vis : "?");
    snprintf(lb, sizeof(lb), new_fd >= 0 ? "b/%s" : "/dev/null", vis ? vis : "?");
    printf("diff %s %s\n", la, lb);
    if (review_looks_binary(old_fd) || review_looks_binary(new_fd))
        printf("Binary files %s and %s differ\n", la, lb);
    else
        review_run_diff(old_fd, new_fd, la, lb, c->color, 1);
}

/* `changes/diff NAME --call N`: what call N changed, against the state
 * after call N-1 (a file the call created shows against /dev/null). */
static int call_changes(const struct review_args *a, bool diff, bool color)
{
    struct cordon_error err = {0};
    struct review r;
    if (review_open(a->name, &r, &err) < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    struct call_ctx c = {.a = a, .diff = diff, .color = color};
    int rc = review_call_changes(&r, a->call, call_one, &c, &err);
    review_close(&r);
    if (rc < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    if (!c.shown)
        fprintf(stderr, "call %ld changed nothing in the workspace\n", a->call);
    return 0;
}

static const char diff_usage[] =
    "usage: cordon diff NAME [PATH...] [--stat] [--color|--no-color] [--call N]\n"
    "  a unified diff of what review-mode sandbox NAME changed (host: a/, sandbox: b/)\n";

static int diff_run(struct review_args a)
{
    bool color = a.color < 0 ? isatty(1) : a.color;
    if (a.call)
        return call_changes(&a, true, color);
    struct review r;
    if (open_review(&a, &r) < 0)
        return CORDON_EXIT_FAILURE;
    struct cordon_error err = {0};
    int status = review_diff(&r, a.paths, a.npaths, a.stat_only, color, stdout, &err) < 0
                     ? CORDON_EXIT_FAILURE
                     : 0;
    if (status)
        log_error("%s", err.message);
    review_close(&r);
    return status;
}

int cmd_diff(int argc, char **argv)
{
    return review_command(argc, argv, diff_usage, cli_diff_options, diff_run);
}

/* ---- apply, discard ---- */

static void report_line(void *ctx, const char *what, const char *path, const char *why)
{
    (void)ctx;
    FILE *out = why ? stderr : stdout;
    fprintf(out, "%s: ", what);
    put_path(out, path);
    if (why)
        fprintf(out, ": %s", why);
    fputc('\n', out);
}

static const char apply_usage[] =
    "usage: cordon apply NAME [PATH...] [--at N]\n"
    "  writes review-mode sandbox NAME's changes into the workspace, one file at a time\n"
    "  (atomically); a file the host changed since the session started is a conflict and\n"
    "  stays as it is; git metadata and protected paths are never written. Exit 1 when\n"
    "  something was not applied.\n"
    "  --at N: a running session's changes as of tool call N, the checkpoint `cordon\n"
    "  changes` and `cordon diff` showed (required while it runs)\n";

static int apply_run(struct review_args a)
{
    struct cordon_error err = {0};
    struct review r;
    if (review_open(a.name, &r, &err) < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    r.expect_as_of = a.at;
    int problems = review_apply(&r, a.paths, a.npaths, report_line, NULL, &err);
    review_close(&r);
    if (problems < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    if (problems > 0)
        fprintf(stderr, "cordon: %d change(s) not applied (see above); they stay in sandbox %s\n",
                problems, a.name);
    return problems > 0 ? 1 : 0;
}

int cmd_apply(int argc, char **argv)
{
    return review_command(argc, argv, apply_usage, cli_apply_options, apply_run);
}

static const char discard_usage[] = "usage: cordon discard NAME\n"
                                    "  drops every pending change of stopped review-mode "
                                    "sandbox NAME\n";

static int discard_run(struct review_args a)
{
    if (a.npaths) {
        fprintf(stderr, "cordon: error: discard takes no paths (it drops every change)\n");
        return CORDON_EXIT_FAILURE;
    }
    struct cordon_error err = {0};
    struct review r;
    if (review_open(a.name, &r, &err) < 0 || review_discard(&r, &err) < 0) {
        log_error("%s", err.message);
        review_close(&r);
        return CORDON_EXIT_FAILURE;
    }
    review_close(&r);
    printf("discarded the changes of sandbox %s\n", a.name);
    return 0;
}

int cmd_discard(int argc, char **argv)
{
    return review_command(argc, argv, discard_usage, cli_review_options, discard_run);
}

static int rewind_run(struct review_args a)
{
    if (a.to < 0 || a.npaths) {
        fprintf(stderr, "%s", rewind_usage);
        return CORDON_EXIT_FAILURE;
    }
    struct cordon_error err = {0};
    struct review r;
    if (review_open(a.name, &r, &err) < 0 && undo_exists(a.name)) {
        /* Direct mode: the write and edit tools' previous contents. */
        int refused = undo_rewind(a.name, a.to, a.force, report_line, NULL, &err);
        if (refused < 0) {
            log_error("%s", err.message);
            return CORDON_EXIT_FAILURE;
        }
        printf("sandbox %s: what the write and edit tools changed after call %ld is undone in "
               "the workspace%s (bash's changes and processes are not: docs/review.md)\n",
               a.name, a.to, refused ? ", except what is refused above" : "");
        return refused ? 1 : 0;
    }
    if (r.review_fd < 0 || review_rewind(&r, a.to, &err) < 0) {
        log_error("%s", err.message);
        review_close(&r);
        return CORDON_EXIT_FAILURE;
    }
    review_close(&r);
    printf("sandbox %s: the workspace is as it was after call %ld (files only: processes are "
           "not rewound)\n",
           a.name, a.to);
    return 0;
}

int cmd_rewind(int argc, char **argv)
{
    return review_command(argc, argv, rewind_usage, cli_rewind_options, rewind_run);
}

static const char fork_usage[] =
    "usage: cordon fork NAME NEW\n"
    "  a new stopped review-mode sandbox NEW holding a copy of NAME's pending changes;\n"
    "  continue it with `cordon run|mcp --review --name NEW`\n";

static int fork_run(struct review_args a)
{
    if (a.npaths != 1) {
        fprintf(stderr, "%s", fork_usage);
        return CORDON_EXIT_FAILURE;
    }
    struct cordon_error err = {0};
    struct state_entry e;
    struct review r;
    if (state_check_name(a.paths[0], &err) < 0 || state_get(a.name, &e, &err) < 0 ||
        review_open(a.name, &r, &err) < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    int rc = review_fork(&r, a.paths[0], e.workspace, e.backend, &err);
    review_close(&r);
    if (rc < 0) {
        log_error("%s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    printf("sandbox %s: a copy of %s's changes; continue it with `cordon run --review --name %s`\n",
           a.paths[0], a.name, a.paths[0]);
    return 0;
}

int cmd_fork(int argc, char **argv)
{
    return review_command(argc, argv, fork_usage, cli_review_options, fork_run);
}
