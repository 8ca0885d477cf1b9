/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_wm2crowd.c - lk_mutex tuning variant "wm2crowd": wm2 and crowd together (LKM_WAKE_MORE 2, LKM_CROWD 4096); see lk_mutex_variant.h and src/mutex.c (LKM_WAKE_MORE). */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT wm2crowd
#define LKM_WAKE_MORE 2
#define LKM_CROWD 4096
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
