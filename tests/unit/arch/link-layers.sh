#!/usr/bin/env bash
# The layers' rule at the link level (docs/design.md "Layers"): the graph of
# which layer's objects call which layer's functions, read from the built
# objects with nm, has no cycle. layers.sh checks the includes; this sees
# what they cannot (a function called through a local extern declaration,
# a header of a lower layer declaring a higher layer's function). The one
# place allowed to reach every backend is the backend table
# (src/backend/backend.c, probe.c): its calls into the backends are not
# edges, as its header is the interface the layers below the backends use.
. "$CORDON_SRC/tests/lib/tap.sh"
: "${CORDON_BUILD:?CORDON_BUILD must point at the build directory}"
cd "$CORDON_BUILD" || exit 1

# The layer of an object file (meson names it after its source path).
layer_of() {
    case "$1" in
    *src_backend_backend.c.o | *src_backend_probe.c.o) echo backend-table ;;
    *src_backend_*_guest_*) echo guest ;;
    *src_agent_tools_*) echo tools ;;
    *src_agent_agent.c.o) echo agent-main ;;
    *src_backend_*) echo backend ;;
    *src_*) local b=${1##*src_}; echo "${b%%_*}" ;;
    esac
}

mapfile -t objs < <(ls libcordon-core.a.p/*.o cordon-agent.p/src_*.o cordon.p/src_*.o 2>/dev/null)
[ ${#objs[@]} -gt 20 ] || { fail "the build's objects are found (${#objs[@]})"; tap_done; }
# One nm over all objects, POSIX format: "object: symbol type ...".
mapfile -t edges < <(
    for o in "${objs[@]}"; do echo "L $o $(layer_of "$o")"; done
    nm -A -g -P "${objs[@]}" 2>/dev/null | awk '{print "N", $0}'
)
mapfile -t edges < <(printf '%s\n' "${edges[@]}" | awk '
    $1 == "L" { layer[$2] = $3; next }
    {
        obj = $2; sub(/:$/, "", obj)
        if ($4 == "U") { nu++; uobj[nu] = obj; usym[nu] = $3; next }
        if ($4 ~ /^[TDBRV]$/) def[$3] = layer[obj]
    }
    END {
        for (i = 1; i <= nu; i++) {
            from = layer[uobj[i]]; to = def[usym[i]]
            if (from == "backend-table" || to == "") continue
            if (to == "backend-table") to = "backend-api"   # a call into the table is a call into the interface
            if (to != from) { n = split(uobj[i], parts, "/"); print from, to, usym[i], parts[n] }
        }
    }')
is "calls between layers found" "$([ ${#edges[@]} -gt 50 ] && echo yes)" "yes"
loop=$(printf '%s\n' "${edges[@]}" | cut -d' ' -f1-2 | sort -u | tsort 2>&1 >/dev/null)
is "no cycle in the layers' calls" "$loop" ""
if [ -n "$loop" ]; then
    # Name the calls that go up the documented order: those make the loop.
    declare -A rank=([util]=0 [config]=1 [confine]=1 [proto]=1 [net]=1 [tools]=2 [agent]=2
                     [backend-api]=3 [supervisor]=4 [backend]=5 [guest]=6 [mcp]=7 [cli]=7
                     [agent-main]=8)
    printf '%s\n' "${edges[@]}" | while read -r from to sym obj; do
        [ "${rank[$from]:-9}" -lt "${rank[$to]:-9}" ] && diag "$from -> $to: $obj calls $sym"
    done | sort -u | head -40
fi
# The check sees a planted call from util into the supervisor.
planted=$({ printf '%s\n' "${edges[@]}" | cut -d' ' -f1-2; echo "util supervisor"; } | sort -u |
          tsort 2>&1 >/dev/null)
is "a planted cycle is found" "$([ -n "$planted" ] && echo found)" "found"
tap_done
