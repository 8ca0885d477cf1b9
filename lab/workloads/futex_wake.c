/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/futex-wake - `perf bench futex wake` for the kernel futex and the parking lot, and
 * the waiter pool that futex-wake, wake-parallel and requeue share (lab/lab_park.h).
 *
 * Each round: N waiters sleep on one word (pool->gen); the run confirms that every one of them is
 * really asleep (announced the round; for the lot, before_sleep() ran, so it is queued; and the
 * thread's state in /proc/self/task/<tid>/stat is 'S'); then it changes the word and times the
 * wake-all: --nwake 1 wakes one thread per call until all are woken (kernel FUTEX_WAKE(1), lot
 * unpark_one), --nwake 0 is one broadcast (FUTEX_WAKE(INT_MAX), unpark_all), --nwake K wakes up
 * to K per call (lot: unpark_filter stopping after K). The time is the waker's: from just before
 * the first wake call to just after the last; the round then waits for every waiter to return and
 * go back to sleep. Metric: wake_all_ns, the median over the rounds (all samples are emitted).
 *
 * Waiter pool, per waiter thread:
 *	for round g = 0, 1, ...:  announced++;  while (gen == g) wait(gen, g);  woken++
 * Waits are FUTEX_WAIT_PRIVATE(gen, g) or park(gen, validate: gen == g). A waiter requeued to
 * pool->f2 (requeue workload) comes back when f2 is woken and sees gen changed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/futex.h>

#include "lab_park.h"

struct fxw_ctx {
	struct lab_fxpool *p;
	uint32_t g;
	unsigned i;
};

static bool fxw_validate(void *ctx)
{
	struct fxw_ctx *w = ctx;

	/* relaxed: under the bucket lock; the lot orders it against the waker's change of gen */
	return atomic_load_explicit(&w->p->gen, memory_order_relaxed) == w->g;
}

static void fxw_before_sleep(void *ctx)
{
	struct fxw_ctx *w = ctx;

	/* release: pairs with the acquire in lab_fxpool_wait_asleep() */
	atomic_fetch_add_explicit(&w->p->lot_sleeping, 1, memory_order_release);
}

static const struct lk_park_ops fxw_ops = { .validate = fxw_validate, .before_sleep = fxw_before_sleep };

static void *fxw_main(void *arg)
{
	struct fxw_ctx w = *(struct fxw_ctx *)arg;
	struct lab_fxpool *p = w.p;

	free(arg);
	/* relaxed: read by the run thread only after it saw our announce (acquire/release) */
	atomic_store_explicit(&p->tid[w.i], (pid_t)syscall(SYS_gettid), memory_order_relaxed);
	w.g = 0;
	for (;;) {
		/* release: pairs with the acquire in lab_fxpool_wait_asleep(): publishes tid */
		atomic_fetch_add_explicit(&p->announced, 1, memory_order_release);
		/* acquire: pairs with the run thread's release store of the next round (or STOP) */
		while (atomic_load_explicit(&p->gen, memory_order_acquire) == w.g) {
			if (!p->fx.lot)
				syscall(SYS_futex, &p->gen, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, w.g, NULL, NULL, 0);
			else
				p->fx.lot->park(&p->gen, &fxw_ops, &w, 0, NULL, CLOCK_MONOTONIC, NULL);
		}
		/* release: pairs with the acquire in lab_fxpool_wait_woken() */
		atomic_fetch_add_explicit(&p->woken, 1, memory_order_release);
		w.g = atomic_load_explicit(&p->gen, memory_order_acquire);	/* acquire: as above */
		if (w.g == LAB_FXPOOL_STOP)
			return NULL;
	}
}

static int fxpool_spawn(struct lab_fxpool *p, const struct lab_fx *fx, unsigned n)
{
	p->fx = *fx;
	p->n = 0;
	/* relaxed: no waiter exists yet; pthread_create orders these before them */
	atomic_store_explicit(&p->gen, 0, memory_order_relaxed);
	atomic_store_explicit(&p->f2, 0, memory_order_relaxed);
	atomic_store_explicit(&p->announced, 0, memory_order_relaxed);
	atomic_store_explicit(&p->lot_sleeping, 0, memory_order_relaxed);
	atomic_store_explicit(&p->woken, 0, memory_order_relaxed);
	p->th = calloc(n, sizeof(*p->th));
	p->tid = calloc(n, sizeof(*p->tid));
	if (!p->th || !p->tid)
		return ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct fxw_ctx *w = malloc(sizeof(*w));
		int err;

		if (!w)
			return ENOMEM;
		*w = (struct fxw_ctx){ .p = p, .i = i };
		err = pthread_create(&p->th[i], NULL, fxw_main, w);
		if (err) {
			free(w);
			return err;
		}
		p->n++;
	}
	return 0;
}

int lab_fxpool_start(struct lab_fxpool *p, const struct lab_fx *fx, unsigned n)
{
	int err = fxpool_spawn(p, fx, n);

	if (err)
		fprintf(stderr, "locklab-bench: --waiters: could not start %u waiters (started %u): %s\n", n,
			p->n, strerror(err));
	return err;
}

/* The scheduler state letter of thread `tid` ('R', 'S', ...), or 0. */
static char task_state(pid_t tid)
{
	char path[64], buf[512], *rp;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	rp = strrchr(buf, ')');	/* the command name may contain anything but ends at the last ')' */
	return rp && rp[1] == ' ' ? rp[2] : 0;
}

int lab_fxpool_wait_asleep(struct lab_fxpool *p, uint32_t round)
{
	uint64_t want = (uint64_t)p->n * (round + 1), t0 = lab_now_ns();

	/* acquire: pairs with the waiters' release increments (and publishes their tids) */
	while (atomic_load_explicit(&p->announced, memory_order_acquire) < want ||
	       (p->fx.lot && atomic_load_explicit(&p->lot_sleeping, memory_order_acquire) < want)) {
		if (lab_now_ns() - t0 > 10000000000ull)
			return ETIMEDOUT;
		sched_yield();
	}
	for (unsigned i = 0; i < p->n; i++) {
		/* relaxed: published by the announce we acquired above */
		pid_t tid = atomic_load_explicit(&p->tid[i], memory_order_relaxed);

		while (task_state(tid) != 'S') {
			if (lab_now_ns() - t0 > 10000000000ull)
				return ETIMEDOUT;
			sched_yield();
		}
	}
	return 0;
}

int lab_fxpool_wait_woken(struct lab_fxpool *p, uint32_t round)
{
	uint64_t want = (uint64_t)p->n * (round + 1), t0 = lab_now_ns();

	/* acquire: pairs with the waiters' release increments */
	while (atomic_load_explicit(&p->woken, memory_order_acquire) < want) {
		if (lab_now_ns() - t0 > 10000000000ull)
			return ETIMEDOUT;
		sched_yield();
	}
	return 0;
}

void lab_fxpool_stop(struct lab_fxpool *p)
{
	/* release: pairs with the waiters' acquire loads of gen */
	atomic_store_explicit(&p->gen, LAB_FXPOOL_STOP, memory_order_release);
	if (!p->fx.lot) {
		syscall(SYS_futex, &p->gen, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
		syscall(SYS_futex, &p->f2, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
	} else {
		p->fx.lot->unpark_all(&p->gen, 0);
		p->fx.lot->unpark_all(&p->f2, 0);
	}
	for (unsigned i = 0; i < p->n; i++)
		pthread_join(p->th[i], NULL);
	free(p->th);
	free(p->tid);
	p->th = NULL;
	p->tid = NULL;
	p->n = 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

uint64_t lab_fx_median(const uint64_t *ns, size_t n)
{
	uint64_t *s = malloc((n ? n : 1) * sizeof(*s)), m;

	if (!s)
		abort();
	memcpy(s, ns, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	m = n ? lab_percentile(s, n, 50) : 0;
	free(s);
	return m;
}

void lab_fx_emit_samples(struct lab_json *j, const char *key, uint64_t *ns, size_t n)
{
	uint64_t *s = malloc((n ? n : 1) * sizeof(*s));
	double sum = 0;

	if (!s)
		abort();
	memcpy(s, ns, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)s[i];
	lj_obj_begin(j, key);
	lj_u64(j, "n", n);
	lj_u64(j, "median_ns", n ? lab_percentile(s, n, 50) : 0);
	lj_u64(j, "min_ns", n ? s[0] : 0);
	lj_u64(j, "max_ns", n ? s[n - 1] : 0);
	lj_u64(j, "p90_ns", n ? lab_percentile(s, n, 90) : 0);
	lj_dbl(j, "mean_ns", n ? sum / (double)n : 0);
	lj_arr_begin(j, "samples_ns");
	for (size_t i = 0; i < n; i++)
		lj_u64(j, NULL, ns[i]);	/* in round order */
	lj_arr_end(j);
	lj_obj_end(j);
	free(s);
}

/* ------------------------------------------------------------------------------------------------ */

struct budget {
	unsigned left;
};

static enum lk_filter_op budget_filter(void *ctx, lk_token_t tok)
{
	struct budget *b = ctx;

	(void)tok;
	if (!b->left)
		return LK_FILTER_STOP;
	b->left--;
	return LK_FILTER_UNPARK;
}

/* Wake up to k waiters on addr (k == 0: all); returns how many were woken. */
static unsigned fx_wake(const struct lab_fx *fx, _Atomic uint32_t *addr, unsigned k)
{
	if (!fx->lot) {
		long r = syscall(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, k ? (int)k : INT_MAX, NULL, NULL, 0);

		return r > 0 ? (unsigned)r : 0;
	}
	if (k == 0) {
		int r = fx->lot->unpark_all(addr, 0);

		return r > 0 ? (unsigned)r : 0;
	}
	if (k == 1) {
		int r = fx->lot->unpark_one(addr, NULL, NULL);

		return r > 0 ? (unsigned)r : 0;
	}
	struct budget b = { .left = k };
	int r = fx->lot->unpark_filter(addr, budget_filter, NULL, &b);

	return r > 0 ? (unsigned)r : 0;
}

unsigned lab_fx_wake_n(const struct lab_fx *fx, _Atomic uint32_t *addr, unsigned share, unsigned nwake,
		       unsigned *calls)
{
	unsigned got = 0, idle = 0;

	*calls = 0;
	while (got < share && idle < 1000000) {
		/* nwake 0: broadcast (all asleep waiters come with the first call) */
		unsigned w = fx_wake(fx, addr, nwake ? (nwake < share - got ? nwake : share - got) : 0);

		(*calls)++;
		got += w;
		idle = w ? 0 : idle + 1;
	}
	return got;
}

static int fw_run(const struct lab_run *r, struct lab_json *out)
{
	struct lab_fxpool *p = lab_alloc_aligned(sizeof(*p));
	unsigned n = (unsigned)lab_u(r, "waiters"), nwake = (unsigned)lab_u(r, "nwake");
	unsigned rounds = (unsigned)lab_u(r, "rounds");
	uint64_t *ns = calloc(rounds, sizeof(*ns)), calls_total = 0;
	struct lab_fx fx;
	int err;

	err = lab_fx_resolve(lab_s(r, "lock"), &fx);
	if (err || !ns)
		goto out_free;
	err = lab_fxpool_start(p, &fx, n);
	if (err) {
		err = 1;
		goto out;
	}
	for (unsigned rd = 0; rd < rounds; rd++) {
		unsigned calls, got;
		uint64_t t0, t1;

		if (lab_fxpool_wait_asleep(p, rd)) {
			fprintf(stderr, "locklab-bench: futex-wake: waiters did not fall asleep within 10 s\n");
			err = 1;
			goto out;
		}
		/* release: pairs with the waiters' acquire loads of gen */
		atomic_store_explicit(&p->gen, rd + 1, memory_order_release);
		t0 = lab_now_ns();
		got = lab_fx_wake_n(&fx, &p->gen, n, nwake, &calls);
		t1 = lab_now_ns();
		ns[rd] = t1 - t0;
		calls_total += calls;
		if (got != n) {
			fprintf(stderr, "locklab-bench: futex-wake: round %u woke %u of %u sleeping waiters\n", rd,
				got, n);
			err = 1;
			goto out;
		}
		if (lab_fxpool_wait_woken(p, rd)) {
			fprintf(stderr, "locklab-bench: futex-wake: woken waiters did not return within 10 s\n");
			err = 1;
			goto out;
		}
	}
	lab_fx_emit(out, &fx);
	lj_u64(out, "waiters", n);
	lj_u64(out, "nwake", nwake);
	lj_dbl(out, "wake_calls_per_round", (double)calls_total / rounds);
	lj_u64(out, "wake_all_ns", lab_fx_median(ns, rounds));
	lab_fx_emit_samples(out, "wake_all", ns, rounds);
	lj_str(out, "asleep_check", fx.lot ? "announce + before_sleep + /proc state S" : "announce + /proc state S");
out:
	lab_fxpool_stop(p);
out_free:
	free(ns);
	free(p);
	return err;
}

static const struct lab_param fw_params[] = {
	{ "lock", LAB_P_STR, "kernel", 0, 0, LAB_FX_CHOICES, "kernel futex or a parking-lot layout", true },
	{ "waiters", LAB_P_UINT, "16", 1, 4096, NULL, "threads asleep on one word", true },
	{ "nwake", LAB_P_UINT, "1", 0, 4096, NULL, "waiters woken per call; 0 = one broadcast (perf: -w)", true },
	{ "rounds", LAB_P_UINT, "20", 1, 100000, NULL, "timed wake-alls (each a sample)", false },
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_futex_wake = {
	.name = "futex-wake",
	.help = "perf bench futex wake: time to wake N confirmed-asleep waiters, nwake per call or one "
		"broadcast; kernel FUTEX_WAKE vs the lot's unpark",
	.metric = "wake_all_ns",
	.higher_is_better = false,
	.params = fw_params,
	.run = fw_run,
};
