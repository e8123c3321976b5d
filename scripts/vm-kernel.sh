#!/usr/bin/env bash
# Fetches the guest kernel for cordon's vm backend: Debian's cloud kernel
# (the package linux-image-cloud-amd64 depends on), through apt only, unpacked
# with dpkg-deb into a cache directory:
#   DIR/<version>/vmlinuz, DIR/<version>/modules/<version>/..., DIR/current
#   DIR/<version>/vmlinux (uncompressed, when python3 is there to extract it)
# DIR is $CORDON_VM_DIR, else /var/cache/cordon/vm as root, else
# ${XDG_CACHE_HOME:-~/.cache}/cordon/vm. Called by `scripts/bootstrap.sh
# --test` and by cordon itself when the vm backend finds no kernel.
# Idempotent: does nothing when the current kernel is already unpacked.
set -euo pipefail

if [ -n "${CORDON_VM_DIR:-}" ]; then
    dir=$CORDON_VM_DIR
elif [ "$(id -u)" -eq 0 ]; then
    dir=/var/cache/cordon/vm
else
    dir=${XDG_CACHE_HOME:-$HOME/.cache}/cordon/vm
fi

meta=${CORDON_VM_KERNEL_PACKAGE:-linux-image-amd64}
# The metapackage's dependency names the versioned kernel package.
pkg=$(apt-cache depends "$meta" 2>/dev/null |
    sed -n "s/^ *Depends: \\(linux-image-[0-9].*\\)$/\\1/p" | head -n1)
if [ -z "$pkg" ]; then
    echo "cordon: apt knows no $meta (no package lists?). Run as root:" >&2
    echo "  apt-get update && $0" >&2
    exit 1
fi
version=${pkg#linux-image-}

if [ -f "$dir/$version/vmlinuz" ] && [ -f "$dir/$version/modules/$version/modules.dep" ]; then
    ln -sfn "$version" "$dir/current"
    echo "$dir/$version"
    exit 0
fi

mkdir -p "$dir"
work=$(mktemp -d "$dir/.fetch.XXXXXX")
chmod 755 "$work" # apt downloads as _apt where it can
trap 'rm -rf "$work"' EXIT
echo "vm-kernel: apt-get download $pkg" >&2
if ! (cd "$work" && apt-get download -q "$pkg" >&2); then
    echo "cordon: could not download $pkg. As root, run:" >&2
    echo "  apt-get update && $0" >&2
    exit 1
fi
dpkg-deb -x "$work"/*.deb "$work/x"
# The package's postinst would run depmod; the initramfs builder reads
# modules.dep for each module's dependencies.
PATH=$PATH:/usr/sbin:/sbin depmod -b "$work/x" "$version"
mkdir -p "$work/out/modules"
cp "$work/x/boot/vmlinuz-$version" "$work/out/vmlinuz"
mv "$work/x/lib/modules/$version" "$work/out/modules/$version"
cp "$work/x/boot/config-$version" "$work/out/config" 2>/dev/null || true
# The uncompressed ELF kernel, which QEMU boots through its PVH entry: under
# TCG, the bzImage's own XZ decompression takes seconds. Optional: cordon
# falls back to vmlinuz without it.
if command -v python3 >/dev/null 2>&1; then
    python3 - "$work/out/vmlinuz" "$work/out/vmlinux" <<'PY' || rm -f "$work/out/vmlinux"
import lzma, sys
data = open(sys.argv[1], "rb").read()
start = data.find(b"\xfd7zXZ\x00")
if start < 0:
    sys.exit(1)
elf = lzma.LZMADecompressor().decompress(data[start:])
if elf[:4] != b"\x7fELF":
    sys.exit(1)
open(sys.argv[2], "wb").write(elf)
PY
fi
rm -rf "${dir:?}/$version"
mv "$work/out" "$dir/$version"
ln -sfn "$version" "$dir/current"
echo "$dir/$version"
