/* SPDX-License-Identifier: MIT */
/*
 * lab/adapters/park_layouts.c - the parking lot in each bucket layout, for the lab.
 *
 * src/park_impl.h is instantiated three times here, as lab_park_packed_*, lab_park_split_* and
 * lab_park_lean_*: three independent lots (own table, thread registry and fork handler), so a run
 * measures exactly one layout. The library's own instance (lk_*, src/park.c) is registered too, as
 * `lk_park`, to check that the lab's copies behave like the library. Layouts and their bytes per
 * bucket are described in src/park_impl.h; see docs/park.md for the measurements.
 *
 * Also here: the --lock resolution shared by the futex workloads (lab/lab_park.h).
 */
#include <stdio.h>
#include <string.h>

#include "lab_park.h"

#define LKP_LAYOUT		LKP_LAYOUT_PACKED
#define LKP_PUBLIC(name)	lab_park_packed_##name
#define LKP_PRIV(name)		lab_park_packed_p_##name
#include "park_impl.h"
#undef LKP_LAYOUT
#undef LKP_PUBLIC
#undef LKP_PRIV

#define LKP_LAYOUT		LKP_LAYOUT_SPLIT
#define LKP_PUBLIC(name)	lab_park_split_##name
#define LKP_PRIV(name)		lab_park_split_p_##name
#include "park_impl.h"
#undef LKP_LAYOUT
#undef LKP_PUBLIC
#undef LKP_PRIV

#define LKP_LAYOUT		LKP_LAYOUT_LEAN
#define LKP_PUBLIC(name)	lab_park_lean_##name
#define LKP_PRIV(name)		lab_park_lean_p_##name
#include "park_impl.h"
#undef LKP_LAYOUT
#undef LKP_PUBLIC
#undef LKP_PRIV

#define LAYOUT_OPS(sym, nm, pfx)					\
	const struct lab_layout_ops sym = {				\
		.name = nm,						\
		.park = pfx##park,					\
		.unpark_one = pfx##unpark_one,				\
		.unpark_all = pfx##unpark_all,				\
		.unpark_requeue = pfx##unpark_requeue,			\
		.unpark_filter = pfx##unpark_filter,			\
		.get_stats = pfx##park_get_stats,			\
		.reserve = pfx##park_reserve,				\
	}

LAYOUT_OPS(lab_layout_packed_ops, "packed", lab_park_packed_);
LAYOUT_OPS(lab_layout_split_ops, "split", lab_park_split_);
LAYOUT_OPS(lab_layout_lean_ops, "lean", lab_park_lean_);
LAYOUT_OPS(lab_layout_lk_park_ops, "lk_park", lk_);

int lab_fx_resolve(const char *name, struct lab_fx *fx)
{
	const struct lab_alg *a;

	fx->name = name;
	fx->lot = NULL;
	if (strcmp(name, "kernel") == 0)
		return 0;
	a = lab_find("layout", name);
	if (!a || !a->ops || strcmp(a->opstype, "layout") != 0)
		return lab_bad_arg("lock", "kernel or a parking-lot layout (" LAB_FX_CHOICES ")", name);
	fx->lot = a->ops;
	return 0;
}

void lab_fx_emit(struct lab_json *j, const struct lab_fx *fx)
{
	struct lk_park_stats st;

	lj_str(j, "lock", fx->name);
	if (!fx->lot) {
		lj_str(j, "mechanism", "futex(2) FUTEX_PRIVATE_FLAG");
		return;
	}
	fx->lot->get_stats(&st);
	lj_str(j, "mechanism", "parking lot");
	lj_str(j, "layout", st.layout);
	lj_u64(j, "bucket_bytes", st.bucket_bytes);
	lj_u64(j, "lot_buckets", st.buckets);
	lj_u64(j, "table_bytes", st.table_bytes);
	lj_u64(j, "retired_bytes", st.retired_bytes);
	lj_u64(j, "resizes", st.resizes);
	lj_u64(j, "live_threads", st.live_threads);
}
