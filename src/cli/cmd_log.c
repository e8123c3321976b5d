/* `cordon log [--json] [--follow] NAME`: a session's tool calls (with their
 * arguments, as the audit log bounds them) and network decisions, read from
 * its state directory (audit.jsonl, network.jsonl), merged by time.
 * --follow keeps reading while the session runs. Host context. The files
 * are cordon's own, but what they quote (arguments, host names) came from
 * the sandbox: the human form escapes every hidden character. */
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/launch.h"
#include "supervisor/state.h"
#include "util/cleanup.h"
#include "util/escape.h"
#include "util/log.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_LINE_MAX     (64 * 1024) /* longer lines are not cordon's: skipped */
#define FOLLOW_PERIOD_MS 200

struct log_source {
    const char *kind; /* "tool" or "network" */
    int fd;
    char *partial; /* an incomplete last line, waiting for its end */
    size_t partial_len;
    bool overlong; /* inside a line past LOG_LINE_MAX: drop up to its newline */
};

struct log_entry {
    char time[40];
    const char *kind;
    json_t *record;
    size_t seq; /* arrival order, for a stable sort */
};

struct log_entries {
    struct log_entry *items;
    size_t count, cap;
};

static void usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out, "usage: cordon log [--json] [--follow] NAME\n\n"
                 "A session's tool calls (tool, arguments up to 2 KiB, outcome, duration, exit\n"
                 "status) and its network decisions (destination, allow or deny, the rule),\n"
                 "oldest first. --follow: keep printing while the session runs. --json: one\n"
                 "JSON object per line, with \"kind\": \"tool\" or \"network\".\n");
}

static const char *field(json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : "";
}

/* Sandbox-influenced text for a terminal: hidden characters escaped
 * (text_escape_visible: control, bidirectional, invisible ones). */
static void print_visible(const char *text)
{
    _cleanup_free_ char *shown = text_escape_visible(text, strlen(text), 0, NULL);
    fputs(shown ? shown : "?", stdout);
}

static void print_entry(const struct log_entry *e, bool json)
{
    if (json) {
        json_object_set_new(e->record, "kind", json_string(e->kind));
        _cleanup_free_ char *text = json_dumps(e->record, JSON_COMPACT | JSON_ENSURE_ASCII);
        if (text)
            printf("%s\n", text);
        return;
    }
    json_t *r = e->record;
    if (json_object_get(r, "note")) {
        printf("%s  note     ", field(r, "time"));
        print_visible(field(r, "note"));
        putchar('\n');
        return;
    }
    if (strcmp(e->kind, "network") == 0) {
        printf("%s  network  %-5s %s ", field(r, "time"), field(r, "decision"),
               field(r, "protocol"));
        print_visible(field(r, "host"));
        printf(":%lld", (long long)json_integer_value(json_object_get(r, "port")));
        if (json_object_get(r, "address")) {
            printf(" (");
            print_visible(field(r, "address"));
            putchar(')');
        }
        printf(": ");
        print_visible(field(r, "reason"));
        putchar('\n');
        return;
    }
    printf("%s  tool     ", field(r, "time"));
    print_visible(field(r, "tool"));
    printf(" %s %s %.1f ms", field(r, "target"), field(r, "outcome"),
           json_real_value(json_object_get(r, "duration_ms")));
    if (json_object_get(r, "exit_code"))
        printf(" exit %lld", (long long)json_integer_value(json_object_get(r, "exit_code")));
    json_t *args = json_object_get(r, "args");
    if (args) {
        /* JSON with every non-ASCII and control character as \\u: as
         * visible as it gets, and what a script would parse. */
        _cleanup_free_ char *text =
            json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
        printf(" %s", text ? text : "?");
    } else if (json_object_get(r, "args_excerpt")) {
        putchar(' ');
        print_visible(field(r, "args_excerpt"));
        printf("... (%lld bytes)", (long long)json_integer_value(json_object_get(r, "args_bytes")));
    }
    putchar('\n');
}

static int entries_add(struct log_entries *list, const char *kind, const char *line, size_t len)
{
    json_t *record = json_loadb(line, len, 0, NULL);
    if (!json_is_object(record)) {
        json_decref(record);
        return 0; /* not a record of ours: skipped */
    }
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 64;
        struct log_entry *items = realloc(list->items, cap * sizeof(*items));
        if (!items) {
            json_decref(record);
            return -1;
        }
        list->items = items;
        list->cap = cap;
    }
    struct log_entry *e = &list->items[list->count];
    *e = (struct log_entry){.kind = kind, .record = record, .seq = list->count};
    snprintf(e->time, sizeof(e->time), "%s", field(record, "time"));
    list->count++;
    return 0;
}

static void entries_clear(struct log_entries *list)
{
    for (size_t i = 0; i < list->count; i++)
        json_decref(list->items[i].record);
    list->count = 0;
}

/* Reads what the source has now; each complete line becomes an entry. */
static int source_read(struct log_source *src, struct log_entries *list)
{
    if (src->fd < 0)
        return 0;
    char buf[65536];
    for (;;) {
        ssize_t n = read(src->fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -1 : 0;
        const char *p = buf, *end = buf + n;
        while (p < end) {
            const char *nl = memchr(p, '\n', (size_t)(end - p));
            size_t chunk = (size_t)((nl ? nl : end) - p);
            if (!src->overlong && src->partial_len + chunk > LOG_LINE_MAX) {
                src->overlong = true;
                src->partial_len = 0;
            }
            if (!src->overlong) {
                char *grown = realloc(src->partial, src->partial_len + chunk + 1);
                if (!grown)
                    return -1;
                src->partial = grown;
                memcpy(src->partial + src->partial_len, p, chunk);
                src->partial_len += chunk;
            }
            if (!nl)
                break;
            if (!src->overlong && src->partial_len > 0 &&
                entries_add(list, src->kind, src->partial, src->partial_len) < 0)
                return -1;
            src->partial_len = 0;
            src->overlong = false;
            p = nl + 1;
        }
    }
}

static int entry_compare(const void *a, const void *b)
{
    const struct log_entry *x = a, *y = b;
    int c = strcmp(x->time, y->time);
    if (c)
        return c;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void entries_flush(struct log_entries *list, bool json)
{
    qsort(list->items, list->count, sizeof(*list->items), entry_compare);
    for (size_t i = 0; i < list->count; i++)
        print_entry(&list->items[i], json);
    fflush(stdout);
    entries_clear(list);
}

static int open_in(int dir_fd, const char *file)
{
    int fd = openat(dir_fd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    return fd < 0 && errno == ENOENT ? -2 : fd;
}

struct log_options {
    bool json, follow;
};

const struct cli_option cli_log_options[] = {
    CLI_FLAG("--json", "one JSON object per line", struct log_options, json),
    {.name = "--follow",
     .alias = "-f",
     .help = "keep printing while the session runs",
     .store = CLI_STORE_FLAG,
     .at = offsetof(struct log_options, follow)},
    {0},
};

int cmd_log(int argc, char **argv)
{
    struct log_options opts = {0};
    const char *name = NULL;
    const struct cli_parser parser = {
        .usage = usage, .ctx = &opts, .options = cli_log_options, .operand = &name};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_parse_status(parsed);
    bool json = opts.json, follow = opts.follow;
    if (!name) {
        usage(stderr, NULL);
        return CORDON_EXIT_FAILURE;
    }
    struct cordon_error err = {0};
    struct state_entry entry;
    if (state_check_name(name, &err) < 0) {
        log_error("log: %s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    _cleanup_close_ int root = state_root_open(NULL, &err);
    if (root < 0) {
        log_error("log: %s", err.message);
        return CORDON_EXIT_FAILURE;
    }
    /* A session that still has its state, else the logs a removed one
     * left for gc_hours (state.h, STATE_LOGS_DIR). */
    _cleanup_close_ int dir = -1;
    if (state_get(name, &entry, &err) == 0) {
        dir = openat(root, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } else {
        _cleanup_close_ int logs =
            openat(root, STATE_LOGS_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        dir = logs < 0 ? -1 : openat(logs, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0 && errno == ENOENT) {
            log_error("log: %s", err.message);
            return CORDON_EXIT_FAILURE;
        }
        follow = false; /* it has ended */
    }
    if (dir < 0) {
        log_error("log: %s: %s", name, strerror(errno));
        return CORDON_EXIT_FAILURE;
    }
    struct log_source sources[2] = {{.kind = "tool", .fd = -1}, {.kind = "network", .fd = -1}};
    const char *files[2] = {STATE_AUDIT_FILE, STATE_NETWORK_FILE};
    struct log_entries list = {0};
    int rc = 0;
    for (bool first = true;; first = false) {
        for (int i = 0; i < 2; i++) {
            /* A file the session has not written yet may appear later. */
            if (sources[i].fd < 0) {
                int fd = open_in(dir, files[i]);
                if (fd == -1) {
                    log_error("log: %s/%s: %s", name, files[i], strerror(errno));
                    rc = CORDON_EXIT_FAILURE;
                    goto out;
                }
                sources[i].fd = fd < 0 ? -1 : fd;
            }
            if (source_read(&sources[i], &list) < 0) {
                log_error("log: %s/%s: %s", name, files[i], strerror(errno ? errno : ENOMEM));
                rc = CORDON_EXIT_FAILURE;
                goto out;
            }
        }
        entries_flush(&list, json);
        if (!follow)
            break;
        /* Ends once the session has ended and its last lines are out. */
        struct state_entry now;
        if (!first && (state_get(name, &now, &err) < 0 || !now.locked))
            break;
        poll(NULL, 0, FOLLOW_PERIOD_MS);
    }
out:
    for (int i = 0; i < 2; i++) {
        if (sources[i].fd >= 0)
            close(sources[i].fd);
        free(sources[i].partial);
    }
    entries_clear(&list);
    free(list.items);
    return rc;
}
