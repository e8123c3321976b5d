/* Command-line flags that are configuration: each becomes a session-layer
 * "key=value" for cfg_resolve, so flags, files and policy meet in one place
 * (and host-owned locks apply to flags too). Host context. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cli_sets {
    char **items; /* NULL-terminated */
    size_t count, capacity;
    /* Repeatable flags, folded into one list setting by cli_sets_finish(). */
    char *allow_hosts; /* TOML array body: "\"a\", \"b\"" */
    char *publish;
    /* Not configuration: where this run's network decisions are logged, and
     * a hosts file the proxy resolves from instead of DNS. */
    const char *net_audit_log;
    const char *net_hosts_file;
};

/* Adds the settings of repeatable flags (--allow-host, --publish);
 * cli_parse does this once it read the command line. */
int cli_sets_finish(struct cli_sets *sets);
void cli_sets_free(struct cli_sets *sets);
/* Appends one "key=value" (taken). */
int cli_sets_push(struct cli_sets *sets, char *item);

/* Help text for those flags. */
extern const char cli_config_flags_help[];

/* What a value (of an option or a positional argument) is: what `cordon
 * completions` offers for it (help.c). */
enum cli_value {
    CLI_NONE,     /* a flag without a value */
    CLI_TEXT,     /* free text, nothing to offer */
    CLI_FILE,     /* a path */
    CLI_DIR,      /* a directory */
    CLI_KEYSET,   /* KEY=VALUE with KEY a configuration key */
    CLI_BACKEND,  /* the schema's backend names */
    CLI_NETWORK,  /* deny | allowlist | open */
    CLI_ENV_MODE, /* strict | allowlist | passthrough */
    CLI_FALLBACK, /* block | host */
    CLI_TEARDOWN, /* remove | stop | none */
    CLI_LAYER,    /* user | workspace | host */
    CLI_TOOL,     /* read write edit ls find grep bash */
    CLI_SANDBOX,  /* any sandbox cordon made */
    CLI_STOPPED,  /* a sandbox that is not running */
    CLI_SHELL,    /* bash | zsh | fish */
    CLI_COMMAND,  /* a cordon command */
    CLI_EXEC,     /* a program and its arguments */
};

/* Where giving an option leaves its mark in the parser's ctx (at `at`). */
enum cli_store {
    CLI_STORE_NONE,
    CLI_STORE_FLAG,  /* bool: true */
    CLI_STORE_VALUE, /* const char *: the value */
    CLI_STORE_LIST,  /* char *: the value appended to a TOML array body */
};

/* One option of a command, for cli_parse(), and its line in the command's
 * table of help.c (completions, `cordon completions --table`): written
 * once, here. A table is static and ended by an entry without a name; what
 * an option sets is an offset into the parser's ctx. An option with a value
 * whose value is missing is an unknown argument, as every command treated
 * it before the table. */
struct cli_option {
    const char *name;     /* "--json" */
    const char *alias;    /* "-f", or NULL */
    enum cli_value value; /* CLI_NONE: takes no value */
    const char *help;     /* a few words, for the completions */
    bool hidden;          /* accepted, but not this command's (not in the table) */
    enum cli_store store;
    size_t at;                                                       /* offsetof(ctx, field) */
    int (*handle)(void *ctx, const char *option, const char *value); /* <0: refused, the
                                                                           handler said why */
    /* Configuration flags: the session setting made, "KEY" (=VALUE added)
     * or "KEY=VALUE" for a flag without a value; `inline_value`: given as
     * --flag=VALUE too. */
    const char *key;
    bool inline_value;
};

/* An option without a value that sets the bool FIELD of the parser's ctx,
 * of type TYPE. */
#define CLI_FLAG(option, text, type, field)                                                        \
    {                                                                                              \
        .name = option, .help = text, .store = CLI_STORE_FLAG, .at = offsetof(type, field)         \
    }

/* The configuration flags (--set K=V, --pids N, --memory MIB, --file-size
 * MIB, --open-files N, --cpu-seconds N, --cpus N, --readonly, --backend B,
 * --network MODE, --allow-host, --publish, --net-audit-log, --net-hosts-file,
 * --env-mode MODE, --name NAME, --fallback MODE, --teardown T, --review);
 * their ctx is the parser's `sets`. A missing value is "--flag needs a
 * value". */
extern const struct cli_option cli_config_options[];

/* How one command reads its command line. */
struct cli_parser {
    /* Unknown arguments are reported as "cordon: COMMAND: unknown WORD 'ARG'"
     * followed by usage(stderr); without a command only usage is printed. */
    const char *command;
    const char *word; /* "option", or NULL: "argument" */
    void (*usage)(FILE *out, void *ctx);
    void *ctx;                        /* passed to usage and the handlers */
    const struct cli_option *options; /* ended by an entry without a name */
    struct cli_sets *sets;            /* the configuration flags, or NULL: none accepted */
    /* Optional: says what is wrong with an unknown argument instead of the
     * line above (usage follows). */
    void (*unknown)(void *ctx, const char *arg);
    /* Options end at the first argument that does not start with '-'
     * (run, shell, tool: what follows is the command); with `dash_dash` a
     * "--" also ends them and is consumed. */
    bool options_first, dash_dash;
    /* Otherwise: where the one non-option argument goes (a second one is
     * unknown), or NULL: none is accepted. */
    const char **operand;
    /* Or: takes every non-option argument (<0: refused, it said why). */
    int (*operands)(void *ctx, const char *arg);
};

enum {
    CLI_PARSE_ERROR = -1, /* message and usage printed: exit with failure */
    CLI_PARSE_OK = 0,
    CLI_PARSE_HELP = 1, /* --help or -h: usage printed on stdout, exit 0 */
};
/* Reads argv[1..] by the parser's table; *next is the first argument not
 * read (options_first, or after "--"), argc otherwise. --help and -h are
 * every command's. With sets, the repeatable flags are folded in at the end
 * (cli_sets_finish); on help or error the configuration flags read so far
 * are freed. */
int cli_parse(const struct cli_parser *p, int argc, char **argv, int *next);
/* The exit status after a cli_parse that did not return CLI_PARSE_OK: 0
 * for help, else CORDON_EXIT_FAILURE (cli_usage_status: CORDON_EXIT_USAGE,
 * for the commands without a status of their own). */
int cli_parse_status(int parsed);
int cli_usage_status(int parsed);
