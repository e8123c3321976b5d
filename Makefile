# The two commands of the README: `make run` and `make test`; and
# `make install` / `make uninstall` (PREFIX, DESTDIR) and `make deb`.
BUILDDIR ?= build
ARGS ?= shell
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all build run test bootstrap bench fuzz clean install uninstall deb

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	@[ -f $(BUILDDIR)/build.ninja ] || meson setup $(BUILDDIR) --buildtype=release >/dev/null
	@ninja -C $(BUILDDIR) >/dev/null || ninja -C $(BUILDDIR)

run: build
	@./$(BUILDDIR)/cordon $(ARGS)

test:
	@scripts/test.sh

# The release build (static binaries) configured for PREFIX, installed under
# DESTDIR. The agent goes to PREFIX/libexec/cordon, where cordon looks for it.
install: build
	@meson configure $(BUILDDIR) -Dprefix=$(PREFIX) >/dev/null
	@ninja -C $(BUILDDIR) >/dev/null || ninja -C $(BUILDDIR)
	meson install -C $(BUILDDIR) --no-rebuild --quiet $(if $(DESTDIR),--destdir "$(DESTDIR)")
	@DESTDIR="$(DESTDIR)" scripts/apparmor.sh install $(PREFIX)/share/cordon/apparmor/cordon

uninstall:
	@[ -f $(BUILDDIR)/build.ninja ] || { echo "make uninstall: no $(BUILDDIR) to read the installed files from" >&2; exit 1; }
	@meson configure $(BUILDDIR) -Dprefix=$(PREFIX) >/dev/null
	@DESTDIR="$(DESTDIR)" scripts/apparmor.sh remove $(PREFIX)/share/cordon/apparmor/cordon
	@DESTDIR="$(DESTDIR)" scripts/uninstall.sh $(BUILDDIR)

# The Debian package (debian/), built with dpkg-buildpackage into build-deb/.
deb: bootstrap
	@scripts/deb.sh

bench: build
	@bench/run.sh

fuzz:
	@scripts/fuzz.sh

clean:
	rm -rf build build-test build-fuzz build-deb
