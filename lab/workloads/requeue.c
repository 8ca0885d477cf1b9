/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/requeue - `perf bench futex requeue` for the kernel futex and the lot.
 *
 * N waiters sleep on word 1 (the shared waiter pool, confirmed asleep each round). The run moves
 * them all to word 2, --nrequeue per call, waking none: kernel FUTEX_CMP_REQUEUE(nr_wake 0,
 * nr_requeue, expected = the round's value), lot unpark_requeue() with LK_REQUEUE_REQUEUE_ONE
 * (--nrequeue 1) or LK_REQUEUE_REQUEUE_ALL (--nrequeue 0 = all in one call; the lot has no
 * "requeue K"). Timed: the requeue calls. Then the word changes and word 2 is woken: the wake must
 * find exactly the N waiters the requeues reported, or the run fails. Metric: requeue_ns, the
 * median over rounds of the time to requeue all N.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/futex.h>

#include "lab_park.h"

static enum lk_requeue_op rq_one(void *ctx)
{
	(void)ctx;
	return LK_REQUEUE_REQUEUE_ONE;
}

static enum lk_requeue_op rq_all(void *ctx)
{
	(void)ctx;
	return LK_REQUEUE_REQUEUE_ALL;
}

/* Requeue up to k (0 = all) from gen to f2; returns the count moved, or -errno. */
static long rq_once(struct lab_fxpool *p, unsigned k, uint32_t expect)
{
	if (!p->fx.lot) {
		long r = syscall(SYS_futex, &p->gen, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 0,
				 (void *)(uintptr_t)(k ? k : INT_MAX), &p->f2, expect);

		return r < 0 ? -errno : r;
	}
	return p->fx.lot->unpark_requeue(&p->gen, &p->f2, k == 1 ? rq_one : rq_all, NULL, NULL);
}

static int rq_run(const struct lab_run *r, struct lab_json *out)
{
	unsigned n = (unsigned)lab_u(r, "waiters"), k = (unsigned)lab_u(r, "nrequeue");
	unsigned rounds = (unsigned)lab_u(r, "rounds");
	struct lab_fxpool *p = lab_alloc_aligned(sizeof(*p));
	uint64_t *ns = calloc(rounds, sizeof(*ns)), calls_total = 0;
	struct lab_fx fx;
	int err;

	if (!ns)
		abort();
	err = lab_fx_resolve(lab_s(r, "lock"), &fx);
	if (err)
		goto out_free;
	if (fx.lot && k > 1) {
		err = lab_bad_arg("nrequeue", "0 (all) or 1 with a parking-lot layout", lab_s(r, "nrequeue"));
		goto out_free;
	}
	err = lab_fxpool_start(p, &fx, n);
	if (err) {
		err = 1;
		goto out;
	}
	for (unsigned rd = 0; rd < rounds; rd++) {
		unsigned moved = 0, idle = 0, woke, calls;
		uint64_t t0;

		if (lab_fxpool_wait_asleep(p, rd)) {
			fprintf(stderr, "locklab-bench: requeue: waiters did not fall asleep within 10 s\n");
			err = 1;
			goto out;
		}
		t0 = lab_now_ns();
		while (moved < n && idle < 1000000) {
			long m = rq_once(p, k, rd);

			if (m < 0) {
				fprintf(stderr, "locklab-bench: requeue: %s\n", strerror((int)-m));
				err = 1;
				goto out;
			}
			moved += (unsigned)m;
			idle = m ? 0 : idle + 1;
			calls_total++;
		}
		ns[rd] = lab_now_ns() - t0;
		/* release: pairs with the waiters' acquire loads of gen */
		atomic_store_explicit(&p->gen, rd + 1, memory_order_release);
		woke = lab_fx_wake_n(&fx, &p->f2, n, 0, &calls);
		if (moved != n || woke != n) {
			fprintf(stderr, "locklab-bench: requeue: round %u: requeued %u, then woke %u on the target, "
					"of %u waiters\n", rd, moved, woke, n);
			err = 1;
			goto out;
		}
		if (lab_fxpool_wait_woken(p, rd)) {
			fprintf(stderr, "locklab-bench: requeue: woken waiters did not return within 10 s\n");
			err = 1;
			goto out;
		}
	}
	lab_fx_emit(out, &fx);
	lj_u64(out, "waiters", n);
	lj_u64(out, "nrequeue", k);
	lj_dbl(out, "requeue_calls_per_round", (double)calls_total / rounds);
	lj_bool(out, "requeued_exactly", true);
	lj_u64(out, "requeue_ns", lab_fx_median(ns, rounds));
	lab_fx_emit_samples(out, "requeue", ns, rounds);
out:
	lab_fxpool_stop(p);
out_free:
	free(ns);
	free(p);
	return err;
}

static const struct lab_param rq_params[] = {
	{ "lock", LAB_P_STR, "kernel", 0, 0, LAB_FX_CHOICES, "kernel futex or a parking-lot layout", true },
	{ "waiters", LAB_P_UINT, "16", 1, 4096, NULL, "threads asleep on word 1", true },
	{ "nrequeue", LAB_P_UINT, "1", 0, 4096, NULL, "waiters moved per call; 0 = all (perf: -q)", true },
	{ "rounds", LAB_P_UINT, "20", 1, 100000, NULL, "timed requeue-alls (each a sample)", false },
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_requeue = {
	.name = "requeue",
	.help = "perf bench futex requeue: move N confirmed-asleep waiters to another word, nrequeue "
		"per call; kernel FUTEX_CMP_REQUEUE vs lk_unpark_requeue; checks the count moved",
	.metric = "requeue_ns",
	.higher_is_better = false,
	.params = rq_params,
	.run = rq_run,
};
