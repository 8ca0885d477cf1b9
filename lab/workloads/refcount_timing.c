/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/refcount_timing.c - the `refcount-timing` workload: the LKDTM REFCOUNT_TIMING /
 * ATOMIC_TIMING analog. One thread, one counter set to 1:
 *
 *	n x inc, then n + 1 x dec_and_test          (LKDTM: n = INT_MAX - 1, timed with perf cycles)
 *
 * through the registry entry refcount_<lock> (fast, full or the unchecked atomic baseline), whose
 * `timing` hook runs the loop with the operations inlined. Reported: ns_per_op (this thread's CPU
 * time / (2n + 1): preemption on a loaded machine does not count, as LKDTM counted cycles),
 * wall_ns_per_op, total_s, cpu_s, and zero_hits, which must be exactly 1 (the last dec_and_test; exit 1 otherwise).
 * Kees Cook's x86 figures (seed 002): atomic 82.2G, fast 82.2G, full 144.8G cycles (full/fast 1.76).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lab.h"
#include "lab_refcount.h"

/* CPU time of this thread: a loaded machine's preemptions do not count (LKDTM counted cycles). */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int rt_run(const struct lab_run *r, struct lab_json *out)
{
	char name[64];
	const struct lab_alg *alg;
	const struct lab_refcount_ops *ops;
	uint64_t n = lab_u(r, "iterations"), t0, t1, c0, c1, zero;
	struct lk_refcount *rc = lab_alloc_aligned(sizeof(*rc));

	snprintf(name, sizeof(name), "refcount_%s", lab_s(r, "lock"));
	alg = lab_find("refcount", name);
	if (!alg || !alg->ops) {
		free(rc);
		return lab_bad_arg("lock", "a refcount flavour available in this build", lab_s(r, "lock"));
	}
	ops = alg->ops;
	lk_refcount_set(rc, 1);
	c0 = thread_cpu_ns();
	t0 = lab_now_ns();
	zero = ops->timing(rc, n);
	t1 = lab_now_ns();
	c1 = thread_cpu_ns();

	lj_str(out, "impl", ops->impl);
	lj_u64(out, "iterations", n);
	lj_dbl(out, "total_s", (double)(t1 - t0) / 1e9);
	lj_dbl(out, "cpu_s", (double)(c1 - c0) / 1e9);
	lj_dbl(out, "ns_per_op", (double)(c1 - c0) / (double)(2 * n + 1));
	lj_dbl(out, "wall_ns_per_op", (double)(t1 - t0) / (double)(2 * n + 1));
	lj_u64(out, "zero_hits", zero);
	lj_i64(out, "final_count", lk_refcount_read(rc));
	free(rc);
	if (zero != 1) {
		fprintf(stderr, "locklab-bench: refcount-timing: %s: dec_and_test hit zero %llu times, want 1\n",
			name, (unsigned long long)zero);
		return 1;
	}
	return 0;
}

static const struct lab_param rt_params[] = {
	{ "lock", LAB_P_STR, "fast", 0, 0, "atomic,fast,full",
	  "refcount flavour: unchecked atomic, fast (fetch_add then check), full (cmpxchg loop)", true },
	{ "iterations", LAB_P_UINT, "67108864", 1, INT_MAX - 1, NULL,
	  "increments (then iterations + 1 dec_and_tests); LKDTM uses 2147483646", true },
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_refcount_timing = {
	.name = "refcount-timing",
	.help = "LKDTM REFCOUNT_TIMING analog: one thread, n inc then n+1 dec_and_test; ns per operation",
	.metric = "ns_per_op",
	.higher_is_better = false,
	.params = rt_params,
	.run = rt_run,
};
