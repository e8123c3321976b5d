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

int cli_sets_finish(struct cli_sets *sets)
{
    char *item;
    /* "\x1f--flag\x1f" before KEY=VALUE: configuration errors name the
     * flag (collect_session in config/resolve.c). */
    if (sets->allow_hosts) {
        if (asprintf(&item, "\x1f--allow-host\x1fnetwork.allow_hosts=[%s]", sets->allow_hosts) <
                0 ||
            push(sets, item) < 0)
            return -1;
    }
    if (sets->publish) {
        if (asprintf(&item, "\x1f--publish\x1fnetwork.publish_ports=[%s]", sets->publish) < 0 ||
            push(sets, item) < 0)
            return -1;
    }
    return 0;
}

int cli_config_flag(int argc, char **argv, int *i, struct cli_sets *sets)
{
    static const struct {
        const char *flag;
        size_t field;
    } repeatable[] = {
        {"--allow-host", offsetof(struct cli_sets, allow_hosts)},
        {"--publish", offsetof(struct cli_sets, publish)},
    };
    for (size_t r = 0; r < ARRAY_SIZE(repeatable); r++) {
        if (strcmp(argv[*i], repeatable[r].flag) != 0)
            continue;
        if (*i + 1 >= argc) {
            fprintf(stderr, "cordon: %s needs a value\n", argv[*i]);
            return -1;
        }
        char **list = (char **)((char *)sets + repeatable[r].field);
        return append_toml_string(list, argv[++*i]) < 0 ? -1 : 1;
    }
    if (strcmp(argv[*i], "--net-audit-log") == 0 || strcmp(argv[*i], "--net-hosts-file") == 0) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "cordon: %s needs a file\n", argv[*i]);
            return -1;
        }
        if (argv[*i][6] == 'a')
            sets->net_audit_log = argv[*i + 1];
        else
            sets->net_hosts_file = argv[*i + 1];
        ++*i;
        return 1;
    }
    static const struct {
        const char *flag, *key;
    } with_value[] = {
        {"--pids", "limits.pids"},
        {"--memory", "limits.memory_mib"},
        {"--file-size", "limits.file_size_mib"},
        {"--open-files", "limits.open_files"},
        {"--cpu-seconds", "limits.cpu_seconds"},
        {"--cpus", "limits.cpus"},
        {"--backend", "backend"},
        {"--network", "network.mode"},
        {"--env-mode", "env.mode"},
        {"--name", "sandbox_name"},
        {"--fallback", "fallback_mode"},
        {"--teardown", "teardown"},
    };
    const char *arg = argv[*i];
    if (strcmp(arg, "--readonly") == 0)
        return push(sets, strdup("\x1f--readonly\x1fworkspace_readonly=true")) < 0 ? -1 : 1;
    if (strcmp(arg, "--review") == 0)
        return push(sets, strdup("\x1f--review\x1fworkspace_mode=review")) < 0 ? -1 : 1;
    if (strncmp(arg, "--set=", 6) == 0)
        return push(sets, strdup(arg + 6)) < 0 ? -1 : 1;
    if (strcmp(arg, "--set") == 0) {
        if (*i + 1 >= argc) {
            fprintf(stderr, "cordon: --set needs KEY=VALUE\n");
            return -1;
        }
        return push(sets, strdup(argv[++*i])) < 0 ? -1 : 1;
    }
    for (size_t f = 0; f < ARRAY_SIZE(with_value); f++) {
        size_t n = strlen(with_value[f].flag);
        const char *value = NULL;
        if (strcmp(arg, with_value[f].flag) == 0) {
            if (*i + 1 >= argc) {
                fprintf(stderr, "cordon: %s needs a value\n", arg);
                return -1;
            }
            value = argv[++*i];
        } else if (strncmp(arg, with_value[f].flag, n) == 0 && arg[n] == '=') {
            value = arg + n + 1;
        } else {
            continue;
        }
        char *item;
        if (asprintf(&item, "\x1f%s\x1f%s=%s", with_value[f].flag, with_value[f].key, value) < 0)
            return -1;
        return push(sets, item) < 0 ? -1 : 1;
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

static const struct cli_option *find_option(const struct cli_option *options, const char *arg)
{
    for (const struct cli_option *o = options; o && o->name; o++)
        if (strcmp(arg, o->name) == 0 || (o->alias && strcmp(arg, o->alias) == 0))
            return o;
    return NULL;
}

static int unknown_argument(const struct cli_parser *p, const char *arg)
{
    if (p->command)
        fprintf(stderr, "cordon: %s: unknown %s '%s'\n", p->command, p->word, arg);
    p->usage(stderr, p->ctx);
    return CLI_PARSE_ERROR;
}

/* One argument at argv[*i] that is not a configuration flag. */
static int parse_one(const struct cli_parser *p, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
        p->usage(stdout, p->ctx);
        return CLI_PARSE_HELP;
    }
    const struct cli_option *o = find_option(p->options, arg);
    if (o && o->has_value && *i + 1 >= argc)
        o = NULL;
    if (!o) {
        if (p->operand && arg[0] != '-' && !*p->operand) {
            *p->operand = arg;
            return CLI_PARSE_OK;
        }
        return unknown_argument(p, arg);
    }
    const char *value = o->has_value ? argv[++*i] : NULL;
    if (o->flag)
        *o->flag = true;
    if (o->value)
        *o->value = value;
    if (o->handle && o->handle(p->ctx, arg, value) < 0)
        return CLI_PARSE_ERROR;
    return CLI_PARSE_OK;
}

int cli_parse(const struct cli_parser *p, int argc, char **argv, int *next)
{
    int i = 1;
    for (; i < argc; i++) {
        if (p->dash_dash && strcmp(argv[i], "--") == 0) {
            i++;
            break;
        }
        if (p->options_first && argv[i][0] != '-')
            break;
        int rc = p->sets ? cli_config_flag(argc, argv, &i, p->sets) : 0;
        if (rc > 0)
            continue;
        if (rc == 0)
            rc = parse_one(p, argc, argv, &i);
        if (rc != CLI_PARSE_OK) {
            if (p->sets)
                cli_sets_free(p->sets);
            return rc < 0 ? CLI_PARSE_ERROR : rc;
        }
    }
    if (next)
        *next = i;
    return CLI_PARSE_OK;
}

int cli_parse_status(int parsed)
{
    return parsed == CLI_PARSE_HELP ? 0 : CORDON_EXIT_FAILURE;
}
