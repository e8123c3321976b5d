#!/usr/bin/env bash
# Review mode on the vm backend (docs/review.md "Backends"): the overlay is
# mounted in QEMU's mount namespace over the workspace it exports through
# 9p, its upper layer the session's review/upper on the host. Root and
# unprivileged; six boots (focused: the full set runs on ns, review.sh).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
. "$CORDON_SRC/tests/lib/fixtures.sh"

skip_without_vm
RB=(--backend vm)
RL=vm
RN=vm
. "$CORDON_SRC/tests/integration/review-core.sh"

tap_done
