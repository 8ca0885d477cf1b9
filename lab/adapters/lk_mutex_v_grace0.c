/* SPDX-License-Identifier: MIT */
/* lab/adapters/lk_mutex_v_grace0.c - lk_mutex tuning variant "grace0": a would-be parker that finds S with a claim time older than spin_max_ns takes S for stuck at once (STAMP_GRACE_NS 0), as between stop 26's two commits; the default waits up to 2 us for the new spinner's stamp. See lk_mutex_variant.h. */
#ifdef LAB_MUTEX_VARIANTS
#define LKM_VARIANT grace0
#define STAMP_GRACE_NS 0
#include "lk_mutex_variant.h"
#else
typedef int lab_lk_mutex_v_unused;	/* (an empty translation unit is not ISO C) */
#endif
