# The two commands of the README: `make run` and `make test`.
BUILDDIR ?= build
ARGS ?= shell

.PHONY: all build run test bootstrap bench fuzz clean

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

bench: build
	@bench/run.sh

fuzz:
	@scripts/fuzz.sh

clean:
	rm -rf build build-test build-fuzz
