#!/usr/bin/env bash
# Install smoke test: `cmake --install` into a temporary prefix, then build a program
# (tests/install-use.c) against the installed headers through pkg-config, against the shared library
# (run with LD_LIBRARY_PATH, and built with an rpath, run without it) and against the static library,
# and run each. Also checks the shared library exports nothing but lk_* (src/locklab.map).
# usage: install-smoke.sh BUILD_DIR C_COMPILER
set -euo pipefail
build=$1
cc=$2
src=$(dirname "$0")/install-use.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pcdir=$(dirname "$(find "$tmp/prefix" -name locklab.pc | head -n1)")
export PKG_CONFIG_PATH=$pcdir
"$cc" -std=c11 -Wall -Werror "$src" -o "$tmp/use-shared" $(pkg-config --cflags --libs locklab) -pthread
LD_LIBRARY_PATH=$(pkg-config --variable=libdir locklab) "$tmp/use-shared"
# or with the library's directory recorded in the program (rpath): no LD_LIBRARY_PATH needed
libdir=$(pkg-config --variable=libdir locklab)
"$cc" -std=c11 -Wall -Werror "$src" -o "$tmp/use-rpath" $(pkg-config --cflags --libs locklab) \
	-Wl,-rpath,"$libdir" -pthread
deps=$(env -u LD_LIBRARY_PATH ldd "$tmp/use-rpath")	# (not piped into grep -q: pipefail + SIGPIPE)
if ! grep -q "liblocklab.so.* => $tmp/prefix" <<<"$deps"; then
	echo "install-smoke: the rpath build does not load liblocklab from $tmp/prefix:" >&2
	echo "$deps" >&2
	exit 1
fi
env -u LD_LIBRARY_PATH "$tmp/use-rpath"
"$cc" -std=c11 -Wall -Werror "$src" -o "$tmp/use-static" $(pkg-config --cflags locklab) \
	"$(pkg-config --variable=libdir locklab)/liblocklab.a" -pthread
"$tmp/use-static"
so=$(find "$tmp/prefix" -name 'liblocklab.so.*.*' | head -n1)
leaked=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^lk_' | grep -v '^LOCKLAB_' || true)
if [ -n "$leaked" ]; then
	echo "install-smoke: symbols exported outside lk_*: $leaked" >&2
	exit 1
fi
echo "install-smoke: exports only lk_* ($(nm -D --defined-only "$so" | grep -c ' lk_') symbols)"
