/* SPDX-License-Identifier: MIT */
/*
 * lab/common.c - the measurement helpers every workload shares (see lab/lab.h).
 *
 * The thread harness, in phases (h->phase, a 32-bit futex word):
 *
 *   STARTING --(all workers checked in)--> RUNNING --(warm-up over; snapshot)--> MEASURING
 *            --(duration over; snapshot)--> STOPPING --(join)
 *
 * The batch (fixed-work) harness uses the same workers and gate, but opens it straight into
 * MEASURING and waits on h->finished (a futex word every worker increments when its fn returns):
 *
 *   STARTING --(all workers checked in)--> MEASURING --(every fn returned)--> (join)
 *                                                    --(timeout)--> STOPPING --(join)
 *
 * Workers check in (h->started), sleep on h->phase until RUNNING, then loop until STOPPING. The harness
 * reads every worker's ops counter at the start and at the end of MEASURING, so the counted window is
 * one in which every worker had started and none had been asked to stop. Counters are single-writer
 * and read racily with relaxed loads: an op straddling a snapshot is counted in one window or the
 * other, never twice, never lost.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "futex.h"
#include "lab.h"
#include "locklab/relax.h"

/* ------------------------------------------------------------------------------------------------ */
/* JSON writer                                                                                       */

void lj_init(struct lab_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->first[0] = true;
}

static void lj_quote(FILE *f, const char *s);

static void lj_sep(struct lab_json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	/* keys only inside objects: arrays pass key == NULL */
	if (key) {
		lj_quote(j->f, key);
		fputc(':', j->f);
	}
}

static void lj_open(struct lab_json *j, const char *key, char c)
{
	lj_sep(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < (int)(sizeof(j->first) / sizeof(j->first[0])))
		j->depth++;
	j->first[j->depth] = true;
}

void lj_obj_begin(struct lab_json *j, const char *key) { lj_open(j, key, '{'); }
void lj_arr_begin(struct lab_json *j, const char *key) { lj_open(j, key, '['); }

void lj_obj_end(struct lab_json *j)
{
	fputc('}', j->f);
	if (j->depth > 0)
		j->depth--;
}

void lj_arr_end(struct lab_json *j)
{
	fputc(']', j->f);
	if (j->depth > 0)
		j->depth--;
}

void lj_u64(struct lab_json *j, const char *key, uint64_t v)
{
	lj_sep(j, key);
	fprintf(j->f, "%llu", (unsigned long long)v);
}

void lj_i64(struct lab_json *j, const char *key, int64_t v)
{
	lj_sep(j, key);
	fprintf(j->f, "%lld", (long long)v);
}

void lj_dbl(struct lab_json *j, const char *key, double v)
{
	lj_sep(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.17g", v);
	else
		fputs("null", j->f);
}

void lj_bool(struct lab_json *j, const char *key, bool v)
{
	lj_sep(j, key);
	fputs(v ? "true" : "false", j->f);
}

void lj_null(struct lab_json *j, const char *key)
{
	lj_sep(j, key);
	fputs("null", j->f);
}

static void lj_quote(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void lj_str(struct lab_json *j, const char *key, const char *s)
{
	lj_sep(j, key);
	lj_quote(j->f, s);
}

/* ------------------------------------------------------------------------------------------------ */
/* Parameters                                                                                        */

static int param_index(const struct lab_run *r, const char *name)
{
	for (int i = 0; r->wl->params[i].name; i++)
		if (strcmp(r->wl->params[i].name, name) == 0)
			return i;
	fprintf(stderr, "locklab-bench: internal error: workload %s has no parameter '%s'\n", r->wl->name, name);
	abort();
}

uint64_t lab_u(const struct lab_run *r, const char *name)
{
	return strtoull(r->values[param_index(r, name)], NULL, 10);
}

double lab_d(const struct lab_run *r, const char *name)
{
	return strtod(r->values[param_index(r, name)], NULL);
}

const char *lab_s(const struct lab_run *r, const char *name)
{
	return r->values[param_index(r, name)];
}

const struct lab_alg *lab_a(const struct lab_run *r, const char *name)
{
	int i = param_index(r, name);

	return lab_find(r->wl->params[i].choices, r->values[i]);
}

int lab_bad_arg(const char *arg, const char *what, const char *got)
{
	fprintf(stderr, "locklab-bench: --%s: expected %s, got '%s'\n", arg, what, got ? got : "");
	return 2;
}

static double pause_ns_cached;	/* lab_pause_ns(); 0: measure at the next call */

int lab_apply_cpus(const char *spec, unsigned *usable, void **restore)
{
	const char *what = "all, first, a CPU number or a range A-B (as taskset -c)";
	cpu_set_t set, *old = NULL;

	*restore = NULL;
	if (!spec || strcmp(spec, "all") != 0) {
		old = malloc(sizeof(*old));
		if (!old || sched_getaffinity(0, sizeof(*old), old)) {
			what = "a thread whose CPU affinity can be read";
			goto bad;
		}
		CPU_ZERO(&set);
		if (spec && strcmp(spec, "first") == 0) {
			/* the lowest CPU this process may use: one pinned CPU wherever the run is allowed */
			for (int c = 0; c < CPU_SETSIZE; c++) {
				if (CPU_ISSET(c, old)) {
					CPU_SET(c, &set);
					break;
				}
			}
		} else {
			unsigned long lo, hi;
			char *end;

			if (!spec || !isdigit((unsigned char)spec[0]))
				goto bad;
			errno = 0;
			lo = hi = strtoul(spec, &end, 10);
			if (*end == '-') {
				if (!isdigit((unsigned char)end[1]))
					goto bad;
				hi = strtoul(end + 1, &end, 10);
			}
			if (errno || *end || hi < lo)
				goto bad;
			if (hi >= CPU_SETSIZE) {
				what = "CPU numbers below 1024";
				goto bad;
			}
			for (unsigned long c = lo; c <= hi; c++)
				CPU_SET(c, &set);
		}
		if (sched_setaffinity(0, sizeof(set), &set)) {
			what = "CPUs that are online and that this process may use";
			goto bad;
		}
		*restore = old;
		/*
		 * the machine block measured a pause wherever the driver started; the run's own
		 * pause_ns is measured again here, where its threads run (a hybrid CPU's cores differ)
		 */
		pause_ns_cached = 0;
	}
	*usable = sched_getaffinity(0, sizeof(set), &set) ? 0 : (unsigned)CPU_COUNT(&set);
	return 0;
bad:
	free(old);
	return lab_bad_arg("cpus", what, spec);
}

void lab_restore_cpus(void *restore)
{
	if (!restore)
		return;
	/* back to the calling thread's affinity before lab_apply_cpus(); nothing to report on failure */
	(void)sched_setaffinity(0, sizeof(cpu_set_t), restore);
	free(restore);
}

/* ------------------------------------------------------------------------------------------------ */
/* Time, pauses, memory                                                                              */

uint64_t lab_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void lab_pause(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		lk_cpu_relax();
}

double lab_pause_ns(void)
{
	double cached = pause_ns_cached;

	if (cached > 0)
		return cached;
	/* best of 7 trials of 20k pauses: the minimum is the cost without interference */
	double best = 1e9;
	for (int t = 0; t < 7; t++) {
		uint64_t t0 = lab_now_ns();
		lab_pause(20000);
		double ns = (double)(lab_now_ns() - t0) / 20000.0;
		if (ns < best)
			best = ns;
	}
	pause_ns_cached = best;
	return best;
}

void *lab_alloc_aligned(size_t size)
{
	void *p = NULL;
	size_t rounded = (size + LAB_CACHELINE - 1) / LAB_CACHELINE * LAB_CACHELINE;

	if (rounded == 0)
		rounded = LAB_CACHELINE;
	if (posix_memalign(&p, LAB_CACHELINE, rounded) != 0) {
		fprintf(stderr, "locklab-bench: out of memory allocating %zu bytes\n", rounded);
		abort();
	}
	memset(p, 0, rounded);
	return p;
}

/* ------------------------------------------------------------------------------------------------ */
/* Busy work                                                                                         */

/*
 * LOCKLAB_BUSY_NS_PER_ITER fixes the calibration instead of measuring it: `locklab bench` passes the
 * first run's value to every later run of the same bench, so that every lock of a comparison does the
 * same number of iterations for the same --cs-ns/--parallel-ns. Measured per process, the value is
 * bimodal on a VM (0.27 or 0.41-0.51 ns here, docs/spinlocks.md), and at a few ns of work the
 * iteration count, not the lock, decided the throughput.
 */
static bool busy_fixed;

bool lab_busy_calibration_fixed(void)
{
	(void)lab_busy_ns_per_iter();
	return busy_fixed;
}

double lab_busy_ns_per_iter(void)
{
	static double cached;

	if (cached > 0)
		return cached;
	const char *env = getenv("LOCKLAB_BUSY_NS_PER_ITER");
	if (env && *env) {
		char *end;
		double v = strtod(env, &end);

		if (*end || !(v >= 0.01 && v <= 100)) {
			fprintf(stderr, "locklab-bench: LOCKLAB_BUSY_NS_PER_ITER: expected the ns per busy-loop "
					"iteration, a number in [0.01, 100], got '%s'\n", env);
			exit(2);
		}
		busy_fixed = true;
		cached = v;
		return cached;
	}
	/*
	 * Size a trial to about 100 us from a first guess, then keep the best of 21 trials: the minimum
	 * is the loop without interference, and trials this short are likely to find a stretch in which
	 * a busy machine's scheduler (or a hypervisor) took nothing away.
	 */
	uint64_t n = 1u << 14, t0 = lab_now_ns();
	lab_busy(n);
	double guess = (double)(lab_now_ns() - t0) / (double)n;
	if (guess > 0)
		n = (uint64_t)(1e5 / guess);
	if (n < (1u << 14))
		n = 1u << 14;
	double best = 1e9;
	for (int t = 0; t < 21; t++) {
		t0 = lab_now_ns();
		lab_busy(n);
		double ns = (double)(lab_now_ns() - t0) / (double)n;
		if (ns > 0 && ns < best)
			best = ns;
	}
	cached = best;
	return cached;
}

uint64_t lab_busy_iters(double ns)
{
	return ns > 0 ? (uint64_t)llround(ns / lab_busy_ns_per_iter()) : 0;
}

/* ------------------------------------------------------------------------------------------------ */
/* Thread harness                                                                                    */

enum { PH_STARTING, PH_RUNNING, PH_MEASURING, PH_STOPPING };

struct lab_harness {
	_Atomic uint32_t phase;
	_Atomic uint32_t started;
	_Atomic uint32_t finished;	/* workers whose fn returned (the batch runner waits on it) */
	void (*fn)(struct lab_ctx *);
};

bool lab_stopping(const struct lab_ctx *c)
{
	/* relaxed: the flag only needs to become visible eventually; nothing is published through it */
	return atomic_load_explicit(&c->h->phase, memory_order_relaxed) == PH_STOPPING;
}

bool lab_measuring(const struct lab_ctx *c)
{
	/* relaxed: deciding whether to take a latency sample; a late view only shifts one sample */
	return atomic_load_explicit(&c->h->phase, memory_order_relaxed) == PH_MEASURING;
}

bool lab_window_reached(const struct lab_ctx *c)
{
	/* relaxed: as lab_measuring; the phase only moves forward, so a late view only drops one sample
	 * that straddled the window's opening */
	return atomic_load_explicit(&c->h->phase, memory_order_relaxed) >= PH_MEASURING;
}

uint64_t lab_rand(struct lab_ctx *c)
{
	/* xorshift64*: per-thread, no shared state */
	uint64_t x = c->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

void lab_lat_sample(struct lab_ctx *c, uint64_t ns)
{
	if (!c->lat_cap)
		return;
	c->lat_seen++;
	if (c->lat_n < c->lat_cap) {
		c->lat[c->lat_n++] = ns;
	} else {
		/* reservoir sampling: every sample of the window is kept with equal probability */
		uint64_t k = lab_rand(c) % c->lat_seen;
		if (k < c->lat_cap)
			c->lat[k] = ns;
	}
}

/*
 * Reads thread `tid`'s scheduler view (struct lab_sched; tid 0: the calling thread). Lines of
 * /proc/.../sched look like "se.nr_migrations                             :                    3".
 */
static void sched_read(int tid, struct lab_sched *out)
{
	char path[64], line[256];
	unsigned long long run, wait;
	FILE *f;

	memset(out, 0, sizeof(*out));
	out->at_ns = lab_now_ns();
	if (tid)
		snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/schedstat");
	if ((f = fopen(path, "r"))) {
		out->have_wait = fscanf(f, "%llu %llu", &run, &wait) == 2;
		out->wait_ns = out->have_wait ? wait : 0;
		fclose(f);
	}
	if (tid)
		snprintf(path, sizeof(path), "/proc/self/task/%d/sched", tid);
	else
		snprintf(path, sizeof(path), "/proc/thread-self/sched");
	if ((f = fopen(path, "r"))) {
		while (fgets(line, sizeof(line), f)) {
			const char *colon = strchr(line, ':');

			if (strncmp(line, "se.nr_migrations", 16) == 0 && colon) {
				out->migrations = strtoull(colon + 1, NULL, 10);
				out->have_migrations = true;
				break;
			}
		}
		fclose(f);
	}
}

/* Fills w->runqueue_wait and w->migrations_per_s from each worker's two reads (NAN when missing). */
static void sched_window(struct lab_window *w, const struct lab_sched *s0, const struct lab_sched *s1,
			 unsigned n)
{
	double wait = 0, migr = 0;
	bool have_wait = n > 0, have_migr = n > 0;

	for (unsigned i = 0; i < n; i++) {
		double dt = s1[i].at_ns > s0[i].at_ns ? (double)(s1[i].at_ns - s0[i].at_ns) : 0;

		have_wait = have_wait && s0[i].have_wait && s1[i].have_wait && dt > 0;
		have_migr = have_migr && s0[i].have_migrations && s1[i].have_migrations && dt > 0;
		if (dt > 0) {
			wait += (double)(s1[i].wait_ns - s0[i].wait_ns) / dt;
			migr += (double)(s1[i].migrations - s0[i].migrations) / (dt / 1e9);
		}
	}
	w->runqueue_wait = have_wait ? wait : NAN;
	w->migrations_per_s = have_migr ? migr : NAN;
}

static void *harness_thread(void *arg)
{
	struct lab_ctx *c = arg;
	struct lab_harness *h = c->h;

	c->tid = (int)gettid();
	/* release: pairs with the harness's acquire load of `started`; publishes the check-in and tid */
	atomic_fetch_add_explicit(&h->started, 1, memory_order_release);
	/* acquire: pairs with the release store that opens the gate; the workload's shared state, set up
	 * before the harness started, is visible from here on */
	while (atomic_load_explicit(&h->phase, memory_order_acquire) == PH_STARTING)
		lk_futex_wait(&h->phase, PH_STARTING, NULL, CLOCK_MONOTONIC);
	/* the batch reads its own edges (its workers are gone by the end); the timed harness reads
	 * theirs from outside, at the window's edges */
	if (atomic_load_explicit(&h->phase, memory_order_relaxed) == PH_MEASURING)
		sched_read(0, &c->sched0);
	c->t_start_ns = lab_now_ns();
	h->fn(c);
	c->t_end_ns = lab_now_ns();
	if (c->sched0.at_ns)
		sched_read(0, &c->sched1);
	/* release: pairs with the batch runner's acquire load; pthread_join orders the rest anyway */
	atomic_fetch_add_explicit(&h->finished, 1, memory_order_release);
	lk_futex_wake(&h->finished, 1);
	return NULL;
}

static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(deadline_ns / 1000000000ull),
			       .tv_nsec = (long)(deadline_ns % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* One run of either harness: the workers, checked in and waiting at the gate. */
struct harness_run {
	struct lab_harness h;
	pthread_t *tids;
	struct lab_ctx *ctx;
	unsigned nthreads, created;
	int err;
};

/* Allocates the contexts, starts the workers and waits until every started one has checked in.
 * Returns 0, or an errno value (hr->err; the gate must still be opened, with PH_STOPPING). */
static int harness_start(struct harness_run *hr, unsigned nthreads, void (*fn)(struct lab_ctx *),
			 void *arg, size_t lat_cap)
{
	pthread_attr_t attr;

	memset(hr, 0, sizeof(*hr));
	hr->h.fn = fn;
	hr->nthreads = nthreads;
	hr->tids = calloc(nthreads, sizeof(*hr->tids));
	hr->ctx = lab_alloc_aligned(sizeof(*hr->ctx) * nthreads);
	if (!hr->tids)
		return hr->err = ENOMEM;
	atomic_init(&hr->h.phase, PH_STARTING);
	atomic_init(&hr->h.started, 0);
	atomic_init(&hr->h.finished, 0);
	for (unsigned i = 0; i < nthreads; i++) {
		struct lab_ctx *c = &hr->ctx[i];

		c->id = i;
		c->nthreads = nthreads;
		c->arg = arg;
		c->h = &hr->h;
		c->rng = 0x9E3779B97F4A7C15ull * (i + 1) | 1;
		atomic_init(&c->ops, 0);
		if (lat_cap) {
			c->lat = calloc(lat_cap, sizeof(uint64_t));
			c->lat_cap = c->lat ? lat_cap : 0;
		}
	}
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 1u << 20);
	for (; hr->created < nthreads; hr->created++) {
		hr->err = pthread_create(&hr->tids[hr->created], &attr, harness_thread, &hr->ctx[hr->created]);
		if (hr->err)
			break;
	}
	pthread_attr_destroy(&attr);
	/* acquire: pairs with each worker's release check-in */
	while (atomic_load_explicit(&hr->h.started, memory_order_acquire) < hr->created)
		usleep(200);
	return hr->err;
}

static void harness_open(struct harness_run *hr, uint32_t phase)
{
	/* release: pairs with the workers' acquire load of the phase; they may start */
	atomic_store_explicit(&hr->h.phase, phase, memory_order_release);
	lk_futex_wake(&hr->h.phase, INT_MAX);
}

/* Joins the workers and hands the contexts to the window; on a start failure reports it once and
 * frees everything. Returns hr->err. */
static int harness_join(struct harness_run *hr, struct lab_window *w)
{
	for (unsigned i = 0; i < hr->created; i++)
		pthread_join(hr->tids[i], NULL);
	free(hr->tids);
	w->ctx = hr->ctx;
	w->nthreads = hr->nthreads;
	if (hr->err && hr->err != ETIMEDOUT) {
		fprintf(stderr, "locklab-bench: --threads: could not start %u threads (started %u): %s\n",
			hr->nthreads, hr->created, strerror(hr->err));
		lab_window_free(w);
	}
	return hr->err;
}

int lab_harness_run(unsigned nthreads, double warmup_s, double duration_s, void (*fn)(struct lab_ctx *),
		    void *arg, size_t lat_cap, struct lab_window *w)
{
	struct harness_run hr;
	uint64_t *ops0 = calloc(nthreads, sizeof(*ops0));
	struct lab_sched *s0 = NULL, *s1 = NULL;	/* the workers' scheduler view at the window's edges */

	memset(w, 0, sizeof(*w));
	if (!ops0)
		return ENOMEM;
	harness_start(&hr, nthreads, fn, arg, lat_cap);
	harness_open(&hr, hr.err ? PH_STOPPING : PH_RUNNING);
	if (!hr.err) {
		struct lab_ctx *ctx = hr.ctx;
		struct rusage ru0, ru1;
		uint64_t t0, t1;

		sleep_until(lab_now_ns() + (uint64_t)(warmup_s * 1e9));
		s0 = calloc(nthreads, sizeof(*s0));
		s1 = calloc(nthreads, sizeof(*s1));
		for (unsigned i = 0; s0 && s1 && i < nthreads; i++)
			sched_read(ctx[i].tid, &s0[i]);
		getrusage(RUSAGE_SELF, &ru0);
		t0 = lab_now_ns();
		for (unsigned i = 0; i < nthreads; i++)	/* relaxed: see the header comment */
			ops0[i] = atomic_load_explicit(&ctx[i].ops, memory_order_relaxed);
		/* relaxed: latency sampling only looks at the phase to decide whether to sample */
		atomic_store_explicit(&hr.h.phase, PH_MEASURING, memory_order_relaxed);
		sleep_until(t0 + (uint64_t)(duration_s * 1e9));

		w->thread_ops = calloc(nthreads, sizeof(uint64_t));
		for (unsigned i = 0; i < nthreads; i++) {
			uint64_t now = atomic_load_explicit(&ctx[i].ops, memory_order_relaxed);
			w->thread_ops[i] = now - ops0[i];
			w->total_ops += w->thread_ops[i];
		}
		t1 = lab_now_ns();
		getrusage(RUSAGE_SELF, &ru1);
		w->elapsed_s = (double)(t1 - t0) / 1e9;
		w->cpu_user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
		w->cpu_sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
		w->nvcsw = ru1.ru_nvcsw - ru0.ru_nvcsw;
		w->nivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
		for (unsigned i = 0; s0 && s1 && i < nthreads; i++)
			sched_read(ctx[i].tid, &s1[i]);
		if (s0 && s1)
			sched_window(w, s0, s1, nthreads);
		else
			w->runqueue_wait = w->migrations_per_s = NAN;
		/* relaxed: workers poll for it; pthread_join below orders everything they did */
		atomic_store_explicit(&hr.h.phase, PH_STOPPING, memory_order_relaxed);
	}
	free(ops0);
	free(s0);
	free(s1);
	return harness_join(&hr, w);
}

int lab_batch_run(unsigned nthreads, double timeout_s, void (*fn)(struct lab_ctx *), void *arg,
		  size_t lat_cap, struct lab_window *w)
{
	struct harness_run hr;
	struct rusage ru0, ru1;

	memset(w, 0, sizeof(*w));
	harness_start(&hr, nthreads, fn, arg, lat_cap);
	if (hr.err) {
		harness_open(&hr, PH_STOPPING);
		return harness_join(&hr, w);
	}
	getrusage(RUSAGE_SELF, &ru0);
	/* the gate opens straight into MEASURING: the whole batch is the measurement */
	uint64_t deadline = lab_now_ns() + (uint64_t)(timeout_s * 1e9);
	harness_open(&hr, PH_MEASURING);
	for (;;) {
		/* acquire: pairs with each worker's release increment after its fn returned */
		uint32_t done = atomic_load_explicit(&hr.h.finished, memory_order_acquire);
		uint64_t now = lab_now_ns();

		if (done >= nthreads)
			break;
		if (now >= deadline) {
			hr.err = ETIMEDOUT;
			/* relaxed: workers poll for it; pthread_join orders everything they did */
			atomic_store_explicit(&hr.h.phase, PH_STOPPING, memory_order_relaxed);
			break;
		}
		struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000ull),
				       .tv_nsec = (long)(deadline % 1000000000ull) };
		lk_futex_wait(&hr.h.finished, done, &ts, CLOCK_MONOTONIC);
	}
	int err = hr.err;
	harness_join(&hr, w);
	getrusage(RUSAGE_SELF, &ru1);
	w->cpu_user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime);
	w->cpu_sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime);
	w->nvcsw = ru1.ru_nvcsw - ru0.ru_nvcsw;
	w->nivcsw = ru1.ru_nivcsw - ru0.ru_nivcsw;
	w->thread_ops = calloc(nthreads, sizeof(uint64_t));
	uint64_t first = UINT64_MAX, last = 0;
	for (unsigned i = 0; i < nthreads; i++) {
		/* relaxed: single writer, joined */
		w->thread_ops[i] = atomic_load_explicit(&w->ctx[i].ops, memory_order_relaxed);
		w->total_ops += w->thread_ops[i];
		if (w->ctx[i].t_start_ns < first)
			first = w->ctx[i].t_start_ns;
		if (w->ctx[i].t_end_ns > last)
			last = w->ctx[i].t_end_ns;
	}
	w->elapsed_s = last > first ? (double)(last - first) / 1e9 : 0;
	struct lab_sched *s0 = calloc(nthreads, sizeof(*s0)), *s1 = calloc(nthreads, sizeof(*s1));

	for (unsigned i = 0; s0 && s1 && i < nthreads; i++) {
		s0[i] = w->ctx[i].sched0;
		s1[i] = w->ctx[i].sched1;
	}
	if (s0 && s1)
		sched_window(w, s0, s1, nthreads);
	else
		w->runqueue_wait = w->migrations_per_s = NAN;
	free(s0);
	free(s1);
	return err;
}

void lab_window_free(struct lab_window *w)
{
	if (w->ctx)
		for (unsigned i = 0; i < w->nthreads; i++)
			free(w->ctx[i].lat);
	free(w->ctx);
	free(w->thread_ops);
	memset(w, 0, sizeof(*w));
}

void lab_emit_window(struct lab_json *j, const struct lab_window *w)
{
	double sum = 0, sumsq = 0, mn = 0, mx = 0;
	unsigned n = w->nthreads;

	for (unsigned i = 0; i < n; i++) {
		double x = (double)w->thread_ops[i];
		sum += x;
		sumsq += x * x;
		if (i == 0 || x < mn)
			mn = x;
		if (i == 0 || x > mx)
			mx = x;
	}
	double mean = n ? sum / n : 0;
	lj_dbl(j, "ops_per_sec", w->elapsed_s > 0 ? (double)w->total_ops / w->elapsed_s : 0);
	lj_dbl(j, "elapsed_s", w->elapsed_s);
	lj_u64(j, "total_ops", w->total_ops);
	lj_arr_begin(j, "thread_ops");
	for (unsigned i = 0; i < n; i++)
		lj_u64(j, NULL, w->thread_ops[i]);
	lj_arr_end(j);
	/* Jain's index: (sum x)^2 / (n sum x^2); 1 = perfectly fair, 1/n = one thread did everything */
	lj_dbl(j, "fairness_jain", sumsq > 0 ? sum * sum / (n * sumsq) : NAN);
	lj_dbl(j, "min_share", mean > 0 ? mn / mean : NAN);
	lj_dbl(j, "max_share", mean > 0 ? mx / mean : NAN);
	lj_dbl(j, "cpu_user_s", w->cpu_user_s);
	lj_dbl(j, "cpu_sys_s", w->cpu_sys_s);
	lj_dbl(j, "cpu_ns_per_op", w->total_ops ? (w->cpu_user_s + w->cpu_sys_s) * 1e9 / w->total_ops : NAN);
	lj_i64(j, "nvcsw", w->nvcsw);
	lj_i64(j, "nivcsw", w->nivcsw);
	lj_dbl(j, "runqueue_wait_threads", w->runqueue_wait);	/* NAN -> null */
	lj_dbl(j, "migrations_per_s", w->migrations_per_s);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void lab_emit_batch(struct lab_json *j, const struct lab_window *w)
{
	unsigned n = w->nthreads;
	double *t = calloc(n ? n : 1, sizeof(double)), sum = 0, sumsq = 0;
	uint64_t first = UINT64_MAX, last_start = 0;

	for (unsigned i = 0; i < n; i++) {
		const struct lab_ctx *c = &w->ctx[i];
		t[i] = c->t_end_ns > c->t_start_ns ? (double)(c->t_end_ns - c->t_start_ns) / 1e9 : 0;
		if (t[i] > 0) {
			double rate = (double)w->thread_ops[i] / t[i];
			sum += rate;
			sumsq += rate * rate;
		}
		if (c->t_start_ns < first)
			first = c->t_start_ns;
		if (c->t_start_ns > last_start)
			last_start = c->t_start_ns;
	}
	lj_dbl(j, "finish_s", w->elapsed_s);
	lj_dbl(j, "ops_per_sec", w->elapsed_s > 0 ? (double)w->total_ops / w->elapsed_s : 0);
	lj_u64(j, "total_ops", w->total_ops);
	lj_arr_begin(j, "thread_ops");
	for (unsigned i = 0; i < n; i++)
		lj_u64(j, NULL, w->thread_ops[i]);
	lj_arr_end(j);
	lj_arr_begin(j, "thread_time_s");
	for (unsigned i = 0; i < n; i++)
		lj_dbl(j, NULL, t[i]);
	lj_arr_end(j);
	qsort(t, n, sizeof(double), cmp_dbl);
	double slow = n ? t[n - 1] : 0, fast = n ? t[0] : 0;
	lj_dbl(j, "slowest_thread_s", slow);
	lj_dbl(j, "median_thread_s", n ? (n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2) : 0);
	lj_dbl(j, "fastest_thread_s", fast);
	lj_dbl(j, "thread_time_spread", slow > 0 ? (slow - fast) / slow : 0);
	lj_dbl(j, "start_skew_s", n ? (double)(last_start - first) / 1e9 : 0);
	/* Jain's index over the per-thread rates: every thread does the same work, so the op counts are
	 * equal by construction and unfairness shows as some threads getting through much faster */
	lj_dbl(j, "fairness_jain", sumsq > 0 ? sum * sum / (n * sumsq) : NAN);
	lj_dbl(j, "cpu_user_s", w->cpu_user_s);
	lj_dbl(j, "cpu_sys_s", w->cpu_sys_s);
	lj_dbl(j, "cpu_ns_per_op", w->total_ops ? (w->cpu_user_s + w->cpu_sys_s) * 1e9 / w->total_ops : NAN);
	lj_i64(j, "nvcsw", w->nvcsw);
	lj_i64(j, "nivcsw", w->nivcsw);
	lj_dbl(j, "runqueue_wait_threads", w->runqueue_wait);	/* NAN -> null */
	lj_dbl(j, "migrations_per_s", w->migrations_per_s);
	free(t);
}

uint64_t lab_percentile(const uint64_t *sorted, size_t n, double pct)
{
	if (n == 0)
		return 0;
	/* nearest-rank */
	double rank = pct / 100.0 * (double)n;
	size_t k = rank <= 1 ? 0 : (size_t)ceil(rank) - 1;
	return sorted[k < n ? k : n - 1];
}

/*
 * Each thread's own p99 (nearest rank over its own samples), for the threads that have samples:
 * their largest and their median (the lower middle one for an even count), and how many threads
 * had samples. The merged percentiles weigh threads by how many acquisitions they timed, so a
 * thread that a lock starves adds few samples and barely moves them; its own p99 is its long
 * waits. (The largest is never below the merged p99: if every thread had fewer than its 1 % of
 * samples at or above it, the merged samples would too.) Out of memory: no fields, never a count
 * of some of the threads.
 */
static void emit_thread_p99(struct lab_json *j, const struct lab_window *w)
{
	uint64_t *p99 = malloc((w->nthreads ? w->nthreads : 1) * sizeof(uint64_t));
	uint64_t *one = NULL;
	size_t cap = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < w->nthreads && p99; i++) {
		size_t m = w->ctx[i].lat_n;

		if (!m)
			continue;
		if (m > cap) {
			uint64_t *b = realloc(one, m * sizeof(uint64_t));

			if (!b) {
				n = 0;
				break;
			}
			one = b;
			cap = m;
		}
		memcpy(one, w->ctx[i].lat, m * sizeof(uint64_t));
		qsort(one, m, sizeof(uint64_t), cmp_u64);
		p99[n++] = lab_percentile(one, m, 99);
	}
	if (p99 && n) {
		qsort(p99, n, sizeof(uint64_t), cmp_u64);
		lj_u64(j, "threads_sampled", n);
		lj_u64(j, "thread_p99_max_ns", p99[n - 1]);
		lj_u64(j, "thread_p99_median_ns", p99[(n - 1) / 2]);
	}
	free(one);
	free(p99);
}

void lab_emit_latency(struct lab_json *j, const char *key, const struct lab_window *w)
{
	size_t total = 0, k = 0;

	for (unsigned i = 0; i < w->nthreads; i++)
		total += w->ctx[i].lat_n;
	uint64_t *all = malloc((total ? total : 1) * sizeof(uint64_t));
	for (unsigned i = 0; i < w->nthreads; i++)
		for (size_t s = 0; s < w->ctx[i].lat_n; s++)
			all[k++] = w->ctx[i].lat[s];
	qsort(all, total, sizeof(uint64_t), cmp_u64);
	lj_obj_begin(j, key);
	lj_u64(j, "samples", total);
	if (total) {
		lj_u64(j, "p50_ns", lab_percentile(all, total, 50));
		lj_u64(j, "p90_ns", lab_percentile(all, total, 90));
		lj_u64(j, "p99_ns", lab_percentile(all, total, 99));
		lj_u64(j, "p999_ns", lab_percentile(all, total, 99.9));
		lj_u64(j, "max_ns", all[total - 1]);
		emit_thread_p99(j, w);
		lj_arr_begin(j, "cdf");
		/* ~100 evenly spaced points plus the tail, deduplicated by index */
		size_t last = (size_t)-1;
		static const double tail[] = { 0.99, 0.995, 0.999, 0.9999, 1.0 };
		for (int p = 0; p <= 104; p++) {
			double f = p < 100 ? p / 100.0 : tail[p - 100];
			size_t idx = (size_t)(f * (double)(total - 1) + 0.5);
			if (idx == last)
				continue;
			last = idx;
			lj_arr_begin(j, NULL);
			lj_u64(j, NULL, all[idx]);
			lj_dbl(j, NULL, (double)(idx + 1) / (double)total);
			lj_arr_end(j);
		}
		lj_arr_end(j);
	}
	lj_obj_end(j);
	free(all);
}

/* ------------------------------------------------------------------------------------------------ */
/* Machine description                                                                               */

static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	bool ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

static void cpuinfo_field(const char *field, char *out, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	size_t n = strlen(field);

	out[0] = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, field, n) == 0 && (line[n] == ' ' || line[n] == '\t' || line[n] == ':')) {
			char *v = strchr(line, ':');
			if (v) {
				v++;
				while (*v == ' ' || *v == '\t')
					v++;
				v[strcspn(v, "\n")] = 0;
				snprintf(out, len, "%s", v);
			}
			break;
		}
	}
	fclose(f);
}

void lab_emit_machine(struct lab_json *j)
{
	char buf[512], flags[4096];
	struct utsname u;

	lj_obj_begin(j, "machine");
	cpuinfo_field("model name", buf, sizeof(buf));
	if (!buf[0])
		cpuinfo_field("CPU part", buf, sizeof(buf));
	lj_str(j, "cpu_model", buf[0] ? buf : "unknown");
	lj_i64(j, "online_cpus", sysconf(_SC_NPROCESSORS_ONLN));
	if (read_line("/sys/devices/system/cpu/smt/control", buf, sizeof(buf)))
		lj_str(j, "smt", buf);
	else
		lj_null(j, "smt");
	lj_str(j, "kernel", uname(&u) == 0 ? u.release : "unknown");
	lj_str(j, "arch", uname(&u) == 0 ? u.machine : "unknown");
	if (read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", buf, sizeof(buf)))
		lj_str(j, "governor", buf);
	else
		lj_null(j, "governor");
	cpuinfo_field("flags", flags, sizeof(flags));
	lj_bool(j, "hypervisor", strstr(flags, " hypervisor") != NULL);
	lj_str(j, "relax", LK_RELAX_NAME);
	lj_dbl(j, "pause_ns", lab_pause_ns());
	lj_obj_end(j);
}
