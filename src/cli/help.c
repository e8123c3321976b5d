/* `cordon help [COMMAND]` and the hidden `cordon completions SHELL`: the
 * commands, their options and what each option's value is, in one table that
 * the shell completions are generated from and that tests/unit/cli-docs.sh
 * holds against every `COMMAND --help` and the man page. Host context. */
#include "cli/commands.h"
#include "config/config.h"
#include "supervisor/state.h"
#include "util/cleanup.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a value (of an option or a positional argument) is, for completion. */
enum value_kind {
    V_NONE,     /* a flag without a value */
    V_TEXT,     /* free text, nothing to offer */
    V_FILE,     /* a path */
    V_DIR,      /* a directory */
    V_KEYSET,   /* KEY=VALUE with KEY a configuration key */
    V_BACKEND,  /* ns | vm | docker */
    V_NETWORK,  /* deny | allowlist | open */
    V_ENV_MODE, /* strict | allowlist | passthrough */
    V_FALLBACK, /* block | host */
    V_TEARDOWN, /* remove | stop | none */
    V_LAYER,    /* user | workspace | host */
    V_TOOL,     /* read write edit ls find grep bash */
    V_SANDBOX,  /* any sandbox cordon made */
    V_STOPPED,  /* a sandbox that is not running */
    V_SHELL,    /* bash | zsh | fish */
    V_COMMAND,  /* a cordon command */
    V_EXEC,     /* a program and its arguments */
};

/* Values that are a configuration key's choices come from the schema, so
 * the completions follow it (and no backend is named outside the table). */
static const struct {
    bool set;
    enum cfg_key key;
} value_keys[] = {
    [V_BACKEND] = {true, CFG_BACKEND},   [V_NETWORK] = {true, CFG_NETWORK_MODE},
    [V_ENV_MODE] = {true, CFG_ENV_MODE}, [V_FALLBACK] = {true, CFG_FALLBACK_MODE},
    [V_TEARDOWN] = {true, CFG_TEARDOWN},
};

static const char *const value_words[][8] = {
    [V_LAYER] = {"user", "workspace", "host"},
    [V_TOOL] = {"read", "write", "edit", "ls", "find", "grep", "bash"},
    [V_SHELL] = {"bash", "zsh", "fish"},
};

static const char *const kind_names[] = {
    [V_NONE] = "none",         [V_TEXT] = "text",         [V_FILE] = "file",
    [V_DIR] = "dir",           [V_KEYSET] = "keyset",     [V_BACKEND] = "backend",
    [V_NETWORK] = "network",   [V_ENV_MODE] = "env-mode", [V_FALLBACK] = "fallback",
    [V_TEARDOWN] = "teardown", [V_LAYER] = "layer",       [V_TOOL] = "tool",
    [V_SANDBOX] = "sandbox",   [V_STOPPED] = "stopped",   [V_SHELL] = "shell",
    [V_COMMAND] = "command",   [V_EXEC] = "exec",
};

struct option_spec {
    const char *name; /* "--pids" */
    enum value_kind value;
    const char *help;
};

#define OPT_END                                                                                    \
    {                                                                                              \
        NULL, V_NONE, NULL                                                                         \
    }
/* The configuration flags of src/cli/options.c (cli_config_flags_help). */
#define CONFIG_OPTIONS                                                                             \
    {"--set", V_KEYSET, "any configuration key (repeatable)"},                                     \
        {"--pids", V_TEXT, "processes in the sandbox"}, {"--memory", V_TEXT, "memory in MiB"},     \
        {"--file-size", V_TEXT, "largest file in MiB"},                                            \
        {"--open-files", V_TEXT, "open files per process"},                                        \
        {"--cpu-seconds", V_TEXT, "CPU time per process"}, {"--cpus", V_TEXT, "CPU quota"},        \
        {"--readonly", V_NONE, "the workspace read-only"},                                         \
        {"--backend", V_BACKEND, "the sandbox backend"},                                           \
        {"--network", V_NETWORK, "the network mode"},                                              \
        {"--allow-host", V_TEXT, "an allowlist entry (repeatable)"},                               \
        {"--publish", V_TEXT, "publish a sandbox port (repeatable)"},                              \
        {"--net-audit-log", V_FILE, "network decisions as JSON lines"},                            \
        {"--net-hosts-file", V_FILE, "resolve names for the proxy from this file"},                \
        {"--env-mode", V_ENV_MODE, "the environment mode"},                                        \
        {"--name", V_TEXT, "the name of the sandbox"},                                             \
        {"--fallback", V_FALLBACK, "after a sandbox failure"},                                     \
        {"--teardown", V_TEARDOWN, "what stays after the session"},                                \
    {                                                                                              \
        "--review", V_NONE, "changes held apart until cordon apply"                                \
    }

struct command_spec {
    const char *name;
    bool hidden;
    enum value_kind positional; /* what its non-option arguments are */
    const struct option_spec options[32];
};

static const struct command_spec specs[] = {
    {"run",
     false,
     V_EXEC,
     {{"--pty", V_NONE, "force a terminal"},
      {"--no-pty", V_NONE, "refuse a terminal"},
      {"--help", V_NONE, "this text"},
      CONFIG_OPTIONS,
      OPT_END}},
    {"shell",
     false,
     V_STOPPED,
     {{"--pty", V_NONE, "force a terminal"},
      {"--no-pty", V_NONE, "refuse a terminal"},
      {"--help", V_NONE, "this text"},
      CONFIG_OPTIONS,
      OPT_END}},
    {"config",
     false,
     V_NONE,
     {{"--explain", V_NONE, "the layer, file and line of each value"},
      {"--json", V_NONE, "as JSON"},
      {"--where", V_NONE, "every file cordon looks at"},
      {"--as", V_LAYER, "check FILE with this layer's rules"},
      {"--help", V_NONE, "this text"},
      CONFIG_OPTIONS,
      OPT_END}},
    {"trust",
     false,
     V_DIR,
     {{"--yes", V_NONE, "trust without the review prompt"},
      {"--list", V_NONE, "list the trusted workspaces"},
      {"--help", V_NONE, "this text"},
      OPT_END}},
    {"untrust", false, V_DIR, {{"--help", V_NONE, "this text"}, OPT_END}},
    {"tool",
     false,
     V_TOOL,
     {{"--batch", V_NONE, "one call per line on stdin"},
      {"--help", V_NONE, "this text"},
      CONFIG_OPTIONS,
      OPT_END}},
    {"mcp",
     false,
     V_NONE,
     {{"--lazy", V_NONE, "start the sandbox at the first tool call"},
      {"--attach", V_STOPPED, "go back into a kept sandbox"},
      {"--off", V_NONE, "start in host mode (unsandboxed)"},
      {"--headless", V_NONE, "refuse host execution requests"},
      {"--help", V_NONE, "this text"},
      CONFIG_OPTIONS,
      OPT_END}},
    {"ls",
     false,
     V_NONE,
     {{"--json", V_NONE, "as JSON"}, {"--help", V_NONE, "this text"}, OPT_END}},
    {"rm", false, V_STOPPED, {{"--help", V_NONE, "this text"}, OPT_END}},
    {"gc",
     false,
     V_NONE,
     {{"--hours", V_TEXT, "age in hours"}, {"--help", V_NONE, "this text"}, OPT_END}},
    {"verify",
     false,
     V_SANDBOX,
     {{"--json", V_NONE, "the report as JSON"},
      {"--help", V_NONE, "this text"},
      CONFIG_OPTIONS,
      OPT_END}},
    {"changes",
     false,
     V_SANDBOX,
     {{"--call", V_TEXT, "what tool call N changed"}, {"--help", V_NONE, "this text"}, OPT_END}},
    {"diff",
     false,
     V_SANDBOX,
     {{"--stat", V_NONE, "a summary per file"},
      {"--color", V_NONE, "colour even off a terminal"},
      {"--no-color", V_NONE, "no colour"},
      {"--call", V_TEXT, "what tool call N changed"},
      {"--help", V_NONE, "this text"},
      OPT_END}},
    {"apply",
     false,
     V_SANDBOX,
     {{"--at", V_TEXT, "a running session's checkpoint shown"},
      {"--help", V_NONE, "this text"},
      OPT_END}},
    {"discard", false, V_STOPPED, {{"--help", V_NONE, "this text"}, OPT_END}},
    {"rewind",
     false,
     V_SANDBOX,
     {{"--to", V_TEXT, "the tool call to return to"},
      {"--force", V_NONE, "direct mode: restore a file changed since, too"},
      {"--help", V_NONE, "this text"},
      OPT_END}},
    {"fork", false, V_SANDBOX, {{"--help", V_NONE, "this text"}, OPT_END}},
    {"log",
     false,
     V_SANDBOX,
     {{"--json", V_NONE, "one JSON object per line"},
      {"--follow", V_NONE, "keep printing while the session runs"},
      {"--help", V_NONE, "this text"},
      OPT_END}},
    {"doctor",
     false,
     V_NONE,
     {{"--json", V_NONE, "the report as JSON"},
      {"--help", V_NONE, "this text"},
      CONFIG_OPTIONS,
      OPT_END}},
    {"help", false, V_COMMAND, {OPT_END}},
    {"completions", true, V_SHELL, {OPT_END}},
};

/* Options of `cordon` itself, before the command. */
static const struct option_spec global_options[] = {
    {"--debug", V_NONE, "what was detected, applied, and timings"},
    {"--version", V_NONE, "the version and the commit it was built from"},
    {"--help", V_NONE, "the commands"},
    OPT_END,
};

static const struct command_spec *find_spec(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (strcmp(specs[i].name, name) == 0)
            return &specs[i];
    }
    return NULL;
}

int cmd_help(int argc, char **argv)
{
    if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
        bool help = argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0);
        fprintf(help ? stdout : stderr, "usage: cordon help [COMMAND]\n\n"
                                        "Lists the commands, or describes COMMAND (the same as\n"
                                        "`cordon COMMAND --help`).\n");
        return help ? 0 : CORDON_EXIT_USAGE;
    }
    if (argc < 2) {
        char *args[] = {"cordon", "--help", NULL};
        return cli_main(2, args);
    }
    const struct command_spec *spec = find_spec(argv[1]);
    if (!spec || spec->hidden || strcmp(spec->name, "help") == 0) {
        fprintf(stderr, "cordon: help: unknown command '%s' (`cordon help` lists them)\n", argv[1]);
        return CORDON_EXIT_USAGE;
    }
    char *args[] = {"cordon", argv[1], "--help", NULL};
    return cli_main(3, args);
}

/* The words a value kind offers, one per line (`cordon completions
 * --values KIND`): fixed words, configuration keys, sandbox names. */
static int print_values(const char *kind_name)
{
    size_t kind = 0;
    for (; kind < ARRAY_SIZE(kind_names); kind++) {
        if (kind_names[kind] && strcmp(kind_names[kind], kind_name) == 0)
            break;
    }
    if (kind == ARRAY_SIZE(kind_names)) {
        fprintf(stderr, "cordon: completions: unknown value kind '%s'\n", kind_name);
        return CORDON_EXIT_USAGE;
    }
    if (kind == V_KEYSET) {
        for (int k = 0; k < CFG_KEY_COUNT; k++)
            printf("%s=\n", cfg_key_name((enum cfg_key)k));
    } else if (kind == V_COMMAND) {
        for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
            if (!specs[i].hidden)
                printf("%s\n", specs[i].name);
        }
    } else if (kind == V_SANDBOX || kind == V_STOPPED) {
        struct cordon_error err = {0};
        struct state_entry *entries;
        size_t n;
        if (state_list(&entries, &n, &err) < 0)
            return 0; /* nothing to offer is not an error while completing */
        for (size_t i = 0; i < n; i++) {
            if (kind == V_SANDBOX || !entries[i].locked)
                printf("%s\n", entries[i].name);
        }
        free(entries);
    } else if (kind < ARRAY_SIZE(value_keys) && value_keys[kind].set) {
        for (int w = 0; cfg_enum_name(value_keys[kind].key, w); w++)
            printf("%s\n", cfg_enum_name(value_keys[kind].key, w));
    } else if (kind < ARRAY_SIZE(value_words)) {
        for (size_t w = 0; w < 8 && value_words[kind][w]; w++)
            printf("%s\n", value_words[kind][w]);
    }
    return 0;
}

/* The table itself: "COMMAND OPTION KIND" lines (COMMAND "-" for cordon's
 * own options, OPTION "-" for the positional arguments). The man page test
 * and the completion scripts read this. */
static void print_table(void)
{
    for (size_t o = 0; global_options[o].name; o++)
        printf("- %s %s\n", global_options[o].name, kind_names[global_options[o].value]);
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (specs[i].hidden)
            continue;
        printf("%s - %s\n", specs[i].name, kind_names[specs[i].positional]);
        for (size_t o = 0; specs[i].options[o].name; o++)
            printf("%s %s %s\n", specs[i].name, specs[i].options[o].name,
                   kind_names[specs[i].options[o].value]);
    }
}

static void print_bash(void)
{
    printf("# bash completion for cordon, generated by `cordon completions bash`.\n"
           "_cordon() {\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    local cmd='' i w opts kind optval=''\n"
           "    for ((i = 1; i < COMP_CWORD; i++)); do\n"
           "        w=${COMP_WORDS[i]}\n"
           "        case $w in -*) ;; *) cmd=$w; break ;; esac\n"
           "    done\n"
           "    if [ -z \"$cmd\" ]; then\n"
           "        case $cur in\n"
           "            -*) COMPREPLY=($(compgen -W '");
    for (size_t o = 0; global_options[o].name; o++)
        printf("%s%s", o ? " " : "", global_options[o].name);
    printf("' -- \"$cur\")) ;;\n"
           "            *) COMPREPLY=($(compgen -W '");
    bool first = true;
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (!specs[i].hidden) {
            printf("%s%s", first ? "" : " ", specs[i].name);
            first = false;
        }
    }
    printf("' -- \"$cur\")) ;;\n"
           "        esac\n"
           "        return\n"
           "    fi\n"
           "    case $cmd in\n");
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (specs[i].hidden)
            continue;
        printf("        %s) opts='", specs[i].name);
        for (size_t o = 0; specs[i].options[o].name; o++)
            printf("%s%s", o ? " " : "", specs[i].options[o].name);
        printf("'\n            case $prev in\n");
        for (size_t o = 0; specs[i].options[o].name; o++) {
            if (specs[i].options[o].value != V_NONE)
                printf("                %s) kind=%s optval=1 ;;\n", specs[i].options[o].name,
                       kind_names[specs[i].options[o].value]);
        }
        printf("                *) kind=%s ;;\n            esac ;;\n",
               kind_names[specs[i].positional]);
    }
    printf("    esac\n"
           "    if [ -z \"$optval\" ] && [[ $cur == -* ]]; then\n"
           "        COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    case $kind in\n"
           "        file) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
           "        dir) COMPREPLY=($(compgen -d -- \"$cur\")) ;;\n"
           "        exec) COMPREPLY=($(compgen -c -- \"$cur\")) ;;\n"
           "        none) COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\")) ;;\n"
           "        text) COMPREPLY=() ;;\n"
           "        keyset) compopt -o nospace 2>/dev/null\n"
           "            COMPREPLY=($(compgen -W \"$(cordon completions --values keyset "
           "2>/dev/null)\" -- \"$cur\")) ;;\n"
           "        *) COMPREPLY=($(compgen -W \"$(cordon completions --values \"$kind\" "
           "2>/dev/null) $opts\" -- \"$cur\")) ;;\n"
           "    esac\n"
           "}\n"
           "complete -F _cordon cordon\n");
}

static void print_zsh(void)
{
    printf("#compdef cordon\n"
           "# zsh completion for cordon, generated by `cordon completions zsh`.\n"
           "_cordon_values() {\n"
           "    local -a words\n"
           "    case $1 in\n"
           "        file) _files; return ;;\n"
           "        dir) _files -/; return ;;\n"
           "        exec) _command_names -e; return ;;\n"
           "        none|text) return 1 ;;\n"
           "    esac\n"
           "    words=(${(f)\"$(cordon completions --values $1 2>/dev/null)\"})\n"
           "    if [[ $1 == keyset ]]; then\n"
           "        compadd -S '' -a words\n"
           "    else\n"
           "        compadd -a words\n"
           "    fi\n"
           "}\n"
           "_cordon() {\n"
           "    local cmd='' i kind='' opts\n"
           "    for ((i = 2; i < CURRENT; i++)); do\n"
           "        [[ $words[i] == -* ]] && continue\n"
           "        cmd=$words[i]; break\n"
           "    done\n"
           "    if [[ -z $cmd ]]; then\n"
           "        if [[ $PREFIX == -* ]]; then\n"
           "            compadd -- ");
    for (size_t o = 0; global_options[o].name; o++)
        printf("%s%s", o ? " " : "", global_options[o].name);
    printf("\n        else\n            compadd -- ");
    bool first = true;
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (!specs[i].hidden) {
            printf("%s%s", first ? "" : " ", specs[i].name);
            first = false;
        }
    }
    printf("\n        fi\n        return\n    fi\n    local prev=$words[CURRENT-1]\n"
           "    case $cmd in\n");
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (specs[i].hidden)
            continue;
        printf("        %s) opts=(", specs[i].name);
        for (size_t o = 0; specs[i].options[o].name; o++)
            printf("%s%s", o ? " " : "", specs[i].options[o].name);
        printf(")\n            case $prev in\n");
        for (size_t o = 0; specs[i].options[o].name; o++) {
            if (specs[i].options[o].value != V_NONE)
                printf("                %s) kind=%s ;;\n", specs[i].options[o].name,
                       kind_names[specs[i].options[o].value]);
        }
        printf("            esac ;;\n");
    }
    printf("    esac\n"
           "    if [[ -n $kind ]]; then\n"
           "        _cordon_values $kind\n"
           "        return\n"
           "    fi\n"
           "    if [[ $PREFIX == -* ]]; then\n"
           "        compadd -a opts\n"
           "        return\n"
           "    fi\n"
           "    case $cmd in\n");
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (!specs[i].hidden)
            printf("        %s) _cordon_values %s ;;\n", specs[i].name,
                   kind_names[specs[i].positional]);
    }
    printf("    esac\n"
           "}\n"
           "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
           "    _cordon \"$@\"\n"
           "else\n"
           "    compdef _cordon cordon\n"
           "fi\n");
}

/* TEXT inside fish's single quotes. */
static void fish_quoted(const char *text)
{
    putchar('\'');
    for (const char *p = text; *p; p++) {
        if (*p == '\'' || *p == '\\')
            putchar('\\');
        putchar(*p);
    }
    putchar('\'');
}

static void print_fish(void)
{
    printf("# fish completion for cordon, generated by `cordon completions fish`.\n"
           "complete -c cordon -f\n"
           "set -l __cordon_cmds");
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (!specs[i].hidden)
            printf(" %s", specs[i].name);
    }
    printf("\n");
    for (size_t o = 0; global_options[o].name; o++) {
        printf("complete -c cordon -n \"not __fish_seen_subcommand_from $__cordon_cmds\" "
               "-l %s -d ",
               global_options[o].name + 2);
        fish_quoted(global_options[o].help);
        printf("\n");
    }
    for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
        if (specs[i].hidden)
            continue;
        printf("complete -c cordon -n \"not __fish_seen_subcommand_from $__cordon_cmds\" "
               "-a %s\n",
               specs[i].name);
        enum value_kind pos = specs[i].positional;
        const char *cond = specs[i].name;
        if (pos == V_FILE || pos == V_DIR || pos == V_EXEC)
            printf("complete -c cordon -n '__fish_seen_subcommand_from %s' -F\n", cond);
        else if (pos != V_NONE && pos != V_TEXT)
            printf("complete -c cordon -n '__fish_seen_subcommand_from %s' "
                   "-a '(cordon completions --values %s 2>/dev/null)'\n",
                   cond, kind_names[pos]);
        for (size_t o = 0; specs[i].options[o].name; o++) {
            const struct option_spec *op = &specs[i].options[o];
            printf("complete -c cordon -n '__fish_seen_subcommand_from %s' -l %s -d ", cond,
                   op->name + 2);
            fish_quoted(op->help);
            if (op->value == V_FILE || op->value == V_DIR)
                printf(" -r -F");
            else if (op->value == V_TEXT)
                printf(" -r");
            else if (op->value != V_NONE)
                printf(" -x -a '(cordon completions --values %s 2>/dev/null)'",
                       kind_names[op->value]);
            printf("\n");
        }
    }
}

int cmd_completions(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--values") == 0)
        return print_values(argv[2]);
    if (argc == 2 && strcmp(argv[1], "--table") == 0) {
        print_table();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "bash") == 0) {
        print_bash();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "zsh") == 0) {
        print_zsh();
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "fish") == 0) {
        print_fish();
        return 0;
    }
    FILE *out = argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr;
    fprintf(out, "usage: cordon completions bash|zsh|fish\n"
                 "       cordon completions --values KIND | --table\n");
    return out == stdout ? 0 : CORDON_EXIT_USAGE;
}
