/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_smin250.c - lk_mutex tuning variant "smin250": spin_min_ns 250 by default (the library's is 1000), so a spinner whose learned estimate is short goes to its yields sooner instead of reading the word for a microsecond; LOCKLAB_MUTEX_SPIN_MIN_NS still overrides it; see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT smin250
#define LKMV_SPIN_MIN_NS 250
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
