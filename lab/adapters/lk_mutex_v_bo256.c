/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_bo256.c - lk_mutex tuning variant "bo256": the spinner waits up to 256 relaxes between two looks at the word (SPIN_BACKOFF_MAX 256: 3.3 us on the Intel guest; the default is SPIN_BACKOFF_MAX_NS 800), so it pulls the line from an owner that re-locks at once less often; see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT bo256
#define SPIN_BACKOFF_MAX 256
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
