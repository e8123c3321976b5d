/* Configuration flags shared by run, shell, tool, mcp and config. */
#include "cli/options.h"
#include "util/cleanup.h"
#include "util/error.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cli_config_flags_help[] =
    "configuration (each is a session setting; see `cordon config --explain`):\n"
    "  --set KEY=VALUE     any key of docs/configuration.md (repeatable)\n"
    "  --pids N            processes in the sandbox         (limits.pids)\n"
    "  --memory MIB        memory                           (limits.memory_mib)\n"
    "  --file-size MIB     largest file a process writes    (limits.file_size_mib)\n"
    "  --open-files N      open files per process           (limits.open_files)\n"
    "  --cpu-seconds N     CPU time per process             (limits.cpu_seconds)\n"
    "  --cpus N            CPU quota, where a cgroup exists (limits.cpus)\n"
    "  --readonly          the workspace read-only          (workspace_readonly)\n"
    "  --backend B         ns | vm | docker | auto          (backend)\n"
    "  --network MODE      deny | allowlist | open          (network.mode)\n"
    "  --allow-host PAT    allowlist entry, repeatable: host, *.domain, IP, CIDR, :port,\n"
    "                      or a preset @npm @pypi @crates @go @debian @github\n"
    "                                                       (network.allow_hosts)\n"
    "  --publish [BIND:]HOST:GUEST  publish a sandbox port on the host, repeatable\n"
    "                                                       (network.publish_ports)\n"
    "  --net-audit-log FILE  network decisions as JSON lines\n"
    "  --net-hosts-file FILE resolve names for the proxy from FILE, not DNS\n"
    "  --env-mode MODE     strict | allowlist | passthrough (env.mode)\n"
    "  --name NAME         the sandbox's name               (sandbox_name)\n"
    "  --fallback MODE     block | host                     (fallback_mode)\n"
    "  --teardown T        remove | stop | none             (teardown)\n"
    "  --review            changes held apart until `cordon apply` (workspace_mode)\n";

static int push(struct cli_sets *s, char *item)
{
    if (!item)
        return -1;
    if (s->count + 2 > s->capacity) {
        size_t ncap = s->capacity ? s->capacity * 2 : 8;
        char **grown = realloc(s->items, ncap * sizeof(char *));
        if (!grown) {
            free(item);
            return -1;
        }
        s->items = grown;
        s->capacity = ncap;
    }
    s->items[s->count++] = item;
    s->items[s->count] = NULL;
    return 0;
}

/* Appends a TOML basic string to a growing array body. */
static int append_toml_string(char **list, const char *value)
{
    size_t n = strlen(value);
    char *quoted = malloc(n * 6 + 3);
    if (!quoted)
        return -1;
    char *q = quoted;
    *q++ = '"';
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (*p == '"' || *p == '\\') {
            *q++ = '\\';
            *q++ = (char)*p;
        } else if (*p < 0x20 || *p == 0x7f) {
            q += sprintf(q, "\\u%04x", *p);
        } else {
            *q++ = (char)*p;
        }
    }
    *q++ = '"';
    *q = '\0';
    char *joined;
    int rc = asprintf(&joined, "%s%s%s", *list ? *list : "", *list ? ", " : "", quoted);
    free(quoted);
    if (rc < 0)
        return -1;
    free(*list);
    *list = joined;
    return 0;
}

/* --set KEY=VALUE: the setting as typed. */
static int set_item(void *ctx, const char *option, const char *value)
{
    (void)option;
    return push(ctx, strdup(value));
}

#define CONFIG_VALUE(flag, k, kind, text)                                                          \
    {                                                                                              \
        .name = flag, .value = kind, .help = text, .key = k, .inline_value = true                  \
    }
#define CONFIG_FIELD(flag, kind, text, how, field, k)                                              \
    {                                                                                              \
        .name = flag, .value = kind, .help = text, .store = how,                                   \
        .at = offsetof(struct cli_sets, field), .key = k                                           \
    }
/* The order is the table's (help.c) and the completions'. */
const struct cli_option cli_config_options[] = {
    {.name = "--set",
     .value = CLI_KEYSET,
     .help = "any configuration key (repeatable)",
     .handle = set_item,
     .inline_value = true},
    CONFIG_VALUE("--pids", "limits.pids", CLI_TEXT, "processes in the sandbox"),
    CONFIG_VALUE("--memory", "limits.memory_mib", CLI_TEXT, "memory in MiB"),
    CONFIG_VALUE("--file-size", "limits.file_size_mib", CLI_TEXT, "largest file in MiB"),
    CONFIG_VALUE("--open-files", "limits.open_files", CLI_TEXT, "open files per process"),
    CONFIG_VALUE("--cpu-seconds", "limits.cpu_seconds", CLI_TEXT, "CPU time per process"),
    CONFIG_VALUE("--cpus", "limits.cpus", CLI_TEXT, "CPU quota"),
    {.name = "--readonly", .help = "the workspace read-only", .key = "workspace_readonly=true"},
    CONFIG_VALUE("--backend", "backend", CLI_BACKEND, "the sandbox backend"),
    CONFIG_VALUE("--network", "network.mode", CLI_NETWORK, "the network mode"),
    CONFIG_FIELD("--allow-host", CLI_TEXT, "an allowlist entry (repeatable)", CLI_STORE_LIST,
                 allow_hosts, "network.allow_hosts"),
    CONFIG_FIELD("--publish", CLI_TEXT, "publish a sandbox port (repeatable)", CLI_STORE_LIST,
                 publish, "network.publish_ports"),
    CONFIG_FIELD("--net-audit-log", CLI_FILE, "network decisions as JSON lines", CLI_STORE_VALUE,
                 net_audit_log, NULL),
    CONFIG_FIELD("--net-hosts-file", CLI_FILE, "resolve names for the proxy from this file",
                 CLI_STORE_VALUE, net_hosts_file, NULL),
    CONFIG_VALUE("--env-mode", "env.mode", CLI_ENV_MODE, "the environment mode"),
    CONFIG_VALUE("--name", "sandbox_name", CLI_TEXT, "the name of the sandbox"),
    CONFIG_VALUE("--fallback", "fallback_mode", CLI_FALLBACK, "after a sandbox failure"),
    CONFIG_VALUE("--teardown", "teardown", CLI_TEARDOWN, "what stays after the session"),
    {.name = "--review",
     .help = "changes held apart until cordon apply",
     .key = "workspace_mode=review"},
    {0},
};

int cli_sets_finish(struct cli_sets *sets)
{
    /* "\x1f--flag\x1f" before KEY=VALUE: configuration errors name the
     * flag (collect_session in config/resolve.c). */
    for (const struct cli_option *o = cli_config_options; o->name; o++) {
        char *list = o->store == CLI_STORE_LIST ? *(char **)((char *)sets + o->at) : NULL;
        char *item;
        if (list && (asprintf(&item, "\x1f%s\x1f%s=[%s]", o->name, o->key, list) < 0 ||
                     push(sets, item) < 0))
            return -1;
    }
    return 0;
}

int cli_sets_push(struct cli_sets *sets, char *item)
{
    return push(sets, item);
}

void cli_sets_free(struct cli_sets *sets)
{
    for (size_t i = 0; i < sets->count; i++)
        free(sets->items[i]);
    free(sets->items);
    free(sets->allow_hosts);
    free(sets->publish);
    *sets = (struct cli_sets){0};
}

/* The option arg names in a table, with its value when it is given as
 * --flag=VALUE (*inline_value). */
static const struct cli_option *find_option(const struct cli_option *options, const char *arg,
                                            const char **inline_value)
{
    *inline_value = NULL;
    for (const struct cli_option *o = options; o && o->name; o++) {
        size_t n = strlen(o->name);
        if (strcmp(arg, o->name) == 0 || (o->alias && strcmp(arg, o->alias) == 0))
            return o;
        if (o->inline_value && strncmp(arg, o->name, n) == 0 && arg[n] == '=') {
            *inline_value = arg + n + 1;
            return o;
        }
    }
    return NULL;
}

static int unknown_argument(const struct cli_parser *p, const char *arg)
{
    if (p->unknown)
        p->unknown(p->ctx, arg);
    else if (p->command)
        fprintf(stderr, "cordon: %s: unknown %s '%s'\n", p->command, p->word ? p->word : "argument",
                arg);
    p->usage(stderr, p->ctx);
    return CLI_PARSE_ERROR;
}

/* What giving option o (named arg) with value does to ctx. */
static int apply(const struct cli_option *o, void *ctx, const char *arg, const char *value)
{
    void *field = (char *)ctx + o->at;
    if (o->store == CLI_STORE_FLAG)
        *(bool *)field = true;
    else if (o->store == CLI_STORE_VALUE)
        *(const char **)field = value;
    else if (o->store == CLI_STORE_LIST && append_toml_string(field, value) < 0)
        return CLI_PARSE_ERROR;
    if (o->handle && o->handle(ctx, arg, value) < 0)
        return CLI_PARSE_ERROR;
    /* A configuration flag's setting; lists are made by cli_sets_finish. */
    if (o->key && o->store != CLI_STORE_LIST) {
        char *item;
        if ((value ? asprintf(&item, "\x1f%s\x1f%s=%s", o->name, o->key, value)
                   : asprintf(&item, "\x1f%s\x1f%s", o->name, o->key)) < 0 ||
            push(ctx, item) < 0)
            return CLI_PARSE_ERROR;
    }
    return CLI_PARSE_OK;
}

/* A configuration flag at argv[*i]: 1 when it was one, 0 when not, or
 * CLI_PARSE_ERROR (its value missing: said so). */
static int config_flag(const struct cli_parser *p, int argc, char **argv, int *i)
{
    const char *value;
    const struct cli_option *o = find_option(cli_config_options, argv[*i], &value);
    if (!o)
        return 0;
    if (o->value != CLI_NONE && !value) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "cordon: %s needs %s\n", o->name,
                    o->value == CLI_KEYSET ? "KEY=VALUE"
                    : o->value == CLI_FILE ? "a file"
                                           : "a value");
            return CLI_PARSE_ERROR;
        }
        value = argv[++*i];
    }
    return apply(o, p->sets, o->name, value) < 0 ? CLI_PARSE_ERROR : 1;
}

/* One argument at argv[*i] that is not a configuration flag. */
static int parse_one(const struct cli_parser *p, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        p->usage(stdout, p->ctx);
        return CLI_PARSE_HELP;
    }
    const char *inline_value;
    const struct cli_option *o = find_option(p->options, arg, &inline_value);
    if (o && o->value != CLI_NONE && *i + 1 >= argc)
        o = NULL;
    if (!o) {
        if (p->operands && arg[0] != '-')
            return p->operands(p->ctx, arg) < 0 ? CLI_PARSE_ERROR : CLI_PARSE_OK;
        if (p->operand && arg[0] != '-' && !*p->operand) {
            *p->operand = arg;
            return CLI_PARSE_OK;
        }
        return unknown_argument(p, arg);
    }
    const char *value = o->value != CLI_NONE ? argv[++*i] : NULL;
    return apply(o, p->ctx, arg, value);
}

int cli_parse(const struct cli_parser *p, int argc, char **argv, int *next)
{
    int i = 1, rc = CLI_PARSE_OK;
    for (; i < argc && rc == CLI_PARSE_OK; i++) {
        if (p->dash_dash && strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (p->options_first && argv[i][0] != '-')
            break;
        rc = p->sets ? config_flag(p, argc, argv, &i) : 0;
        rc = rc == 0 ? parse_one(p, argc, argv, &i) : rc < 0 ? rc : CLI_PARSE_OK;
    }
    if (rc == CLI_PARSE_OK && p->sets && cli_sets_finish(p->sets) < 0)
        rc = CLI_PARSE_ERROR;
    if (rc != CLI_PARSE_OK) {
        if (p->sets)
            cli_sets_free(p->sets);
        return rc < 0 ? CLI_PARSE_ERROR : rc;
    }
    if (next)
        *next = i;
    return CLI_PARSE_OK;
}

int cli_parse_status(int parsed)
{
    return parsed == CLI_PARSE_HELP ? 0 : CORDON_EXIT_FAILURE;
}

int cli_usage_status(int parsed)
{
    return parsed == CLI_PARSE_HELP ? 0 : CORDON_EXIT_USAGE;
}
