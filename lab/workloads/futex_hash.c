/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/futex-hash - `perf bench futex hash` for the kernel futex and the parking lot.
 *
 * T threads each own F 32-bit words (one contiguous array per thread, as perf allocates them) and
 * loop over them calling a wait whose expected value never matches, so it returns at once: the
 * kernel's FUTEX_WAIT_PRIVATE with EAGAIN, the lot's park() with a validate() that says no
 * (LK_PARK_INVALID). Each call is hash the address, lock the bucket, compare, unlock: the bucket
 * lock and hash cost that the seed-000 thread argued about. Throughput comes from lab_harness_run
 * (ops/s over the window where all T run, fairness, CPU per op).
 *
 * --buckets controls the table:
 *   kernel:  auto   the kernel's default (private hash auto-scaled with the thread count: the
 *                   resize PeterZ showed never completing under this very benchmark)
 *            global PR_FUTEX_HASH_SET_SLOTS 0: the global hash
 *            N      PR_FUTEX_HASH_SET_SLOTS N (power of two): `perf bench futex hash -b N`
 *   lot:     auto   the lot's own growth (LK_PARK_BUCKETS_PER_THREAD per live thread)
 *            N      lk_park_reserve(N) before the threads start (the table still grows after)
 * The bucket count actually in force is always reported (PR_FUTEX_HASH_GET_SLOTS before and after
 * the run, or the lot's table size). A kernel that refuses PR_FUTEX_HASH gets a message on stderr
 * and the run is labelled "kernel-default".
 *
 * Data: one array of T*F words; a thread's F words are contiguous (4 bytes apart), so a thread's
 * own words share cache lines but no two threads' words do unless F*4 < 64.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/futex.h>

#include "lab_park.h"

#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH 78
#define PR_FUTEX_HASH_SET_SLOTS 1
#define PR_FUTEX_HASH_GET_SLOTS 2
#endif

struct fh_shared {
	struct lab_fx fx;
	unsigned nfutex;
	_Atomic uint32_t *words;
};

static bool fh_never(void *ctx)
{
	(void)ctx;
	return false;
}

static const struct lk_park_ops fh_ops = { .validate = fh_never };

static void fh_worker(struct lab_ctx *c)
{
	struct fh_shared *s = c->arg;
	_Atomic uint32_t *w = s->words + (size_t)c->id * s->nfutex;
	const struct lab_layout_ops *lot = s->fx.lot;
	uint64_t bad = 0;

	while (!lab_stopping(c)) {
		for (unsigned i = 0; i < s->nfutex; i++) {
			if (!lot) {
				/* words are 0; expecting 1 never matches: -1/EAGAIN after the bucket check */
				if (syscall(SYS_futex, &w[i], FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 1u, NULL, NULL, 0) != -1 ||
				    errno != EAGAIN)
					bad++;
			} else if (lot->park(&w[i], &fh_ops, NULL, 0, NULL, CLOCK_MONOTONIC, NULL) != LK_PARK_INVALID) {
				bad++;
			}
			lab_op_done(c);
		}
	}
	c->user[0] = bad;	/* owner-written, read after join */
}

/* Slots of the process-private kernel hash (0 = global hash), or -errno. */
static long kernel_slots(void)
{
	long r = prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0);

	return r < 0 ? -errno : r;
}

static int fh_run(const struct lab_run *r, struct lab_json *out)
{
	unsigned nthreads = (unsigned)lab_u(r, "threads");
	const char *bp = lab_s(r, "buckets");
	struct fh_shared *s;
	struct lab_window w;
	long before = 0, after = 0, nb = -1;	/* nb: requested count, -1 auto, 0 global */
	const char *mode = "auto";
	uint64_t bad = 0;
	int err;

	s = lab_alloc_aligned(sizeof(*s));
	err = lab_fx_resolve(lab_s(r, "lock"), &s->fx);
	if (err) {
		free(s);
		return err;
	}
	if (strcmp(bp, "auto") == 0) {
		nb = -1;
	} else if (strcmp(bp, "global") == 0) {
		nb = 0;
		mode = "global";
	} else {
		char *end;
		unsigned long v = strtoul(bp, &end, 10);

		if (*bp < '0' || *bp > '9' || *end || v == 0 || v > (1ul << 24) || (v & (v - 1))) {
			free(s);
			return lab_bad_arg("buckets", "auto, global or a power of two in [1, 2^24]", bp);
		}
		nb = (long)v;
		mode = "fixed";
	}
	if (s->fx.lot && nb == 0) {
		free(s);
		return lab_bad_arg("buckets", "auto or a power of two (global applies to --lock kernel only)", bp);
	}
	s->nfutex = (unsigned)lab_u(r, "futexes");
	s->words = lab_alloc_aligned((size_t)nthreads * s->nfutex * sizeof(uint32_t));

	if (!s->fx.lot) {
		before = kernel_slots();
		if (before < 0) {
			fprintf(stderr, "locklab-bench: futex-hash: this kernel refuses PR_FUTEX_HASH (%s); "
					"running on the kernel's default futex hash\n", strerror((int)-before));
			mode = "kernel-default";
		} else if (nb >= 0 && prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, (unsigned long)nb, 0, 0) < 0) {
			fprintf(stderr, "locklab-bench: futex-hash: PR_FUTEX_HASH_SET_SLOTS %ld refused (%s); "
					"running on the kernel's default futex hash\n", nb, strerror(errno));
			mode = "kernel-default";
		}
	} else if (nb > 0) {
		err = s->fx.lot->reserve((size_t)nb);
		if (err) {
			fprintf(stderr, "locklab-bench: futex-hash: reserve %ld buckets: %s\n", nb, strerror(-err));
			goto out;
		}
	}

	err = lab_harness_run(nthreads, lab_d(r, "warmup"), lab_d(r, "duration"), fh_worker, s, 0, &w);
	if (err) {
		err = 1;
		goto out;
	}
	for (unsigned i = 0; i < nthreads; i++)
		bad += w.ctx[i].user[0];
	lab_emit_window(out, &w);
	lab_window_free(&w);
	lab_fx_emit(out, &s->fx);
	lj_str(out, "buckets_param", bp);
	lj_str(out, "hash_mode", mode);
	if (!s->fx.lot) {
		after = kernel_slots();
		if (before >= 0)
			lj_i64(out, "kernel_slots_before", before);
		else
			lj_null(out, "kernel_slots_before");
		if (after >= 0)
			lj_i64(out, "buckets_in_force", after);	/* 0 = the global hash */
		else
			lj_null(out, "buckets_in_force");
	} else {
		struct lk_park_stats st;

		s->fx.lot->get_stats(&st);
		lj_u64(out, "buckets_in_force", st.buckets);
	}
	lj_u64(out, "futexes_per_thread", s->nfutex);
	lj_u64(out, "unexpected_returns", bad);
	if (bad) {
		fprintf(stderr, "locklab-bench: futex-hash: %llu waits did not return at once as expected\n",
			(unsigned long long)bad);
		err = 1;
	}
out:
	free(s->words);
	free(s);
	return err;
}

static const struct lab_param fh_params[] = {
	{ "lock", LAB_P_STR, "kernel", 0, 0, LAB_FX_CHOICES,
	  "kernel futex or a parking-lot layout", true },
	{ "threads", LAB_P_UINT, "2", 1, 4096, NULL, "threads, each looping over its own futexes", true },
	{ "futexes", LAB_P_UINT, "1024", 1, 1 << 20, NULL, "futex words per thread (perf: -f)", true },
	{ "buckets", LAB_P_STR, "auto", 0, 0, NULL,
	  "auto | global | N (power of two): kernel PR_FUTEX_HASH slots, or the lot's reserve", true },
	LAB_PARAM_DURATION,
	LAB_PARAM_WARMUP,
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_futex_hash = {
	.name = "futex-hash",
	.help = "perf bench futex hash: waits that never match (EAGAIN / LK_PARK_INVALID) over T x F "
		"words; bucket lock + hash cost, kernel (PR_FUTEX_HASH slots) vs the lot's layouts",
	.metric = "ops_per_sec",
	.higher_is_better = true,
	.params = fh_params,
	.run = fh_run,
};
