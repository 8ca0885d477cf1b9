# locklab - the two commands a fresh clone needs (both do all set-up themselves):
#   make demo    build everything and run the contention lab's default suite (~3 minutes on 2 cores)
#   make check   build normal + ThreadSanitizer + AddressSanitizer + UBSan variants and run every test
#   make conformance   glibc's own nptl tests on the LD_PRELOAD shim (tests/glibc; ~10 minutes on 2 cores)
# Everything else here is a step those depend on.

PYTHON  ?= python3
VENV    := .venv
JOBS    ?= $(shell nproc)
CMAKE_GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
SANITIZERS := thread address undefined

.PHONY: all demo check setup deps build test-c test-san test-py conformance clean

all: build

# System packages (compilers, cmake, peers' libraries, chromium for the report test). Idempotent; needs
# root or sudo only when something is missing.
deps:
	@./scripts/install-deps

$(VENV)/.stamp: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[test]'
	touch $@

setup: deps $(VENV)/.stamp build

build:
	cmake -S . -B build $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build build -j $(JOBS)

build-%:
	cmake -S . -B build-$* $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_SANITIZE=$* >/dev/null
	cmake --build build-$* -j $(JOBS)

demo: setup
	$(VENV)/bin/locklab demo

test-c: build
	cd build && ctest --output-on-failure -j 2

test-san: $(addprefix build-,$(SANITIZERS))
	@for s in $(SANITIZERS); do \
	  echo "== tests under -fsanitize=$$s"; \
	  (cd build-$$s && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	     ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1" \
	     ctest --output-on-failure -j 2) || exit 1; \
	done

test-py: $(VENV)/.stamp build
	LOCKLAB_BENCH=$(CURDIR)/build/locklab-bench $(VENV)/bin/python -m pytest -q python/tests

check: setup test-c test-san test-py

# glibc's tst-mutex*/tst-cond*/tst-cancel*/tst-robust* built from Debian's glibc-source against the
# installed glibc and run natively, through the shim (glibc), on lk_mutex and on futex3, plus the lab's
# stress tests through the shim. Fails when a test that passes natively fails under the shim.
conformance: setup
	$(PYTHON) tests/glibc/conformance.py --json build/glibc-tests/results.json --md build/glibc-tests/results.md

clean:
	rm -rf build build-* $(VENV)
