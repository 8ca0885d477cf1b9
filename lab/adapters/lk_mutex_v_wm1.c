/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_wm1.c - lk_mutex tuning variant "wm1": an unlock may wake the head beside S or W (LKM_WAKE_MORE 1); see lk_mutex_variant.h and src/mutex.c (LKM_WAKE_MORE). */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT wm1
#define LKM_WAKE_MORE 1
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
