/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_wakebit.c - lk_mutex tuning variant "wakebit": an unlock that wakes sets W (one woken waiter in flight) instead of S, so running newcomers may still spin (LKM_WAKE_BIT 1); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT wakebit
#define LKM_WAKE_BIT 1
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
