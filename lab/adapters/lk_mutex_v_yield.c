/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_yield.c - lk_mutex tuning variant "yield": a spinner whose budget ran out yields 4 times (holding S) before parking (LKM_SPIN_YIELDS 4); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT yield
#define LKM_SPIN_YIELDS 4
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
