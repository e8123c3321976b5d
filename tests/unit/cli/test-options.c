/* Unit tests for the command-line parser (src/cli/options.c): what a
 * command sees after cli_parse, from the same tables the completions are
 * printed from. */
#include "cli/options.h"
#include "tap.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

struct opts {
    bool json;
    const char *name;
    const char *seen[8]; /* operands, in order */
    int nseen;
    int usage_out, usage_err; /* usage printed on stdout, stderr */
    const char *unknown;
    const char *handled;
};

static void usage(FILE *out, void *ctx)
{
    struct opts *o = ctx;
    if (out == stdout)
        o->usage_out++;
    else
        o->usage_err++;
}

static int operand(void *ctx, const char *arg)
{
    struct opts *o = ctx;
    if (o->nseen >= 8)
        return -1;
    o->seen[o->nseen++] = arg;
    return 0;
}

static void unknown(void *ctx, const char *arg)
{
    ((struct opts *)ctx)->unknown = arg;
}

static int refuse_zero(void *ctx, const char *option, const char *value)
{
    ((struct opts *)ctx)->handled = option;
    return strcmp(value, "0") == 0 ? -1 : 0;
}

static int note(void *ctx, const char *option, const char *value)
{
    (void)value;
    ((struct opts *)ctx)->handled = option;
    return 0;
}

static const struct cli_option options[] = {
    CLI_FLAG("--json", "as JSON", struct opts, json),
    {.name = "--name",
     .alias = "-n",
     .value = CLI_TEXT,
     .help = "a name",
     .store = CLI_STORE_VALUE,
     .at = offsetof(struct opts, name)},
    {.name = "--count", .value = CLI_TEXT, .help = "not 0", .handle = refuse_zero},
    {.name = "--quiet", .hidden = true, .handle = note},
    {0},
};

static int parse(const struct cli_parser *p, char **argv, int *next)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    return cli_parse(p, argc, argv, next);
}

static void config_flags(void)
{
    struct opts o = {0};
    struct cli_sets sets = {0};
    const struct cli_parser p = {.command = "t", .usage = usage, .ctx = &o, .sets = &sets};
    char *argv[] = {"t",
                    "--pids",
                    "5",
                    "--memory=100",
                    "--readonly",
                    "--set",
                    "a.b=1",
                    "--set=c=2",
                    "--allow-host",
                    "x.org",
                    "--allow-host",
                    "q\"uote",
                    "--publish",
                    "80",
                    "--net-audit-log",
                    "audit.jsonl",
                    "--review",
                    NULL};
    is_int(parse(&p, argv, NULL), CLI_PARSE_OK, "configuration flags parse");
    is_int((int)sets.count, 8, "one setting per flag, the repeatable ones folded into one each");
    if (sets.count == 8) {
        is_str(sets.items[0], "\x1f--pids\x1flimits.pids=5", "--pids N names its flag and key");
        is_str(sets.items[1], "\x1f--memory\x1flimits.memory_mib=100", "--memory=N is the same");
        is_str(sets.items[2], "\x1f--readonly\x1fworkspace_readonly=true",
               "a flag without a value sets its key's value");
        is_str(sets.items[3], "a.b=1", "--set KEY=VALUE is the setting as typed");
        is_str(sets.items[4], "c=2", "--set=KEY=VALUE too");
        is_str(sets.items[5], "\x1f--review\x1fworkspace_mode=review", "--review");
        is_str(sets.items[6], "\x1f--allow-host\x1fnetwork.allow_hosts=[\"x.org\", \"q\\\"uote\"]",
               "--allow-host twice is one TOML array, its strings escaped");
        is_str(sets.items[7], "\x1f--publish\x1fnetwork.publish_ports=[\"80\"]",
               "--publish is folded in too");
    }
    is_str(sets.net_audit_log, "audit.jsonl", "--net-audit-log FILE is kept, not a setting");
    cli_sets_free(&sets);

    char *missing[] = {"t", "--pids", "3", "--memory", NULL};
    is_int(parse(&p, missing, NULL), CLI_PARSE_ERROR, "a configuration flag without its value");
    is_int((int)sets.count, 0, "... frees what was read");
    char *eq_list[] = {"t", "--publish=80", NULL};
    is_int(parse(&p, eq_list, NULL), CLI_PARSE_ERROR,
           "--publish=VALUE is not a form the table offers: unknown");
    is_int(o.usage_err, 1, "... with the usage on stderr");
}

static void own_options(void)
{
    struct opts o = {0};
    const struct cli_parser p = {
        .command = "t", .usage = usage, .ctx = &o, .options = options, .operand = &o.name};
    char *argv[] = {"t", "--json", "-n", "box", "--count", "2", "--quiet", NULL};
    is_int(parse(&p, argv, NULL), CLI_PARSE_OK, "own options parse");
    ok(o.json, "a flag sets its field");
    is_str(o.name, "box", "a value by its alias sets its field");
    is_str(o.handled, "--quiet", "a hidden option is accepted (its handler ran)");

    struct opts z = {0};
    const struct cli_parser pz = {.usage = usage, .ctx = &z, .options = options};
    char *zero[] = {"t", "--count", "0", NULL};
    is_int(parse(&pz, zero, NULL), CLI_PARSE_ERROR, "a handler's refusal is an error");
    is_int(z.usage_err, 0, "... that the handler explained (no usage)");
    char *bare[] = {"t", "--count", NULL};
    is_int(parse(&pz, bare, NULL), CLI_PARSE_ERROR, "an option without its value is unknown");
    is_int(z.usage_err, 1, "... with the usage on stderr");
    char *config[] = {"t", "--pids", "3", NULL};
    is_int(parse(&pz, config, NULL), CLI_PARSE_ERROR,
           "a command without sets takes no configuration flag");
    char *help[] = {"t", "--json", "-h", "--bogus", NULL};
    is_int(parse(&pz, help, NULL), CLI_PARSE_HELP, "-h is every command's");
    is_int(z.usage_out, 1, "... the usage on stdout");

    struct opts two = {0};
    const struct cli_parser p2 = {.usage = usage, .ctx = &two, .operand = &two.name};
    char *operands[] = {"t", "a", "b", NULL};
    is_int(parse(&p2, operands, NULL), CLI_PARSE_ERROR, "a second operand is unknown");
    is_str(two.name, "a", "... the first was taken");
}

static void operands_and_ends(void)
{
    struct opts o = {0};
    const struct cli_parser p = {.usage = usage,
                                 .ctx = &o,
                                 .options = options,
                                 .unknown = unknown,
                                 .dash_dash = true,
                                 .operands = operand};
    char *argv[] = {"t", "n", "--json", "p1", "--", "-x", NULL};
    int next = -1;
    is_int(parse(&p, argv, &next), CLI_PARSE_OK, "operands between options");
    ok(o.nseen == 2 && strcmp(o.seen[0], "n") == 0 && strcmp(o.seen[1], "p1") == 0,
       "every operand reaches the handler, in order");
    is_int(next, 5, "\"--\" ends the options and is consumed");
    char *bad[] = {"t", "--zap", NULL};
    is_int(parse(&p, bad, NULL), CLI_PARSE_ERROR, "an unknown option");
    is_str(o.unknown, "--zap", "... goes to the command's own wording");
    is_int(o.usage_err, 1, "... then the usage");

    struct opts f = {0};
    const struct cli_parser pf = {
        .usage = usage, .ctx = &f, .options = options, .options_first = true, .dash_dash = true};
    char *cmd[] = {"t", "--json", "ls", "--json", NULL};
    is_int(parse(&pf, cmd, &next), CLI_PARSE_OK, "options first");
    is_int(next, 2, "... end at the command, whose own options are left alone");
}

int main(void)
{
    config_flags();
    own_options();
    operands_and_ends();
    return tap_done();
}
