/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_stamppre.c - lk_mutex tuning variant "stamppre": the claim of S is stamped before each try of its CAS, as before stop 26 (LKM_STAMP_BEFORE_CLAIM 1); the default stamps once the claim succeeded. See lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT stamppre
#define LKM_STAMP_BEFORE_CLAIM 1
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
