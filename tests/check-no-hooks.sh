#!/usr/bin/env bash
# tests/check-no-hooks.sh LIB... - the normal library must contain no test hook: no lk_test_hook*
# symbol (defined or undefined) in any of the given shared or static libraries. The hooks build
# (-DLOCKLAB_TEST_HOOKS=ON) is the only one that has them. Exit 0 = clean, 1 = hooks found, 2 = usage.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 LIB..." >&2; exit 2; }
command -v nm >/dev/null || { echo "check-no-hooks: nm not found (binutils)" >&2; exit 2; }
status=0
for lib in "$@"; do
  [ -f "$lib" ] || { echo "check-no-hooks: $lib: no such file" >&2; exit 2; }
  # every symbol table nm can read: the regular one and, for a shared object, the dynamic one;
  # only the symbol names (the last field: nm also prints member names such as test_hooks.c.o)
  syms=$( { nm "$lib" 2>/dev/null || true; nm -D "$lib" 2>/dev/null || true; } | awk 'NF >= 2 { print $NF }')
  [ -n "$syms" ] || { echo "check-no-hooks: nm read no symbols from $lib" >&2; exit 2; }
  if hits=$(grep -i 'test_hook' <<<"$syms"); then
    echo "check-no-hooks: $lib contains test hook symbols:" >&2
    echo "$hits" >&2
    status=1
  else
    echo "check-no-hooks: $lib: no test hook symbol ($(wc -l <<<"$syms") symbols checked)"
  fi
done
exit $status
