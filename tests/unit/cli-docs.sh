#!/usr/bin/env bash
# The CLI, its --help and the man pages agree. The CLI's own table of
# commands and options (src/cli/help.c, printed by the hidden `cordon
# completions --table`) is held against: what the parser accepts, every
# `cordon COMMAND --help` (exit 0, on stdout, the same as `cordon help
# COMMAND`), cordon(1) (docs/man/cordon.1.scd); and the configuration
# schema's keys (src/config/schema.c, `cordon completions --values keyset`)
# against cordon.toml(5). A failure says which option or key is missing where.
. "$CORDON_SRC/tests/lib/tap.sh"
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.err"' EXIT
man1=$CORDON_SRC/docs/man/cordon.1.scd
man5=$CORDON_SRC/docs/man/cordon.toml.5.scd
table=$("$CORDON" completions --table) || { fail "cordon completions --table"; tap_done; }

# The definitions of a man section: the option names that start a line.
man_section() { # FILE HEADING-REGEX: the lines from that heading to the next of its level
    awk -v h="$2" '
        $0 ~ "^#+ " { level = index($0, " ") - 1; if (on && level <= onlevel) on = 0 }
        $0 ~ h { on = 1; onlevel = index($0, " ") - 1; next }
        on' "$1"
}
man_options() { grep -oE '^\*--[a-z-]+\*(, \*--[a-z-]+\*)?' | grep -oE -- '--[a-z-]+' | sort -u; }
table_options() { awk -v c="$1" '$1 == c && $2 != "-" { print $2 }' <<<"$table" | sort -u; }
missing=() # "WHAT is in A but not in B" lines
miss() { missing+=("$1"); }

commands=$(awk '$1 != "-" && $2 == "-" { print $1 }' <<<"$table")
man_commands=$(man_section "$man1" '^# COMMANDS' | sed -n 's/^## \([a-z-]*\)$/\1/p' | sort -u)
config_opts=$(man_section "$man1" '^# CONFIGURATION OPTIONS' | man_options)
[ -n "$config_opts" ] || miss "cordon(1) $man1 has no options under '# CONFIGURATION OPTIONS'"

for c in $commands; do
    grep -qx "$c" <<<"$man_commands" || miss "command '$c' (src/cli/help.c) has no '## $c' section in $man1"
done
for c in $man_commands; do
    grep -qx "$c" <<<"$commands" || miss "section '## $c' of $man1 names no command of cordon (src/cli/help.c)"
done
# The commands cordon dispatches (its --help lists them, src/cli/main.c)
# against the table.
dispatched=$("$CORDON" --help | sed -n '/^commands:/,/^$/s/^  \([a-z-]*\) .*/\1/p')
[ -n "$dispatched" ] || miss "\`cordon --help\` lists no commands"
for c in $dispatched; do
    grep -qx "$c" <<<"$commands" || miss "command '$c' (src/cli/main.c) is not in the CLI's table (src/cli/help.c)"
done

# Global options: table, `cordon --help`, man GLOBAL OPTIONS.
global_help=$("$CORDON" --help 2>/dev/null)
global_man=$(man_section "$man1" '^# GLOBAL OPTIONS' | man_options)
for o in $(table_options -); do
    grep -qx -- "$o" <<<"$global_man" || miss "global option $o (src/cli/help.c) is missing from '# GLOBAL OPTIONS' in $man1"
    [[ $global_help == *"$o"* ]] || miss "global option $o (src/cli/help.c) is missing from \`cordon --help\`"
done
for o in $global_man; do
    grep -qx -- "$o" <<<"$(table_options -)" || miss "global option $o of $man1 is not an option of cordon (src/cli/help.c)"
done

help_ok=1
for c in $commands; do
    out=$("$CORDON" "$c" --help 2>"$tmp.err"); rc=$?
    err=$(cat "$tmp.err")
    if [ $rc -ne 0 ] || [ -z "$out" ] || [ -n "$err" ]; then
        help_ok=0
        miss "\`cordon $c --help\` must print on stdout and exit 0: exit $rc, stdout ${#out} bytes, stderr: $err"
    fi
    if [ "$c" != help ]; then
        via=$("$CORDON" help "$c" 2>/dev/null)
        [ "$via" = "$out" ] || miss "\`cordon help $c\` differs from \`cordon $c --help\`"
    fi
    section=$(man_section "$man1" "^## $c\$")
    own=$(man_options <<<"$section")
    takes_config=0
    grep -qi 'configuration options' <<<"$section" && takes_config=1
    # Options are what the usage lines and the option lines name (a line
    # that starts with the option), not a mention in the prose.
    help_opts=$(grep -E '^(usage: |  +cordon |  +-)' <<<"$out" |
        grep -oE -- '(^|[][ |/(,])--[a-z][a-z-]*' | grep -oE -- '--[a-z-]+' | sort -u)
    for o in $(table_options "$c"); do
        if grep -qx -- "$o" <<<"$own"; then :
        elif [ $takes_config = 1 ] && grep -qx -- "$o" <<<"$config_opts"; then :
        else miss "option $o of 'cordon $c' (src/cli/help.c) is missing from section '## $c' of $man1"
        fi
        [ "$o" = --help ] || grep -qx -- "$o" <<<"$help_opts" ||
            miss "option $o of 'cordon $c' (src/cli/help.c) is missing from \`cordon $c --help\`"
    done
    for o in $own; do
        grep -qx -- "$o" <<<"$(table_options "$c")" ||
            miss "option $o in section '## $c' of $man1 is not an option of 'cordon $c' (src/cli/help.c)"
    done
    if [ $takes_config = 1 ]; then
        for o in $config_opts; do
            grep -qx -- "$o" <<<"$(table_options "$c")" ||
                miss "configuration option $o of $man1 is not an option of 'cordon $c' (src/cli/help.c), whose section says it takes them"
        done
    fi
    for o in $help_opts; do
        grep -qx -- "$o" <<<"$(table_options "$c")" ||
            miss "option $o of \`cordon $c --help\` is not in the CLI's table (src/cli/help.c)"
    done
done
is "every COMMAND --help prints on stdout and exits 0" "$help_ok" 1

# The parser accepts every option of the table: OPTION [VALUE] --help still
# prints the help (an unknown option is a usage error instead).
parse_bad=()
while read -r c o kind; do
    [ "$c" = - ] || [ "$o" = - ] || [ "$o" = --help ] || [ "$c" = ls ] && continue
    case $kind in
        none) value=() ;;
        keyset) value=(backend=ns) ;;
        file) value=(/dev/null) ;;
        text) value=(1) ;;
        *) value=("$("$CORDON" completions --values "$kind" | head -n1)") ;;
    esac
    args=("$c" "$o" "${value[@]}" --help)
    [ "$c $o" = "config --as" ] && args=(config check --as user --help)
    "$CORDON" "${args[@]}" >/dev/null 2>&1 || parse_bad+=("cordon ${args[*]} (exit $?)")
done <<<"$table"
is "the parser accepts every option of the table" "${parse_bad[*]}" ""

# Usage errors: exit 2 where the command has no status of its own.
"$CORDON" --no-such-option >/dev/null 2>&1
is "cordon --no-such-option: usage error, exit 2" "$?" 2
"$CORDON" no-such-command >/dev/null 2>&1
is "cordon no-such-command: usage error, exit 2" "$?" 2
err=$("$CORDON" ls --bogus 2>&1 >/dev/null)
is "cordon ls --bogus: exit 2" "$?" 2
like "... with the usage on stderr" "$err" "usage: cordon ls"
"$CORDON" run --bogus >/dev/null 2>&1
is "cordon run --bogus: 125 (run's other statuses are the command's)" "$?" 125
version=$("$CORDON" --version)
like "cordon --version names the version and the commit" "$version" '^cordon [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$'

# A tarball made by `git archive` has no .git: the commit comes from COMMIT.
if git -C "$CORDON_SRC" rev-parse HEAD >/dev/null 2>&1; then
    arch=$(mktemp -d)
    git -C "$CORDON_SRC" archive HEAD scripts/version.sh COMMIT | tar -x -C "$arch"
    is "in a git archive tarball, the commit is the archived one" "$(sh "$arch/scripts/version.sh" "$arch")" \
        "$(git -C "$CORDON_SRC" rev-parse --short=12 HEAD)"
    rm -rf "$arch"
else
    skip "the commit in a git archive tarball" "not a git checkout"
fi

# Keys: the schema against cordon.toml(5).
keys=$("$CORDON" completions --values keyset | sed 's/=$//' | sort -u)
man_keys=$(man_section "$man5" '^# KEYS' | grep -oE '^\*[a-z_.]+\* =' | tr -d '*= ' | sort -u)
for k in $keys; do
    grep -qx -- "$k" <<<"$man_keys" || miss "key $k (src/config/schema.c) is missing from '# KEYS' in $man5"
done
for k in $man_keys; do
    grep -qx -- "$k" <<<"$keys" || miss "key $k in '# KEYS' of $man5 is not a key of src/config/schema.c"
done

if [ ${#missing[@]} -eq 0 ]; then
    pass "the CLI's table, --help, cordon(1) and cordon.toml(5) agree"
else
    fail "the CLI's table, --help, cordon(1) and cordon.toml(5) agree" "${missing[@]}"
fi
# The man pages build (scdoc is what `make install` and the package use).
if command -v scdoc >/dev/null; then
    for m in "$man1" "$man5"; do
        scdoc <"$m" >/dev/null 2>"$tmp.err"
        is "scdoc builds $(basename "$m")" "$?:$(cat "$tmp.err")" "0:"
    done
else
    skip "scdoc builds the man pages" "scdoc not installed"
fi
rm -f "$tmp.err"
tap_done
