/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_noconfirm.c - lk_mutex tuning variant "noconfirm": a spinner takes a lock it finds free at once, without looking again first, and never switches to the hot-owner look interval (LKM_SPIN_CONFIRM_NS 0, the design before stop 20); see lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT noconfirm
#define LKM_SPIN_CONFIRM_NS 0
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
