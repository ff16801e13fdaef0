# Thin front door over CMake.  `make`, `make test`, `make bench`,
# `make install PREFIX=dir`.  Build trees: build/ (release, -Werror),
# build-san/ (AddressSanitizer + UndefinedBehaviorSanitizer) and
# build-debug/ (WEFT_DEBUG: the runtime's invariants checked at every switch).
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DWEFT_WERROR=ON
QUICK ?=
ONLY ?=
FAMILY ?=
FUZZ_CASES ?= 100000

.PHONY: all build build-san build-debug build-tsan test test-release test-san test-debug test-tsan test-vps2 test-copy bench install clean perf-doc fuzz

all: build

build:
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS)

build-san:
	@cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-san -j $(JOBS)

# ThreadSanitizer: the library annotated, the tests instrumented
# (docs/debugging.md "ThreadSanitizer").
build-tsan:
	@cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_TSAN=ON -DWEFT_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-tsan -j $(JOBS)

build-debug:
	@cmake -S . -B build-debug -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWEFT_DEBUG=ON -DWEFT_BENCH=OFF $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-debug -j $(JOBS)

test: test-release test-vps2 test-copy test-san test-debug test-tsan

test-release: build
	cd build && ctest --output-on-failure -j $(JOBS)

# The suite again on two virtual processors (M:N, docs/mn.md), but the
# tests labelled one-vp (they check one processor's behaviour) and
# mn-open (M:N defects still open, listed in docs/mn.md).
test-vps2: build
	cd build && WEFT_VPS=2 ctest --output-on-failure -j $(JOBS) -LE 'one-vp|mn-open'

# The suite again with every thread copy-stack (WEFT_STACK_MODE=copy,
# docs/runtime.md "Copy-stack threads"), but the tests labelled
# separate-stack (they check a thread's own stack) and Valgrind's, which
# runs its own programs.
test-copy: build
	cd build && WEFT_STACK_MODE=copy ctest --output-on-failure -j $(JOBS) -LE 'separate-stack|tsan|valgrind'

# The sanitizer build's suite, but the tests labelled san-open (defects of
# the ASan build still open, listed in docs/debugging.md; none today).
test-san: build-san
	cd build-san && ctest --output-on-failure -j $(JOBS) -LE san-open

test-tsan: build-tsan
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -L tsan

test-debug: build-debug
	cd build-debug && ctest --output-on-failure -j $(JOBS)

# A long run of the API fuzzer (CI runs a short one in `make test`);
# WEFT_FUZZ_SEED=... to repeat one.
fuzz: build build-san
	WEFT_FUZZ_CASES=$(FUZZ_CASES) build/tests/fuzz/api_fuzz
	WEFT_FUZZ_CASES=$(FUZZ_CASES) build-san/tests/fuzz/api_fuzz

# The peers' packages (bench/peers/install.sh: as root, when missing) come
# first so that the build finds them; QUICK=1 (CI) installs nothing and runs
# the peers already there.
bench:
	@if [ -z "$(QUICK)" ] || [ "$(QUICK)" = 0 ]; then bench/peers/install.sh; fi
	@$(MAKE) --no-print-directory build
	@QUICK=$(QUICK) FAMILY="$(FAMILY)" ONLY="$(ONLY)" bench/run.sh build

perf-doc:
	@bench/peers/install.sh
	@$(MAKE) --no-print-directory build
	@bench/run.sh build --doc docs/performance.md

install: build
	cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-san build-debug
