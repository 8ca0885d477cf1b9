/* SPDX-License-Identifier: MIT */
/*
 * src/test_hooks.h - test-only pause points (internal header, not installed). Expands to NOTHING
 * unless LOCKLAB_TEST_HOOKS is defined, which only the test build does (cmake -DLOCKLAB_TEST_HOOKS=ON,
 * `make test-hooks`); the normal library and every installed program contain no hook code and no
 * hook symbol (tests/check-no-hooks.sh checks liblocklab.so and liblocklab.a with nm). The one hook
 * in a public header (spin_ticket.h's trylock, an inline function) declares lk_test_hook() itself.
 *
 * LK_TEST_HOOK(point, arg) marks a narrow window inside an algorithm - between a read and the CAS
 * that depends on it, between a decision and the unpark that carries it out - where no callback of
 * the public API reaches. In the hooks build it calls the function a test registered with
 * lk_test_hook_set(), with the point's name (a string literal, e.g. "mutex.unlock_slow") and an
 * argument (usually the lock); the test can then act in the window: run other threads to
 * completion, draw tickets, fork. The list of points is in tests/hooks/README.md.
 */
#ifndef LOCKLAB_SRC_TEST_HOOKS_H
#define LOCKLAB_SRC_TEST_HOOKS_H

#ifdef LOCKLAB_TEST_HOOKS
#ifdef __cplusplus
extern "C" {
#endif
typedef void (*lk_test_hook_fn)(const char *point, void *arg);
/* Registers fn (NULL: none) for every point; returns the previous one. */
lk_test_hook_fn lk_test_hook_set(lk_test_hook_fn fn);
/* Calls the registered function, if any. */
void lk_test_hook(const char *point, void *arg);
#ifdef __cplusplus
}
#endif
#define LK_TEST_HOOK(point, arg) lk_test_hook((point), (void *)(arg))
#else
#define LK_TEST_HOOK(point, arg) ((void)0)
#endif

#endif /* LOCKLAB_SRC_TEST_HOOKS_H */
