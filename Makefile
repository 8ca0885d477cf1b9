# locklab - the two commands a fresh clone needs (both do all set-up themselves):
#   make demo    build everything and answer: does lk_mutex beat the locks programs use? (~3 minutes)
#   make check   build normal + ThreadSanitizer + AddressSanitizer + UBSan variants and run every test
#   make conformance   glibc's own nptl tests on the LD_PRELOAD shim (tests/glibc; ~10 minutes on 2 cores)
# Everything else here is a step those depend on.

PYTHON  ?= python3
VENV    := .venv
JOBS    ?= $(shell nproc)
CMAKE_GEN := $(shell command -v ninja >/dev/null 2>&1 && echo "-G Ninja")
SANITIZERS := thread address undefined

.PHONY: all demo check setup deps build build-stats build-hooks $(addprefix build-,$(SANITIZERS)) test-c test-pinned test-san test-stats test-hooks test-py test-skips conformance clean

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

# The statistics build: the library counts its slow-path events (src/lockstat.h), the lab reports them
# as "lock_stats" (build-stats/locklab-bench; LOCKLAB_BENCH=$(CURDIR)/build-stats/locklab-bench locklab ...).
build-stats:
	cmake -S . -B build-stats $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_STATS=ON >/dev/null
	cmake --build build-stats -j $(JOBS)

# A static pattern rule, so that the three names can be phony (a plain pattern rule is skipped for a
# phony target): an existing build-thread/ must still be rebuilt, never tested stale.
$(addprefix build-,$(SANITIZERS)): build-%:
	cmake -S . -B build-$* $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_SANITIZE=$* >/dev/null
	cmake --build build-$* -j $(JOBS)

# The test build with pause points (LK_TEST_HOOK) compiled in: library + tests/hooks only, never
# installed. Its tests open narrow windows on purpose (see tests/hooks/README.md).
build-hooks:
	cmake -S . -B build-hooks $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_TEST_HOOKS=ON >/dev/null
	cmake --build build-hooks -j $(JOBS)

demo: setup
	$(VENV)/bin/locklab demo

# Each test step leaves a JUnit report (ctest-junit.xml in its build directory, pytest-junit.xml
# in build/); `make check` ends by listing every skipped test with its reason from them.
test-c: build
	cd build && ctest --output-on-failure -j 2 --output-junit ctest-junit.xml

test-san: $(addprefix build-,$(SANITIZERS))
	@for s in $(SANITIZERS); do \
	  echo "== tests under -fsanitize=$$s"; \
	  (cd build-$$s && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	     ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" UBSAN_OPTIONS="print_stacktrace=1" \
	     ctest --output-on-failure -j 2 --output-junit ctest-junit.xml) || exit 1; \
	done

test-hooks: build-hooks
	cd build-hooks && ctest --output-on-failure -j 2 --output-junit ctest-junit.xml

# The normal build's tests again with the whole run pinned to one CPU (the first this process may
# use): owner, spinner and waiters then share that CPU and every handover goes through preemption,
# the regime of a container pinned to one CPU, which the unpinned runs rarely reach. The shim tests
# skip their spinning locks there (tests/preload_test.h: they progress only at scheduler ticks).
test-pinned: build
	cd build && taskset -c $$($(PYTHON) -c 'import os; print(min(os.sched_getaffinity(0)))') \
	    ctest --output-on-failure -j 2 --output-junit ctest-pinned-junit.xml

# The statistics build keeps compiling and counting: its counter test and the lab's report of them.
# Only what the test needs is built here; `make build-stats` builds the whole variant.
test-stats:
	cmake -S . -B build-stats $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKLAB_STATS=ON >/dev/null
	cmake --build build-stats -j $(JOBS) --target locklab-bench test_lockstat
	cd build-stats && ctest --output-on-failure -R '^test_lockstat$$'

test-py: $(VENV)/.stamp build
	LOCKLAB_BENCH=$(CURDIR)/build/locklab-bench $(VENV)/bin/python -m pytest -q -rs \
	    --junitxml=$(CURDIR)/build/pytest-junit.xml python/tests

test-skips:
	@$(PYTHON) scripts/test-skips build/ctest-junit.xml build/ctest-pinned-junit.xml build-hooks/ctest-junit.xml \
	    $(foreach s,$(SANITIZERS),build-$(s)/ctest-junit.xml) build/pytest-junit.xml

check: setup test-c test-pinned test-hooks test-san test-stats test-py
	@$(MAKE) --no-print-directory test-skips

# glibc's tst-mutex*/tst-cond*/tst-cancel*/tst-robust* built from Debian's glibc-source against the
# installed glibc and run natively, through the shim (glibc), on lk_mutex and on futex3, plus the lab's
# stress tests through the shim. Fails when a test that passes natively fails under the shim.
conformance: setup
	$(PYTHON) tests/glibc/conformance.py --json build/glibc-tests/results.json --md build/glibc-tests/results.md

clean:
	rm -rf build build-* $(VENV)

# ---- verification beyond the tests (docs/verification.md); part of `make check` ------------------
.PHONY: check-arm64 check-models
# arm64: cross-build and run every C test under qemu-aarch64-static, LL/SC (armv8-a) and LSE (armv8.1-a)
check-arm64: deps
	./scripts/check-arm64

# the Promela models in models/ (spin); every mutant must be rejected
check-models: deps
	$(PYTHON) scripts/check-models

check: check-arm64 check-models
