/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/wake-parallel - `perf bench futex wake-parallel` for the kernel futex and the lot.
 *
 * N waiters sleep on one word (the shared waiter pool of lab/workloads/futex_wake.c, confirmed
 * asleep before each round); W waker threads, released together, each wake N/W of them in one call
 * (kernel FUTEX_WAKE(N/W); lot unpark_filter stopping after N/W), repeating only if a call found
 * fewer. Per round: each waker's own call time (perf's per-thread latency) and the wall time from
 * the release to the last waker's return. Metric: wake_all_ns, the median wall time.
 *
 * Waker handshake: wakers count themselves ready, spin on `go` (acquire) until the round number
 * appears, time their wake, and store their result; the run thread joins them.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "lab_park.h"

struct wp_shared {
	struct lab_fxpool *p;
	unsigned share;
	_Atomic uint32_t ready __attribute__((aligned(LAB_CACHELINE)));
	_Atomic uint32_t go __attribute__((aligned(LAB_CACHELINE)));	/* round + 1 when released */
};

struct wp_waker {
	struct wp_shared *s;
	uint32_t round;
	uint64_t t_start, t_end;
	unsigned got;
	pthread_t th;
};

static void *wp_main(void *arg)
{
	struct wp_waker *k = arg;
	struct wp_shared *s = k->s;
	unsigned calls;

	/* release: the run thread's acquire poll of ready (nothing to publish but the count) */
	atomic_fetch_add_explicit(&s->ready, 1, memory_order_release);
	/* acquire: pairs with the run thread's release store of go (gen was changed before it) */
	while (atomic_load_explicit(&s->go, memory_order_acquire) != k->round + 1)
		sched_yield();	/* wakers may outnumber CPUs: spinning would starve the releaser */
	k->t_start = lab_now_ns();
	k->got = lab_fx_wake_n(&s->p->fx, &s->p->gen, s->share, 1u << 30, &calls);
	k->t_end = lab_now_ns();
	return NULL;
}

static int wp_run(const struct lab_run *r, struct lab_json *out)
{
	unsigned n = (unsigned)lab_u(r, "waiters"), nw = (unsigned)lab_u(r, "wakers");
	unsigned rounds = (unsigned)lab_u(r, "rounds");
	struct wp_shared *s = lab_alloc_aligned(sizeof(*s));
	struct lab_fxpool *p = lab_alloc_aligned(sizeof(*p));
	struct wp_waker *k = calloc(nw, sizeof(*k));
	uint64_t *wall = calloc(rounds, sizeof(*wall)), *per = calloc((size_t)rounds * nw, sizeof(*per));
	struct lab_fx fx;
	int err;

	if (!k || !wall || !per)
		abort();
	err = lab_fx_resolve(lab_s(r, "lock"), &fx);
	if (err)
		goto out_free;
	if (n % nw) {
		err = lab_bad_arg("wakers", "a divisor of --waiters", lab_s(r, "wakers"));
		goto out_free;
	}
	s->p = p;
	s->share = n / nw;
	err = lab_fxpool_start(p, &fx, n);
	if (err) {
		err = 1;
		goto out;
	}
	for (unsigned rd = 0; rd < rounds; rd++) {
		uint64_t t0, tmax = 0;
		unsigned got = 0;

		/* relaxed: no waker of this round exists yet */
		atomic_store_explicit(&s->ready, 0, memory_order_relaxed);
		for (unsigned i = 0; i < nw; i++) {
			k[i] = (struct wp_waker){ .s = s, .round = rd };
			if (pthread_create(&k[i].th, NULL, wp_main, &k[i]))
				abort();
		}
		if (lab_fxpool_wait_asleep(p, rd)) {
			fprintf(stderr, "locklab-bench: wake-parallel: waiters did not fall asleep within 10 s\n");
			err = 1;
		}
		/* acquire: pairs with the wakers' release increments */
		while (atomic_load_explicit(&s->ready, memory_order_acquire) < nw)
			sched_yield();
		/* release: pairs with the waiters' acquire loads of gen */
		atomic_store_explicit(&p->gen, rd + 1, memory_order_release);
		t0 = lab_now_ns();
		/* release: pairs with the wakers' acquire spin on go */
		atomic_store_explicit(&s->go, rd + 1, memory_order_release);
		for (unsigned i = 0; i < nw; i++) {
			pthread_join(k[i].th, NULL);
			got += k[i].got;
			per[(size_t)rd * nw + i] = k[i].t_end - k[i].t_start;
			if (k[i].t_end > tmax)
				tmax = k[i].t_end;
		}
		wall[rd] = tmax - t0;
		if (err || got != n) {
			if (!err)
				fprintf(stderr, "locklab-bench: wake-parallel: round %u woke %u of %u waiters\n", rd, got, n);
			err = 1;
			goto out;
		}
		if (lab_fxpool_wait_woken(p, rd)) {
			fprintf(stderr, "locklab-bench: wake-parallel: woken waiters did not return within 10 s\n");
			err = 1;
			goto out;
		}
	}
	lab_fx_emit(out, &fx);
	lj_u64(out, "waiters", n);
	lj_u64(out, "wakers", nw);
	lj_u64(out, "wake_per_waker", s->share);
	lj_u64(out, "wake_all_ns", lab_fx_median(wall, rounds));
	lab_fx_emit_samples(out, "wake_all", wall, rounds);
	lab_fx_emit_samples(out, "per_waker", per, (size_t)rounds * nw);
out:
	lab_fxpool_stop(p);
out_free:
	free(k);
	free(wall);
	free(per);
	free(p);
	free(s);
	return err;
}

static const struct lab_param wp_params[] = {
	{ "lock", LAB_P_STR, "kernel", 0, 0, LAB_FX_CHOICES, "kernel futex or a parking-lot layout", true },
	{ "waiters", LAB_P_UINT, "16", 1, 4096, NULL, "threads asleep on one word", true },
	{ "wakers", LAB_P_UINT, "2", 1, 256, NULL, "waker threads, each waking waiters/wakers", true },
	{ "rounds", LAB_P_UINT, "20", 1, 100000, NULL, "timed rounds (each a sample)", false },
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_wake_parallel = {
	.name = "wake-parallel",
	.help = "perf bench futex wake-parallel: W wakers each wake N/W of N confirmed-asleep waiters "
		"at once; kernel FUTEX_WAKE vs the lot's unpark_filter",
	.metric = "wake_all_ns",
	.higher_is_better = false,
	.params = wp_params,
	.run = wp_run,
};
