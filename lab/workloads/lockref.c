/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/lockref.c - the `lockref` workload: seed 002's open/close pattern on one shared
 * lockref (a hot dentry), and the failures-per-operation histogram shared with cas-storm.
 *
 * T threads loop:
 *
 *	get(lr)              dget: lockless cmpxchg unless the variant says otherwise
 *	put(lr)              dput: lk_lockref_put_or_lock (never the last reference: main holds one)
 *	`parallel` pauses    work between two opens
 *
 * Variants (--lock):
 *	bounded     lockless cmpxchg, at most --retry-limit attempts, then the spinlock (kernel since 2019)
 *	unbounded   lockless cmpxchg until it succeeds or sees the lock held (kernel before 2019)
 *	spinlock    every operation takes the lockref's spinlock (retry limit 0: "lockref disabled")
 *	atomic      a plain atomic counter (fetch_add/fetch_sub): the floor no lockref can beat
 *
 * For every get and put inside the measured window the worker records how many of its cmpxchg
 * attempts failed (the calling thread's lk_lockref_stats before and after: per-thread counters, no
 * shared writes) and whether it ended on the spinlock. Reported: ops_per_sec and the window fields
 * (fairness, cpu_ns_per_op), cas_failures_per_success (mean = all failures / lockless successes, as
 * seed 002's "~25 retries per success"), the per-operation failure distribution (p50/p99/max),
 * fallback_rate (operations that ended on the spinlock / all operations), and the uncontended cost of
 * one get+put pair measured single-threaded first (seed 002: do not buy the contended case with the
 * uncontended one). The final count must be 1 again (count_ok; exit 1 otherwise).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "lab_refcount.h"
#include "locklab/lockref.h"

enum variant { V_BOUNDED, V_UNBOUNDED, V_SPINLOCK, V_ATOMIC };

struct lockref_shared {
	/* line 0: read-only while the threads run */
	enum variant v;
	uint64_t parallel;
	struct lab_fhist **hist;	/* per thread, allocated by the worker, read after join */
	uint64_t *fallbacks;		/* per thread, inside the window */
	/* line 1: the contended object */
	struct lk_lockref lr __attribute__((aligned(LAB_CACHELINE)));
	/* line 2: the atomic variant's counter */
	_Atomic int64_t counter __attribute__((aligned(LAB_CACHELINE)));
} __attribute__((aligned(LAB_CACHELINE)));

/* ---- the failures histogram (declared in lab_refcount.h) ------------------------------------------ */

void lab_fhist_merge(struct lab_fhist *into, const struct lab_fhist *from)
{
	for (unsigned i = 0; i <= LAB_FHIST_MAX; i++)
		into->n[i] += from->n[i];
	into->ops += from->ops;
	into->failures += from->failures;
	if (from->max > into->max)
		into->max = from->max;
}

static uint64_t fhist_pct(const struct lab_fhist *h, double pct)
{
	uint64_t want = (uint64_t)(pct / 100.0 * (double)h->ops), seen = 0;

	if (!h->ops)
		return 0;
	if (want >= h->ops)
		want = h->ops - 1;
	for (unsigned i = 0; i < LAB_FHIST_MAX; i++) {
		seen += h->n[i];
		if (seen > want)
			return i;
	}
	return h->max;
}

void lab_fhist_emit(struct lab_json *j, const char *key, const struct lab_fhist *h)
{
	uint64_t successes = h->ops;

	lj_obj_begin(j, key);
	lj_u64(j, "ops", h->ops);
	lj_u64(j, "failures", h->failures);
	lj_dbl(j, "mean", successes ? (double)h->failures / (double)successes : 0);
	lj_u64(j, "p50", fhist_pct(h, 50));
	lj_u64(j, "p90", fhist_pct(h, 90));
	lj_u64(j, "p99", fhist_pct(h, 99));
	lj_u64(j, "p999", fhist_pct(h, 99.9));
	lj_u64(j, "max", h->max);
	lj_arr_begin(j, "hist");
	for (unsigned i = 0; i <= LAB_FHIST_MAX; i++) {
		if (!h->n[i])
			continue;
		lj_arr_begin(j, NULL);
		lj_u64(j, NULL, i);
		lj_u64(j, NULL, h->n[i]);
		lj_arr_end(j);
	}
	lj_arr_end(j);
	lj_obj_end(j);
}

/* ---- the workload ---------------------------------------------------------------------------------- */

static inline uint64_t fallen_back(const struct lk_lockref_stats *st)
{
	return st->fallback_retry + st->fallback_locked + st->lockless_disabled;
}

static inline void get_put(struct lockref_shared *s)
{
	if (s->v == V_ATOMIC) {
		/* relaxed: a counter that publishes nothing (the baseline's whole point) */
		atomic_fetch_add_explicit(&s->counter, 1, memory_order_relaxed);
		/* release: as a put */
		atomic_fetch_sub_explicit(&s->counter, 1, memory_order_release);
		return;
	}
	lk_lockref_get(&s->lr);
	if (!lk_lockref_put_or_lock(&s->lr)) {
		/* cannot happen (main holds a reference); keep the count right if it ever does */
		lk_lockref_set_count_locked(&s->lr, lk_lockref_count(&s->lr) - 1);
		lk_lockref_unlock(&s->lr);
	}
}

static void lockref_worker(struct lab_ctx *c)
{
	struct lockref_shared *s = c->arg;
	const struct lk_lockref_stats *st = lk_lockref_stats_self();
	struct lab_fhist *h = calloc(1, sizeof(*h));
	uint64_t fallbacks = 0;

	while (!lab_stopping(c)) {
		if (h && lab_measuring(c) && s->v != V_ATOMIC) {
			uint64_t f0 = st->cas_failures, b0 = fallen_back(st), f1, b1;

			lk_lockref_get(&s->lr);
			f1 = st->cas_failures;
			b1 = fallen_back(st);
			lab_fhist_add(h, f1 - f0);
			if (!lk_lockref_put_or_lock(&s->lr)) {
				lk_lockref_set_count_locked(&s->lr, lk_lockref_count(&s->lr) - 1);
				lk_lockref_unlock(&s->lr);
			}
			lab_fhist_add(h, st->cas_failures - f1);
			fallbacks += (b1 - b0) + (fallen_back(st) - b1);
		} else {
			get_put(s);
		}
		lab_pause(s->parallel);
		lab_op_done(c);
	}
	s->hist[c->id] = h;
	s->fallbacks[c->id] = fallbacks;
}

static double uncontended_pair_ns(struct lockref_shared *s)
{
	const unsigned n = 200000;
	double best = 0;

	for (int rep = 0; rep < 5; rep++) {
		uint64_t t0 = lab_now_ns();

		for (unsigned i = 0; i < n; i++)
			get_put(s);
		double ns = (double)(lab_now_ns() - t0) / n;
		if (rep == 0 || ns < best)
			best = ns;
	}
	return best;
}

static int lockref_run(const struct lab_run *r, struct lab_json *out)
{
	static const char *const names[] = { "bounded", "unbounded", "spinlock", "atomic" };
	const char *lock = lab_s(r, "lock");
	unsigned nthreads = (unsigned)lab_u(r, "threads");
	uint64_t limit = lab_u(r, "retry-limit");
	struct lockref_shared *s = lab_alloc_aligned(sizeof(*s));
	struct lab_fhist *all = calloc(1, sizeof(*all));
	struct lab_window w;
	uint64_t fallbacks = 0, total = 0;
	int err = 0, eff_limit;
	double pair_ns;

	s->v = V_BOUNDED;
	for (unsigned i = 0; i < 4; i++)
		if (strcmp(lock, names[i]) == 0)
			s->v = (enum variant)i;
	s->parallel = lab_u(r, "parallel");
	s->hist = calloc(nthreads, sizeof(*s->hist));
	s->fallbacks = calloc(nthreads, sizeof(*s->fallbacks));
	if (!all || !s->hist || !s->fallbacks) {
		fprintf(stderr, "locklab-bench: lockref: out of memory\n");
		err = 1;
		goto out;
	}
	lk_lockref_init(&s->lr, 1);	/* the reference main holds: puts never drop the last one */
	eff_limit = s->v == V_BOUNDED ? (int)limit : s->v == V_UNBOUNDED ? LK_LOCKREF_RETRY_UNBOUNDED : 0;
	lk_lockref_set_retry_limit(&s->lr, eff_limit);	/* cannot fail: eff_limit >= 0 */
	atomic_store_explicit(&s->counter, 1, memory_order_relaxed);	/* relaxed: before the threads */

	pair_ns = uncontended_pair_ns(s);
	lk_lockref_stats_reset();

	err = lab_harness_run(nthreads, lab_d(r, "warmup"), lab_d(r, "duration"), lockref_worker, s, 0, &w);
	if (err) {
		err = 1;
		goto out;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		if (s->hist[i])
			lab_fhist_merge(all, s->hist[i]);
		fallbacks += s->fallbacks[i];
	}
	total = all->ops;
	bool ok = s->v == V_ATOMIC ? atomic_load_explicit(&s->counter, memory_order_relaxed) == 1
				   : lk_lockref_count(&s->lr) == 1;

	lab_emit_window(out, &w);
	lj_str(out, "variant", names[s->v]);
	if (s->v == V_BOUNDED)
		lj_i64(out, "retry_limit", eff_limit);
	else
		lj_null(out, "retry_limit");
	lj_dbl(out, "uncontended_pair_ns", pair_ns);
	if (s->v != V_ATOMIC) {
		uint64_t successes = total - fallbacks;

		lj_dbl(out, "cas_failures_per_success", successes ? (double)all->failures / successes : 0);
		lj_dbl(out, "fallback_rate", total ? (double)fallbacks / (double)total : 0);
		lj_u64(out, "lockless_ops", successes);
		lj_u64(out, "locked_ops", fallbacks);
		lab_fhist_emit(out, "cas_failures_per_op", all);
	} else {
		lj_dbl(out, "cas_failures_per_success", 0);
		lj_dbl(out, "fallback_rate", 0);
	}
	lj_bool(out, "count_ok", ok);
	lab_window_free(&w);
	if (!ok) {
		fprintf(stderr, "locklab-bench: lockref: lost a count (final %d, want 1)\n",
			lk_lockref_count(&s->lr));
		err = 1;
	}
out:
	if (s->hist)
		for (unsigned i = 0; i < nthreads; i++)
			free(s->hist[i]);
	free(s->hist);
	free(s->fallbacks);
	free(all);
	free(s);
	return err;
}

static const struct lab_param lockref_params[] = {
	{ "lock", LAB_P_STR, "bounded", 0, 0, "bounded,unbounded,spinlock,atomic",
	  "bounded/unbounded lockless cmpxchg, spinlock only, or a plain atomic counter", true },
	{ "threads", LAB_P_UINT, "1", 1, 4096, NULL, "threads getting and putting the shared lockref", true },
	{ "retry-limit", LAB_P_UINT, "100", 1, INT_MAX - 1, NULL,
	  "bounded: cmpxchg attempts before falling back to the spinlock (kernel: 100)", true },
	{ "parallel", LAB_P_UINT, "0", 0, 10000000, NULL, "pause instructions of work between operations", true },
	LAB_PARAM_DURATION,
	LAB_PARAM_WARMUP,
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_lockref = {
	.name = "lockref",
	.help = "seed 002 open/close: T threads get+put one lockref; bounded vs unbounded cmpxchg vs "
		"spinlock vs atomic; cmpxchg failures per success, fallback rate",
	.metric = "ops_per_sec",
	.higher_is_better = true,
	.params = lockref_params,
	.run = lockref_run,
};
