/* SPDX-License-Identifier: MIT */
/*
 * src/test_hooks.c - the dispatcher behind LK_TEST_HOOK() (src/test_hooks.h). Compiled to an
 * empty object unless LOCKLAB_TEST_HOOKS is defined: the normal library has no hook symbol.
 */
#ifdef LOCKLAB_TEST_HOOKS
#include <stdatomic.h>
#include <stddef.h>

#include "test_hooks.h"

static _Atomic lk_test_hook_fn hook_fn;

lk_test_hook_fn lk_test_hook_set(lk_test_hook_fn fn)
{
	/* acq_rel: publishes the test's state set up before registering (release) to the threads that
	 * call the hook (acquire below); returns the previous one for tests that nest */
	return atomic_exchange_explicit(&hook_fn, fn, memory_order_acq_rel);
}

void lk_test_hook(const char *point, void *arg)
{
	/* acquire: pairs with the release in lk_test_hook_set() */
	lk_test_hook_fn fn = atomic_load_explicit(&hook_fn, memory_order_acquire);

	if (fn)
		fn(point, arg);
}
#else
/* ISO C forbids an empty translation unit */
typedef int lk_test_hooks_disabled;
#endif
