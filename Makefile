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

test: test-release test-vps2 test-copy test-san test-debug test-debug-vps2 test-tsan

test-release: build
	cd build && ctest --output-on-failure -j $(JOBS) -LE sig-open

# The suite again on two virtual processors (M:N, docs/mn.md), but the
# tests labelled one-vp (they check one processor's behaviour) and
# mn-open (M:N defects still open, listed in docs/mn.md).
# Without FSGSBASE (AT_HWCAP2 bit 1) M:N still runs, but every switch
# between UTs loads the thread pointer by system call (arch_prctl: 4.5 us
# on a PVM guest, docs/mn.md), and the whole suite takes about 8 minutes
# there: the tests labelled vps2-slow (each 5 s or more there,
# tests/CMakeLists.txt) are left out, and the mn tests, which choose their
# own VPs and ran in test-release; the line says so.
VPS2_HWCAP2 = $(shell LD_SHOW_AUXV=1 /bin/true 2>/dev/null | sed -n 's/^AT_HWCAP2: *//p')
test-vps2: build
	@if [ $$(( $(or $(VPS2_HWCAP2),0) & 2 )) -ne 0 ]; then \
		cd build && WEFT_VPS=2 ctest --output-on-failure -j $(JOBS) -LE 'one-vp|mn-open|sig-open'; \
	else \
		echo "test-vps2: no FSGSBASE on this machine: each switch under two VPs is a system call; running all but the tests labelled vps2-slow, static and mn (Makefile, docs/mn.md) under WEFT_VPS=2"; \
		cd build && WEFT_VPS=2 ctest --output-on-failure -j $(JOBS) -LE '^(one-vp|mn-open|sig-open|vps2-slow|static|mn)$$'; \
	fi

# The suite again with every thread copy-stack (WEFT_STACK_MODE=copy,
# docs/runtime.md "Copy-stack threads"), but the tests labelled
# separate-stack (they check a thread's own stack), Valgrind's, which
# runs its own programs, and the static checks (label static: no threads);
# the seeds' run of the sync tests with a quarter of its schedules (the
# release run has them all with separate stacks).
test-copy: build
	cd build && WEFT_STACK_MODE=copy WEFT_TEST_SEEDS=25 WEFT_TEST_PCT_SEEDS=5 ctest --output-on-failure -j $(JOBS) -LE 'separate-stack|tsan|valgrind|sig-open|static'

# The sanitizer build's suite, but the tests labelled san-open (defects of
# the ASan build still open, listed in docs/debugging.md; none today).
test-san: build-san
	cd build-san && ctest --output-on-failure -j $(JOBS) -LE 'san-open|sig-open'

test-tsan: build-tsan
	cd build-tsan && ctest --output-on-failure -j $(JOBS) -L tsan

test-debug: build-debug
	cd build-debug && ctest --output-on-failure -j $(JOBS) -LE sig-open

# The debug build's checks (the runtime lock's owner at every switch, entry
# and return: docs/mn.md) under two VPs and a schedule that switches at
# every return from Weft: it found the runtime lock's hand-over handing the
# lock to nobody (2026-11-30).  The M:1-only tests, the open defects and,
# without FSGSBASE, the slow ones left out, as in test-vps2.
test-debug-vps2: build-debug
	@if [ $$(( $(or $(VPS2_HWCAP2),0) & 2 )) -ne 0 ]; then \
		cd build-debug && WEFT_VPS=2 WEFT_SCHED=rrswitch ctest --output-on-failure -j $(JOBS) -LE 'one-vp|mn-open|sig-open|vps2-slow'; \
	else \
		echo "test-debug-vps2: no FSGSBASE on this machine: skipped (each switch under two VPs is a system call)"; \
	fi

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
