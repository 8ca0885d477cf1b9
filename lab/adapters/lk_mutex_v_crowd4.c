/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_crowd4.c - lk_mutex tuning variant "crowd4": as "crowd", with at most 4 threads spinning beside S holders (LKM_CROWD 4); see lk_mutex_variant.h and src/mutex.c. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT crowd4
#define LKM_CROWD 4
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
