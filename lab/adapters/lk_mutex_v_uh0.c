/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_uh0.c - lk_mutex tuning variant "uh0": the unlock before issue 11's stop 25, whose first CAS always expects LOCKED alone, so an unlock beside a waiting spinner takes two RMWs (LK_MUTEX_UNLOCK_GUESS 0; the default guesses the word from this thread's last unlock, lk_mutex_unlock_hint); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT uh0
/* mutex.h's inline unlock without the guess (the lab builds with LK_MUTEX_UNLOCK_GUESS=1) */
#undef LK_MUTEX_UNLOCK_GUESS
#define LK_MUTEX_UNLOCK_GUESS 0
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
