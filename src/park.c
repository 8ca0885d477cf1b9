/* SPDX-License-Identifier: MIT */
/*
 * src/park.c - the library's parking lot (include/locklab/park.h): one instance of src/park_impl.h,
 * which holds the design (bucket layouts, growth, fork, ordering) and the code.
 *
 * Layout: `lean`, one 64-byte line per bucket (lock, waiter count, queue head/tail) and no back
 * pointer load before the bucket lock. It is the layout that landed in the kernel discussion of
 * seed 000, costs half the memory of `split` (64 vs 128 bytes per bucket), and measured no slower
 * than either alternative here (docs/results/futex.md has the commands and numbers). The lab
 * compiles all three (lab/adapters/park_layouts.c) so the choice can be re-measured on any machine.
 */
#define LKP_LAYOUT		LKP_LAYOUT_LEAN	/* expanded inside park_impl.h */
#define LKP_PUBLIC(name)	lk_##name
#define LKP_PRIV(name)		lkp_##name
#include "park_impl.h"
