/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_sd4.c - lk_mutex tuning variant "sd4": the spinner's first look at the word comes after the backoff cap / 4 (SPIN_DELAY_START_DIV 4), not after one relax; see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT sd4
#define SPIN_DELAY_START_DIV 4
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
