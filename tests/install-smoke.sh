#!/usr/bin/env bash
# Install smoke test: `cmake --install` into a temporary prefix, then build a program against the
# installed headers through pkg-config, against the shared library (run with LD_LIBRARY_PATH, and
# built with an rpath, run without it) and against the static library, and run each. Also checks the shared library exports nothing but lk_* (src/locklab.map).
# usage: install-smoke.sh BUILD_DIR C_COMPILER
set -euo pipefail
build=$1
cc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
pcdir=$(dirname "$(find "$tmp/prefix" -name locklab.pc | head -n1)")
export PKG_CONFIG_PATH=$pcdir
cat > "$tmp/use.c" <<'C'
#include <locklab/locklab.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static lk_mutex_t m = LK_MUTEX_INITIALIZER;
static lk_cond_t c = LK_COND_INITIALIZER;
static int ready, counter;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 10000; i++) {
		lk_mutex_lock(&m);
		counter++;
		lk_mutex_unlock(&m);
	}
	lk_mutex_lock(&m);
	ready++;
	lk_cond_broadcast(&c);
	lk_mutex_unlock(&m);
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	lk_mutex_lock(&m);
	while (ready < 4)
		lk_cond_wait(&c, &m);
	lk_mutex_unlock(&m);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	if (counter != 40000) {
		fprintf(stderr, "install-smoke: counter %d, expected 40000\n", counter);
		return 1;
	}
	printf("install-smoke: ok with locklab %s\n", lk_version());
	return strcmp(lk_version(), "") == 0;
}
C
"$cc" -std=c11 -Wall -Werror "$tmp/use.c" -o "$tmp/use-shared" $(pkg-config --cflags --libs locklab) -pthread
LD_LIBRARY_PATH=$(pkg-config --variable=libdir locklab) "$tmp/use-shared"
# or with the library's directory recorded in the program (rpath): no LD_LIBRARY_PATH needed
libdir=$(pkg-config --variable=libdir locklab)
"$cc" -std=c11 -Wall -Werror "$tmp/use.c" -o "$tmp/use-rpath" $(pkg-config --cflags --libs locklab) \
	-Wl,-rpath,"$libdir" -pthread
if ! env -u LD_LIBRARY_PATH ldd "$tmp/use-rpath" | grep -q "liblocklab.so.* => $tmp/prefix"; then
	echo "install-smoke: the rpath build does not load liblocklab from $tmp/prefix:" >&2
	env -u LD_LIBRARY_PATH ldd "$tmp/use-rpath" >&2
	exit 1
fi
env -u LD_LIBRARY_PATH "$tmp/use-rpath"
"$cc" -std=c11 -Wall -Werror "$tmp/use.c" -o "$tmp/use-static" $(pkg-config --cflags locklab) \
	"$(pkg-config --variable=libdir locklab)/liblocklab.a" -pthread
"$tmp/use-static"
so=$(find "$tmp/prefix" -name 'liblocklab.so.*.*' | head -n1)
leaked=$(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -v '^lk_' | grep -v '^LOCKLAB_' || true)
if [ -n "$leaked" ]; then
	echo "install-smoke: symbols exported outside lk_*: $leaked" >&2
	exit 1
fi
echo "install-smoke: exports only lk_* ($(nm -D --defined-only "$so" | grep -c ' lk_') symbols)"
