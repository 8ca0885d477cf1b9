#!/usr/bin/env bash
# CMake package test (install-smoke.sh's sibling for find_package users): `cmake --install` into a
# temporary prefix, then configure, build and run consumer projects against it with only
# -DCMAKE_PREFIX_PATH=<prefix>:
#   - C and C++ programs linked to locklab::locklab (shared) and locklab::locklab_static;
#     the C++ one uses <locklab/locklab.hpp> (mutex, condition_variable, a spin lock, std::thread);
#   - a C-only project (no C++ compiler enabled) linked to locklab::locklab;
#   - the version file: find_package(locklab <this MAJOR.MINOR>) succeeds, a newer minor or major fails.
# usage: install-cmake.sh BUILD_DIR C_COMPILER CXX_COMPILER
set -euo pipefail
build=$1
cc=$2
cxx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
cfg=$(find "$prefix" -name locklabConfig.cmake | head -n1)
[ -n "$cfg" ] || { echo "install-cmake: no locklabConfig.cmake under $prefix" >&2; exit 1; }
ver=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$(dirname "$cfg")/locklabConfigVersion.cmake")
majmin=${ver%.*}
echo "install-cmake: $cfg (version $ver)"

mkdir -p "$tmp/app" "$tmp/conly"
cp "$(dirname "$0")/install-use.c" "$tmp/app/use.c"
cat > "$tmp/app/use.cc" <<'CXX'
#include <locklab/locklab.hpp>
#include <locklab/locklab.h>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>

static locklab::mutex m;	// constant-initialised
static locklab::condition_variable cv;
static locklab::queued_spin_lock spin;

int main()
{
	long counter = 0, spun = 0;
	int done = 0;
	std::vector<std::thread> ts;
	for (int i = 0; i < 4; i++)
		ts.emplace_back([&] {
			for (int j = 0; j < 20000; j++) {
				{
					std::scoped_lock g(m);
					counter++;
				}
				std::lock_guard<locklab::queued_spin_lock> g(spin);
				spun++;
			}
			std::lock_guard<locklab::mutex> g(m);
			done++;
			cv.notify_all();
		});
	{
		std::unique_lock<locklab::mutex> lk(m);
		if (!cv.wait_for(lk, std::chrono::minutes(5), [&] { return done == 4; })) {
			std::fprintf(stderr, "use.cc: workers did not finish\n");
			return 1;
		}
	}
	for (auto &t : ts)
		t.join();
	if (counter != 80000 || spun != 80000) {
		std::fprintf(stderr, "use.cc: counters %ld %ld, expected 80000\n", counter, spun);
		return 1;
	}
	std::printf("C++ consumer: ok with locklab %s\n", lk_version());
	return 0;
}
CXX
cat > "$tmp/app/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.20)
project(locklab_consumer LANGUAGES C CXX)
find_package(locklab $majmin CONFIG REQUIRED)
add_executable(use_c use.c)
target_link_libraries(use_c PRIVATE locklab::locklab)
add_executable(use_c_static use.c)
target_link_libraries(use_c_static PRIVATE locklab::locklab_static)
add_executable(use_cxx use.cc)
target_link_libraries(use_cxx PRIVATE locklab::locklab)
add_executable(use_cxx_static use.cc)
target_link_libraries(use_cxx_static PRIVATE locklab::locklab_static)
CMAKE
cat > "$tmp/conly/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.20)
project(locklab_c_consumer LANGUAGES C)
find_package(locklab CONFIG REQUIRED)
add_executable(use_c use.c)
target_link_libraries(use_c PRIVATE locklab::locklab)
CMAKE
cp "$tmp/app/use.c" "$tmp/conly/use.c"

configure() {	# source dir, build dir, extra args...
	local src=$1 bld=$2
	shift 2
	cmake -S "$src" -B "$bld" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
		-DCMAKE_CXX_COMPILER="$cxx" "$@" >"$bld.log" 2>&1 || { cat "$bld.log" >&2; return 1; }
}
configure "$tmp/app" "$tmp/app-build"
cmake --build "$tmp/app-build" >"$tmp/app-build.log" 2>&1 || { cat "$tmp/app-build.log" >&2; exit 1; }
# the shared programs run from the build tree without LD_LIBRARY_PATH: CMake's build RPATH names the
# imported library's directory
for exe in use_c use_c_static use_cxx use_cxx_static; do
	"$tmp/app-build/$exe"
done
# the static programs do not need liblocklab.so at all
# (ldd's output is captured, not piped into grep -q: with pipefail, grep's early exit fails the pipe)
for exe in use_c_static use_cxx_static; do
	deps=$(ldd "$tmp/app-build/$exe")
	if grep -q liblocklab <<<"$deps"; then
		echo "install-cmake: $exe (locklab::locklab_static) links liblocklab.so" >&2
		exit 1
	fi
done
deps=$(ldd "$tmp/app-build/use_c")
grep -q "$prefix.*liblocklab.so" <<<"$deps" || {
	echo "install-cmake: use_c (locklab::locklab) does not load liblocklab.so from $prefix" >&2
	exit 1
}

configure "$tmp/conly" "$tmp/conly-build"
cmake --build "$tmp/conly-build" >"$tmp/conly-build.log" 2>&1 || { cat "$tmp/conly-build.log" >&2; exit 1; }
"$tmp/conly-build/use_c"

# the version file: newer minor and major versions are refused
for want in "${ver%%.*}.$(( ${majmin#*.} + 1 ))" "$(( ${ver%%.*} + 1 )).0"; do
	mkdir -p "$tmp/v$want"
	printf 'cmake_minimum_required(VERSION 3.20)\nproject(v LANGUAGES C)\nfind_package(locklab %s CONFIG REQUIRED)\n' \
		"$want" > "$tmp/v$want/CMakeLists.txt"
	if cmake -S "$tmp/v$want" -B "$tmp/v$want/b" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/v.log" 2>&1; then
		echo "install-cmake: find_package(locklab $want) accepted version $ver" >&2
		exit 1
	fi
	grep -q "version" "$tmp/v.log" || { cat "$tmp/v.log" >&2; exit 1; }
done
echo "install-cmake: ok (C, C++, shared, static, C-only project, version $ver compatible with $majmin only)"
