/* Command-line flags that are configuration: each becomes a session-layer
 * "key=value" for cfg_resolve, so flags, files and policy meet in one place
 * (and host-owned locks apply to flags too). Host context. */
#pragma once

#include <stddef.h>

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
