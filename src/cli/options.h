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

/* When argv[*i] is a configuration flag (--set K=V, --pids N, --memory MIB,
 * --file-size MIB, --open-files N, --cpu-seconds N, --cpus N, --readonly,
 * --backend B, --network MODE, --env-mode MODE, --name NAME, --fallback MODE,
 * --teardown T), appends its setting, moves *i to its last argument and
 * returns 1; 0 when it is not one; -1 (message printed) when its value is
 * missing. */
int cli_config_flag(int argc, char **argv, int *i, struct cli_sets *sets);
/* Adds the settings of repeatable flags (--allow-host, --publish). */
int cli_sets_finish(struct cli_sets *sets);
void cli_sets_free(struct cli_sets *sets);
/* Appends one "key=value" (taken). */
int cli_sets_push(struct cli_sets *sets, char *item);

/* Help text for those flags. */
extern const char cli_config_flags_help[];

/* One option of a command, for cli_parse(): its name (and short alias), and
 * what giving it does. An option with a value (`has_value`) whose value is
 * missing is an unknown argument, as every command treated it before the
 * table. */
struct cli_option {
    const char *name;  /* "--json" */
    const char *alias; /* "-f", or NULL */
    bool has_value;
    bool *flag;         /* set to true when given (options without a value) */
    const char **value; /* set to the value (options with one) */
    int (*handle)(void *ctx, const char *option, const char *value); /* <0: refused, the
                                                                           handler said why */
};

/* How one command reads its command line. */
struct cli_parser {
    /* Unknown arguments are reported as "cordon: COMMAND: unknown WORD 'ARG'"
     * followed by usage(stderr); without a command only usage is printed. */
    const char *command;
    const char *word; /* "argument" or "option" */
    void (*usage)(FILE *out, void *ctx);
    void *ctx;                        /* passed to usage and the handlers */
    const struct cli_option *options; /* ended by an entry without a name */
    struct cli_sets *sets;            /* the configuration flags, or NULL: none accepted */
    /* Options end at the first argument that does not start with '-'
     * (run, shell, tool: what follows is the command); with `dash_dash` a
     * "--" also ends them and is consumed. */
    bool options_first, dash_dash;
    /* Otherwise: where the one non-option argument goes (a second one is
     * unknown), or NULL: none is accepted. */
    const char **operand;
};

enum {
    CLI_PARSE_ERROR = -1, /* message and usage printed: exit with failure */
    CLI_PARSE_OK = 0,
    CLI_PARSE_HELP = 1, /* --help or -h: usage printed on stdout, exit 0 */
};
/* Reads argv[1..] by the parser's table; *next is the first argument not
 * read (options_first), argc otherwise. --help and -h are every command's.
 * On help or error the configuration flags read so far are freed. */
int cli_parse(const struct cli_parser *p, int argc, char **argv, int *next);
/* The exit status after a cli_parse that did not return CLI_PARSE_OK: 0
 * for help, else CORDON_EXIT_FAILURE. */
int cli_parse_status(int parsed);
