/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_noyield.c - lk_mutex tuning variant "noyield": a spinner whose budget ran out parks at once, without the default's 4 yields (LKM_SPIN_YIELDS 0, the design before issue 11's quiet run); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT noyield
#define LKM_SPIN_YIELDS 0
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
