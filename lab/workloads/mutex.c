/* SPDX-License-Identifier: MIT */
/*
 * lab/workloads/mutex.c - the `mutex`, `spinlock` and `mutex-batch` workloads: the seed-004 threads x
 * load matrix, widened as lockhammer and other projects' lock benchmarks measure (issue 11).
 *
 * T threads loop (thread i on group i mod --groups, each group a lock L with its own counter and lines):
 *
 *	lock(L)                        sampled: every lat-every'th acquisition is timed with lab_now_ns
 *	                               (a sample when its wait overlaps the window: see mutex_op)
 *	  v = counter                  a plain (non-atomic) counter that only the lock protects
 *	  `load` x lk_cpu_relax()      the critical section's own work, in pauses ...
 *	  lab_busy(cs_iters)           ... and/or in nanoseconds (--cs-ns, calibrated busy loop)
 *	  lines[0..K-1].word = v       K shared cache lines, each written once: the data the lock moves
 *	  counter = v + 1
 *	  [sched_yield()]              --cs-yield 1: the holder gives up its CPU inside the lock, as
 *	                               stress-ng's mutex stressor and sysbench's threads test do
 *	unlock(L)
 *	par_pauses x lk_cpu_relax()    work outside the lock: --parallel pauses + R x --load
 *	lab_busy(par_iters)            ... and --parallel-ns + R x --cs-ns nanoseconds (R = --parallel-ratio)
 *
 * Work given in nanoseconds (lockhammer's -c/-p) is a busy loop calibrated once per process
 * (lab_busy_ns_per_iter); pauses cost what the CPU says (x86 `pause`: ~10 to ~140 cycles by model), so
 * the ns form is the one to compare machines with. --parallel-ratio R states the non-critical work as
 * a multiple of the critical section's (P = 0, L, 10L, 100L is R = 0, 1, 10, 100); it adds to
 * --parallel/--parallel-ns, so every combination is valid. The run reports the calibration and the
 * resulting loop counts under "work".
 *
 * --groups N splits the threads over N independent locks (thread i takes group i mod N): two programs,
 * or two objects of one program, each contended by its own threads while all share the CPUs. With
 * --cs-yield that is stress-ng --mutex 2 (two processes of two threads) in one process: where a lock
 * puts its waiters decides which threads share a CPU, and so what each sched_yield() switches to
 * (docs/results/issue11-yield-in-cs-2core/).
 *
 * Two harnesses:
 *   mutex, spinlock   timed: only the window in which all T threads run is counted
 *                     (lab_harness_run); the metric is ops_per_sec.
 *   mutex-batch       fixed work: every thread does --ops critical sections (or its share of
 *                     --total-ops, so that the job stays the same across thread counts) and stops
 *                     (lab_batch_run), as a batch job does; the metric is finish_s, the span from the
 *                     first thread's start to the last one's end (lower is better), with each
 *                     thread's own time, the slowest, the spread and Jain's index over per-thread
 *                     rates. A lock that lets some threads through much faster, or whose holder or
 *                     next waiter gets preempted, finishes the batch later even at equal throughput.
 *
 * Before the threads start the same run times, single-threaded, the critical-section body alone
 * (cs_ns), the outside work alone (parallel_ns) and an uncontended lock+unlock pair
 * (uncontended_pair_ns); cs_ns + pair bounds any lock's throughput from above:
 *
 *	serial_limit_ops_per_sec = 1e9 / (cs_ns + uncontended_pair_ns)
 *	serial_fraction          = ops_per_sec / serial_limit_ops_per_sec
 *
 * so a reviewer sees at once how much of the ideal a lock achieves, independent of the machine. The
 * limit leaves out the loop's own bookkeeping (a few ns per operation), so at load 0 even one thread
 * stays well below 1; conversely the two parts, timed apart, overlap in the pipeline when run back to
 * back (a pause retires alongside the lock's atomics), so at loads of a few pauses a lone thread can
 * read slightly above 1 (seen: 1.1-1.2 at load 1). Acquisition latency samples include two clock reads; latency_floor_ns is what
 * an empty timed region reads, the floor under every sample.
 *
 * The machine's speed inside the window (window_work_speed): on every 4th operation whose acquisition
 * is timed, the busy loop of the critical section and of the outside work (each 1 us or more) is
 * timed too, against its due by the calibration (struct mutex_speed). A KVM guest whose
 * host slows it shows nothing in /proc/stat; this shows it, run by run.
 *
 * Mutual exclusion is verified on every run: the counter's read and write are split by the whole
 * critical section, so two threads inside at once lose an update. At the end each group's counter
 * must equal the sum of its threads' operations (counted by each thread in ctx->user[0], warm-up
 * included); the run emits "exclusion_ok" and fails (exit 1) when one does not. A batch must also
 * have done exactly T x ops operations (batch_ok), and fails (exit 1, completed false) at --timeout.
 *
 * Slow-path counters: for a lock flagged LAB_LOCK_STATS (lk_mutex) every worker reads its own
 * src/lockstat.h counters when its loop ends; the run reports their sum and per-operation rates over
 * the whole run (warm-up included) as "lock_stats", or {"enabled": false} in a normal build.
 *
 * Data layout (struct mutex_shared, one cache-line aligned block):
 *
 *	lines 0-2  read-only configuration while the threads run (ops, groups, work, lines, lat-every, ...)
 *	separate   the --groups groups (struct mutex_group, two cache lines each: the first read-only
 *	           while the threads run, pointers to the group's lock state block and K-line array; the
 *	           second its counter, written in every critical section, so it travels with the lock),
 *	           each group's lock state (lab_alloc_aligned(ops->size)) and lines, the per-thread
 *	           counter arrays (each written by its own thread once, read after join)
 *
 * Invariant: a group's counter and lines[] are only accessed by its lock's owner (or single-threaded
 * before the harness starts; pthread_create orders those accesses before the workers').
 */
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"
#include "lockstat.h"

struct mutex_line {
	uint64_t word[LAB_CACHELINE / sizeof(uint64_t)];
} __attribute__((aligned(LAB_CACHELINE)));

/*
 * One lock and what it protects: threads i, i + N, i + 2N, ... of --groups N use group i. The
 * counter has a line of its own, as it had before groups: the pointers every acquisition reads stay
 * in a line nobody writes while the threads run.
 */
struct mutex_group {
	/* read-only while the threads run */
	void *lock;
	struct mutex_line *lines;	/* nlines lines written inside */
	/* protected by the lock */
	uint64_t counter __attribute__((aligned(LAB_CACHELINE)));
} __attribute__((aligned(LAB_CACHELINE)));

struct mutex_shared {
	/* lines 0-2: read-only while the threads run */
	const struct lab_lock_ops *ops;
	struct mutex_group *groups;	/* ngroups of them (--groups) */
	uint64_t ngroups;
	uint64_t cs_yield;		/* --cs-yield: sched_yield() at the end of each critical section */
	uint64_t load;			/* pauses inside */
	uint64_t cs_iters;		/* busy-loop turns inside */
	uint64_t par_pauses;		/* pauses outside */
	uint64_t par_iters;		/* busy-loop turns outside */
	uint64_t nlines;
	uint64_t lat_every;
	uint64_t cs_probe_ns;		/* the critical section's busy work in ns when timed in the window, else 0 */
	uint64_t par_probe_ns;		/* the same for the outside work */
	uint64_t probe_floor_ns;	/* latency_floor_ns, rounded: what the clock reads add to a timed loop */
	struct mutex_speed *speed;	/* nthreads of them: the work timed in the window */
	uint64_t batch_ops;		/* mutex-batch: operations per thread */
	uint64_t *stats;		/* nthreads x LOCKSTAT_NR, or NULL when the lock does not count */
	unsigned usable_cpus;		/* --cpus: the CPUs the run may use (0: unknown) */
	void *cpus_restore;		/* --cpus: the affinity to put back (lab_restore_cpus) */
} __attribute__((aligned(LAB_CACHELINE)));

/*
 * The work timed inside the window, per thread (owner-written, read after join): on every
 * PROBE_EVERY'th operation whose acquisition is timed, the busy loop of the critical section and of
 * the outside work is timed too, each where its request is PROBE_CS_NS / PROBE_PAR_NS or more.
 * Each loop's time (less what an empty timed region reads, latency_floor_ns) over its due by the
 * calibration goes into a histogram of 1/16 octave buckets from 1/4x to 4x (the ends take what lies
 * beyond). The run's window_work_speed is 1 / the median of those ratios: a loop that was
 * preempted, or shared its CPU for a moment with a woken thread, reads far slow, but unless that
 * happened to half of them it does not move the median; a host that runs the guest at half speed
 * moves every loop.
 */
#define PROBE_BUCKETS	64	/* bucket b: ratio in [2^((b - 32) / 16), 2^((b - 31) / 16)) */

struct mutex_speed {
	uint32_t hist[PROBE_BUCKETS];
	uint32_t timed;			/* timed acquisitions in the window so far */
} __attribute__((aligned(LAB_CACHELINE)));

/*
 * Two clock reads and a log2 cost ~75 ns on the AMD guest (vDSO clock_gettime ~29 ns a read).
 * With --lat-every 16 a loop is timed every 64th operation: ~1.2 ns an operation, 0.1 % of a 1 us
 * critical section or outside work (the least timed), while a 0.2 s window still times hundreds to
 * thousands of loops.
 */
#define PROBE_EVERY	4
#define PROBE_CS_NS	1000
#define PROBE_PAR_NS	1000	/* a 100 ns loop read ~2x fast: the clock reads overlap it */

static inline void speed_add(struct mutex_speed *sp, uint64_t want, int64_t got)
{
	double x = got > 0 ? (double)got / (double)want : 0;
	int b = x > 0 ? (int)floor(log2(x) * 16) + 32 : 0;

	sp->hist[b < 0 ? 0 : b >= PROBE_BUCKETS ? PROBE_BUCKETS - 1 : b]++;
}

/* The busy loop of n turns, timed into sp (want: its due in ns; floor: an empty region's reading)
 * when sp is non-NULL. */
static inline void busy_timed(uint64_t n, struct mutex_speed *sp, uint64_t want, uint64_t floor)
{
	if (!sp) {
		lab_busy(n);
		return;
	}
	uint64_t t0 = lab_now_ns();

	lab_busy(n);
	speed_add(sp, want, (int64_t)(lab_now_ns() - t0) - (int64_t)floor);
}

/* The critical section's body. Plain accesses: the caller holds g's lock (or runs alone). sp: time
 * the busy loop into it (NULL: do not). */
static inline void mutex_cs(const struct mutex_shared *s, struct mutex_group *g, struct mutex_speed *sp)
{
	uint64_t v = g->counter;

	if (s->load)
		lab_pause(s->load);
	busy_timed(s->cs_iters, sp, s->cs_probe_ns, s->probe_floor_ns);
	for (uint64_t k = 0; k < s->nlines; k++)
		g->lines[k].word[0] = v;
	g->counter = v + 1;
	if (s->cs_yield)
		sched_yield();
}

/* The work outside the lock (sp as for mutex_cs). */
static inline void mutex_par(struct mutex_shared *s, struct mutex_speed *sp)
{
	if (s->par_pauses)
		lab_pause(s->par_pauses);
	busy_timed(s->par_iters, sp, s->par_probe_ns, s->probe_floor_ns);
}

/* The group thread c works on. */
static inline struct mutex_group *group_of(const struct lab_ctx *c, const struct mutex_shared *s)
{
	return &s->groups[(uint64_t)c->id % s->ngroups];
}

/*
 * One operation on g: lock (every lat_every'th acquisition timed), critical section, unlock, outside
 * work. *n counts acquisitions since the last timed one.
 *
 * A timed acquisition is a sample when its wait overlaps the window: it began inside the window, or
 * it began before the window and ended after the window opened (lab_window_reached). The second half
 * matters for a lock that starves threads: a thread that waits from before the window to its end does
 * no operation inside it, and its wait, the longest of the run, would otherwise not be counted at all.
 * A wait that ends after the window closed is counted whole, as the first half always did.
 */
static inline void mutex_op(struct lab_ctx *c, struct mutex_shared *s, struct mutex_group *g, uint64_t *n)
{
	const struct lab_lock_ops *ops = s->ops;
	void *lock = g->lock;
	struct mutex_speed *cs_sp = NULL, *par_sp = NULL;	/* this operation's loops to time */

	if (++*n == s->lat_every) {
		bool inside = lab_measuring(c);
		uint64_t t0 = lab_now_ns();

		ops->lock(lock);
		uint64_t t1 = lab_now_ns();
		if (inside || lab_window_reached(c))
			lab_lat_sample(c, t1 - t0);
		if (inside && s->speed[c->id].timed++ % PROBE_EVERY == 0) {
			cs_sp = s->cs_probe_ns ? &s->speed[c->id] : NULL;
			par_sp = s->par_probe_ns ? &s->speed[c->id] : NULL;
		}
	} else {
		ops->lock(lock);
	}
	if (*n >= s->lat_every)
		*n = 0;
	mutex_cs(s, g, cs_sp);
	ops->unlock(lock);
	lab_op_done(c);
	mutex_par(s, par_sp);
}

/* The worker's own slow-path counters, once its loop is over (owner-written, read after join). */
static void save_stats(struct lab_ctx *c, struct mutex_shared *s)
{
	if (s->stats)
		lockstat_read(&s->stats[(size_t)c->id * LOCKSTAT_NR]);
}

static void mutex_worker(struct lab_ctx *c)
{
	struct mutex_shared *s = c->arg;
	struct mutex_group *g = group_of(c, s);
	uint64_t n = 0, done = 0;

	lockstat_reset();
	while (!lab_stopping(c)) {
		mutex_op(c, s, g, &n);
		done++;
	}
	/* owner-written, read by the run function after pthread_join */
	c->user[0] = done;
	save_stats(c, s);
}

static void batch_worker(struct lab_ctx *c)
{
	struct mutex_shared *s = c->arg;
	struct mutex_group *g = group_of(c, s);
	uint64_t n = 0, done = 0;

	lockstat_reset();
	for (; done < s->batch_ops && !lab_stopping(c); done++)
		mutex_op(c, s, g, &n);
	c->user[0] = done;
	save_stats(c, s);
}

static void cs_only(struct mutex_shared *s)
{
	mutex_cs(s, &s->groups[0], NULL);
}

static void par_only(struct mutex_shared *s)
{
	mutex_par(s, NULL);
}

static void pair_only(struct mutex_shared *s)
{
	s->ops->lock(s->groups[0].lock);
	s->ops->unlock(s->groups[0].lock);
}

/*
 * Nanoseconds per call of fn, single-threaded: double the batch until it takes >= 2 ms, then keep
 * the best of up to 5 batches (the minimum is the cost without interference), within ~100 ms.
 */
static double time_per_call(void (*fn)(struct mutex_shared *), struct mutex_shared *s)
{
	uint64_t n = 1, dt, start = lab_now_ns();
	double best;

	for (;;) {
		uint64_t t0 = lab_now_ns();

		for (uint64_t i = 0; i < n; i++)
			fn(s);
		dt = lab_now_ns() - t0;
		if (dt >= 2000000 || n >= (1ull << 40))
			break;
		n *= 2;
	}
	best = (double)dt / (double)n;
	for (int t = 1; t < 5 && lab_now_ns() - start < 100000000; t++) {
		uint64_t t0 = lab_now_ns();

		for (uint64_t i = 0; i < n; i++)
			fn(s);
		double ns = (double)(lab_now_ns() - t0) / (double)n;
		if (ns < best)
			best = ns;
	}
	return best;
}

/*
 * What an empty timed region reads: the floor under every acquisition-latency sample (two vDSO clock
 * reads). The median of 1001 back-to-back pairs, so that one preemption does not move it.
 */
static double latency_floor_ns(void)
{
	uint64_t d[1001];

	for (int i = 0; i < 1001; i++) {
		uint64_t t0 = lab_now_ns();

		d[i] = lab_now_ns() - t0;
	}
	for (int i = 1; i < 1001; i++)		/* insertion sort: small, and only once per run */
		for (int k = i; k > 0 && d[k - 1] > d[k]; k--) {
			uint64_t t = d[k];

			d[k] = d[k - 1];
			d[k - 1] = t;
		}
	return (double)d[500];
}

/* Latency reservoir per thread: ~8 MiB of samples in all, at least 512 and at most 32768 each. */
static size_t lat_cap_for(unsigned nthreads)
{
	size_t cap = (1u << 20) / nthreads;

	return cap < 512 ? 512 : cap > 32768 ? 32768 : cap;
}

static void mutex_free(struct mutex_shared *s)
{
	lab_restore_cpus(s->cpus_restore);
	free(s->stats);
	free(s->speed);
	for (uint64_t i = 0; s->groups && i < s->ngroups; i++) {
		free(s->groups[i].lock);
		free(s->groups[i].lines);
	}
	free(s->groups);
	free(s);
}

/* Destroys the first n groups' locks (those whose init succeeded). */
static void groups_destroy(struct mutex_shared *s, uint64_t n)
{
	for (uint64_t i = 0; s->ops->destroy && i < n; i++)
		s->ops->destroy(s->groups[i].lock);
}

/* Reads the parameters, allocates the shared block and initialises the lock. Returns 0, or an exit
 * status after printing why. */
static int mutex_setup(const struct lab_run *r, struct mutex_shared **out)
{
	const struct lab_alg *alg = lab_a(r, "lock");
	unsigned nthreads = (unsigned)lab_u(r, "threads");
	uint64_t ratio = lab_u(r, "parallel-ratio");
	struct mutex_shared *s;
	int err;

	/* the driver has checked family and availability; the ops type is this file's business */
	if (strcmp(alg->opstype, "lock") != 0 || !alg->ops)
		return lab_bad_arg("lock", "a lock (opstype 'lock') that is available in this build",
				   alg->name);

	s = lab_alloc_aligned(sizeof(*s));
	/* first: the busy-loop calibration and the references below run where the threads will */
	err = lab_apply_cpus(lab_s(r, "cpus"), &s->usable_cpus, &s->cpus_restore);
	if (err) {
		mutex_free(s);
		return err;
	}
	s->ops = alg->ops;
	s->load = lab_u(r, "load");
	s->cs_iters = lab_busy_iters((double)lab_u(r, "cs-ns"));
	s->par_pauses = lab_u(r, "parallel") + ratio * s->load;
	s->par_iters = lab_busy_iters((double)lab_u(r, "parallel-ns")) + ratio * s->cs_iters;
	s->nlines = lab_u(r, "lines");
	s->lat_every = lab_u(r, "lat-every");
	/*
	 * The busy loops are timed in the window only where their due is known (no pauses beside them),
	 * from the requested ns (--cs-ns 100 --parallel-ratio 10 is 1 us outside even where the
	 * calibration's rounding makes its due 999); the due itself is what the loop should take.
	 */
	double per_iter = s->cs_iters || s->par_iters ? lab_busy_ns_per_iter() : 0;
	uint64_t cs_req = lab_u(r, "cs-ns"), par_req = lab_u(r, "parallel-ns") + ratio * cs_req;
	double cs_due = (double)s->cs_iters * per_iter, par_due = (double)s->par_iters * per_iter;
	s->cs_probe_ns = !s->load && cs_req >= PROBE_CS_NS && cs_due >= 1 ? (uint64_t)llround(cs_due) : 0;
	s->par_probe_ns = !s->par_pauses && par_req >= PROBE_PAR_NS && par_due >= 1
		? (uint64_t)llround(par_due) : 0;
	s->speed = lab_alloc_aligned((size_t)nthreads * sizeof(struct mutex_speed));
	s->cs_yield = lab_u(r, "cs-yield");
	s->ngroups = lab_u(r, "groups");
	s->groups = lab_alloc_aligned(s->ngroups * sizeof(struct mutex_group));
	for (uint64_t i = 0; i < s->ngroups; i++) {
		s->groups[i].lines = lab_alloc_aligned(s->nlines * sizeof(struct mutex_line));
		s->groups[i].lock = lab_alloc_aligned(s->ops->size);
	}
	if (s->ops->flags & LAB_LOCK_STATS) {
		s->stats = calloc((size_t)nthreads * LOCKSTAT_NR, sizeof(uint64_t));
		if (!s->stats) {
			fprintf(stderr, "locklab-bench: --threads: no memory for %u threads' counters\n", nthreads);
			mutex_free(s);
			return 1;
		}
	}
	for (uint64_t i = 0; i < s->ngroups; i++) {
		err = s->ops->init ? s->ops->init(s->groups[i].lock) : 0;
		if (err) {
			fprintf(stderr, "locklab-bench: --lock: %s: init failed: %s\n", alg->name, strerror(err));
			groups_destroy(s, i);
			mutex_free(s);
			return 1;
		}
	}
	*out = s;
	return 0;
}

struct mutex_refs {
	double cs_ns, par_ns, pair_ns, floor_ns;
};

/* Single-threaded references, same lock and same lines as the contended run. */
static void mutex_references(struct mutex_shared *s, struct mutex_refs *refs)
{
	refs->cs_ns = time_per_call(cs_only, s);
	refs->par_ns = s->par_pauses || s->par_iters ? time_per_call(par_only, s) : 0;
	refs->pair_ns = time_per_call(pair_only, s);
	refs->floor_ns = latency_floor_ns();
	s->probe_floor_ns = (uint64_t)llround(refs->floor_ns);
	s->groups[0].counter = 0;
}

/* "work": how the requested work became loop counts, with the calibration behind them. */
static void emit_work(struct lab_json *out, const struct mutex_shared *s, const struct lab_run *r)
{
	bool busy = s->cs_iters || s->par_iters || lab_u(r, "cs-ns") || lab_u(r, "parallel-ns");
	double per_iter = busy ? lab_busy_ns_per_iter() : 0;

	lj_obj_begin(out, "work");
	lj_u64(out, "cs_pauses", s->load);
	lj_u64(out, "cs_busy_iters", s->cs_iters);
	lj_u64(out, "parallel_pauses", s->par_pauses);
	lj_u64(out, "parallel_busy_iters", s->par_iters);
	lj_u64(out, "parallel_ratio", lab_u(r, "parallel-ratio"));
	lj_u64(out, "groups", s->ngroups);
	lj_bool(out, "cs_yield", s->cs_yield != 0);
	if (busy) {
		lj_dbl(out, "busy_ns_per_iter", per_iter);
		lj_dbl(out, "cs_busy_ns", (double)s->cs_iters * per_iter);
		lj_dbl(out, "parallel_busy_ns", (double)s->par_iters * per_iter);
		lj_str(out, "busy_calibration", lab_busy_calibration_fixed()
			? "given by LOCKLAB_BUSY_NS_PER_ITER (locklab bench: its first run's calibration)"
			: "best of 21 single-threaded runs of about 100 us each, at start-up");
	} else {
		lj_null(out, "busy_ns_per_iter");
	}
	lj_obj_end(out);
}

/* "lock_stats" for a lock that counts (LAB_LOCK_STATS): the sum of every thread's counters. */
static void emit_lock_stats(struct lab_json *out, const struct mutex_shared *s, unsigned nthreads,
			    uint64_t ops)
{
	if (!s->stats)
		return;
	lj_obj_begin(out, "lock_stats");
	lj_bool(out, "enabled", lockstat_enabled());
	if (!lockstat_enabled()) {
		lj_str(out, "build", "not counted: a statistics build counts them (cmake -DLOCKLAB_STATS=ON, "
				     "make build-stats)");
		lj_obj_end(out);
		return;
	}
	uint64_t sum[LOCKSTAT_NR] = { 0 };
	for (unsigned t = 0; t < nthreads; t++)
		for (unsigned e = 0; e < LOCKSTAT_NR; e++)
			sum[e] += s->stats[(size_t)t * LOCKSTAT_NR + e];
	lj_u64(out, "ops", ops);
	for (unsigned e = 0; e < LOCKSTAT_NR; e++)
		lj_u64(out, lockstat_names[e], sum[e]);
	lj_obj_begin(out, "per_op");
	for (unsigned e = 0; e < LOCKSTAT_NR; e++)
		lj_dbl(out, lockstat_names[e], ops ? (double)sum[e] / (double)ops : 0);
	lj_obj_end(out);
	lj_obj_end(out);
}

/*
 * window_work_speed: 1 / the median over the threads' timed loops of (time taken / due) (struct
 * mutex_speed), the median bucket's geometric middle (4.4 % wide); null where nothing was timed (no
 * busy loop long enough, or no timed operation in the window). window_work_samples: how many loops
 * were timed; window_work_slow_share: the share of them that took 1.5x their due or more (whole
 * buckets: from 2^(10/16) = 1.54x), the measure docs/results/issue11-2core-amd/speed.sh uses.
 */
static void emit_window_speed(struct lab_json *out, const struct mutex_shared *s,
			      const struct lab_window *w)
{
	uint64_t h[PROBE_BUCKETS] = { 0 }, n = 0, slow = 0, seen = 0;
	int b = 0;

	for (unsigned i = 0; i < w->nthreads; i++)
		for (int k = 0; k < PROBE_BUCKETS; k++)
			h[k] += s->speed[i].hist[k];
	for (int k = 0; k < PROBE_BUCKETS; k++) {
		n += h[k];
		if (k >= 32 + 10)
			slow += h[k];
	}
	for (b = 0; n && b < PROBE_BUCKETS; b++) {
		seen += h[b];
		if (2 * seen >= n)
			break;
	}
	if (n) {
		lj_dbl(out, "window_work_speed", 1 / exp2(((double)b - 32 + 0.5) / 16));
		lj_u64(out, "window_work_samples", n);
		lj_dbl(out, "window_work_slow_share", (double)slow / (double)n);
	} else {
		lj_null(out, "window_work_speed");
		lj_u64(out, "window_work_samples", 0);
		lj_null(out, "window_work_slow_share");
	}
}

/* The fields both harnesses share, and the mutual-exclusion verdict (true = ok). */
static bool emit_common(struct lab_json *out, struct mutex_shared *s, const struct lab_run *r,
			const struct mutex_refs *refs, const struct lab_window *w, uint64_t *expected)
{
	double limit = 1e9 / (refs->cs_ns + refs->pair_ns);

	*expected = 0;
	for (unsigned i = 0; i < w->nthreads; i++)
		*expected += w->ctx[i].user[0];
	lab_emit_latency(out, "latency", w);
	lj_u64(out, "usable_cpus", s->usable_cpus);
	lj_dbl(out, "latency_floor_ns", refs->floor_ns);
	lj_dbl(out, "pause_ns", lab_pause_ns());
	lj_dbl(out, "cs_ns", refs->cs_ns);
	lj_dbl(out, "parallel_ns", refs->par_ns);
	emit_window_speed(out, s, w);
	lj_dbl(out, "uncontended_pair_ns", refs->pair_ns);
	lj_dbl(out, "serial_limit_ops_per_sec", limit);
	lj_dbl(out, "serial_fraction", w->elapsed_s > 0 ? (double)w->total_ops / w->elapsed_s / limit : 0);
	emit_work(out, s, r);
	emit_lock_stats(out, s, w->nthreads, *expected);
	/* each group's counter against its own threads' operations; the sums are reported */
	bool ok = true;
	uint64_t counted = 0;
	for (uint64_t g = 0; g < s->ngroups; g++) {
		uint64_t want = 0;

		for (unsigned i = 0; i < w->nthreads; i++)
			if (w->ctx[i].id % s->ngroups == g)
				want += w->ctx[i].user[0];
		counted += s->groups[g].counter;
		if (s->groups[g].counter != want)
			ok = false;
	}
	lj_bool(out, "exclusion_ok", ok);
	lj_u64(out, "exclusion_counter", counted);
	lj_u64(out, "exclusion_expected", *expected);
	return ok;
}

static int exclusion_failed(const struct lab_run *r, uint64_t expected)
{
	fprintf(stderr, "locklab-bench: %s: mutual exclusion violated: a lock's counter lost updates in %llu "
			"operations (exclusion_counter in the record)\n",
		lab_s(r, "lock"), (unsigned long long)expected);
	return 1;
}

static int mutex_finish(struct mutex_shared *s, int err)
{
	groups_destroy(s, s->ngroups);
	mutex_free(s);
	return err;
}

static int mutex_run(const struct lab_run *r, struct lab_json *out)
{
	unsigned nthreads = (unsigned)lab_u(r, "threads");
	struct mutex_shared *s;
	struct mutex_refs refs;
	struct lab_window w;
	uint64_t expected;
	int err = mutex_setup(r, &s);

	if (err)
		return err;
	mutex_references(s, &refs);
	if (lab_harness_run(nthreads, lab_d(r, "warmup"), lab_d(r, "duration"), mutex_worker, s,
			    lat_cap_for(nthreads), &w))
		return mutex_finish(s, 1);
	lab_emit_window(out, &w);
	if (!emit_common(out, s, r, &refs, &w, &expected))
		err = exclusion_failed(r, expected);
	lab_window_free(&w);
	return mutex_finish(s, err);
}

static int batch_run(const struct lab_run *r, struct lab_json *out)
{
	unsigned nthreads = (unsigned)lab_u(r, "threads");
	double timeout = lab_d(r, "timeout");
	struct mutex_shared *s;
	struct mutex_refs refs;
	struct lab_window w;
	uint64_t expected;
	int err = mutex_setup(r, &s), rc;

	if (err)
		return err;
	uint64_t total = lab_u(r, "total-ops");
	/* a fixed total splits over the threads, rounded up: every thread does the same share */
	s->batch_ops = total ? (total + nthreads - 1) / nthreads : lab_u(r, "ops");
	mutex_references(s, &refs);
	rc = lab_batch_run(nthreads, timeout, batch_worker, s, lat_cap_for(nthreads), &w);
	if (rc && rc != ETIMEDOUT)
		return mutex_finish(s, 1);
	lab_emit_batch(out, &w);
	lj_u64(out, "ops_per_thread", s->batch_ops);
	lj_bool(out, "completed", rc == 0);
	bool ok = emit_common(out, s, r, &refs, &w, &expected);
	bool all = w.total_ops == (uint64_t)nthreads * s->batch_ops && expected == w.total_ops;
	lj_bool(out, "batch_ok", all);
	if (!ok) {
		err = exclusion_failed(r, expected);
	} else if (rc == ETIMEDOUT) {
		fprintf(stderr, "locklab-bench: --timeout: %s did not finish the batch within %g s (%llu of "
				"%llu critical sections done)\n", lab_s(r, "lock"), timeout,
			(unsigned long long)w.total_ops, (unsigned long long)nthreads * s->batch_ops);
		err = 1;
	} else if (!all) {
		fprintf(stderr, "locklab-bench: %s: batch counted %llu operations, expected %llu\n",
			lab_s(r, "lock"), (unsigned long long)w.total_ops,
			(unsigned long long)nthreads * s->batch_ops);
		err = 1;
	}
	lab_window_free(&w);
	return mutex_finish(s, err);
}

/* The critical section, the work outside it, and latency sampling: every mutex workload's. */
#define WORK_PARAMS										\
	{ "load", LAB_P_UINT, "0", 0, 1000000, NULL,						\
	  "critical-section work in pause instructions", true },				\
	{ "cs-ns", LAB_P_UINT, "0", 0, 10000000, NULL,						\
	  "critical-section work in ns of calibrated busy loop (adds to --load)", true },	\
	{ "lines", LAB_P_UINT, "0", 0, 1024, NULL,						\
	  "shared 64-byte cache lines written once per critical section", true },		\
	{ "parallel", LAB_P_UINT, "0", 0, 10000000, NULL,					\
	  "work outside the lock per operation, in pause instructions", true },			\
	{ "parallel-ns", LAB_P_UINT, "0", 0, 100000000, NULL,					\
	  "work outside the lock per operation, in ns of busy loop (adds to --parallel)", true },	\
	{ "parallel-ratio", LAB_P_UINT, "0", 0, 1000, NULL,					\
	  "work outside the lock as R times the critical section's: adds R x --load pauses and "	\
	  "R x --cs-ns ns (P = 0, L, 10L, 100L is R = 0,1,10,100)", true },			\
	{ "groups", LAB_P_UINT, "1", 1, 4096, NULL,						\
	  "independent locks, each with its own counter and lines: thread i takes lock i mod N", true },	\
	{ "cs-yield", LAB_P_UINT, "0", 0, 1, NULL,						\
	  "1: sched_yield() at the end of every critical section, the lock held (as stress-ng's "	\
	  "mutex stressor and sysbench threads do)", true },					\
	{ "lat-every", LAB_P_UINT, "16", 1, 1e9, NULL,						\
	  "time every Nth acquisition (acquisition latency sampling)", false },			\
	{ "cpus", LAB_P_STR, "all", 0, 0, NULL,							\
	  "the CPUs the run may use: all (as started), first (the lowest of those), N or A-B (as "	\
	  "taskset -c, or a container's cpuset)", true }

#define MUTEX_PARAMS(families, deflock)								\
	{ "lock", LAB_P_ALG, deflock, 0, 0, families, "the lock to measure", false },		\
	{ "threads", LAB_P_UINT, "1", 1, 4096, NULL, "threads contending for the lock", true },	\
	WORK_PARAMS,										\
	LAB_PARAM_DURATION,									\
	LAB_PARAM_WARMUP,									\
	LAB_PARAM_END

static const struct lab_param mutex_params[] = { MUTEX_PARAMS("mutex,spinlock", "lk_mutex") };
static const struct lab_param spinlock_params[] = { MUTEX_PARAMS("spinlock", "spin_ttas") };
static const struct lab_param batch_params[] = {
	{ "lock", LAB_P_ALG, "lk_mutex", 0, 0, "mutex,spinlock", "the lock to measure", false },
	{ "threads", LAB_P_UINT, "1", 1, 4096, NULL, "threads, each doing --ops critical sections", true },
	{ "ops", LAB_P_UINT, "10000", 1, 1e9, NULL, "critical sections per thread (the batch's work)", true },
	{ "total-ops", LAB_P_UINT, "0", 0, 1e12, NULL,
	  "the batch's total instead: each thread does ceil(total / threads) (0 = use --ops)", true },
	WORK_PARAMS,
	{ "timeout", LAB_P_DOUBLE, "60", 0.01, 3600, NULL,
	  "seconds after which an unfinished batch is stopped and the run fails", false },
	LAB_PARAM_END,
};

const struct lab_workload lab_wl_mutex = {
	.name = "mutex",
	.help = "T threads: lock, critical section (pauses/ns, K shared lines), unlock, outside work "
		"(pauses/ns, or R x the critical section); throughput, fairness, acquisition latency, and "
		"the single-thread serial limit",
	.metric = "ops_per_sec",
	.higher_is_better = true,
	.params = mutex_params,
	.run = mutex_run,
};

const struct lab_workload lab_wl_spinlock = {
	.name = "spinlock",
	.help = "the mutex workload restricted to spinlocks (default spin_ttas)",
	.metric = "ops_per_sec",
	.higher_is_better = true,
	.params = spinlock_params,
	.run = mutex_run,
};

const struct lab_workload lab_wl_mutex_batch = {
	.name = "mutex-batch",
	.help = "fixed work: T threads each do --ops critical sections of the mutex workload's shape; "
		"time to finish, each thread's time, slowest thread, spread, fairness, acquisition latency",
	.metric = "finish_s",
	.higher_is_better = false,
	.params = batch_params,
	.run = batch_run,
};
