/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_crowdany.c - lk_mutex tuning variant "crowdany": 2 threads spinning beside the S holder whatever the CPU count (LKM_CROWD 2, LKM_CROWD_ANY_CPUS), so that a 2-CPU machine exercises the extra spinners and shows what they cost where threads outnumber CPUs; see lk_mutex_variant.h and src/mutex.c. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT crowdany
#define LKM_CROWD 2
#define LKM_CROWD_ANY_CPUS 1
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
