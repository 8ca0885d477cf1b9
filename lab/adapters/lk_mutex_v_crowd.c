/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_crowd.c - lk_mutex tuning variant "crowd": a waiter that would park because another thread holds S spins beside it, at most the usable CPUs minus two such threads in the process (LKM_CROWD 4096; nothing changes on 2 CPUs); see lk_mutex_variant.h and src/mutex.c. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT crowd
#define LKM_CROWD 4096
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
