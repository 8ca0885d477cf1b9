/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_nowaityield.c - lk_mutex tuning variant "nowaityield": a waiter behind a spinner that has held S past spin_max_ns parks at once, without the default's 4 yields (LKM_WAIT_YIELDS 0, the design before stop 18); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT nowaityield
#define LKM_WAIT_YIELDS 0
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
