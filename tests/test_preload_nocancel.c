/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_nocancel.c - pthread_mutex_lock/trylock/timedlock/clocklock/unlock are not
 * cancellation points (POSIX lists the functions that are; these are not among them), under every
 * shim lock and natively. A lock whose slow path is unwound halfway by a cancellation keeps its
 * internal state half-updated: absl::Mutex unwound in its Enqueue keeps its spin bit (kMuSpin) set
 * and its one-time TSC calibration marked running, and the next thread to unlock spins forever.
 * That was test_preload_cancel's occasional hang under absl_mutex (4 runs in 360 here).
 *
 * Two detectors, each enough to fail the test:
 *
 *   probes   this program defines the POSIX cancellation points that lock code could reach
 *            (nanosleep, clock_nanosleep, usleep, poll, read, write, open, getrandom, ...); the
 *            dynamic linker binds the shim's and the peers' calls to them (an executable's definition
 *            comes first). Each probe checks whether the calling thread is inside one of the mutex
 *            calls below (a thread-local mark) with cancellation enabled: that is a violation whether
 *            or not a cancellation is pending, because one could be. The probes count every
 *            cancellation point reached inside a call, so the test also shows that it opened the window.
 *   cleanup  the thread W runs all of it with a cancellation pending (requested while W had
 *            cancellation disabled; re-enabling is not a cancellation point) inside
 *            pthread_cleanup_push(cancelled_inside): if a cancellation acts inside a mutex call, the
 *            handler names the call and the process exits 1 at once (instead of the hang that
 *            follows). After the calls, pthread_testcancel() must act: the cancellation was pending
 *            all along and is neither lost nor consumed.
 *
 * Phases:
 *   blocked  main holds the mutex; a thread Q queues on it (main waits until Q sleeps, or 200 ms);
 *            then W, cancellation pending, calls pthread_mutex_lock and queues behind Q. main keeps
 *            the mutex until W has reached a cancellation point inside the lock, or 200 ms. absl's
 *            Enqueue behind an existing waiter reads the thread's priority and, the first time in a
 *            process, calibrates the TSC with nanosleep() (CycleClock::Frequency ->
 *            NominalCPUFrequency), all while holding its spin bit: on x86_64 without
 *            /sys/devices/system/cpu/cpu0/tsc_freq_khz the test requires that absl_mutex got there,
 *            i.e. that the window was really open.
 *   rounds   W (cancellation still pending) and main alternate lock/trylock/timedlock/clocklock and
 *            unlock on the same mutex, contended; absl's MutexDelay sleeps in Lock and Unlock when
 *            its spin bit is contended.
 *   cond     ping-pong through a condvar between main and a thread V (no cancellation pending):
 *            every wait's re-acquire of the mutex is inside pthread_cond_wait, a cancellation point
 *            whose own sleep is not interposable (a futex system call): a probe reached there with
 *            cancellation enabled is a relock that could be cancelled. Then V, blocked in wait, is
 *            cancelled: PTHREAD_CANCELED, and the mutex is free afterwards.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include "preload_test.h"

/* ---- the probes ---------------------------------------------------------------------------------- */

static __thread const char *in_call;		/* the mutex call this thread is inside, or NULL */
static _Atomic long reached;			/* cancellation points reached inside a mutex call */
static _Atomic long violations;			/* ... of them with cancellation enabled */
static _Atomic(const char *) first_point, first_call;
static _Atomic int w_tid;			/* the thread W: its own count, for the blocked phase */
static _Atomic long reached_by_w;

static void probe(const char *point)
{
	const char *call = in_call;
	int old;

	if (!call)
		return;
	atomic_fetch_add(&reached, 1);
	if (atomic_load(&w_tid) == (int)syscall(SYS_gettid))
		atomic_fetch_add(&reached_by_w, 1);
	/* DISABLE never acts on a pending cancellation, and restoring the old (deferred) state does not */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	if (old == PTHREAD_CANCEL_ENABLE && atomic_fetch_add(&violations, 1) == 0) {
		atomic_store(&first_point, point);
		atomic_store(&first_call, call);
	}
	pthread_setcancelstate(old, NULL);
}

/* next(name): the definition after ours (libc, or a sanitizer's interceptor in front of it). */
#define NEXT(fn)                                                                                   \
	static _Atomic(__typeof__(&fn)) next_p;                                                    \
	__typeof__(&fn) next = atomic_load(&next_p);                                               \
	if (!next) {                                                                               \
		next = (__typeof__(&fn))dlsym(RTLD_NEXT, #fn);                                     \
		atomic_store(&next_p, next);                                                       \
	}

#define PROBE(ret, fn, params, args)                                                               \
	ret fn params                                                                              \
	{                                                                                          \
		NEXT(fn);                                                                          \
		probe(#fn);                                                                        \
		return next args;                                                                  \
	}

PROBE(int, nanosleep, (const struct timespec *a, struct timespec *b), (a, b))
PROBE(int, clock_nanosleep, (clockid_t c, int f, const struct timespec *a, struct timespec *b), (c, f, a, b))
PROBE(int, usleep, (useconds_t u), (u))
PROBE(unsigned, sleep, (unsigned s), (s))
PROBE(int, pause, (void), ())
PROBE(int, poll, (struct pollfd *p, nfds_t n, int t), (p, n, t))
PROBE(int, ppoll, (struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *s), (p, n, t, s))
PROBE(int, select, (int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *t), (n, r, w, e, t))
PROBE(int, pselect, (int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t, const sigset_t *s),
      (n, r, w, e, t, s))
PROBE(int, epoll_wait, (int e, struct epoll_event *v, int n, int t), (e, v, n, t))
PROBE(ssize_t, read, (int fd, void *b, size_t n), (fd, b, n))
PROBE(ssize_t, write, (int fd, const void *b, size_t n), (fd, b, n))
PROBE(ssize_t, readv, (int fd, const struct iovec *v, int n), (fd, v, n))
PROBE(ssize_t, writev, (int fd, const struct iovec *v, int n), (fd, v, n))
PROBE(ssize_t, pread, (int fd, void *b, size_t n, off_t o), (fd, b, n, o))
PROBE(ssize_t, pwrite, (int fd, const void *b, size_t n, off_t o), (fd, b, n, o))
PROBE(int, close, (int fd), (fd))
PROBE(int, fsync, (int fd), (fd))
PROBE(int, fdatasync, (int fd), (fd))
PROBE(int, sigsuspend, (const sigset_t *s), (s))
PROBE(int, sigwait, (const sigset_t *s, int *g), (s, g))
PROBE(int, sigtimedwait, (const sigset_t *s, siginfo_t *i, const struct timespec *t), (s, i, t))
PROBE(int, sigwaitinfo, (const sigset_t *s, siginfo_t *i), (s, i))
PROBE(int, sem_wait, (sem_t *s), (s))
PROBE(int, sem_timedwait, (sem_t *s, const struct timespec *t), (s, t))
PROBE(int, sem_clockwait, (sem_t *s, clockid_t c, const struct timespec *t), (s, c, t))
PROBE(ssize_t, getrandom, (void *b, size_t n, unsigned f), (b, n, f))
PROBE(pid_t, waitpid, (pid_t p, int *s, int o), (p, s, o))
PROBE(int, pthread_join, (pthread_t t, void **r), (t, r))
PROBE(ssize_t, recv, (int fd, void *b, size_t n, int f), (fd, b, n, f))
PROBE(ssize_t, send, (int fd, const void *b, size_t n, int f), (fd, b, n, f))
PROBE(int, accept, (int fd, struct sockaddr *a, socklen_t *l), (fd, a, l))
PROBE(int, connect, (int fd, const struct sockaddr *a, socklen_t l), (fd, a, l))

/* open/openat take a mode only with O_CREAT or O_TMPFILE */
#define PROBE_OPEN(fn, params, args)                                                          \
	int fn params                                                                              \
	{                                                                                          \
		NEXT(fn);                                                                          \
		mode_t mode = 0;                                                                   \
		if (flags & (O_CREAT | O_TMPFILE)) {                                              \
			va_list ap;                                                                \
			va_start(ap, flags);                                                       \
			mode = va_arg(ap, mode_t);                                                 \
			va_end(ap);                                                                \
		}                                                                                  \
		probe(#fn);                                                                        \
		return next args;                                                                  \
	}
PROBE_OPEN(open, (const char *p, int flags, ...), (p, flags, mode))
PROBE_OPEN(open64, (const char *p, int flags, ...), (p, flags, mode))
PROBE_OPEN(openat, (int d, const char *p, int flags, ...), (d, p, flags, mode))
PROBE_OPEN(openat64, (int d, const char *p, int flags, ...), (d, p, flags, mode))

/* ---- the mutex calls, marked ----------------------------------------------------------------------- */

#define CALL(name, expr)                                                                           \
	({                                                                                         \
		in_call = name;                                                                    \
		int _r = (expr);                                                                   \
		in_call = NULL;                                                                    \
		_r;                                                                                \
	})

static int m_lock(pthread_mutex_t *m) { return CALL("pthread_mutex_lock", pthread_mutex_lock(m)); }
static int m_unlock(pthread_mutex_t *m) { return CALL("pthread_mutex_unlock", pthread_mutex_unlock(m)); }

/* the four ways to take it, in turn; each must succeed (far deadlines) */
static void m_acquire(pthread_mutex_t *m, int how)
{
	struct timespec ts;

	switch (how & 3) {
	case 0:
		CHECK_EQ(m_lock(m), 0);
		break;
	case 1:
		while (CALL("pthread_mutex_trylock", pthread_mutex_trylock(m)) != 0)
			sched_yield();
		break;
	case 2:
		ts = lkt_deadline_in(CLOCK_REALTIME, 60 * 1000000000LL);
		CHECK_EQ(CALL("pthread_mutex_timedlock", pthread_mutex_timedlock(m, &ts)), 0);
		break;
	default:
		ts = lkt_deadline_in(CLOCK_MONOTONIC, 60 * 1000000000LL);
		CHECK_EQ(CALL("pthread_mutex_clocklock", pthread_mutex_clocklock(m, CLOCK_MONOTONIC, &ts)), 0);
		break;
	}
}

/* ---- blocked + rounds: W runs with a cancellation pending ---------------------------------------- */

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static long counter;				/* under m */
static int rounds;
static _Atomic int w_ready, w_go, w_entering, w_rounds_done, w_testcancel_returned;

static void cancelled_inside(void *arg)
{
	const char *call = in_call;

	(void)arg;
	if (call) {
		fprintf(stderr, "test_preload_nocancel [%s]: FAILED: a cancellation acted inside %s "
			"(cancellation point %s)\n", lkp_lock(), call,
			atomic_load(&first_point) ? atomic_load(&first_point) : "?");
		fflush(stderr);
		_exit(1);	/* the lock's state is half-updated: anything else would hang */
	}
}

/* W's mutex calls, with its cancellation pending. A function of its own: once it has returned, no
 * frame of W holds a variable whose scope has ended (the cleanup buffer) when the cancellation
 * unwinds the thread; ASan would have left it poisoned and then report its own thread teardown,
 * which reuses that stack, as a stack-use-after-scope. */
static __attribute__((noinline)) void w_calls(void)
{
	pthread_cleanup_push(cancelled_inside, NULL);
	atomic_store(&w_entering, 1);
	CHECK_EQ(m_lock(&m), 0);		/* blocked: main holds it */
	counter++;
	CHECK_EQ(m_unlock(&m), 0);
	for (int i = 0; i < rounds; i++) {
		m_acquire(&m, i);
		counter++;
		CHECK_EQ(m_unlock(&m), 0);
	}
	atomic_store(&w_rounds_done, 1);
	pthread_cleanup_pop(0);
}

static void *w_main(void *arg)
{
	(void)arg;
	atomic_store(&w_tid, (int)syscall(SYS_gettid));
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	atomic_store(&w_ready, 1);
	while (!atomic_load(&w_go))
		sched_yield();
	/* the cancellation is pending now; enabling it is not a cancellation point */
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	w_calls();
	pthread_testcancel();			/* acts here: it was pending all along */
	atomic_store(&w_testcancel_returned, 1);
	return NULL;
}

static _Atomic int q_tid;

static void *q_main(void *arg)
{
	(void)arg;
	atomic_store(&q_tid, (int)syscall(SYS_gettid));
	CHECK_EQ(m_lock(&m), 0);		/* queues first: main holds it */
	counter++;
	CHECK_EQ(m_unlock(&m), 0);
	return NULL;
}

static void check_pending_cancel(void)
{
	pthread_t w, q;
	void *res = NULL;

	CHECK_EQ(m_lock(&m), 0);
	CHECK_EQ(pthread_create(&w, NULL, w_main, NULL), 0);
	while (!atomic_load(&w_ready))
		sched_yield();
	/* Q queues first (asleep: parked; a spinning lock's Q never sleeps, so 200 ms at most) */
	CHECK_EQ(pthread_create(&q, NULL, q_main, NULL), 0);
	uint64_t until = lkt_now_ns(CLOCK_MONOTONIC) + 200 * 1000000ull;
	while ((!atomic_load(&q_tid) || lkt_thread_state(atomic_load(&q_tid)) != 'S') &&
	       lkt_now_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	CHECK_EQ(pthread_cancel(w), 0);
	atomic_store(&w_go, 1);
	while (!atomic_load(&w_entering))
		sched_yield();
	/* hold the mutex until W reached a cancellation point inside its lock call, or 200 ms */
	until = lkt_now_ns(CLOCK_MONOTONIC) + 200 * 1000000ull;
	while (atomic_load(&reached_by_w) == 0 && lkt_now_ns(CLOCK_MONOTONIC) < until)
		sched_yield();
	long blocked_reached = atomic_load(&reached_by_w);
	counter++;
	CHECK_EQ(m_unlock(&m), 0);
	for (int i = 0; i < rounds; i++) {
		m_acquire(&m, i + 1);
		counter++;
		CHECK_EQ(m_unlock(&m), 0);
	}
	CHECK_EQ(pthread_join(w, &res), 0);
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(pthread_join(q, NULL), 0);
	CHECK_EQ(atomic_load(&w_rounds_done), 1);
	CHECK_EQ(atomic_load(&w_testcancel_returned), 0);
	CHECK_EQ(counter, 2L * rounds + 3);
	fprintf(stderr, "test_preload_nocancel [%s]: blocked lock reached %ld cancellation point(s)\n", lkp_lock(),
		blocked_reached);
#if defined(__x86_64__)
	/* absl calibrates the TSC with nanosleep() in its first blocking Lock (see the header) */
	if (lkp_is("absl_mutex") && access("/sys/devices/system/cpu/cpu0/tsc_freq_khz", F_OK) != 0)
		CHECK(blocked_reached > 0);
#endif
}

/* ---- cond: relocks inside pthread_cond_wait ------------------------------------------------------- */

static pthread_mutex_t cm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cc = PTHREAD_COND_INITIALIZER;
static int ball;				/* under cm: 0 main's turn, 1 V's turn */
static int volleys;

static void v_cleanup(void *arg)
{
	(void)arg;
	pthread_mutex_unlock(&cm);		/* held again: the wait re-acquired it */
}

static void *v_main(void *arg)
{
	(void)arg;
	CHECK_EQ(m_lock(&cm), 0);
	pthread_cleanup_push(v_cleanup, NULL);
	for (int i = 0; i < volleys; i++) {
		while (ball != 1)
			CHECK_EQ(CALL("pthread_cond_wait", pthread_cond_wait(&cc, &cm)), 0);
		ball = 0;
		pthread_cond_signal(&cc);
	}
	for (;;)				/* the ball never comes back: cancelled in here */
		CALL("pthread_cond_wait", pthread_cond_wait(&cc, &cm));
	pthread_cleanup_pop(0);
	return NULL;
}

static void check_cond(void)
{
	pthread_t v;
	void *res = NULL;

	CHECK_EQ(pthread_create(&v, NULL, v_main, NULL), 0);
	CHECK_EQ(m_lock(&cm), 0);
	for (int i = 0; i < volleys; i++) {
		ball = 1;
		pthread_cond_signal(&cc);
		while (ball != 0) {
			struct timespec ts = lkt_deadline_in(CLOCK_REALTIME, 60 * 1000000000LL);
			CHECK_EQ(CALL("pthread_cond_timedwait", pthread_cond_timedwait(&cc, &cm, &ts)), 0);
		}
	}
	CHECK_EQ(m_unlock(&cm), 0);
	CHECK_EQ(pthread_cancel(v), 0);
	CHECK_EQ(pthread_join(v, &res), 0);
	CHECK(res == PTHREAD_CANCELED);
	CHECK_EQ(CALL("pthread_mutex_trylock", pthread_mutex_trylock(&cm)), 0);
	CHECK_EQ(m_unlock(&cm), 0);
}

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);

	lkt_watchdog(120);
	rounds = lkt_sanitized() ? 300 : lkp_spins() ? 1000 : 5000;
	volleys = lkt_sanitized() ? 300 : 2000;
	check_pending_cancel();
	check_cond();
	fprintf(stderr, "test_preload_nocancel [%s]: %ld cancellation point(s) reached inside mutex calls, "
		"%ld with cancellation enabled\n", lock, atomic_load(&reached), atomic_load(&violations));
	if (atomic_load(&violations))
		fprintf(stderr, "test_preload_nocancel [%s]: FAILED: first: %s inside %s with cancellation "
			"enabled\n", lock, atomic_load(&first_point), atomic_load(&first_call));
	CHECK_EQ(atomic_load(&violations), 0);
	return lkt_done("test_preload_nocancel");
}
