#!/usr/bin/env bash
# Header test: every public header compiles on its own (nothing it needs is left for the includer to
# provide), then locklab.h and locklab.hpp, in each language mode a user may pick:
#   C:   -std=c11 -pedantic (no POSIX or GNU feature macros: clockid_t must not need them), -std=gnu11
#   C++: -std=c++17 -pedantic, -std=c++20 -pedantic (extern "C", no _Atomic in what C++ sees)
# with -Wall -Wextra -Werror and without -pthread, with the build's compilers and, when installed,
# clang/clang++ (scripts/install-deps installs clang). Each header is also included twice (guards).
# usage: header-compile.sh INCLUDE_DIR C_COMPILER CXX_COMPILER
set -uo pipefail
inc=$1
cc=$2
cxx=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

compilers_c=("$cc")
compilers_cxx=("$cxx")
if command -v clang >/dev/null 2>&1 && command -v clang++ >/dev/null 2>&1; then
	[ "$(basename "$cc")" = clang ] || compilers_c+=(clang)
	[ "$(basename "$cxx")" = clang++ ] || compilers_cxx+=(clang++)
else
	echo "header-compile: clang not installed; checking with $cc and $cxx only"
fi

headers=()
for h in "$inc"/locklab/*.h; do headers+=("locklab/$(basename "$h")"); done
if [ ${#headers[@]} -lt 10 ]; then
	echo "header-compile: found only ${#headers[@]} headers under $inc/locklab" >&2
	exit 1
fi

fail=0 n=0
check() {	# compiler, flags, header, suffix
	local comp=$1 flags=$2 h=$3 ext=$4 src
	src="$tmp/t.$ext"
	printf '#include <%s>\n#include <%s>\nint main(void) { return 0; }\n' "$h" "$h" > "$src"
	n=$((n + 1))
	# shellcheck disable=SC2086
	if ! out=$("$comp" $flags -Wall -Wextra -Werror -I"$inc" -c "$src" -o "$tmp/t.o" 2>&1); then
		echo "FAIL: $h with $comp $flags" >&2
		echo "$out" | head -n 5 >&2
		fail=$((fail + 1))
	fi
}

for comp in "${compilers_c[@]}"; do
	for flags in "-std=c11 -pedantic" "-std=gnu11"; do
		for h in "${headers[@]}"; do check "$comp" "$flags" "$h" c; done
	done
done
for comp in "${compilers_cxx[@]}"; do
	for flags in "-std=c++17 -pedantic" "-std=c++20 -pedantic"; do
		for h in "${headers[@]}" locklab/locklab.hpp; do check "$comp" "$flags" "$h" cc; done
	done
done

# locklab.hpp without exceptions (-fno-exceptions, as some C++ code bases build)
for comp in "${compilers_cxx[@]}"; do check "$comp" "-std=c++17 -pedantic -fno-exceptions" locklab/locklab.hpp cc; done

# locklab.hpp is C++ only, and says so to a C compiler
printf '#include <locklab/locklab.hpp>\n' > "$tmp/c.c"
if "$cc" -std=c11 -I"$inc" -c "$tmp/c.c" -o "$tmp/c.o" 2>"$tmp/err"; then
	echo "FAIL: locklab.hpp compiled as C" >&2
	fail=$((fail + 1))
elif ! grep -q "locklab.hpp is the C++ interface" "$tmp/err"; then
	echo "FAIL: locklab.hpp in C: expected its #error, got: $(head -n 3 "$tmp/err")" >&2
	fail=$((fail + 1))
fi

if [ $fail -ne 0 ]; then
	echo "header-compile: $fail of $n compilations failed" >&2
	exit 1
fi
echo "header-compile: ok, $n compilations (${compilers_c[*]}; ${compilers_cxx[*]})"
