#!/usr/bin/env bash
# Git metadata is host-owned on the vm backend (security cases 56-62, 70):
# the attacks of tests/lib/git-metadata.sh from the guest, then the host
# user's next steps. The copies and binds live in QEMU's mount namespace on
# the host, so a guest root changes nothing of them (docs/git-metadata.md).
. "$CORDON_SRC/tests/lib/tap.sh"
. "$CORDON_SRC/tests/lib/cordon.sh"
if ! command -v qemu-system-x86_64 >/dev/null || ! command -v git >/dev/null; then
    echo "1..0 # SKIP qemu-system-x86_64 or git not installed (scripts/bootstrap.sh --test)"
    exit 0
fi
if [ ! -e /var/cache/cordon/vm/current/vmlinuz ] && [ -z "${CORDON_VM_DIR:-}" ]; then
    echo "1..0 # SKIP no guest kernel (scripts/vm-kernel.sh)"
    exit 0
fi
GM_ARGS="--backend vm"
GM_GIT=1
. "$CORDON_SRC/tests/lib/git-metadata.sh"
. "$CORDON_SRC/tests/lib/background.sh"
# Cases 59, 58 and 61 (four boots) run beside 56-62 and git's own work
# (three), with a sentinel directory of their own; their TAP lines are
# printed after those, in the same order as one after the other.
later_cases() {
    gm_sent="$TEST_TMP/sentinels-later"
    mkdir -p "$gm_sent" && chmod 777 "$gm_sent"
    gm_case_host_rename
    gm_case_linked_worktree
    gm_case_nongit
}
bg_checks later later_cases
gm_case_repo
gm_case_git_works
bg_checks_print later
tap_done
