/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/cas_storm.c - the `cas-storm` workload: T threads increment one shared counter,
 * the seed-002 question in its rawest form: what does a contended compare-and-swap loop cost compared
 * with one fetch_add, and with a lock around a plain increment?
 *
 *	cas    old = load; while (!cas(counter, old, old + 1)) count a failure   (old refreshed by cas)
 *	faa    fetch_add(counter, 1)                                                 (never fails)
 *	mutex  lock(L); plain counter++; unlock(L)         L = --lock-alg (any mutex or spinlock entry)
 *
 * then `parallel` pauses. The cas variant records, per successful increment inside the window, how
 * many attempts failed before it (seed 002 saw ~25 on ThunderX2 at 28 threads); the histogram is
 * emitted as cas_failures_per_op with mean/p50/p99/max. The counter must equal the number of
 * increments at the end (count_ok; exit 1 otherwise).
 *
 * Layout: the counter has its own cache line; configuration is on another, read-only while running.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "lab_refcount.h"

enum variant { V_CAS, V_FAA, V_MUTEX };

struct storm_shared {
	enum variant v;
	uint64_t parallel;
	const struct lab_lock_ops *ops;
	void *lock;
	struct lab_fhist **hist;
	_Atomic uint64_t counter __attribute__((aligned(LAB_CACHELINE)));
	uint64_t plain __attribute__((aligned(LAB_CACHELINE)));	/* mutex variant: protected by lock */
} __attribute__((aligned(LAB_CACHELINE)));

static void storm_worker(struct lab_ctx *c)
{
	struct storm_shared *s = c->arg;
	struct lab_fhist *h = s->v == V_CAS ? calloc(1, sizeof(*h)) : NULL;

	while (!lab_stopping(c)) {
		switch (s->v) {
		case V_CAS: {
			/* relaxed: the cas validates; the counter publishes nothing */
			uint64_t old = atomic_load_explicit(&s->counter, memory_order_relaxed), fails = 0;

			/* relaxed: as above; a failed cas refreshes `old` */
			while (!atomic_compare_exchange_strong_explicit(&s->counter, &old, old + 1,
									memory_order_relaxed, memory_order_relaxed))
				fails++;
			if (h && lab_measuring(c))
				lab_fhist_add(h, fails);
			break;
		}
		case V_FAA:
			/* relaxed: the counter publishes nothing */
			atomic_fetch_add_explicit(&s->counter, 1, memory_order_relaxed);
			break;
		case V_MUTEX:
			s->ops->lock(s->lock);
			s->plain++;
			s->ops->unlock(s->lock);
			break;
		}
		c->user[0]++;
		lab_pause(s->parallel);
		lab_op_done(c);
	}
	s->hist[c->id] = h;
}

static int storm_run(const struct lab_run *r, struct lab_json *out)
{
	static const char *const names[] = { "cas", "faa", "mutex" };
	const char *lock = lab_s(r, "lock");
	const struct lab_alg *alg = lab_a(r, "lock-alg");
	unsigned nthreads = (unsigned)lab_u(r, "threads");
	struct storm_shared *s = lab_alloc_aligned(sizeof(*s));
	struct lab_fhist *all = calloc(1, sizeof(*all));
	struct lab_window w;
	uint64_t expected = 0, got;
	int err = 0;

	s->v = V_CAS;
	for (unsigned i = 0; i < 3; i++)
		if (strcmp(lock, names[i]) == 0)
			s->v = (enum variant)i;
	s->parallel = lab_u(r, "parallel");
	s->hist = calloc(nthreads, sizeof(*s->hist));
	if (!all || !s->hist) {
		fprintf(stderr, "locklab-bench: cas-storm: out of memory\n");
		err = 1;
		goto out;
	}
	if (s->v == V_MUTEX) {
		if (!alg || !alg->ops || strcmp(alg->opstype, "lock") != 0) {
			err = lab_bad_arg("lock-alg", "a lock (opstype 'lock') that is available in this build",
					  alg ? alg->name : "?");
			goto out;
		}
		s->ops = alg->ops;
		s->lock = lab_alloc_aligned(s->ops->size);
		if ((err = s->ops->init(s->lock)) != 0) {
			fprintf(stderr, "locklab-bench: %s: init failed: %s\n", alg->name, strerror(err));
			err = 1;
			goto out;
		}
	}
	err = lab_harness_run(nthreads, lab_d(r, "warmup"), lab_d(r, "duration"), storm_worker, s, 0, &w);
	if (err) {
		err = 1;
		goto out;
	}
	for (unsigned i = 0; i < nthreads; i++) {
		expected += w.ctx[i].user[0];
		if (s->hist[i])
			lab_fhist_merge(all, s->hist[i]);
	}
	/* relaxed: after join */
	got = s->v == V_MUTEX ? s->plain : atomic_load_explicit(&s->counter, memory_order_relaxed);
	lab_emit_window(out, &w);
	lj_str(out, "variant", names[s->v]);
	if (s->v == V_MUTEX)
		lj_str(out, "lock_alg", alg->name);
	else
		lj_null(out, "lock_alg");
	if (s->v == V_CAS) {
		lj_dbl(out, "cas_failures_per_success", all->ops ? (double)all->failures / (double)all->ops : 0);
		lab_fhist_emit(out, "cas_failures_per_op", all);
	} else {
		lj_dbl(out, "cas_failures_per_success", 0);
	}
	lj_bool(out, "count_ok", got == expected);
	lab_window_free(&w);
	if (got != expected) {
		fprintf(stderr, "locklab-bench: cas-storm: counter %llu after %llu increments\n",
			(unsigned long long)got, (unsigned long long)expected);
		err = 1;
	}
out:
	if (s->lock && s->ops && s->ops->destroy)
		s->ops->destroy(s->lock);
	free(s->lock);
	if (s->hist)
		for (unsigned i = 0; i < nthreads; i++)
			free(s->hist[i]);
	free(s->hist);
	free(all);
	free(s);
	return err;
}

static const struct lab_param storm_params[] = {
	{ "lock", LAB_P_STR, "cas", 0, 0, "cas,faa,mutex",
	  "cmpxchg loop, fetch_add, or a lock around a plain increment", true },
	{ "threads", LAB_P_UINT, "1", 1, 4096, NULL, "threads incrementing the shared counter", true },
	{ "lock-alg", LAB_P_ALG, "lk_mutex", 0, 0, "mutex,spinlock", "the lock for --lock mutex", true },
	{ "parallel", LAB_P_UINT, "0", 0, 10000000, NULL, "pause instructions of work between increments", true },
	LAB_PARAM_DURATION,
	LAB_PARAM_WARMUP,
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_cas_storm = {
	.name = "cas-storm",
	.help = "T threads increment one counter: cmpxchg loop vs fetch_add vs lock; cmpxchg failures per "
		"success histogram",
	.metric = "ops_per_sec",
	.higher_is_better = true,
	.params = storm_params,
	.run = storm_run,
};
