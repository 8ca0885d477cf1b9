/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_wm2.c - lk_mutex tuning variant "wm2": as wm1 with 2 extra woken waiters in flight (LKM_WAKE_MORE 2); see lk_mutex_variant.h and src/mutex.c (LKM_WAKE_MORE). */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT wm2
#define LKM_WAKE_MORE 2
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
