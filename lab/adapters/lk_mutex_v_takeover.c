/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_takeover.c - lk_mutex tuning variant "takeover": a woken spinner's S is only reserved (W) until it runs, and a running newcomer may take the role over (LKM_SPIN_TAKEOVER 1); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT takeover
#define LKM_SPIN_TAKEOVER 1
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
