/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_base.c - lk_mutex tuning variant "base": lk_mutex compiled again with its own knobs (the control); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT base
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
