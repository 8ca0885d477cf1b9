/* SPDX-License-Identifier: MIT */
/*
 * lab/lab.h - the contention lab's internal interfaces.
 *
 * Three things live here:
 *  1. The algorithm registry (lab/registry.def, an X-macro list). Every lock, baseline, peer, refcount
 *     flavour and bucket layout is one line there; the benchmark driver, the tests and `locklab list`
 *     all iterate the same table. An entry belongs to a *family* ("mutex", "spinlock", "refcount",
 *     "layout", ...) and carries a pointer to an ops struct whose type is named by the entry's
 *     *opstype*: opstype `lock` means `struct lab_lock_ops`, `refcount` means `struct lab_refcount_ops`,
 *     and so on (struct lab_<opstype>_ops, declared by whoever owns that opstype).
 *  2. Workloads (lab/workloads.def): a name, typed parameters with ranges, a primary metric and a run
 *     function. The driver parses and validates the parameters (bad input: one line naming the
 *     argument and what was expected, exit 2), prints the run header and hands the run function an open
 *     JSON object to fill. `locklab-bench describe` prints every workload and its parameters as JSON;
 *     the Python CLI builds its options from that, so it never keeps its own list.
 *  3. Shared measurement helpers (lab/common.c): clock, pause calibration, a thread harness that counts
 *     only the window in which all threads run, latency sampling, rusage, the JSON writer, and the
 *     machine description.
 */
#ifndef LOCKLAB_LAB_H
#define LOCKLAB_LAB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LAB_CACHELINE 64
#define LAB_SCHEMA_RUN "locklab-run/1"

/* ------------------------------------------------------------------------------------------------ */
/* Registry                                                                                          */

/*
 * opstype `lock`: anything with lock/unlock over a state block (mutexes, spinlocks, peers).
 * The caller allocates `size` bytes aligned to LAB_CACHELINE and zeroed, then calls init.
 */
struct lab_lock_ops {
	size_t size;
	int (*init)(void *l);		/* 0 or an errno value */
	void (*destroy)(void *l);	/* may be NULL */
	void (*lock)(void *l);
	int (*trylock)(void *l);	/* 0 = acquired, EBUSY = held by someone; may be NULL */
	void (*unlock)(void *l);
	unsigned flags;			/* LAB_LOCK_* */
};
/* Waiters burn CPU instead of sleeping: oversubscribed runs (threads > CPUs) make slow progress when
 * the holder or the next in line is preempted; tests scale their thread counts down for these. */
#define LAB_LOCK_SPINS		0x1u
/* FIFO-queued waiters (ticket, MCS, queued): a preempted waiter stalls everybody behind it. */
#define LAB_LOCK_FIFO		0x2u
/* The lock counts its slow-path events in src/lockstat.h (nonzero only in a statistics build,
 * cmake -DLOCKLAB_STATS=ON); the mutex workloads report them as "lock_stats". */
#define LAB_LOCK_STATS		0x4u
/* Holders and waiters use per-thread queue nodes (a small table per thread): a thread can hold only a
 * few such locks at once and must unlock from the thread that locked. pthread programs do both, so
 * the LD_PRELOAD shim (preload/) does not offer these locks. */
#define LAB_LOCK_THREAD_NODES	0x8u
/* Implemented with pthread_mutex_*: the shim cannot put it behind its own pthread_mutex_* (it is
 * the shim's `glibc` passthrough instead). */
#define LAB_LOCK_PTHREAD	0x10u
/* lock, unlock or destroy may call a POSIX cancellation point (absl::Mutex sleeps with nanosleep() and
 * reads sysfs with open()/read() in its slow paths); trylock never does. pthread_mutex_* are not
 * cancellation points, so the shim runs those verbs with cancellation disabled: a cancellation acting
 * inside would unwind the lock with its internal state half-updated. */
#define LAB_LOCK_CANCEL_POINTS	0x20u

struct lab_alg {
	const char *family;	/* "mutex", "spinlock", ... */
	const char *name;	/* unique across the registry, [a-z0-9_-] */
	const char *opstype;	/* "lock", "refcount", ... */
	const void *ops;	/* struct lab_<opstype>_ops *, NULL when missing */
	const char *desc;
	const char *missing;	/* NULL when available, else why not (e.g. "libtbb-dev not found at build time") */
};

extern const struct lab_alg lab_registry[];
extern const size_t lab_registry_len;

/* The entry named `name` whose family is in the comma-separated `families` (NULL = any), or NULL. */
const struct lab_alg *lab_find(const char *families, const char *name);

/* ------------------------------------------------------------------------------------------------ */
/* JSON writer: keys are ignored inside arrays; doubles that are NaN or infinite become null.        */

struct lab_json {
	FILE *f;
	int depth;
	bool first[32];
};

void lj_init(struct lab_json *j, FILE *f);
void lj_obj_begin(struct lab_json *j, const char *key);
void lj_obj_end(struct lab_json *j);
void lj_arr_begin(struct lab_json *j, const char *key);
void lj_arr_end(struct lab_json *j);
void lj_u64(struct lab_json *j, const char *key, uint64_t v);
void lj_i64(struct lab_json *j, const char *key, int64_t v);
void lj_dbl(struct lab_json *j, const char *key, double v);
void lj_str(struct lab_json *j, const char *key, const char *s);
void lj_bool(struct lab_json *j, const char *key, bool v);
void lj_null(struct lab_json *j, const char *key);

/* ------------------------------------------------------------------------------------------------ */
/* Workloads                                                                                         */

enum lab_ptype {
	LAB_P_UINT,	/* unsigned integer in [min, max] */
	LAB_P_DOUBLE,	/* finite number in [min, max] */
	LAB_P_STR,	/* free text, or one of `choices` (comma-separated) when set */
	LAB_P_ALG,	/* a registry entry whose family is in `choices` (comma-separated) */
};

struct lab_param {
	const char *name;	/* option name without dashes: --threads */
	enum lab_ptype type;
	const char *def;	/* default value as text; NULL = required */
	double min, max;	/* inclusive bounds for UINT and DOUBLE */
	const char *choices;	/* STR: allowed values (NULL = any); ALG: families */
	const char *help;
	bool axis;		/* the CLI may sweep it (comma lists -> matrix) */
};

/* The parameters every harness-timed workload shares, and the end of a parameter table. */
#define LAB_PARAM_DURATION \
	{ "duration", LAB_P_DOUBLE, "1", 0.01, 3600, NULL, "measured window, seconds", false }
#define LAB_PARAM_WARMUP \
	{ "warmup", LAB_P_DOUBLE, "0.1", 0, 60, NULL, "seconds all threads run before the window opens", false }
#define LAB_PARAM_END { NULL, 0, NULL, 0, 0, NULL, NULL, false }

struct lab_run;

struct lab_workload {
	const char *name;		/* "mutex", "futex-hash", ... */
	const char *help;
	const char *metric;		/* primary metric key inside "result", e.g. "ops_per_sec" */
	bool higher_is_better;
	const struct lab_param *params;	/* terminated by an entry with name == NULL */
	/*
	 * Runs once with validated parameters and writes its fields into the open "result" object of the
	 * run record. Returns 0, or an exit status (2 for a parameter combination the ranges could not
	 * express, after printing "locklab-bench: --name: expected ..., got ..." to stderr).
	 */
	int (*run)(const struct lab_run *r, struct lab_json *out);
};

struct lab_run {
	const struct lab_workload *wl;
	const char *values[32];		/* parsed text of each parameter, index = position in params */
};

/* Typed access to a validated parameter (aborts on an unknown name: a programming error). */
uint64_t lab_u(const struct lab_run *r, const char *name);
double lab_d(const struct lab_run *r, const char *name);
const char *lab_s(const struct lab_run *r, const char *name);
const struct lab_alg *lab_a(const struct lab_run *r, const char *name);

/* Print "locklab-bench: --arg: expected WHAT, got 'GOT'" and return 2 (the bad-input exit status). */
int lab_bad_arg(const char *arg, const char *what, const char *got);
/*
 * --cpus: restrict the calling thread, and every thread it starts afterwards, to the CPUs `spec`
 * names: "all" (leave the affinity it was started with), "first" (the lowest CPU of that affinity:
 * one pinned CPU wherever the run is allowed), "N" or "A-B" (as taskset -c; a container's cpuset).
 * Returns 0, or 2 after a message naming --cpus. *usable: the CPUs it may then run on (0 if that
 * cannot be read). *restore: what lab_restore_cpus() needs to put the old affinity back (NULL when
 * nothing changed), so that a workload run in-process leaves its caller as it found it.
 */
int lab_apply_cpus(const char *spec, unsigned *usable, void **restore);
void lab_restore_cpus(void *restore);

/* ------------------------------------------------------------------------------------------------ */
/* Measurement                                                                                       */

uint64_t lab_now_ns(void);			/* CLOCK_MONOTONIC, vDSO: ~20 ns */
void lab_pause(uint64_t n);			/* n x lk_cpu_relax() */
double lab_pause_ns(void);			/* calibrated cost of one lk_cpu_relax(), cached */

/*
 * Calibrated busy work, for work given in nanoseconds (lockhammer's -c/-p): `iters` turns of a
 * one-cycle loop on a register (no memory traffic, no pause). lab_busy_ns_per_iter() is measured once
 * per process (best of 21 timed runs of about 100 us each, single-threaded) and cached, unless
 * LOCKLAB_BUSY_NS_PER_ITER gives it (locklab bench passes its first run's value to the later runs:
 * lab/common.c); lab_busy_iters(ns) rounds ns to whole turns.
 *
 * The loop is written in assembly and 16-byte aligned (as lockhammer's blackhole()): a compiled loop
 * lands wherever the surrounding code puts it, and one that straddles a fetch boundary runs at two
 * cycles a turn instead of one (seen: the same C loop calibrated at 0.27 ns a turn in one function
 * and ran at 0.54 inside the critical section), which would silently double every --cs-ns.
 */
static inline void lab_busy(uint64_t iters)
{
	if (!iters)
		return;
#if defined(__x86_64__)
	__asm__ __volatile__(".p2align 4\n1:\tsub $1, %0\n\tjne 1b" : "+r"(iters) : : "cc");
#elif defined(__aarch64__)
	__asm__ __volatile__(".p2align 4\n1:\tsubs %0, %0, #1\n\tb.ne 1b" : "+r"(iters) : : "cc");
#else
	while (iters) {
		iters--;
		__asm__ __volatile__("" : "+r"(iters));
	}
#endif
}
double lab_busy_ns_per_iter(void);
bool lab_busy_calibration_fixed(void);	/* taken from LOCKLAB_BUSY_NS_PER_ITER, not measured */
uint64_t lab_busy_iters(double ns);
void *lab_alloc_aligned(size_t size);		/* zeroed, LAB_CACHELINE aligned; abort on OOM */

/*
 * Thread harness. Starts `nthreads` workers running fn(ctx); waits until every one is inside its loop;
 * lets them warm up; then counts only the window in which all of them run: it snapshots each thread's
 * ops counter, the clock and getrusage at the start of the window and again at its end, and then asks
 * the workers to stop. Workers:
 *
 *	while (!lab_stopping(ctx)) { ...one operation...; lab_op_done(ctx); }
 *
 * and may record latency samples with lab_lat_sample(ctx, ns) while lab_measuring(ctx), or for an
 * operation that began before the window and ended once lab_window_reached(ctx).
 */
struct lab_harness;

/*
 * The scheduler's view of one thread (procfs): how long it has waited runnable on a runqueue
 * (/proc/.../schedstat, second field; CONFIG_SCHED_INFO) and how often it migrated between CPUs
 * (se.nr_migrations in /proc/.../sched; CONFIG_SCHED_DEBUG), each with whether the kernel had it,
 * and when it was read.
 */
struct lab_sched {
	uint64_t wait_ns, migrations, at_ns;
	bool have_wait, have_migrations;
};

struct lab_ctx {
	_Atomic uint64_t ops;		/* written by the owning thread only (relaxed), read by the harness */
	unsigned id;
	unsigned nthreads;
	void *arg;			/* the workload's shared argument */
	struct lab_harness *h;
	uint64_t *lat;			/* latency samples (ns), reservoir of lat_cap */
	size_t lat_n, lat_cap;
	uint64_t lat_seen;
	uint64_t rng;			/* per-thread xorshift state, seeded from id */
	uint64_t user[4];		/* workload's per-thread counters (owner-written, read after join) */
	uint64_t t_start_ns, t_end_ns;	/* lab_now_ns() as fn(ctx) began and returned (read after join) */
	int tid;			/* the worker's kernel thread id (set before it checks in) */
	/* batch: its own scheduler view just before fn began and just after it returned (procfs reads,
	 * tens of µs, outside t_start_ns..t_end_ns) */
	struct lab_sched sched0, sched1;
} __attribute__((aligned(LAB_CACHELINE)));

struct lab_window {
	double elapsed_s;		/* length of the counted window */
	uint64_t total_ops;
	uint64_t *thread_ops;		/* nthreads entries, ops inside the window */
	double cpu_user_s, cpu_sys_s;	/* getrusage(RUSAGE_SELF) deltas over the window */
	long nvcsw, nivcsw;		/* voluntary / involuntary context switches over the window */
	/*
	 * The workers' scheduler view over the window (each read at its edges, per thread):
	 * runqueue_wait = sum over workers of (runqueue wait / the time between its two reads), the
	 * average number of workers runnable but waiting for a CPU; migrations_per_s = their
	 * migrations per second. NAN when the kernel does not report them.
	 */
	double runqueue_wait, migrations_per_s;
	struct lab_ctx *ctx;		/* the per-thread contexts, valid until lab_window_free */
	unsigned nthreads;
};

/* Runs the harness; lat_cap samples of latency per thread (0 = none). Returns 0, or an errno value
 * after printing "locklab-bench: --threads: could not start N threads" and freeing the window. */
int lab_harness_run(unsigned nthreads, double warmup_s, double duration_s, void (*fn)(struct lab_ctx *),
		    void *arg, size_t lat_cap, struct lab_window *w);
void lab_window_free(struct lab_window *w);

/*
 * Fixed-work harness (a batch job): starts `nthreads` workers running fn(ctx), opens the gate for all
 * of them at once and waits until every fn has returned. Workers do their share and return:
 *
 *	for (i = 0; i < n && !lab_stopping(ctx); i++) { ...one operation...; lab_op_done(ctx); }
 *
 * lab_measuring() is true from the gate on (latency samples cover the whole batch). The window's
 * elapsed_s is the batch's span, from the first worker's start to the last one's end; thread_ops are
 * every worker's whole count; ctx[i].t_start_ns/t_end_ns bound each worker's own time. After
 * `timeout_s` the workers are asked to stop: returns ETIMEDOUT with the (partial) window filled in.
 * Returns 0, ETIMEDOUT, or an errno value from starting the threads (window freed, as
 * lab_harness_run).
 */
int lab_batch_run(unsigned nthreads, double timeout_s, void (*fn)(struct lab_ctx *), void *arg,
		  size_t lat_cap, struct lab_window *w);

bool lab_stopping(const struct lab_ctx *c);
bool lab_measuring(const struct lab_ctx *c);
/* true once the window has opened, during it and after it closed (a wait that began before the
 * window and ends after this turns true overlapped it) */
bool lab_window_reached(const struct lab_ctx *c);
static inline void lab_op_done(struct lab_ctx *c)
{
	/* relaxed: a statistics counter with a single writer; the harness reads it racily by design */
	atomic_store_explicit(&c->ops, atomic_load_explicit(&c->ops, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}
void lab_lat_sample(struct lab_ctx *c, uint64_t ns);	/* reservoir sampling into c->lat */
uint64_t lab_rand(struct lab_ctx *c);

/* Window summary fields every threaded workload emits: ops_per_sec, per-thread ops, Jain fairness,
 * min/max share, cpu_ns_per_op, context switches, runqueue_wait_threads and migrations_per_s (null
 * where the kernel does not report them), elapsed_s. */
void lab_emit_window(struct lab_json *j, const struct lab_window *w);
/* A batch's fields: finish_s (the span, the batch's metric), ops_per_sec (all operations over the
 * span), thread_ops, thread_time_s (each worker's own time), slowest/median/fastest_thread_s,
 * thread_time_spread ((slowest - fastest) / slowest: 0 = every thread finished together),
 * start_skew_s (last worker's start - first's), fairness_jain over the per-thread rates
 * (ops / own time), cpu_ns_per_op and context switches as lab_emit_window. */
void lab_emit_batch(struct lab_json *j, const struct lab_window *w);
/* Merges every thread's latency samples and emits {"samples":N,"p50_ns":..,"p90_ns":..,"p99_ns":..,
 * "p999_ns":..,"max_ns":..,"threads_sampled":..,"thread_p99_max_ns":..,"thread_p99_median_ns":..,
 * "cdf":[[ns,fraction],...] (about 100 points)} under `key`: the thread_p99 fields are the largest
 * and the median (the lower middle one for an even count) of each sampled thread's own p99. */
void lab_emit_latency(struct lab_json *j, const char *key, const struct lab_window *w);
/* Percentile (0..100) of a sorted array. */
uint64_t lab_percentile(const uint64_t *sorted, size_t n, double pct);

/* The machine: cpu model, online cpus, smt, kernel, governor, relax instruction, pause_ns. */
void lab_emit_machine(struct lab_json *j);

#endif /* LOCKLAB_LAB_H */
