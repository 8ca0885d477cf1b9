#!/usr/bin/env bash
# tests/check-unlock-guess.sh LIBLOCKLAB_SO INCLUDE_DIR CC - where the inline unlock guesses
# (LK_MUTEX_UNLOCK_GUESS, locklab/mutex.h) and what that costs a library loaded late:
#   1. liblocklab.so has no STATIC_TLS flag: its own code does not read the guess with the
#      initial-exec model, so a dlopen() after other modules used the static TLS surplus still works
#      (stop 25's review: with the flag the library's whole 576-byte TLS block needed that surplus);
#   2. a plugin compiled -fPIC -shared that unlocks an lk_mutex has no initial-exec TLS relocation
#      either (its unlock does not guess), and one compiled with -DLK_MUTEX_UNLOCK_GUESS=1 has one,
#      so the check can fail;
#   3. a program compiled -fPIE reads lk_mutex_unlock_hint (its unlock guesses), from version
#      LOCKLAB_0.2 of the library.
# Exit 0 = as above, 1 = not, 2 = usage or missing tools.
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 LIBLOCKLAB_SO INCLUDE_DIR CC" >&2; exit 2; }
lib=$1 inc=$2 cc=$3
for t in readelf nm; do command -v $t >/dev/null || { echo "check-unlock-guess: $t not found (binutils)" >&2; exit 2; }; done
[ -f "$lib" ] || { echo "check-unlock-guess: $lib: no such file" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
fail() { echo "check-unlock-guess: FAIL: $*" >&2; status=1; }

if readelf -dW "$lib" | grep -q STATIC_TLS; then
	fail "$lib has the STATIC_TLS flag: a late dlopen() of it can fail"
fi
cat > "$tmp/use.c" <<'C'
#include "locklab/mutex.h"
lk_mutex_t m = LK_MUTEX_INITIALIZER;
int use(void) { lk_mutex_lock(&m); return lk_mutex_unlock(&m); }
int main(void) { return use(); }
C
ie_relocs() { readelf -rW "$1" | grep -c 'TPOFF' || true; }
"$cc" -O2 -fPIC -shared -I"$inc" -o "$tmp/plugin.so" "$tmp/use.c"
n=$(ie_relocs "$tmp/plugin.so")
[ "$n" = 0 ] || fail "a -fPIC -shared plugin has $n initial-exec TLS relocation(s): its unlock guesses"
"$cc" -O2 -fPIC -shared -DLK_MUTEX_UNLOCK_GUESS=1 -I"$inc" -o "$tmp/plugin1.so" "$tmp/use.c"
n=$(ie_relocs "$tmp/plugin1.so")
[ "$n" != 0 ] || fail "a plugin built with LK_MUTEX_UNLOCK_GUESS=1 has no initial-exec TLS relocation"
"$cc" -O2 -fPIE -pie -I"$inc" -o "$tmp/prog" "$tmp/use.c" "$lib"
nm -D "$tmp/prog" | grep -q 'U lk_mutex_unlock_hint@LOCKLAB_0.2' ||
	fail "a -fPIE program does not read lk_mutex_unlock_hint@LOCKLAB_0.2: $(nm -D "$tmp/prog" | grep unlock_hint || echo none)"
nm -D --defined-only "$lib" | grep -q 'lk_mutex_unlock_hint@@LOCKLAB_0.2' ||
	fail "$lib does not define lk_mutex_unlock_hint@@LOCKLAB_0.2"
[ $status = 0 ] && echo "check-unlock-guess: ok (no STATIC_TLS; plugins do not guess, programs do, LOCKLAB_0.2)"
exit $status
