# Thin front door over CMake.  `make`, `make test`, `make bench`,
# `make install PREFIX=dir`.  Build trees: build/ (release, -Werror) and
# build-san/ (AddressSanitizer + UndefinedBehaviorSanitizer).
PREFIX ?= /usr/local
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DWEFT_WERROR=ON
QUICK ?=
FUZZ_CASES ?= 100000

.PHONY: all build build-san test test-release test-san bench install clean perf-doc fuzz

all: build

build:
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build build -j $(JOBS)

build-san:
	@cmake -S . -B build-san -DCMAKE_BUILD_TYPE=Debug -DWEFT_SANITIZE=ON $(CMAKE_FLAGS) >/dev/null
	@cmake --build build-san -j $(JOBS)

test: test-release test-san

test-release: build
	cd build && ctest --output-on-failure -j $(JOBS)

test-san: build-san
	cd build-san && ctest --output-on-failure -j $(JOBS)

# A long run of the API fuzzer (CI runs a short one in `make test`);
# WEFT_FUZZ_SEED=... to repeat one.
fuzz: build build-san
	WEFT_FUZZ_CASES=$(FUZZ_CASES) build/tests/fuzz/api_fuzz
	WEFT_FUZZ_CASES=$(FUZZ_CASES) build-san/tests/fuzz/api_fuzz

bench: build
	@QUICK=$(QUICK) bench/run.sh build

perf-doc: build
	@bench/run.sh build --doc docs/performance.md

install: build
	cmake --install build --prefix $(PREFIX)

clean:
	rm -rf build build-san
