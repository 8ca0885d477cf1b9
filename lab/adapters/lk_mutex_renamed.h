/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/lk_mutex_renamed.h - src/mutex.c compiled into the including translation unit with
 * every external symbol renamed lab_lkmv_<LKM_VARIANT>_<name> (its own policy, side table, fork
 * generation and, with LKM_CROWD, extra-spinner count; the parking lot is the library's), and with
 * the LKM_* knobs the includer defined first. For the lab's tuning variants (lk_mutex_variant.h)
 * and for white-box tests of knobs the library is not built with (tests/test_mutex_crowd.c): the
 * renamed copy links beside the library's own lk_mutex. Its file-scope statics are visible to the
 * includer.
 */
#ifndef LKM_VARIANT
#error "define LKM_VARIANT before including lk_mutex_renamed.h"
#endif

#define LKMV_CAT3(a, b, c) a##b##c
#define LKMV_CAT(a, b, c) LKMV_CAT3(a, b, c)
#define LKMV(name) LKMV_CAT(lab_lkmv_, LKM_VARIANT, _##name)

#define lk_mutex_get_policy	LKMV(get_policy)
#define lk_mutex_set_policy	LKMV(set_policy)
#define lk_mutex_get_ask	LKMV(get_ask)
#define lk_mutex_set_ask	LKMV(set_ask)
#define lk_mutex_init		LKMV(init)
#define lk_mutex_destroy	LKMV(destroy)
#define lk_mutex_lock		LKMV(lock)
#define lk_mutex_trylock	LKMV(trylock)
#define lk_mutex_timedlock	LKMV(timedlock)
#define lk_mutex_unlock		LKMV(unlock)
#define lk_mutex_lock_slow	LKMV(lock_slow)
#define lk_mutex_unlock_slow	LKMV(unlock_slow)
#define lk_mutex_unlock_hint	LKMV(unlock_hint)
#define lk_mutex_lock_unparked	LKMV(lock_unparked)
#define lkm_requeued		LKMV(requeued)
#define lkm_requeued_timed_out	LKMV(requeued_timed_out)
#define lkm_mark_parked_if_locked	LKMV(mark_parked_if_locked)
#define lkm_wm_unlock		LKMV(wm_unlock)

#include "../../src/mutex.c"
