/* `cordon config`, `cordon trust` and `cordon untrust`: show the effective
 * configuration and where each value came from, validate one file, and
 * manage the trust record. Host context, unprivileged; only this layer
 * prints. */
#include "cli/commands.h"
#include "cli/options.h"
#include "supervisor/launch.h"
#include "supervisor/workspace.h"
#include "config.h"
#include "config/config.h"
#include "config/emit.h"
#include "config/trust-guard.h"
#include "config/trust-review.h"
#include "config/trust.h"
#include "util/cleanup.h"
#include "util/error.h"
#include "util/escape.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

enum { EXIT_CONFIG_ERROR = 1, EXIT_USAGE = 2 };

/* The workspace of dir, as `cordon run` would see it (git worktree root or
 * the directory), refusing unsafe roots. */
static int config_workspace_detect(const char *dir, char **root, struct cordon_error *err)
{
    struct workspace ws;
    if (workspace_detect(dir, &ws, err) < 0)
        return -1;
    *root = TAKE_PTR(ws.root);
    workspace_free(&ws);
    return 0;
}

static const char *xdg_config_home(void)
{
    const char *xdg = getenv("XDG_CONFIG_HOME");
    return xdg && xdg[0] == '/' ? xdg : NULL;
}

static int config_paths(char **ret_trust_file, char **ret_guard_dir, struct cordon_error *err)
{
    const char *xdg = xdg_config_home();
    const char *home = getenv("HOME");
    if (!xdg && !(home && home[0] == '/'))
        return error_set(err, 0, "neither XDG_CONFIG_HOME nor HOME is set");
    int n = xdg ? asprintf(ret_trust_file, "%s/cordon/trust.json", xdg)
                : asprintf(ret_trust_file, "%s/.config/cordon/trust.json", home);
    if (n < 0)
        return error_set(err, ENOMEM, "trust file");
    n = xdg ? asprintf(ret_guard_dir, "%s/cordon/trust-guard", xdg)
            : asprintf(ret_guard_dir, "%s/.config/cordon/trust-guard", home);
    return n < 0 ? error_set(err, ENOMEM, "trust guard") : 0;
}

static void config_usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out,
            "usage: cordon config [--explain] [--json] [OPTIONS]\n"
            "       cordon config --where [--json]\n"
            "       cordon config check [--as user|workspace|host] FILE\n\n%s",
            cli_config_flags_help);
}

static int print_json(json_t *json)
{
    if (!json)
        return EXIT_CONFIG_ERROR;
    char *text = json_dumps(json, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(json);
    if (!text)
        return EXIT_CONFIG_ERROR;
    puts(text);
    free(text);
    return 0;
}

struct config_options {
    bool explain, json, where;
    /* check */
    enum cfg_layer layer;
    bool layer_given;
};

/* check --as LAYER */
static int set_layer(void *ctx, const char *option, const char *as)
{
    (void)option;
    struct config_options *opts = ctx;
    enum cfg_layer *layer = &opts->layer;
    opts->layer_given = true;
    if (strcmp(as, "user") == 0)
        *layer = CFG_LAYER_USER;
    else if (strcmp(as, "workspace") == 0)
        *layer = CFG_LAYER_WORKSPACE;
    else if (strcmp(as, "host") == 0)
        *layer = CFG_LAYER_HOST_DEFAULT;
    else {
        config_usage(stderr, NULL);
        return -1;
    }
    return 0;
}

const struct cli_option cli_config_check_options[] = {
    {.name = "--as",
     .value = CLI_LAYER,
     .help = "check FILE with this layer's rules",
     .handle = set_layer},
    {0},
};

static int config_check(int argc, char **argv)
{
    struct config_options opts = {.layer = CFG_LAYER_USER};
    const char *file = NULL;
    const struct cli_parser parser = {
        .usage = config_usage, .ctx = &opts, .options = cli_config_check_options, .operand = &file};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_usage_status(parsed);
    enum cfg_layer layer = opts.layer;
    bool layer_given = opts.layer_given;
    if (!file) {
        config_usage(stderr, NULL);
        return EXIT_USAGE;
    }
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (!layer_given && strcmp(base, ".cordon.toml") == 0)
        layer = CFG_LAYER_WORKSPACE;
    struct cordon_error err = {0};
    _cleanup_free_ char *workspace = NULL;
    if (layer == CFG_LAYER_WORKSPACE) {
        _cleanup_free_ char *dir = strdup(file);
        if (!dir)
            return EXIT_CONFIG_ERROR;
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        if (config_workspace_detect(slash ? (dir[0] ? dir : "/") : ".", &workspace, &err) < 0) {
            log_error("%s", err.message);
            return EXIT_CONFIG_ERROR;
        }
    }
    if (cfg_check_file(file, layer, workspace, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    printf("%s: valid (%s layer)\n", file, cfg_layer_name(layer));
    return 0;
}

const struct cli_option cli_config_main_options[] = {
    CLI_FLAG("--explain", "the layer, file and line of each value", struct config_options, explain),
    CLI_FLAG("--json", "as JSON", struct config_options, json),
    CLI_FLAG("--where", "every file cordon looks at", struct config_options, where),
    {0},
};

int cmd_config(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "check") == 0)
        return config_check(argc - 1, argv + 1);
    struct config_options opts = {0};
    struct cli_sets sets = {0};
    int status = EXIT_USAGE;
    struct cordon_error err = {0};
    _cleanup_free_ char *workspace = NULL;
    const struct cli_parser parser = {.command = "config",
                                      .usage = config_usage,
                                      .ctx = &opts,
                                      .options = cli_config_main_options,
                                      .sets = &sets};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK) {
        if (parsed == CLI_PARSE_HELP)
            status = 0;
        goto out;
    }
    bool explain = opts.explain, json = opts.json, where = opts.where;

    status = EXIT_CONFIG_ERROR;
    if (config_workspace_detect(".", &workspace, &err) < 0) {
        log_error("%s", err.message);
        goto out;
    }
    struct cfg_inputs in = {
        .workspace = workspace,
        .environ = environ,
        .session_sets = (const char *const *)sets.items,
        .xdg_config_home = xdg_config_home(),
        .home = getenv("HOME"),
        .etc_dir = launch_etc_dir(),
    };
    struct cordon_config cfg;
    struct cfg_warnings warnings = {0};
    int ret = cfg_resolve(&in, &cfg, &warnings, &err);
    for (size_t w = 0; w < warnings.count; w++)
        log_warn("%s", warnings.items[w]);
    cfg_warnings_free(&warnings);
    if (ret < 0) {
        error_prefix(&err, "configuration");
        log_error("%s", err.message);
        cfg_free(&cfg);
        goto out;
    }
    if (where) {
        json_t *places = json_pack(
            "{s:s, s:s, s:s, s:b, s:[s,s], s:s, s:s, s:s}", "workspace", cfg.workspace, "user",
            cfg.user_file, "workspace_file", cfg.workspace_file, "workspace_trusted",
            cfg.workspace_trusted, "host_defaults", cfg.host_default_files[0],
            cfg.host_default_files[1], "project_policy", cfg.project_policy_file, "trust",
            cfg.trust_file, "trust_guard", cfg.trust_guard_dir);
        if (json) {
            status = print_json(places);
        } else {
            printf("workspace:        %s\n", cfg.workspace);
            printf("user settings:    %s\n", cfg.user_file);
            printf("workspace file:   %s (%s)\n", cfg.workspace_file,
                   cfg.workspace_trusted ? "trusted" : "not used");
            printf("host defaults:    %s\n", cfg.host_default_files[0]);
            printf("host defaults:    %s\n", cfg.host_default_files[1]);
            printf("project override: %s\n", cfg.project_policy_file);
            printf("trust record:     %s\n", cfg.trust_file);
            printf("trust guard:      %s\n", cfg.trust_guard_dir);
            json_decref(places);
            status = 0;
        }
    } else if (json) {
        status = print_json(cfg_to_json(&cfg, explain));
    } else {
        status = cfg_write_toml(&cfg, explain, stdout) < 0 ? EXIT_CONFIG_ERROR : 0;
    }
    cfg_free(&cfg);
out:
    cli_sets_free(&sets);
    return status;
}

static int trust_list(const char *trust_file)
{
    struct cordon_error err = {0};
    struct cfg_trust_list list = {0};
    if (cfg_trust_read(trust_file, &list, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    for (size_t i = 0; i < list.count; i++)
        printf("%s\t%s\t%s\n", list.items[i].workspace,
               list.items[i].sha256 ? list.items[i].sha256 : "(no .cordon.toml)",
               list.items[i].trusted_at);
    cfg_trust_list_free(&list);
    return 0;
}

/* The user's answer to "Trust it?" on the terminal: yes only for y/yes. */
static bool trust_confirmed(void)
{
    fputs("Trust this file? [y/N] ", stderr);
    fflush(stderr);
    char answer[16];
    if (!fgets(answer, sizeof(answer), stdin))
        return false;
    answer[strcspn(answer, "\n")] = '\0';
    for (char *c = answer; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    return strcmp(answer, "y") == 0 || strcmp(answer, "yes") == 0;
}

/* `cordon trust`: shows the file and what trusting it changes (stderr, so
 * stdout stays "trusted DIR"), asks on a terminal or needs --yes, then pins
 * the hash of exactly the bytes shown. */
static int trust_workspace(const char *trust_file, const char *guard_dir, const char *workspace,
                           bool yes)
{
    struct cordon_error err = {0};
    _cleanup_free_ char *file = NULL;
    if (asprintf(&file, "%s%s.cordon.toml", workspace, strcmp(workspace, "/") == 0 ? "" : "/") < 0)
        return EXIT_CONFIG_ERROR;
    _cleanup_free_ char *data = NULL;
    size_t length = 0;
    bool exists = false;
    if (cfg_read_workspace_file(file, &data, &length, &exists, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    if (!exists) {
        /* nothing to review: a file created later is not honoured until it
         * is trusted itself */
        if (cfg_trust_pin(trust_file, workspace, NULL, &err) < 0) {
            log_error("%s", err.message);
            return EXIT_CONFIG_ERROR;
        }
        printf("trusted %s\n", workspace);
        return 0;
    }
    char hex[TRUST_GUARD_HASH_SIZE];
    sha256_hex(data, length, hex);
    bool written = false;
    if (trust_guard_written(guard_dir, workspace, hex, &written, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    struct cfg_inputs in = {
        .workspace = workspace,
        .environ = environ,
        .xdg_config_home = xdg_config_home(),
        .home = getenv("HOME"),
        .etc_dir = launch_etc_dir(),
    };
    _cleanup_free_ char *summary = NULL;
    if (cfg_trust_review(&in, data, length, &summary, &err) < 0) {
        log_error("cannot review %s: %s", file, err.message);
        return EXIT_CONFIG_ERROR;
    }
    /* the file is the agent's to write, and a directory name below the
     * workspace its to choose: nothing reaches the terminal unescaped */
    size_t hidden = 0;
    _cleanup_free_ char *shown =
        text_escape_visible(data, length, TEXT_ESCAPE_KEEP_LAYOUT, &hidden);
    _cleanup_free_ char *name = text_escape_visible(file, strlen(file), 0, NULL);
    if (!shown || !name)
        return EXIT_CONFIG_ERROR;
    fprintf(stderr, "%s (%zu bytes, sha256 %s):\n", name, length, hex);
    if (hidden)
        fprintf(stderr,
                "note: it holds %zu control, invisible or invalid character(s), shown escaped "
                "(\\x.., \\u....)\n",
                hidden);
    if (written)
        fputs("warning: `.cordon.toml` was written by a sandboxed session; review it before "
              "trusting\n",
              stderr);
    fprintf(stderr, "----- begin %s -----\n%s%s----- end -----\n", name, shown,
            length && data[length - 1] != '\n' ? "\n" : "");
    fputs(summary, stderr);
    if (!yes && !isatty(STDIN_FILENO)) {
        log_error("not trusting %s: there is no terminal to confirm on; review the file and "
                  "what it changes above, then run `cordon trust --yes`",
                  workspace);
        return EXIT_CONFIG_ERROR;
    }
    if (!yes && !trust_confirmed()) {
        fprintf(stderr, "not trusted: %s\n", workspace);
        return EXIT_CONFIG_ERROR;
    }
    if (cfg_trust_pin(trust_file, workspace, hex, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    /* the user has reviewed this content: it is theirs now */
    if (trust_guard_forget(guard_dir, workspace, &err) < 0)
        log_warn("%s", err.message);
    printf("trusted %s\n", workspace);
    return 0;
}

struct trust_options {
    bool trust; /* or untrust */
    bool list, yes;
};

static void trust_usage(FILE *out, void *ctx)
{
    if (((struct trust_options *)ctx)->trust)
        fprintf(out, "usage: cordon trust [--yes] [DIR]\n"
                     "       cordon trust --list\n\n"
                     "Shows the workspace's .cordon.toml and what trusting it changes, asks,\n"
                     "then pins its SHA-256 (--yes: without asking). --list: the trusted\n"
                     "workspaces.\n");
    else
        fprintf(out, "usage: cordon untrust [DIR]\n\n"
                     "Removes the workspace's trust record.\n");
}

const struct cli_option cli_trust_options[] = {
    {.name = "--yes",
     .alias = "-y",
     .help = "trust without the review prompt",
     .store = CLI_STORE_FLAG,
     .at = offsetof(struct trust_options, yes)},
    CLI_FLAG("--list", "list the trusted workspaces", struct trust_options, list),
    {0},
};

static int trust_command(int argc, char **argv, bool trust)
{
    const char *dir = NULL;
    struct trust_options opts = {.trust = trust};
    const struct cli_parser parser = {.usage = trust_usage,
                                      .ctx = &opts,
                                      .options = trust ? cli_trust_options : NULL,
                                      .operand = &dir};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_usage_status(parsed);
    bool list = opts.list, yes = opts.yes;
    struct cordon_error err = {0};
    _cleanup_free_ char *trust_file = NULL;
    _cleanup_free_ char *guard_dir = NULL;
    if (config_paths(&trust_file, &guard_dir, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    if (list)
        return trust_list(trust_file);
    _cleanup_free_ char *workspace = NULL;
    if (config_workspace_detect(dir ? dir : ".", &workspace, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    if (trust)
        return trust_workspace(trust_file, guard_dir, workspace, yes);
    bool removed = false;
    if (cfg_trust_remove(trust_file, workspace, &removed, &err) < 0) {
        log_error("%s", err.message);
        return EXIT_CONFIG_ERROR;
    }
    printf("%s %s\n", removed ? "untrusted" : "was not trusted:", workspace);
    return 0;
}

int cmd_trust(int argc, char **argv)
{
    return trust_command(argc, argv, true);
}

int cmd_untrust(int argc, char **argv)
{
    return trust_command(argc, argv, false);
}
