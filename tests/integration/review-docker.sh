#!/usr/bin/env bash
# Review mode on the docker backend (docs/review.md "Backends"): the daemon
# mounts the overlay (an anonymous volume of the local driver), its upper
# layer the session's review/upper on the host. Root only: a private dockerd
# (tests/lib/docker-backend.sh).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/docker-backend.sh"

RB=("${D[@]}")
RL=docker
RN=dk
. "$CORDON_SRC/tests/integration/review-core.sh"
# The MCP surface (review-mcp.py, as review.sh runs it on ns): rewind and
# discard restart the container over the same layer.
mws=$(new_ws dkmcp)
echo host >"$mws/a.txt"
out=$(cd "$mws" && python3 "$CORDON_SRC/tests/integration/review-mcp.py" "$CORDON" dkm "${D[@]}" 2>/dev/null)
like "docker: MCP: the status carries the mode and the pending count" "$out" "status review 2"
like "docker: MCP: cordon/reviewApply applies the paths asked for" "$out" "apply applied:b.txt"
like "docker: MCP: bash's file and process before the rewind" "$out" $'before-rewind c\n1\n'
like "docker: MCP: cordon/reviewRewind restarts the same sandbox" "$out" "rewind 2 True sandboxed True"
like "docker: MCP: after the rewind, bash's and the later write's files are gone, no process left" "$out" \
    $'after-rewind c-gone\nesc-gone\nagent\n0\n'
like "docker: MCP: cordon/reviewDiscard empties the layer" "$out" "discard True 0"
like "docker: MCP: after the discard the container reads the host's file" "$out" "after-discard host"
like "docker: MCP: a rewind while a tool call runs is refused" "$out" \
    "rewind-inflight a tool call is still running: rewind after it ends"
is "docker: MCP: the host has only the applied file" "$(cat "$mws/a.txt" "$mws/b.txt")" $'host\nb'
"$CORDON" rm dkm >/dev/null 2>&1
is "docker: no volume is left once the sessions ended" "$(docker volume ls -q | wc -l)" 0

tap_done
