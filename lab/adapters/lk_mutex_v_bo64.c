/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_bo64.c - lk_mutex tuning variant "bo64": the spinner waits up to 64 relaxes between two looks at the word (SPIN_BACKOFF_MAX 64: 820 ns on the Intel guest, about what the default SPIN_BACKOFF_MAX_NS 800 gives there), so it pulls the line from an owner that re-locks at once less often; see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT bo64
#define SPIN_BACKOFF_MAX 64
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
