/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_bo16.c - lk_mutex tuning variant "bo16": the spinner waits up to 16 relaxes between two looks at the word (SPIN_BACKOFF_MAX 16), the cap before issue 11's stop 24 (205 ns on the Intel guest; the default is now SPIN_BACKOFF_MAX_NS 800); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT bo16
#define SPIN_BACKOFF_MAX 16
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
