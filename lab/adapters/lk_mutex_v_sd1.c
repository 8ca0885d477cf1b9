/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_sd1.c - lk_mutex tuning variant "sd1": the spinner's first look at the word comes after the backoff cap / 1 (SPIN_DELAY_START_DIV 1), not after one relax; see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT sd1
#define SPIN_DELAY_START_DIV 1
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
