#!/usr/bin/env bash
# The layout's two rules (docs/design.md "Layers"), checked on the sources:
# 1. the include graph between layers has no cycle;
# 2. no code outside src/backend/ names a backend: the rest of the program
#    goes through the interface of src/backend/backend.h (the configuration
#    schema, which maps names to the table, is the exception).
. "$CORDON_SRC/tests/lib/tap.sh"
cd "$CORDON_SRC" || exit 1

# The layer of a file (a path below src/, with or without the prefix).
layer_of() {
    local f=${1#src/}
    case "$f" in
    agent/agent.c) echo agent-main ;;  # the agent binary's entry point
    agent/tools/*) echo tools ;;
    backend/*/guest/*) echo guest ;;   # the backends' halves inside the sandbox
    backend/backend.h | backend/spec.h | backend/probe.h) echo backend-api ;;
    */*) echo "${f%%/*}" ;;
    *) echo "" ;;
    esac
}

mapfile -t sources < <(git ls-files 'src/*.c' 'src/*.h' 2>/dev/null || find src -name '*.[ch]')
[ ${#sources[@]} -gt 0 ] || { fail "no sources found"; tap_done; }
edges=()
declare -A seen_layer=()
for f in "${sources[@]}"; do
    [ -f "$f" ] || continue
    from=$(layer_of "$f")
    seen_layer[$from]=1
    while IFS= read -r inc; do
        to=$(layer_of "$inc")
        [ -n "$to" ] && [ "$to" != "$from" ] && edges+=("$from $to")
    done < <(sed -n 's/^#include "\([a-z]*\/[^"]*\)".*/\1/p' "$f")
done
is "layers found" "$([ ${#seen_layer[@]} -ge 8 ] && echo yes)" "yes"
loop=$(printf '%s\n' "${edges[@]}" | sort -u | tsort 2>&1 >/dev/null)
is "no include cycle between layers" "$loop" ""
if [ -n "$loop" ]; then
    # Name the includes that make the loop, for whoever has to break it.
    members=$(printf '%s\n' "$loop" | grep -v 'input contains a loop' | sed 's/^tsort: //')
    for f in "${sources[@]}"; do
        from=$(layer_of "$f")
        grep -q -x -F "$from" <<<"$members" || continue
        sed -n 's/^#include "\([a-z]*\/[^"]*\)".*/\1/p' "$f" | while read -r inc; do
            to=$(layer_of "$inc")
            [ "$to" != "$from" ] && grep -q -x -F "$to" <<<"$members" && diag "$from -> $to: $f includes $inc"
        done
    done
fi

# A self-check: the cycle detection sees a planted cycle.
planted=$(printf 'a b\nb c\nc a\n' | tsort 2>&1 >/dev/null)
is "a planted cycle is found" "$([ -n "$planted" ] && echo found)" "found"

# Backend names as identifiers outside src/backend/ (comments and the
# probe's JSON keys "docker" and "ns", which are not backend names, aside).
names=$(git grep -nE '"(vm|docker|ns)"|CFG_BACKEND_(NS|VM|DOCKER)\b|\b(ns|vm|docker)_backend_ops\b|\bis_vm\b' \
        -- 'src/*.c' 'src/*.h' ':!src/backend/' ':!src/config/schema.c' ':!src/config/config.h' |
        grep -vE '^[^:]+:[0-9]+:\s*(/\*|\*)' | grep -vE 'json_object_(get|set_new)\([^,]+, "(docker|ns)"')
is "no backend name outside src/backend/" "$names" ""
# Backend headers outside src/backend/: only the agent binary's entry
# point reaches its guest halves (the vm guest's init, the docker agent's
# forwarder).
incs=$(git grep -nE '#include "backend/(ns|vm|docker)/' -- 'src/*' ':!src/backend/' |
       grep -vE '^src/agent/agent\.c:[0-9]+:#include "backend/(vm|docker)/guest/')
is "no backend's header included outside src/backend/" "$incs" ""
# The check sees a planted name.
planted=$(printf 'if (strcmp(cfg->backend, "vm") == 0)\n' | grep -E '"(vm|docker|ns)"')
is "a planted backend name is found" "$([ -n "$planted" ] && echo found)" "found"
tap_done
