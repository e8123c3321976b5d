/* `cordon help [COMMAND]` and the hidden `cordon completions SHELL`: the
 * commands (main.c's table), their options and what each option's value is
 * (each command's parser tables, cli/options.h), printed as the table that
 * the shell completions are generated from and that tests/unit/cli-docs.sh
 * holds against every `COMMAND --help` and the man page. Host context. */
#include "cli/commands.h"
#include "cli/options.h"
#include "config/config.h"
#include "supervisor/state.h"
#include "util/cleanup.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Values that are a configuration key's choices come from the schema, so
 * the completions follow it (and no backend is named outside the table). */
static const struct {
    bool set;
    enum cfg_key key;
} value_keys[] = {
    [CLI_BACKEND] = {true, CFG_BACKEND},   [CLI_NETWORK] = {true, CFG_NETWORK_MODE},
    [CLI_ENV_MODE] = {true, CFG_ENV_MODE}, [CLI_FALLBACK] = {true, CFG_FALLBACK_MODE},
    [CLI_TEARDOWN] = {true, CFG_TEARDOWN},
};

static const char *const value_words[][8] = {
    [CLI_LAYER] = {"user", "workspace", "host"},
    [CLI_TOOL] = {"read", "write", "edit", "ls", "find", "grep", "bash"},
    [CLI_SHELL] = {"bash", "zsh", "fish"},
};

static const char *const kind_names[] = {
    [CLI_NONE] = "none",         [CLI_TEXT] = "text",         [CLI_FILE] = "file",
    [CLI_DIR] = "dir",           [CLI_KEYSET] = "keyset",     [CLI_BACKEND] = "backend",
    [CLI_NETWORK] = "network",   [CLI_ENV_MODE] = "env-mode", [CLI_FALLBACK] = "fallback",
    [CLI_TEARDOWN] = "teardown", [CLI_LAYER] = "layer",       [CLI_TOOL] = "tool",
    [CLI_SANDBOX] = "sandbox",   [CLI_STOPPED] = "stopped",   [CLI_SHELL] = "shell",
    [CLI_COMMAND] = "command",   [CLI_EXEC] = "exec",
};

static const struct cli_option help_option = {.name = "--help", .help = "this text"};

/* The n-th option a command lists: its own, --help, then the configuration
 * flags; NULL after the last. */
static const struct cli_option *listed_option(const struct cli_command *spec, size_t n)
{
    for (size_t t = 0; t < ARRAY_SIZE(spec->options); t++) {
        for (const struct cli_option *o = spec->options[t]; o && o->name; o++) {
            if (!o->hidden && n-- == 0)
                return o;
        }
    }
    if (!(spec->flags & CLI_NO_HELP) && n-- == 0)
        return &help_option;
    for (const struct cli_option *o = cli_config_options; (spec->flags & CLI_CONFIG) && o->name;
         o++) {
        if (n-- == 0)
            return o;
    }
    return NULL;
}

/* Options of `cordon` itself, before the command. */
static const struct cli_option global_options[] = {
    {.name = "--debug", .help = "what was detected, applied, and timings"},
    {.name = "--version", .help = "the version and the commit it was built from"},
    {.name = "--help", .help = "the commands"},
    {0},
};

static const struct cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < cli_command_count; i++) {
        if (strcmp(cli_commands[i].name, name) == 0)
            return &cli_commands[i];
    }
    return NULL;
}

static void help_usage(FILE *out, void *ctx)
{
    (void)ctx;
    fprintf(out, "usage: cordon help [COMMAND]\n\n"
                 "Lists the commands, or describes COMMAND (the same as\n"
                 "`cordon COMMAND --help`).\n");
}

int cmd_help(int argc, char **argv)
{
    const char *name = NULL;
    const struct cli_parser parser = {.usage = help_usage, .operand = &name};
    int parsed = cli_parse(&parser, argc, argv, NULL);
    if (parsed != CLI_PARSE_OK)
        return cli_usage_status(parsed);
    if (!name) {
        char *args[] = {"cordon", "--help", NULL};
        return cli_main(2, args);
    }
    const struct cli_command *spec = find_command(name);
    if (!spec || (spec->flags & CLI_HIDDEN) || strcmp(spec->name, "help") == 0) {
        fprintf(stderr, "cordon: help: unknown command '%s' (`cordon help` lists them)\n", name);
        return CORDON_EXIT_USAGE;
    }
    char *args[] = {"cordon", (char *)name, "--help", NULL};
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
    if (kind == CLI_KEYSET) {
        for (int k = 0; k < CFG_KEY_COUNT; k++)
            printf("%s=\n", cfg_key_name((enum cfg_key)k));
    } else if (kind == CLI_COMMAND) {
        for (size_t i = 0; i < cli_command_count; i++) {
            if (!(cli_commands[i].flags & CLI_HIDDEN))
                printf("%s\n", cli_commands[i].name);
        }
    } else if (kind == CLI_SANDBOX || kind == CLI_STOPPED) {
        struct cordon_error err = {0};
        struct state_entry *entries;
        size_t n;
        if (state_list(&entries, &n, &err) < 0)
            return 0; /* nothing to offer is not an error while completing */
        for (size_t i = 0; i < n; i++) {
            if (kind == CLI_SANDBOX || !entries[i].locked)
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
    for (size_t i = 0; i < cli_command_count; i++) {
        if ((cli_commands[i].flags & CLI_HIDDEN))
            continue;
        printf("%s - %s\n", cli_commands[i].name, kind_names[cli_commands[i].positional]);
        for (size_t o = 0; listed_option(&cli_commands[i], o); o++)
            printf("%s %s %s\n", cli_commands[i].name, listed_option(&cli_commands[i], o)->name,
                   kind_names[listed_option(&cli_commands[i], o)->value]);
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
    for (size_t i = 0; i < cli_command_count; i++) {
        if (!(cli_commands[i].flags & CLI_HIDDEN)) {
            printf("%s%s", first ? "" : " ", cli_commands[i].name);
            first = false;
        }
    }
    printf("' -- \"$cur\")) ;;\n"
           "        esac\n"
           "        return\n"
           "    fi\n"
           "    case $cmd in\n");
    for (size_t i = 0; i < cli_command_count; i++) {
        if ((cli_commands[i].flags & CLI_HIDDEN))
            continue;
        printf("        %s) opts='", cli_commands[i].name);
        for (size_t o = 0; listed_option(&cli_commands[i], o); o++)
            printf("%s%s", o ? " " : "", listed_option(&cli_commands[i], o)->name);
        printf("'\n            case $prev in\n");
        for (size_t o = 0; listed_option(&cli_commands[i], o); o++) {
            if (listed_option(&cli_commands[i], o)->value != CLI_NONE)
                printf("                %s) kind=%s optval=1 ;;\n",
                       listed_option(&cli_commands[i], o)->name,
                       kind_names[listed_option(&cli_commands[i], o)->value]);
        }
        printf("                *) kind=%s ;;\n            esac ;;\n",
               kind_names[cli_commands[i].positional]);
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
    for (size_t i = 0; i < cli_command_count; i++) {
        if (!(cli_commands[i].flags & CLI_HIDDEN)) {
            printf("%s%s", first ? "" : " ", cli_commands[i].name);
            first = false;
        }
    }
    printf("\n        fi\n        return\n    fi\n    local prev=$words[CURRENT-1]\n"
           "    case $cmd in\n");
    for (size_t i = 0; i < cli_command_count; i++) {
        if ((cli_commands[i].flags & CLI_HIDDEN))
            continue;
        printf("        %s) opts=(", cli_commands[i].name);
        for (size_t o = 0; listed_option(&cli_commands[i], o); o++)
            printf("%s%s", o ? " " : "", listed_option(&cli_commands[i], o)->name);
        printf(")\n            case $prev in\n");
        for (size_t o = 0; listed_option(&cli_commands[i], o); o++) {
            if (listed_option(&cli_commands[i], o)->value != CLI_NONE)
                printf("                %s) kind=%s ;;\n", listed_option(&cli_commands[i], o)->name,
                       kind_names[listed_option(&cli_commands[i], o)->value]);
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
    for (size_t i = 0; i < cli_command_count; i++) {
        if (!(cli_commands[i].flags & CLI_HIDDEN))
            printf("        %s) _cordon_values %s ;;\n", cli_commands[i].name,
                   kind_names[cli_commands[i].positional]);
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
    for (size_t i = 0; i < cli_command_count; i++) {
        if (!(cli_commands[i].flags & CLI_HIDDEN))
            printf(" %s", cli_commands[i].name);
    }
    printf("\n");
    for (size_t o = 0; global_options[o].name; o++) {
        printf("complete -c cordon -n \"not __fish_seen_subcommand_from $__cordon_cmds\" "
               "-l %s -d ",
               global_options[o].name + 2);
        fish_quoted(global_options[o].help);
        printf("\n");
    }
    for (size_t i = 0; i < cli_command_count; i++) {
        if ((cli_commands[i].flags & CLI_HIDDEN))
            continue;
        printf("complete -c cordon -n \"not __fish_seen_subcommand_from $__cordon_cmds\" "
               "-a %s\n",
               cli_commands[i].name);
        enum cli_value pos = cli_commands[i].positional;
        const char *cond = cli_commands[i].name;
        if (pos == CLI_FILE || pos == CLI_DIR || pos == CLI_EXEC)
            printf("complete -c cordon -n '__fish_seen_subcommand_from %s' -F\n", cond);
        else if (pos != CLI_NONE && pos != CLI_TEXT)
            printf("complete -c cordon -n '__fish_seen_subcommand_from %s' "
                   "-a '(cordon completions --values %s 2>/dev/null)'\n",
                   cond, kind_names[pos]);
        for (size_t o = 0; listed_option(&cli_commands[i], o); o++) {
            const struct cli_option *op = listed_option(&cli_commands[i], o);
            printf("complete -c cordon -n '__fish_seen_subcommand_from %s' -l %s -d ", cond,
                   op->name + 2);
            fish_quoted(op->help);
            if (op->value == CLI_FILE || op->value == CLI_DIR)
                printf(" -r -F");
            else if (op->value == CLI_TEXT)
                printf(" -r");
            else if (op->value != CLI_NONE)
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
