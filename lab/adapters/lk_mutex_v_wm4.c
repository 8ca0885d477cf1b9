/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_wm4.c - lk_mutex tuning variant "wm4": as wm1 with 4 extra woken waiters in flight (LKM_WAKE_MORE 4); see lk_mutex_variant.h and src/mutex.c (LKM_WAKE_MORE). */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT wm4
#define LKM_WAKE_MORE 4
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
