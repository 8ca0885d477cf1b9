/* SPDX-License-Identifier: MIT */
/*
 * preload/shim.c - liblocklab-preload.so: glibc's pthread_mutex_* and pthread_cond_* on locklab's
 * locks, for unmodified dynamically linked programs (LD_PRELOAD). docs/shim.md is the user's guide.
 *
 * WHAT IS REPLACED. pthread_mutex_{init,destroy,lock,trylock,timedlock,clocklock,unlock,consistent}
 * and pthread_cond_{init,destroy,wait,timedwait,clockwait,signal,broadcast}, under every symbol
 * version glibc exports them with (x86_64 and aarch64; the table at the end of this file, the nodes
 * in preload/<arch>.map). The condvar must be replaced with the mutex: glibc's cond wait releases
 * the mutex through an internal call that cannot be interposed.
 *
 * THE LOCK. LOCKLAB_LOCK (read once, before main) picks the mode:
 *   lk_mutex  (default) locklab's adaptive mutex, called through its public header, inline;
 *   glibc     everything is passed to glibc (dlvsym(RTLD_NEXT)): the A/B control;
 *   NAME      any registry lock (lab/registry.def) of opstype `lock` that has a trylock, keeps no
 *             per-thread queue nodes and is not itself a pthread mutex: futex3, spin_ttas,
 *             spin_ticket, qspinlock, and the peers when built. Its state lives in the mutex when
 *             it is 4 bytes or less and its zeroed state is its initialised state, else in an
 *             out-of-line block the mutex points to.
 * An unknown name prints one line naming LOCKLAB_LOCK and the valid names, and exits with status 2
 * from the library's constructor, before main.
 *
 * MUTEX LAYOUT (the 40-byte x86_64 pthread_mutex_t, 48 on aarch64; glibc's field names):
 *
 *	__lock    (0)   the lock's own state when inline (the lk_mutex word: L/P/S bits)
 *	__count   (4)   recursion depth of a recursive mutex
 *	__owner   (8)   tid of the holder: recursive and errorcheck types always, every type when
 *	                the lock is not lk_mutex or the profile is on; 0 = not held
 *	__nusers  (12)  registry locks: the fork generation the holder acquired it in (see FORK)
 *	__kind    (16)  glibc's kind word, kept in glibc's encoding: type in bits 0-1 (normal,
 *	                recursive, errorcheck, adaptive), robust 16, PI 32, PP 64, pshared 128; -1 after
 *	                destroy (as glibc)
 *	__spins   (20)  (the 4 bytes of __spins/__elision) threads inside pthread_cond_wait with this
 *	                mutex: destroy returns EBUSY while there are any, as glibc's does (its condvar
 *	                keeps the mutex's __nusers count across the wait)
 *	__list    (24)  __next (offset 32): the out-of-line state block, when the lock needs one
 *
 * PTHREAD_MUTEX_INITIALIZER is all zeros and the recursive/errorcheck/adaptive initializers only set
 * __kind, so a statically initialised mutex is a valid unlocked mutex of its type with no init call.
 *
 * WHO OWNS A MUTEX. Decided from __kind on every call, so static initialisers and init calls agree:
 *   kind == -1                    destroyed: EINVAL, as glibc returns for it
 *   kind & (robust|PI|PP|pshared) glibc's, untouched: pthread_mutex_init with such attributes calls
 *                                 glibc's init, which sets those bits, and every later call goes to
 *                                 glibc (a robust or process-shared lock must stay compatible with
 *                                 processes that do not run under the shim)
 *   otherwise                     ours: normal/adaptive, recursive or errorcheck on the chosen lock
 * In the glibc mode every call goes to glibc.
 *
 * FAST PATH. shim_slow is 0 exactly when the mode is lk_mutex, the profile is off and
 * initialisation is complete; a normal mutex has kind 0. So lock is
 *
 *	if ((m->__kind | shim_slow) == 0) { lk_mutex_trylock(); ...contended: lk_mutex_lock() }
 *
 * one load of each, one OR and one predictable branch, whatever the profile does: the profile's cost
 * when off is folded into the branch every call takes anyway. Everything else (other types, other
 * locks, the glibc mode, the profile) is out of line.
 *
 * ERRORS, as glibc gives them for each type (nptl/pthread_mutex_{lock,trylock,timedlock,unlock}.c):
 *   lock      errorcheck held by the caller: EDEADLK; recursive: count+1, EAGAIN when it would wrap
 *   trylock   held (also by the caller for errorcheck): EBUSY; recursive held by the caller: count+1
 *   timedlock clock other than REALTIME/MONOTONIC: EINVAL (clocklock, always); abstime is checked
 *             only when the mutex is not free at once: tv_sec < 0 -> ETIMEDOUT, tv_nsec outside
 *             [0, 1e9) -> EINVAL
 *   unlock    normal/adaptive: 0 whatever the state (the unlock is counted as misuse when the profile
 *             can see it); recursive/errorcheck not held by the caller: EPERM
 *   destroy   held (or waited on): EBUSY; destroying a destroyed mutex: 0
 *   never EINTR. errno is preserved across every call.
 *
 * CONDVAR (48 bytes). One design for every lock and every mutex, lk_mutex included: a futex
 * sequence counter, unlocked and relocked through the mutex's own entry points above, so it works
 * with any mutex a program passes, ours or glibc's (robust, PI, PP, pshared):
 *
 *	word 0 (offset 0)  seq      futex word: waiters sleep while it is unchanged; signal/broadcast
 *	                            increment it and wake one/all
 *	word 1 (offset 4)  waiters  threads inside wait (bit 31: a destroy is waiting for them to leave)
 *	__wrefs (36)       glibc's encoding: bit 0 process-shared (glibc's condvar), bit 1 the clock
 *	                   (MONOTONIC) from pthread_condattr_setclock
 *
 *	wait:    seq0 = seq; waiters++ (mutex held); unlock mutex; futex_wait(seq, seq0); waiters--; lock
 *	signal:  if waiters: seq++, futex_wake(seq, 1)      broadcast: futex_wake(seq, all)
 *
 * No lost wakeup: a waiter reads seq and registers while it holds the mutex, so a signaller that
 * changed the predicate under the mutex afterwards either increments seq before the waiter's
 * futex_wait (which then returns at once, the kernel compares the word under its bucket lock) or
 * finds the waiter queued in the kernel. Spurious wakeups are possible (POSIX allows them). Why not
 * lk_cond (requeue onto the mutex): lk_cond parks in the parking lot, and a thread cancelled there
 * would leave its queue node behind; pthread_cond_wait must be a cancellation point.
 *
 * CANCELLATION. The futex wait runs with the cancel type asynchronous (glibc's own pre-2.25 condvar
 * did the same), inside pthread_cleanup_push(cond_wait_cancelled): a cancelled waiter leaves the
 * waiter count, passes on a wakeup it may have consumed (one more futex_wake), and re-acquires the
 * mutex before the application's cleanup handlers run, as POSIX requires.
 *
 * Nowhere else. pthread_mutex_* are not cancellation points, and a lock's slow path unwound halfway
 * keeps its internal state half-updated: absl::Mutex cancelled in the nanosleep() of its Enqueue
 * (the one-time TSC calibration, reached with its spin bit kMuSpin held) leaves kMuSpin set, and every
 * later Unlock spins forever. So a registry lock flagged LAB_LOCK_CANCEL_POINTS (its lock, unlock or
 * destroy may call a cancellation point: absl_mutex) runs those verbs with cancellation disabled,
 * restoring the caller's state after (cancel_off/cancel_restore); its lock tries trylock first, which
 * never reaches one, so an uncontended lock pays nothing. A cancellation that arrives meanwhile stays
 * pending for the program's next cancellation point; inside pthread_cond_wait that is the wait itself
 * or, once the wait is over, whatever the program calls next. The other locks reach no cancellation
 * point from their verbs (lk_mutex, futex3, the Rust peers: futex through syscall(); spin_*,
 * qspinlock, tbb_spin_mutex: sched_yield(); ck: nothing; docs/shim.md has the audit), and
 * tests/test_preload_nocancel.c checks all of that at run time: it probes the cancellation points
 * lock code could reach (nanosleep, poll, read, open, ...), and none may be reached inside a mutex
 * call with cancellation enabled.
 *
 * A glibc condvar (process-shared) waited on with one of our mutexes: glibc's wait could not release
 * our mutex, so the shim waits on the condvar with a glibc "shadow" mutex G (hashed by condvar
 * address) and holds G from before it releases our mutex until glibc's wait releases G; signal and
 * broadcast of a glibc condvar take G around glibc's signal. Lock order is always ours -> G (the
 * waiter drops G before re-acquiring ours), so this cannot deadlock, and a signal after the waiter
 * released our mutex cannot run before the waiter is queued on the condvar.
 *
 * FORK. A pthread_atfork child handler forgets the cached tid, starts a fresh profile and bumps
 * the fork generation; a child takes over an out-of-line block allocator lock that a parent thread
 * held at the fork (slab_lock). Mutexes keep whatever state they had, as with glibc: one held by another
 * thread stays held. One case needs more: the forking thread holds a mutex that other threads are
 * queued on (the pthread_atfork "lock in prepare, unlock in the child" pattern). glibc's lock word
 * only says "contended", and its unlock in the child just finds nobody to wake; but a queued lock
 * keeps its waiters in the lock (a ticket lock's next ticket, qspinlock's MCS tail, absl's waiter
 * list), and in the child those waiters do not exist: the unlock would hand the lock to a ghost.
 * So a registry lock records in __nusers the fork generation it was acquired in, and the child's
 * release of a mutex acquired before the fork gives it fresh, unlocked lock state (new out-of-line
 * block; the old one is abandoned) instead of unlocking the inherited one. Child threads that queued
 * on such a mutex before that release would lose their place; in the atfork pattern the release
 * comes first. lk_mutex keeps its waiters in the parking lot, not in the word, and releases normally.
 *
 * The old condvar ABI (x86_64 pthread_cond_*@GLIBC_2.2.5, binaries linked before glibc 2.3.2): the
 * object may be only pointer-sized, so, as glibc's compat code does, its first word points to a full
 * condvar allocated on first use (from the shim's own block allocator, never malloc) and freed by
 * destroy; in the glibc mode the calls go to glibc's compat functions.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "futex.h"
#include "lab.h"
#include "locklab/mutex.h"
#include "locklab/relax.h"
#include "shim.h"

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define SITE() __builtin_return_address(0)

_Static_assert(sizeof(pthread_mutex_t) >= 40, "pthread_mutex_t smaller than glibc's on 64-bit");
_Static_assert(sizeof(pthread_cond_t) >= 48, "pthread_cond_t smaller than glibc's");
_Static_assert(offsetof(struct __pthread_cond_s, __wrefs) >= 8, "condvar words overlap __wrefs");
_Static_assert(sizeof(lk_mutex_t) <= sizeof(int), "lk_mutex does not fit __lock");
_Static_assert(offsetof(struct __pthread_mutex_s, __spins) % sizeof(int) == 0 &&
	       offsetof(struct __pthread_mutex_s, __spins) + sizeof(int) <= offsetof(struct __pthread_mutex_s, __list),
	       "__spins/__elision cannot hold the condvar-waiter count");

/* glibc's kind encoding (nptl/pthreadP.h), which the mutex keeps. */
#define KIND_TYPE_MASK		3	/* PTHREAD_MUTEX_KIND_MASK_NP */
#define KIND_GLIBC_ONLY		(16 | 32 | 64 | 128)	/* robust | PI | PP | pshared */
#define KIND_DESTROYED		(-1)

/* __wrefs bits of a condvar, glibc's encoding (nptl/pthread_cond_common.c). */
#define WREFS_PSHARED		1u
#define WREFS_MONOTONIC		2u

#define COND_WAITERS_MASK	0x7fffffffu
#define COND_DESTROYING		0x80000000u

/* ---- glibc's functions ----------------------------------------------------------------------------- */

typedef struct { pthread_cond_t *cond; } cond_2_0_t;	/* glibc's pthread_cond_2_0_t */

static struct {
	int (*mutex_init)(pthread_mutex_t *, const pthread_mutexattr_t *);
	int (*mutex_destroy)(pthread_mutex_t *);
	int (*mutex_lock)(pthread_mutex_t *);
	int (*mutex_trylock)(pthread_mutex_t *);
	int (*mutex_timedlock)(pthread_mutex_t *, const struct timespec *);
	int (*mutex_clocklock)(pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*mutex_unlock)(pthread_mutex_t *);
	int (*mutex_consistent)(pthread_mutex_t *);
	int (*cond_init)(pthread_cond_t *, const pthread_condattr_t *);
	int (*cond_destroy)(pthread_cond_t *);
	int (*cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*cond_timedwait)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
	int (*cond_clockwait)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
	int (*cond_signal)(pthread_cond_t *);
	int (*cond_broadcast)(pthread_cond_t *);
#if defined(__x86_64__)
	int (*old_cond_init)(cond_2_0_t *, const pthread_condattr_t *);
	int (*old_cond_destroy)(cond_2_0_t *);
	int (*old_cond_wait)(cond_2_0_t *, pthread_mutex_t *);
	int (*old_cond_timedwait)(cond_2_0_t *, pthread_mutex_t *, const struct timespec *);
	int (*old_cond_signal)(cond_2_0_t *);
	int (*old_cond_broadcast)(cond_2_0_t *);
#endif
} real;

/*
 * The next definition of each default-version symbol after the shim, as any interposer chains: plain
 * dlsym(RTLD_NEXT) finds glibc's default version, or a sanitizer's interceptor loaded after us
 * (ThreadSanitizer's, so that it sees glibc's mutexes that we pass through). The old condvar ABI is
 * looked up by version (dlvsym). The version names below are for error messages and for the old ABI.
 */
#if defined(__x86_64__)
#define V_BASE "GLIBC_2.2.5"
#define V_COND "GLIBC_2.3.2"
#elif defined(__aarch64__)
#define V_BASE "GLIBC_2.17"
#define V_COND "GLIBC_2.17"
#else
#error "liblocklab-preload: symbol versions are defined for x86_64 and aarch64 only"
#endif
#define V_234 "GLIBC_2.34"

static void *resolve(const char *name, const char *version)
{
	void *p = dlsym(RTLD_NEXT, name);

	if (!p) {
		shim_say("cannot find glibc's %s@%s (%s)", name, version, dlerror());
		abort();
	}
	return p;
}

#if defined(__x86_64__)
static void *resolve_old(const char *name)
{
	void *p = dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");

	if (!p) {
		shim_say("cannot find glibc's %s@GLIBC_2.2.5 (%s)", name, dlerror());
		abort();
	}
	return p;
}
#endif

static void resolve_real(void)
{
	real.mutex_init = resolve("pthread_mutex_init", V_BASE);
	real.mutex_destroy = resolve("pthread_mutex_destroy", V_BASE);
	real.mutex_lock = resolve("pthread_mutex_lock", V_BASE);
	real.mutex_trylock = resolve("pthread_mutex_trylock", V_234);
	real.mutex_timedlock = resolve("pthread_mutex_timedlock", V_234);
	real.mutex_clocklock = resolve("pthread_mutex_clocklock", V_234);
	real.mutex_unlock = resolve("pthread_mutex_unlock", V_BASE);
	real.mutex_consistent = resolve("pthread_mutex_consistent", V_234);
	real.cond_init = resolve("pthread_cond_init", V_COND);
	real.cond_destroy = resolve("pthread_cond_destroy", V_COND);
	real.cond_wait = resolve("pthread_cond_wait", V_COND);
	real.cond_timedwait = resolve("pthread_cond_timedwait", V_COND);
	real.cond_clockwait = resolve("pthread_cond_clockwait", V_234);
	real.cond_signal = resolve("pthread_cond_signal", V_COND);
	real.cond_broadcast = resolve("pthread_cond_broadcast", V_COND);
#if defined(__x86_64__)
	real.old_cond_init = resolve_old("pthread_cond_init");
	real.old_cond_destroy = resolve_old("pthread_cond_destroy");
	real.old_cond_wait = resolve_old("pthread_cond_wait");
	real.old_cond_timedwait = resolve_old("pthread_cond_timedwait");
	real.old_cond_signal = resolve_old("pthread_cond_signal");
	real.old_cond_broadcast = resolve_old("pthread_cond_broadcast");
#endif
}

/* ---- mode and initialisation ----------------------------------------------------------------------- */

enum { MODE_LK = 1, MODE_OPS, MODE_GLIBC };

/* shim_slow: 0 = lk_mutex fast path allowed; SLOW_GLIBC = glibc mode without profile (entry points
 * tail-call glibc); SLOW_OTHER = everything else, including "not initialised yet". */
enum { SLOW_FAST = 0, SLOW_OTHER = 1, SLOW_GLIBC = 2 };
static _Atomic int shim_slow = SLOW_OTHER;

/* Written by shim_init() before init_state becomes INIT_DONE (release); read after an acquire load
 * of init_state (ensure_init) or once shim_slow says the mode is known. */
static int mode;
static const char *lock_name = "lk_mutex";
static const struct lab_lock_ops *ops;	/* MODE_OPS */
static bool ops_inline;			/* MODE_OPS: state in __lock */
static bool ops_cancel;			/* MODE_OPS: LAB_LOCK_CANCEL_POINTS (see CANCELLATION) */
SHIM_HIDDEN bool shim_stat_on;

enum { INIT_NONE = 0, INIT_RUNNING, INIT_DONE };
static _Atomic int init_state;
static __thread int in_init __attribute__((tls_model("initial-exec")));

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);

/* The out-of-line block allocator (below); choose_lock() sizes ool_slab for the chosen lock. */
struct slab {
	size_t size;
	_Atomic uint32_t lock;	/* 0 free, else the holder's process id (slab_lock) */
	void *free;		/* first word of a free block = next free block */
	char *cur, *end;	/* bump region of the current chunk */
};
static struct slab ool_slab;
static struct slab cond_slab = { .size = 64 };
static size_t state_bytes(void);

void shim_say(const char *fmt, ...)
{
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "locklab-preload: ");
	va_list ap;

	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	for (char *p = buf; n > 0;) {
		ssize_t w = write(2, p, (size_t)n);
		if (w <= 0)
			break;
		p += w;
		n -= (int)w;
	}
}

const char *shim_lock_name(void)
{
	return lock_name;
}

/* Why registry entry `a` cannot stand behind a pthread_mutex_t, or NULL when it can. */
static const char *unsupported(const struct lab_alg *a)
{
	const struct lab_lock_ops *o = a->ops;

	if (a->missing)
		return a->missing;
	if (o->flags & LAB_LOCK_PTHREAD)
		return "it is a glibc pthread mutex itself (LOCKLAB_LOCK=glibc passes everything to glibc)";
	if (o->flags & LAB_LOCK_THREAD_NODES)
		return "it queues on per-thread nodes: a thread could hold only a few at once and must "
		       "unlock from the thread that locked, which pthread programs do not promise";
	if (!o->trylock)
		return "it has no trylock (pthread_mutex_trylock needs one)";
	return NULL;
}

static bool is_lock_entry(const struct lab_alg *a)
{
	return strcmp(a->opstype, "lock") == 0 &&
	       (strcmp(a->family, "mutex") == 0 || strcmp(a->family, "spinlock") == 0);
}

/* "lk_mutex, glibc, futex3, ..." into buf: the names LOCKLAB_LOCK accepts in this build. */
static void valid_names(char *buf, size_t len)
{
	size_t n = (size_t)snprintf(buf, len, "lk_mutex, glibc");

	for (size_t i = 0; i < lab_registry_len && n < len; i++) {
		const struct lab_alg *a = &lab_registry[i];

		if (is_lock_entry(a) && strcmp(a->name, "lk_mutex") != 0 && !unsupported(a))
			n += (size_t)snprintf(buf + n, len - n, ", %s", a->name);
	}
}

#if LAB_HAVE_ABSL
void shim_absl_release_mode(void);
void shim_absl_prefork(void);
static bool absl_on;	/* LOCKLAB_LOCK=absl_mutex: atfork_prepare() calls shim_absl_prefork() */
#endif

static bool state_fits_inline(const struct lab_lock_ops *o)
{
	unsigned char probe[LAB_CACHELINE] __attribute__((aligned(LAB_CACHELINE))) = { 0 };

	if (o->size > sizeof(int))
		return false;
	/* a zeroed pthread_mutex_t must be an initialised lock: check that init leaves zeros */
	if (o->init && o->init(probe) != 0)
		return false;
	for (size_t i = 0; i < o->size; i++)
		if (probe[i])
			return false;
	if (o->destroy)
		o->destroy(probe);
	return true;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			putchar('\\');
		if ((unsigned char)*s >= 0x20)
			putchar(*s);
	}
	putchar('"');
}

/* LOCKLAB_SHIM_LIST=1: the locks this build supports, as JSON on stdout (for `locklab list`). */
static void print_list(void)
{
	printf("{\"schema\": \"locklab-shim-locks/1\", \"default\": \"lk_mutex\", \"locks\": [\n");
	printf(" {\"name\": \"lk_mutex\", \"family\": \"mutex\", \"supported\": true, \"state\": \"inline\", "
	       "\"spins\": false, \"desc\": \"locklab adaptive mutex (lk_mutex_*, inline fast path)\"},\n");
	printf(" {\"name\": \"glibc\", \"family\": \"mutex\", \"supported\": true, \"state\": \"glibc\", "
	       "\"spins\": false, \"desc\": \"everything passed to glibc untouched (the A/B control)\"}");
	for (size_t i = 0; i < lab_registry_len; i++) {
		const struct lab_alg *a = &lab_registry[i];
		const char *why;

		if (!is_lock_entry(a) || strcmp(a->name, "lk_mutex") == 0)
			continue;
		why = unsupported(a);
		printf(",\n {\"name\": \"%s\", \"family\": \"%s\", \"supported\": %s", a->name, a->family,
		       why ? "false" : "true");
		if (why) {
			printf(", \"why\": ");
			json_str(why);
		} else {
			const struct lab_lock_ops *o = a->ops;
			printf(", \"state\": \"%s\", \"spins\": %s", state_fits_inline(o) ? "inline" : "out-of-line",
			       (o->flags & LAB_LOCK_SPINS) ? "true" : "false");
		}
		printf(", \"desc\": ");
		json_str(a->desc);
		printf("}");
	}
	printf("\n]}\n");
	fflush(stdout);
}

static int choose_lock(void)
{
	const char *name = getenv("LOCKLAB_LOCK");
	char names[2048];

	if (!name || !*name || strcmp(name, "lk_mutex") == 0) {
		mode = MODE_LK;
		lock_name = "lk_mutex";
		/* the lab adapter's init applies LOCKLAB_MUTEX_SPIN_MIN_NS etc. to the process policy */
		const struct lab_alg *a = lab_find("mutex", "lk_mutex");
		const struct lab_lock_ops *o = a ? a->ops : NULL;
		lk_mutex_t probe = LK_MUTEX_INITIALIZER;
		if (o && o->init(&probe) != 0) {
			shim_say("LOCKLAB_MUTEX_*: rejected (see the line above)");
			return 2;
		}
		return 0;
	}
	if (strcmp(name, "glibc") == 0) {
		mode = MODE_GLIBC;
		lock_name = "glibc";
		return 0;
	}
	valid_names(names, sizeof(names));
	const struct lab_alg *a = lab_find(NULL, name);
	if (!a || !is_lock_entry(a)) {
		shim_say("LOCKLAB_LOCK: expected one of %s, got '%s'", names, name);
		return 2;
	}
	const char *why = unsupported(a);
	if (why) {
		shim_say("LOCKLAB_LOCK: '%s' cannot be used here: %s (expected one of %s)", name, why, names);
		return 2;
	}
	mode = MODE_OPS;
	lock_name = a->name;
	ops = a->ops;
#if LAB_HAVE_ABSL
	if (strcmp(lock_name, "absl_mutex") == 0) {
		shim_absl_release_mode();	/* see preload/absl_mode.cc */
		absl_on = true;
	}
#endif
	ops_inline = state_fits_inline(ops);
	ops_cancel = (ops->flags & LAB_LOCK_CANCEL_POINTS) != 0;
	ool_slab.size = state_bytes() + LAB_CACHELINE;
	return 0;
}

static void shim_init(void)
{
	int s = INIT_NONE;

	/* acquire on failure: pairs with the release store of INIT_DONE below */
	if (!atomic_compare_exchange_strong_explicit(&init_state, &s, INIT_RUNNING, memory_order_acq_rel,
						     memory_order_acquire)) {
		if (s == INIT_DONE)
			return;
		if (in_init) {
			shim_say("internal error: initialisation re-entered itself");
			abort();
		}
		/* acquire: pairs with the release store of INIT_DONE */
		while (atomic_load_explicit(&init_state, memory_order_acquire) != INIT_DONE)
			sched_yield();
		return;
	}
	in_init = 1;
	resolve_real();
	const char *list = getenv("LOCKLAB_SHIM_LIST");
	if (list && strcmp(list, "1") == 0) {
		print_list();
		_exit(0);
	}
	int rc = choose_lock();
	if (!rc)
		rc = shim_stat_init(lock_name);
	if (rc)
		_exit(rc);
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	/* release: publishes mode, ops, lock_name, shim_stat_on and `real` to ensure_init() */
	atomic_store_explicit(&init_state, INIT_DONE, memory_order_release);
	/* release: the fast/glibc paths rely on `real` and the mode without going through init_state */
	if (mode == MODE_LK && !shim_stat_on)
		atomic_store_explicit(&shim_slow, SLOW_FAST, memory_order_release);
	else if (mode == MODE_GLIBC && !shim_stat_on)
		atomic_store_explicit(&shim_slow, SLOW_GLIBC, memory_order_release);
	in_init = 0;
}

static inline void ensure_init(void)
{
	/* acquire: pairs with the release store of INIT_DONE in shim_init() */
	if (unlikely(atomic_load_explicit(&init_state, memory_order_acquire) != INIT_DONE))
		shim_init();
}

/* The program may call us from constructors that run before ours: every entry point also
 * initialises on demand (ensure_init), and this constructor makes sure a bad LOCKLAB_LOCK stops the
 * program before main even when it never locks anything. */
__attribute__((constructor)) static void shim_ctor(void)
{
	shim_init();
}

/* ---- thread id ------------------------------------------------------------------------------------- */

static __thread pid_t tid_cache __attribute__((tls_model("initial-exec")));
/* Bumped by every fork in the child (atfork_child); see FORK in the header comment. */
static _Atomic unsigned fork_gen;

static inline pid_t self_tid(void)
{
	pid_t t = tid_cache;

	if (unlikely(!t))
		t = tid_cache = (pid_t)syscall(SYS_gettid);
	return t;
}

/* __owner and __count: __owner is written by the holder and read by any thread that asks "do I hold
 * it?", which a concurrent write can never turn into a false yes; relaxed atomics say so. */
static inline pid_t owner_of(pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
}

static inline void set_owner(pthread_mutex_t *m, pid_t tid)
{
	__atomic_store_n(&m->__data.__owner, tid, __ATOMIC_RELAXED);
}

/* Threads waiting on a condvar with this mutex (see the layout): changed with the mutex held. */
static inline int *cond_users(pthread_mutex_t *m)
{
	return (int *)(void *)&m->__data.__spins;
}

static inline void cond_user(pthread_mutex_t *m, int d)
{
	/* relaxed: a count that destroy reads; the program orders destroy after the waits it knows of */
	__atomic_fetch_add(cond_users(m), d, __ATOMIC_RELAXED);
}

static inline int kind_of(pthread_mutex_t *m)
{
	/* relaxed: written by init/destroy only, which the program must order before any use */
	return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
}

/* ---- no cancellation inside a lock (CANCELLATION in the header comment) ---------------------------- */

/* Disables cancellation; returns the caller's state for cancel_restore(). Not a cancellation point. */
static inline int cancel_off(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	return old;
}

/* Back to the caller's state. Re-enabling is not a cancellation point either (deferred type; a
 * program that locks with the asynchronous type breaks POSIX: mutexes are not async-cancel-safe). */
static inline void cancel_restore(int old)
{
	if (old == PTHREAD_CANCEL_ENABLE)
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
}

/* ops->destroy, for a LAB_LOCK_CANCEL_POINTS lock with cancellation disabled. */
static void ops_destroy(void *st)
{
	if (!ops->destroy)
		return;
	if (!ops_cancel) {
		ops->destroy(st);
		return;
	}
	int old = cancel_off();
	ops->destroy(st);
	cancel_restore(old);
}

/* ---- out-of-line blocks (lock state that does not fit, old-ABI condvars) --------------------------- */

/*
 * A tiny allocator of fixed-size, 64-byte aligned, zeroed blocks: mmap'ed chunks, a LIFO free list
 * and a spinlock. Never malloc: an allocator such as jemalloc locks pthread mutexes itself, and we
 * may be inside one of its calls.
 *
 * Fork. The lock word holds its holder's process id (0 when free; getpid() is a system call, and
 * slab calls are rare: a mutex's first use, and its destroy). It is not taken around fork(). It used
 * to be (atfork prepare, released in parent and child), and that deadlocked fork(): a library whose
 * constructor ran before the shim's registers "lock its registry in prepare" before ours, so its
 * handler runs after ours; another thread that held that registry lock and waited for a slab (a
 * mutex's first use or destroy under it: common) then waited for the forking thread, which waited
 * for the registry (the re-review of stop 36: 24 of 24 runs hung under the six out-of-line locks;
 * before stop 36 the forking thread also waited for itself there). Now a fork child that finds a slab
 * lock marked with another process's id - its parent's thread held it at the fork - takes it over and
 * abandons the slab's free list and current chunk, which that thread may have been changing. Blocks
 * in use stay mapped: the child leaks at most a chunk and the free blocks, per slab and fork. The id
 * of a process we descend from is never ours (it was alive when we were created).
 */
static void slab_lock(struct slab *s)
{
	uint32_t me = (uint32_t)getpid();
	unsigned spins = 0;

	for (;;) {
		uint32_t v = 0;

		/* acquire: pairs with the release store in slab_unlock() */
		if (atomic_compare_exchange_weak_explicit(&s->lock, &v, me, memory_order_acquire,
							  memory_order_relaxed))
			return;
		if (v != 0 && v != me) {
			/*
			 * held at our fork by a thread of an ancestor process, which will never release it here.
			 * acquire: as above (what we read of the slab was written before the fork)
			 */
			if (atomic_compare_exchange_strong_explicit(&s->lock, &v, me, memory_order_acquire,
								    memory_order_relaxed)) {
				s->free = NULL;
				s->cur = s->end = NULL;
				return;
			}
			continue;
		}
		/* relaxed: only waiting for it to look free; the CAS above acquires */
		while (atomic_load_explicit(&s->lock, memory_order_relaxed) == me)
			if (++spins & 63)
				lk_cpu_relax();
			else
				sched_yield();
	}
}

static void slab_unlock(struct slab *s)
{
	/* release: publishes the free list and bump pointer to the next slab_lock() */
	atomic_store_explicit(&s->lock, 0, memory_order_release);
}

static void *slab_alloc(struct slab *s)
{
	void *p;

	slab_lock(s);
	if (s->free) {
		p = s->free;
		s->free = *(void **)p;
	} else {
		if (!s->cur || s->cur + s->size > s->end) {
			size_t chunk = s->size * 256 < (1u << 20) ? (1u << 20) : s->size * 256;
			void *c = mmap(NULL, chunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (c == MAP_FAILED) {
				slab_unlock(s);
				shim_say("out of memory for lock state (mmap of %zu bytes failed)", chunk);
				abort();
			}
			s->cur = c;
			s->end = s->cur + chunk;
		}
		p = s->cur;
		s->cur += s->size;
	}
	slab_unlock(s);
	memset(p, 0, s->size);
	return p;
}

static void slab_free(struct slab *s, void *p)
{
	slab_lock(s);
	*(void **)p = s->free;
	s->free = p;
	slab_unlock(s);
}

/*
 * An out-of-line lock: [state, ops->size rounded to 64][owner: the mutex it belongs to]. The owner
 * back-pointer makes a byte copy of an initialised mutex (struct assignment) get a block of its own
 * on first use instead of sharing, and later double-freeing, the original's.
 */
struct ool_tail {
	pthread_mutex_t *owner;
};

static size_t state_bytes(void)
{
	return (ops->size + LAB_CACHELINE - 1) / LAB_CACHELINE * LAB_CACHELINE;
}

static inline void **ool_slot(pthread_mutex_t *m)
{
	return (void **)&m->__data.__list.__next;
}

static inline struct ool_tail *ool_tail(void *block)
{
	return (struct ool_tail *)((char *)block + state_bytes());
}

static __attribute__((noinline)) void *ool_attach(pthread_mutex_t *m, void *seen)
{
	for (;;) {
		void *b = slab_alloc(&ool_slab);

		ool_tail(b)->owner = m;
		if (ops->init && ops->init(b) != 0) {
			shim_say("%s: init of an out-of-line lock failed", lock_name);
			abort();
		}
		/* release: publishes the initialised block to ool_state()'s acquire load; acquire on
		 * failure: we then use the winner's block */
		if (__atomic_compare_exchange_n(ool_slot(m), &seen, b, false, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE))
			return b;
		ops_destroy(b);
		slab_free(&ool_slab, b);
		if (seen && ool_tail(seen)->owner == m)
			return seen;
	}
}

static inline void *ool_state(pthread_mutex_t *m)
{
	/* acquire: pairs with the release CAS in ool_attach() that published the block */
	void *b = __atomic_load_n(ool_slot(m), __ATOMIC_ACQUIRE);

	if (likely(b && ool_tail(b)->owner == m))
		return b;
	return ool_attach(m, b);
}

static void ool_detach(pthread_mutex_t *m)
{
	/* acquire: as ool_state() */
	void *b = __atomic_load_n(ool_slot(m), __ATOMIC_ACQUIRE);

	if (!b || ool_tail(b)->owner != m)
		return;
	ops_destroy(b);
	__atomic_store_n(ool_slot(m), NULL, __ATOMIC_RELAXED);
	slab_free(&ool_slab, b);
}

/* ---- the chosen lock's verbs on a mutex we own (MODE_LK or MODE_OPS) ------------------------------- */

static inline lk_mutex_t *lkm(pthread_mutex_t *m)
{
	return (lk_mutex_t *)(void *)&m->__data.__lock;
}

static inline void *ops_state(pthread_mutex_t *m)
{
	return ops_inline ? (void *)&m->__data.__lock : ool_state(m);
}

/* lk_mutex_lock() for the fast path's contended case, out of line: the parking lot's system calls
 * may set errno, and pthread_mutex_lock must leave it alone. */
static __attribute__((noinline)) void lk_lock_contended(lk_mutex_t *l)
{
	int saved = errno;

	lk_mutex_lock(l);
	errno = saved;
}

static inline int prim_trylock(pthread_mutex_t *m)
{
	if (mode == MODE_LK)
		return lk_mutex_trylock(lkm(m));
	return ops->trylock(ops_state(m)) ? EBUSY : 0;
}

/*
 * Set while this thread is inside a LAB_LOCK_CANCEL_POINTS lock's blocking lock (absl_mutex: where absl
 * may be measuring the CPU frequency under its call-once). atfork_prepare() reads it: a fork from a
 * signal handler that interrupted that lock must not wait for a measurement this very thread runs
 * (tests/test_preload_sigfork.c). volatile sig_atomic_t: written here, read by a signal handler of the
 * same thread.
 */
static __thread volatile sig_atomic_t in_blocking_lock __attribute__((tls_model("initial-exec")));

/* A LAB_LOCK_CANCEL_POINTS lock's lock: trylock first (never a cancellation point), then the lock with
 * cancellation disabled. */
static __attribute__((noinline)) void ops_lock_nocancel(void *st)
{
	if (ops->trylock(st) == 0)
		return;
	int old = cancel_off();
	in_blocking_lock = 1;
	ops->lock(st);
	in_blocking_lock = 0;
	cancel_restore(old);
}

static inline void prim_lock(pthread_mutex_t *m)
{
	if (mode == MODE_LK)
		lk_mutex_lock(lkm(m));
	else if (unlikely(ops_cancel))
		ops_lock_nocancel(ops_state(m));
	else
		ops->lock(ops_state(m));
}

static bool deadline_passed(clockid_t clock, const struct timespec *abs)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return now.tv_sec > abs->tv_sec || (now.tv_sec == abs->tv_sec && now.tv_nsec >= abs->tv_nsec);
}

/*
 * A registry lock has no timed lock: poll trylock, sleeping between attempts from 1 us doubling to
 * 1 ms (never past the deadline). The sleep is the raw system call: pthread_mutex_timedlock is not a
 * cancellation point, and clock_nanosleep() would be one.
 */
static int ops_timedlock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	void *st = ops_state(m);
	long ns = 1000;

	for (int i = 0; i < 64; i++) {
		if (ops->trylock(st) == 0)
			return 0;
		lk_cpu_relax();
	}
	for (;;) {
		if (ops->trylock(st) == 0)
			return 0;
		if (deadline_passed(clock, abs))
			return ETIMEDOUT;
		struct timespec now, until;
		clock_gettime(clock, &now);
		until.tv_sec = now.tv_sec;
		until.tv_nsec = now.tv_nsec + ns;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (until.tv_sec > abs->tv_sec || (until.tv_sec == abs->tv_sec && until.tv_nsec > abs->tv_nsec))
			until = *abs;
		syscall(SYS_clock_nanosleep, clock, TIMER_ABSTIME, &until, NULL);
		if (ns < 1000000)
			ns *= 2;
	}
}

static inline int prim_timedlock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	if (mode == MODE_LK)
		return lk_mutex_timedlock(lkm(m), clock, abs);
	return ops_timedlock(m, clock, abs);
}

/* 0, or EPERM when the lock says it was not held (lk_mutex detects it; registry locks are only
 * unlocked when __owner says they are held, so they never see a double unlock). */
static inline int prim_unlock(pthread_mutex_t *m)
{
	if (mode == MODE_LK)
		return lk_mutex_unlock(lkm(m));
	if (unlikely(ops_cancel)) {
		int old = cancel_off();
		ops->unlock(ops_state(m));
		cancel_restore(old);
		return 0;
	}
	ops->unlock(ops_state(m));
	return 0;
}

/* Held or waited on (for destroy). */
static bool prim_busy(pthread_mutex_t *m)
{
	if (mode == MODE_LK)
		return lk_mutex_destroy(lkm(m)) == EBUSY;
	if (owner_of(m) != 0)
		return true;
	if (prim_trylock(m) != 0)
		return true;
	prim_unlock(m);
	return false;
}

/* ---- mutexes --------------------------------------------------------------------------------------- */

enum { OP_LOCK, OP_TRYLOCK, OP_TIMED, OP_CLOCK };

static inline bool glibc_owns(int kind)
{
	return mode == MODE_GLIBC || (kind & KIND_GLIBC_ONLY);
}

static struct shim_stat *stat_mutex(pthread_mutex_t *m, int kind, void *site)
{
	return shim_stat_get(m, SHIM_OBJ_MUTEX, kind, site, SHIM_SITE_FIRST_USE);
}

/* A glibc mutex (passthrough kind, or the glibc mode), with the profile on or off. */
static int glibc_acquire(pthread_mutex_t *m, int kind, int op, clockid_t clock, const struct timespec *abs,
			 void *site)
{
	if (!shim_stat_on) {
		switch (op) {
		case OP_LOCK:
			return real.mutex_lock(m);
		case OP_TRYLOCK:
			return real.mutex_trylock(m);
		case OP_TIMED:
			return real.mutex_timedlock(m, abs);
		default:
			return real.mutex_clocklock(m, clock, abs);
		}
	}
	struct shim_stat *e = stat_mutex(m, kind, site);
	int r;

	/* glibc keeps __owner for the kinds it implements: a recursive relock is not an acquisition */
	if ((kind & KIND_TYPE_MASK) == PTHREAD_MUTEX_RECURSIVE && owner_of(m) == self_tid()) {
		r = op == OP_LOCK ? real.mutex_lock(m) : op == OP_TRYLOCK ? real.mutex_trylock(m)
			: op == OP_TIMED ? real.mutex_timedlock(m, abs) : real.mutex_clocklock(m, clock, abs);
		if (!r)
			shim_stat_recursive(e);
		return r;
	}
	r = real.mutex_trylock(m);
	if (r != EBUSY) {
		/* acquired (EOWNERDEAD: acquired, state inconsistent), or an error lock would give too */
		if (r == 0 || r == EOWNERDEAD)
			shim_stat_acquired(e, false, 0);
		return r;
	}
	if (op == OP_TRYLOCK) {
		shim_stat_trylock_busy(e);
		return EBUSY;
	}
	uint64_t t0 = shim_now_ns();
	r = op == OP_LOCK ? real.mutex_lock(m) : op == OP_TIMED ? real.mutex_timedlock(m, abs)
								: real.mutex_clocklock(m, clock, abs);
	uint64_t dt = shim_now_ns() - t0;
	if (r == 0 || r == EOWNERDEAD)
		shim_stat_acquired(e, true, dt);
	else if (r == ETIMEDOUT)
		shim_stat_timedout(e, dt);
	else if (r == EDEADLK)
		shim_stat_misuse(e, SHIM_MISUSE_relock);
	return r;
}

static int glibc_release(pthread_mutex_t *m, int kind)
{
	if (!shim_stat_on)
		return real.mutex_unlock(m);
	struct shim_stat *e = stat_mutex(m, kind, NULL);
	/* glibc records the holder's tid in __owner for every kind it implements */
	pid_t o = owner_of(m);
	if (o != self_tid()) {
		shim_stat_misuse(e, o ? SHIM_MISUSE_unlock_not_owner : SHIM_MISUSE_unlock_unlocked);
		return real.mutex_unlock(m);
	}
	/* a nested release of a recursive mutex ends no hold; else record it before the unlock: the
	 * next holder starts its own hold time (__count: written by the holder, that is us) */
	if ((kind & KIND_TYPE_MASK) != PTHREAD_MUTEX_RECURSIVE || m->__data.__count <= 1)
		shim_stat_released(e);
	return real.mutex_unlock(m);
}

/* A mutex of ours: normal/adaptive, recursive or errorcheck on the chosen lock. */
static int managed_acquire(pthread_mutex_t *m, int kind, int op, clockid_t clock, const struct timespec *abs,
			   void *site)
{
	int type = kind & KIND_TYPE_MASK;
	bool track = type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK ||
		     mode == MODE_OPS || shim_stat_on;
	pid_t tid = track ? self_tid() : 0;
	struct shim_stat *e = shim_stat_on ? stat_mutex(m, kind, site) : NULL;

	if (type == PTHREAD_MUTEX_RECURSIVE && owner_of(m) == tid) {
		/* the holder is the only writer of __count */
		if (m->__data.__count + 1 == 0)
			return EAGAIN;
		m->__data.__count++;
		if (e)
			shim_stat_recursive(e);
		return 0;
	}
	if (type == PTHREAD_MUTEX_ERRORCHECK && owner_of(m) == tid) {
		if (op == OP_TRYLOCK) {
			if (e)
				shim_stat_trylock_busy(e);
			return EBUSY;
		}
		if (e)
			shim_stat_misuse(e, SHIM_MISUSE_relock);
		return EDEADLK;
	}

	int r = 0;
	bool contended = false;
	uint64_t t0 = 0;

	if (op == OP_LOCK && !e) {
		prim_lock(m);
	} else if (prim_trylock(m) != 0) {
		if (op == OP_TRYLOCK) {
			if (e)
				shim_stat_trylock_busy(e);
			return EBUSY;
		}
		contended = true;
		if (e)
			t0 = shim_now_ns();
		if (op == OP_LOCK) {
			prim_lock(m);
		} else if (abs->tv_sec < 0) {
			r = ETIMEDOUT;		/* glibc: checked before tv_nsec, and only when it must wait */
		} else if (abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L) {
			r = EINVAL;
		} else {
			r = prim_timedlock(m, clock, abs);
		}
	}
	if (e) {
		uint64_t dt = contended ? shim_now_ns() - t0 : 0;
		if (!r)
			shim_stat_acquired(e, contended, dt);
		else if (r == ETIMEDOUT)
			shim_stat_timedout(e, dt);
	}
	if (r)
		return r;
	if (track)
		set_owner(m, tid);
	if (mode == MODE_OPS)
		/* relaxed (both): the holder's own record, read back by the holder at release */
		__atomic_store_n(&m->__data.__nusers, atomic_load_explicit(&fork_gen, memory_order_relaxed),
				 __ATOMIC_RELAXED);
	if (type == PTHREAD_MUTEX_RECURSIVE)
		m->__data.__count = 1;
	return 0;
}

/*
 * Released in a forked child, acquired before the fork (FORK in the header comment): give the mutex
 * fresh, unlocked lock state instead of unlocking state that may name waiters of the parent.
 */
static __attribute__((noinline, cold)) void release_after_fork(pthread_mutex_t *m)
{
	if (ops_inline) {
		memset(&m->__data.__lock, 0, sizeof(m->__data.__lock));
		if (ops->init)
			ops->init(&m->__data.__lock);
	} else {
		void *b = slab_alloc(&ool_slab);
		ool_tail(b)->owner = m;
		if (ops->init)
			ops->init(b);
		/* release: publishes the initialised block, as in ool_attach() */
		__atomic_store_n(ool_slot(m), b, __ATOMIC_RELEASE);
	}
	/* relaxed: as in managed_acquire() */
	__atomic_store_n(&m->__data.__nusers, atomic_load_explicit(&fork_gen, memory_order_relaxed),
			 __ATOMIC_RELAXED);
}

static inline int prim_release(pthread_mutex_t *m)
{
	/* relaxed (both): the holder reads back its own record */
	if (mode == MODE_OPS && unlikely(__atomic_load_n(&m->__data.__nusers, __ATOMIC_RELAXED) !=
					 atomic_load_explicit(&fork_gen, memory_order_relaxed))) {
		release_after_fork(m);
		return 0;
	}
	return prim_unlock(m);
}

static int managed_release(pthread_mutex_t *m, int kind)
{
	int type = kind & KIND_TYPE_MASK;
	struct shim_stat *e = shim_stat_on ? stat_mutex(m, kind, NULL) : NULL;

	if (type == PTHREAD_MUTEX_RECURSIVE || type == PTHREAD_MUTEX_ERRORCHECK) {
		pid_t o = owner_of(m);
		if (o != self_tid()) {
			if (e)
				shim_stat_misuse(e, o ? SHIM_MISUSE_unlock_not_owner : SHIM_MISUSE_unlock_unlocked);
			return EPERM;
		}
		if (type == PTHREAD_MUTEX_RECURSIVE && --m->__data.__count != 0)
			return 0;
		set_owner(m, 0);
		if (e)
			shim_stat_released(e);
		prim_release(m);
		return 0;
	}
	/* normal and adaptive: glibc returns 0 whatever the state; count what we can see */
	if (mode == MODE_OPS || e) {
		pid_t o = owner_of(m);
		if (o == 0) {
			/* not held: a registry lock must not see the unlock (its adapter aborts on it) */
			if (e)
				shim_stat_misuse(e, SHIM_MISUSE_unlock_unlocked);
			return 0;
		}
		if (o != self_tid() && e)
			shim_stat_misuse(e, SHIM_MISUSE_unlock_not_owner);
		set_owner(m, 0);
	}
	if (e)
		shim_stat_released(e);
	prim_release(m);
	return 0;
}

static int destroyed(pthread_mutex_t *m, int kind)
{
	if (shim_stat_on)
		shim_stat_misuse(stat_mutex(m, kind, NULL), SHIM_MISUSE_use_after_destroy);
	return EINVAL;
}

static __attribute__((noinline)) int mutex_lock_slow(pthread_mutex_t *m, int op, clockid_t clock,
						     const struct timespec *abs, void *site)
{
	int saved = errno, r;

	ensure_init();
	int kind = kind_of(m);
	if (kind == KIND_DESTROYED)
		r = destroyed(m, kind);
	else if (glibc_owns(kind))
		r = glibc_acquire(m, kind, op, clock, abs, site);
	else
		r = managed_acquire(m, kind, op, clock, abs, site);
	errno = saved;
	return r;
}

static __attribute__((noinline)) int mutex_unlock_slow(pthread_mutex_t *m)
{
	int saved = errno, r;

	ensure_init();
	int kind = kind_of(m);
	if (kind == KIND_DESTROYED)
		r = destroyed(m, kind);
	else if (glibc_owns(kind))
		r = glibc_release(m, kind);
	else
		r = managed_release(m, kind);
	errno = saved;
	return r;
}

/* pthread_mutex_lock's body, shared with the condvar's relock. */
static __attribute__((always_inline)) inline int mutex_lock_any(pthread_mutex_t *m, void *site)
{
	/* relaxed (both): see kind_of(); shim_slow only selects a path, see shim_init() */
	int kind = kind_of(m);
	int slow = atomic_load_explicit(&shim_slow, memory_order_relaxed);

	if (likely((kind | slow) == 0)) {
		if (likely(lk_mutex_trylock(lkm(m)) == 0))
			return 0;
		lk_lock_contended(lkm(m));
		return 0;
	}
	if (slow == SLOW_GLIBC)
		return real.mutex_lock(m);
	return mutex_lock_slow(m, OP_LOCK, CLOCK_REALTIME, NULL, site);
}

/* pthread_mutex_unlock's body, shared with the condvar. */
static __attribute__((always_inline)) inline int mutex_unlock_any(pthread_mutex_t *m)
{
	/* relaxed (both): as in mutex_lock_any() */
	int kind = kind_of(m);
	int slow = atomic_load_explicit(&shim_slow, memory_order_relaxed);

	if (likely((kind | slow) == 0)) {
		lk_mutex_unlock(lkm(m));	/* EPERM (double unlock): glibc returns 0 for this type */
		return 0;
	}
	if (slow == SLOW_GLIBC)
		return real.mutex_unlock(m);
	return mutex_unlock_slow(m);
}

static int shim_mutex_lock(pthread_mutex_t *m)
{
	return mutex_lock_any(m, SITE());
}

static int shim_mutex_unlock(pthread_mutex_t *m)
{
	return mutex_unlock_any(m);
}

static int shim_mutex_trylock(pthread_mutex_t *m)
{
	/* relaxed (both): as in mutex_lock_any() */
	int kind = kind_of(m);
	int slow = atomic_load_explicit(&shim_slow, memory_order_relaxed);

	if (likely((kind | slow) == 0))
		return lk_mutex_trylock(lkm(m));
	if (slow == SLOW_GLIBC)
		return real.mutex_trylock(m);
	return mutex_lock_slow(m, OP_TRYLOCK, CLOCK_REALTIME, NULL, SITE());
}

static int shim_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abs)
{
	/* relaxed: as in mutex_lock_any() */
	if (atomic_load_explicit(&shim_slow, memory_order_relaxed) == SLOW_GLIBC)
		return real.mutex_timedlock(m, abs);
	return mutex_lock_slow(m, OP_TIMED, CLOCK_REALTIME, abs, SITE());
}

static int shim_mutex_clocklock(pthread_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	/* relaxed: as in mutex_lock_any() */
	if (atomic_load_explicit(&shim_slow, memory_order_relaxed) == SLOW_GLIBC)
		return real.mutex_clocklock(m, clock, abs);
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;		/* glibc checks the clock first, even for a free mutex */
	return mutex_lock_slow(m, OP_CLOCK, clock, abs, SITE());
}

static int shim_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *a)
{
	int type = PTHREAD_MUTEX_NORMAL, proto = PTHREAD_PRIO_NONE, robust = PTHREAD_MUTEX_STALLED;
	int pshared = PTHREAD_PROCESS_PRIVATE, r;
	void *site = SITE();

	ensure_init();
	if (a) {
		pthread_mutexattr_gettype(a, &type);
		pthread_mutexattr_getprotocol(a, &proto);
		pthread_mutexattr_getrobust(a, &robust);
		pthread_mutexattr_getpshared(a, &pshared);
	}
	if (mode == MODE_GLIBC || proto != PTHREAD_PRIO_NONE || robust != PTHREAD_MUTEX_STALLED ||
	    pshared != PTHREAD_PROCESS_PRIVATE) {
		r = real.mutex_init(m, a);
		if (!r && shim_stat_on)
			shim_stat_inited(m, SHIM_OBJ_MUTEX, kind_of(m), site);
		return r;
	}
	if (type < 0 || type > KIND_TYPE_MASK)
		return EINVAL;
	memset(m, 0, sizeof(*m));
	/* relaxed: initialisation; the program publishes the mutex to other threads */
	__atomic_store_n(&m->__data.__kind, type, __ATOMIC_RELAXED);
	if (shim_stat_on)
		shim_stat_inited(m, SHIM_OBJ_MUTEX, type, site);
	return 0;
}

static int shim_mutex_destroy(pthread_mutex_t *m)
{
	int saved = errno, r;

	ensure_init();
	int kind = kind_of(m);
	struct shim_stat *e = shim_stat_on ? stat_mutex(m, kind, NULL) : NULL;

	if (kind == KIND_DESTROYED && mode != MODE_GLIBC) {
		if (e)
			shim_stat_misuse(e, SHIM_MISUSE_use_after_destroy);
		return 0;		/* glibc: destroying a destroyed mutex returns 0 */
	}
	if (glibc_owns(kind)) {
		r = real.mutex_destroy(m);
	} else if (((kind & KIND_TYPE_MASK) != PTHREAD_MUTEX_NORMAL && owner_of(m) != 0) ||
		   __atomic_load_n(cond_users(m), __ATOMIC_RELAXED) != 0 || prim_busy(m)) {
		r = EBUSY;		/* held, waited on, or used by a condvar waiter */
	} else {
		if (mode == MODE_OPS && !ops_inline)
			ool_detach(m);
		else if (mode == MODE_OPS)
			ops_destroy(ops_state(m));
		/* relaxed: as glibc; using a destroyed mutex is undefined, but it gets EINVAL */
		__atomic_store_n(&m->__data.__kind, KIND_DESTROYED, __ATOMIC_RELAXED);
		r = 0;
	}
	if (e) {
		if (r == EBUSY)
			shim_stat_misuse(e, SHIM_MISUSE_destroy_locked);
		else if (r == 0)
			shim_stat_destroyed(e);
	}
	errno = saved;
	return r;
}

static int shim_mutex_consistent(pthread_mutex_t *m)
{
	ensure_init();
	int kind = kind_of(m);

	if (mode == MODE_GLIBC || (kind != KIND_DESTROYED && (kind & KIND_GLIBC_ONLY)))
		return real.mutex_consistent(m);
	return EINVAL;		/* ours are never robust; glibc returns EINVAL for a non-robust mutex */
}

/* ---- condition variables --------------------------------------------------------------------------- */

static inline _Atomic uint32_t *cond_seq(pthread_cond_t *c)
{
	return (_Atomic uint32_t *)(void *)c;
}

static inline _Atomic uint32_t *cond_waiters(pthread_cond_t *c)
{
	return (_Atomic uint32_t *)(void *)((char *)c + sizeof(uint32_t));
}

static inline unsigned cond_wrefs(pthread_cond_t *c)
{
	/* relaxed: written by init only (ours) or glibc's, whose bit 0 never changes after init */
	return __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED);
}

static inline bool cond_is_glibc(pthread_cond_t *c)
{
	return mode == MODE_GLIBC || (cond_wrefs(c) & WREFS_PSHARED);
}

/* Our condvar's clock for pthread_cond_timedwait. */
static inline clockid_t cond_clock(pthread_cond_t *c)
{
	return (cond_wrefs(c) & WREFS_MONOTONIC) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

static inline bool mutex_is_glibc(pthread_mutex_t *m)
{
	int kind = kind_of(m);

	return kind != KIND_DESTROYED && glibc_owns(kind);
}

/*
 * A waiter leaves (woken, timed out or cancelled). pass_on: it may have consumed a wakeup it will not
 * act on (cancelled), so wake one more waiter, if any, before leaving (a spurious wakeup for that one
 * is allowed). The decrement is our last access to *c: a destroyer waiting for the count to drain may
 * free it right after.
 */
static void cond_leave(pthread_cond_t *c, bool pass_on)
{
	/* relaxed: a heuristic count; the futex wake is harmless if it finds nobody */
	if (pass_on && (atomic_load_explicit(cond_waiters(c), memory_order_relaxed) & COND_WAITERS_MASK) > 1) {
		/* relaxed: the futex word's change is what the kernel compares; no data is published */
		atomic_fetch_add_explicit(cond_seq(c), 1, memory_order_relaxed);
		lk_futex_wake(cond_seq(c), 1);
	}
	/* release: our accesses to *c happen-before the destroyer's acquire load that sees the drop */
	uint32_t v = atomic_fetch_sub_explicit(cond_waiters(c), 1, memory_order_release);
	if (v == (COND_DESTROYING | 1))
		lk_futex_wake(cond_waiters(c), INT_MAX);
}

struct cond_wait_ctx {
	pthread_cond_t *c;
	pthread_mutex_t *m;
	void *site;
	bool counted;		/* m is ours: its condvar-user count includes us */
};

/* Cancellation cleanup, run before the application's own handlers: the mutex is held again. */
static void cond_wait_cancelled(void *arg)
{
	struct cond_wait_ctx *w = arg;

	cond_leave(w->c, true);
	mutex_lock_any(w->m, w->site);
	if (w->counted)
		cond_user(w->m, -1);
}

/* Sleep on seq while it is `seq0`: a cancellation point. 0 (woken, or spuriously), ETIMEDOUT. */
static int cond_sleep(struct cond_wait_ctx *w, uint32_t seq0, clockid_t clock, const struct timespec *abs)
{
	int r, oldtype;

	if (abs && abs->tv_sec < 0)
		return ETIMEDOUT;	/* the kernel rejects negative times; glibc times out */
	pthread_cleanup_push(cond_wait_cancelled, w);
	/* a pending cancellation acts here, with our cleanup registered */
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &oldtype);
	r = lk_futex_wait(cond_seq(w->c), seq0, abs, clock);
	pthread_setcanceltype(oldtype, NULL);
	pthread_cleanup_pop(0);
	return r == ETIMEDOUT ? ETIMEDOUT : 0;	/* EAGAIN: seq moved; EINTR: a spurious wakeup */
}

/* The shadow glibc mutex of a glibc condvar waited on with one of our mutexes (see the header). */
static pthread_mutex_t shadow[64] = {
#define S4 PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER
	S4, S4, S4, S4, S4, S4, S4, S4, S4, S4, S4, S4, S4, S4, S4, S4,
#undef S4
};

static pthread_mutex_t *shadow_of(const void *c)
{
	uint64_t h = (uint64_t)(uintptr_t)c * 0x9e3779b97f4a7c15ull;

	return &shadow[h >> 58];
}

struct shadow_ctx {
	pthread_mutex_t *g, *m;
	void *site;
};

static void shadow_cancelled(void *arg)
{
	struct shadow_ctx *s = arg;

	/* glibc's wait re-acquired G before unwinding: drop it, then take ours (order: ours -> G) */
	real.mutex_unlock(s->g);
	mutex_lock_any(s->m, s->site);
	cond_user(s->m, -1);
}

static int shadow_wait(pthread_cond_t *c, pthread_mutex_t *m, int which, clockid_t clock,
		       const struct timespec *abs, void *site)
{
	struct shadow_ctx s = { .g = shadow_of(c), .m = m, .site = site };
	int r;

	real.mutex_lock(s.g);
	cond_user(m, 1);
	r = mutex_unlock_any(m);
	if (r) {
		cond_user(m, -1);
		real.mutex_unlock(s.g);
		return r;
	}
	pthread_cleanup_push(shadow_cancelled, &s);
	if (which == OP_LOCK)
		r = real.cond_wait(c, s.g);
	else if (which == OP_TIMED)
		r = real.cond_timedwait(c, s.g, abs);
	else
		r = real.cond_clockwait(c, s.g, clock, abs);
	pthread_cleanup_pop(0);
	real.mutex_unlock(s.g);
	int lr = mutex_lock_any(m, site);
	cond_user(m, -1);
	return lr ? lr : r;
}

/*
 * glibc's condvar with glibc's mutex. With the profile on, glibc releases and re-acquires the mutex
 * inside its wait where we cannot see it: the mutex's hold time ends at the wait, and the relock is
 * counted as an uncontended acquisition (its wait, if any, is in the condvar's wait time).
 */
static int glibc_cond_wait(pthread_cond_t *c, pthread_mutex_t *m, int which, clockid_t clock,
			   const struct timespec *abs, void *site)
{
	struct shim_stat *e = NULL, *em = NULL;
	uint64_t t0 = 0;
	int r;

	if (shim_stat_on) {
		e = shim_stat_get(c, SHIM_OBJ_COND, (int)cond_wrefs(c), site, SHIM_SITE_FIRST_USE);
		em = owner_of(m) == self_tid() ? stat_mutex(m, kind_of(m), site) : NULL;
		if (em)
			shim_stat_released(em);
		t0 = shim_now_ns();
	}
	if (which == OP_LOCK)
		r = real.cond_wait(c, m);
	else if (which == OP_TIMED)
		r = real.cond_timedwait(c, m, abs);
	else
		r = real.cond_clockwait(c, m, clock, abs);
	if (e)
		shim_stat_cond_waited(e, shim_now_ns() - t0, r == ETIMEDOUT);
	if (em && (r == 0 || r == ETIMEDOUT || r == EOWNERDEAD))
		shim_stat_acquired(em, false, 0);
	return r;
}

/* which: OP_LOCK (wait), OP_TIMED (timedwait: the condvar's clock), OP_CLOCK (clockwait). */
static int cond_wait_common(pthread_cond_t *c, pthread_mutex_t *m, int which, clockid_t clock,
			    const struct timespec *abs, void *site)
{
	int saved = errno, r;

	ensure_init();
	if (which != OP_LOCK && (abs->tv_nsec < 0 || abs->tv_nsec >= 1000000000L))
		return EINVAL;			/* glibc checks it first, before touching the mutex */
	if (which == OP_CLOCK && clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC)
		return EINVAL;
	if (cond_is_glibc(c)) {
		if (mutex_is_glibc(m)) {
			r = glibc_cond_wait(c, m, which, clock, abs, site);
		} else {
			r = shadow_wait(c, m, which, clock, abs, site);
		}
		errno = saved;
		return r;
	}
	if (which == OP_TIMED)
		clock = cond_clock(c);

	struct shim_stat *e = shim_stat_on ? shim_stat_get(c, SHIM_OBJ_COND, (int)cond_wrefs(c), site,
							   SHIM_SITE_FIRST_USE) : NULL;
	struct cond_wait_ctx w = { .c = c, .m = m, .site = site, .counted = !mutex_is_glibc(m) };
	/* relaxed (both): we hold the mutex; its release in the unlock below orders them before any
	 * signaller that takes the mutex afterwards (see the header: no lost wakeup) */
	uint32_t seq0 = atomic_load_explicit(cond_seq(c), memory_order_relaxed);
	atomic_fetch_add_explicit(cond_waiters(c), 1, memory_order_relaxed);

	if (w.counted)
		cond_user(m, 1);
	r = mutex_unlock_any(m);
	if (r) {			/* EPERM: an errorcheck/recursive mutex the caller does not hold */
		if (w.counted)
			cond_user(m, -1);
		cond_leave(c, false);
		errno = saved;
		return r;
	}
	uint64_t t0 = e ? shim_now_ns() : 0;
	r = cond_sleep(&w, seq0, clock, which == OP_LOCK ? NULL : abs);
	cond_leave(c, false);
	if (e)
		shim_stat_cond_waited(e, shim_now_ns() - t0, r == ETIMEDOUT);
	int lr = mutex_lock_any(m, site);
	if (w.counted)
		cond_user(m, -1);
	errno = saved;
	return lr ? lr : r;		/* EOWNERDEAD etc. from a robust glibc mutex come first */
}

static int cond_wake(pthread_cond_t *c, bool all, void *site)
{
	ensure_init();
	if (cond_is_glibc(c)) {
		if (shim_stat_on)
			shim_stat_cond_signalled(shim_stat_get(c, SHIM_OBJ_COND, (int)cond_wrefs(c), site,
							       SHIM_SITE_FIRST_USE), all, true);
		if (mode == MODE_GLIBC)
			return all ? real.cond_broadcast(c) : real.cond_signal(c);
		pthread_mutex_t *g = shadow_of(c);
		real.mutex_lock(g);
		int r = all ? real.cond_broadcast(c) : real.cond_signal(c);
		real.mutex_unlock(g);
		return r;
	}
	/*
	 * relaxed: a waiter registered while holding the mutex; a signaller that took the mutex after
	 * that waiter released it sees the count through the mutex's acquire/release. One that does
	 * not hold the mutex may miss a waiter that is still registering, as with glibc (whose signal
	 * also reads its waiter count relaxed).
	 */
	uint32_t w = atomic_load_explicit(cond_waiters(c), memory_order_relaxed) & COND_WAITERS_MASK;

	if (shim_stat_on)
		shim_stat_cond_signalled(shim_stat_get(c, SHIM_OBJ_COND, (int)cond_wrefs(c), site,
						       SHIM_SITE_FIRST_USE), all, w != 0);
	if (!w)
		return 0;
	int saved = errno;
	/* relaxed: the kernel compares the futex word; the mutex orders the predicate */
	atomic_fetch_add_explicit(cond_seq(c), 1, memory_order_relaxed);
	lk_futex_wake(cond_seq(c), all ? INT_MAX : 1);
	errno = saved;
	return 0;
}

static int shim_cond_init(pthread_cond_t *c, const pthread_condattr_t *a)
{
	int pshared = PTHREAD_PROCESS_PRIVATE;
	clockid_t clock = CLOCK_REALTIME;

	ensure_init();
	if (a) {
		pthread_condattr_getpshared(a, &pshared);
		pthread_condattr_getclock(a, &clock);
	}
	if (mode == MODE_GLIBC || pshared != PTHREAD_PROCESS_PRIVATE) {
		int r = real.cond_init(c, a);
		if (!r && shim_stat_on)
			shim_stat_inited(c, SHIM_OBJ_COND, (int)cond_wrefs(c), SITE());
		return r;
	}
	memset(c, 0, sizeof(*c));
	/* relaxed: initialisation; the program publishes the condvar */
	__atomic_store_n(&c->__data.__wrefs, clock == CLOCK_MONOTONIC ? WREFS_MONOTONIC : 0u, __ATOMIC_RELAXED);
	if (shim_stat_on)
		shim_stat_inited(c, SHIM_OBJ_COND, (int)cond_wrefs(c), SITE());
	return 0;
}

static int shim_cond_destroy(pthread_cond_t *c)
{
	ensure_init();
	if (cond_is_glibc(c))
		return real.cond_destroy(c);
	int saved = errno;
	/* acquire: pairs with the release decrement in cond_leave(), as below */
	uint32_t v = atomic_fetch_or_explicit(cond_waiters(c), COND_DESTROYING, memory_order_acquire);

	/* as glibc: wait for woken waiters to leave wait (destroy right after broadcast is allowed) */
	v |= COND_DESTROYING;
	while (v & COND_WAITERS_MASK) {
		lk_futex_wait(cond_waiters(c), v, NULL, CLOCK_MONOTONIC);
		/* acquire: pairs with the release decrement in cond_leave(): their accesses are over */
		v = atomic_load_explicit(cond_waiters(c), memory_order_acquire);
	}
	/* relaxed: nobody uses it any more; cleared so that a reinitialisation is not needed */
	atomic_store_explicit(cond_waiters(c), 0, memory_order_relaxed);
	errno = saved;
	return 0;
}

static int shim_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	return cond_wait_common(c, m, OP_LOCK, CLOCK_REALTIME, NULL, SITE());
}

static int shim_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
	return cond_wait_common(c, m, OP_TIMED, CLOCK_REALTIME, abs, SITE());
}

static int shim_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t clock, const struct timespec *abs)
{
	return cond_wait_common(c, m, OP_CLOCK, clock, abs, SITE());
}

static int shim_cond_signal(pthread_cond_t *c)
{
	return cond_wake(c, false, SITE());
}

static int shim_cond_broadcast(pthread_cond_t *c)
{
	return cond_wake(c, true, SITE());
}

/* ---- the old condvar ABI (x86_64 pthread_cond_*@GLIBC_2.2.5) --------------------------------------- */

#if defined(__x86_64__)
static pthread_cond_t *old_cond(cond_2_0_t *c)
{
	/* acquire: pairs with the release CAS below (a zeroed condvar is a valid one) */
	pthread_cond_t *p = __atomic_load_n(&c->cond, __ATOMIC_ACQUIRE);

	if (likely(p))
		return p;
	pthread_cond_t *n = slab_alloc(&cond_slab);
	/* release: publishes the zeroed block; acquire on failure: we use the winner's */
	if (__atomic_compare_exchange_n(&c->cond, &p, n, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return n;
	slab_free(&cond_slab, n);
	return p;
}

static int old_cond_init(cond_2_0_t *c, const pthread_condattr_t *a)
{
	int pshared = PTHREAD_PROCESS_PRIVATE;

	ensure_init();
	if (mode == MODE_GLIBC)
		return real.old_cond_init(c, a);
	if (a)
		pthread_condattr_getpshared(a, &pshared);
	if (pshared != PTHREAD_PROCESS_PRIVATE)
		return EINVAL;		/* as glibc's compat init: the old ABI has no room for it */
	c->cond = NULL;
	return 0;
}

static int old_cond_destroy(cond_2_0_t *c)
{
	ensure_init();
	if (mode == MODE_GLIBC)
		return real.old_cond_destroy(c);
	/* acquire: as old_cond() */
	pthread_cond_t *p = __atomic_load_n(&c->cond, __ATOMIC_ACQUIRE);
	if (p) {
		shim_cond_destroy(p);
		c->cond = NULL;
		slab_free(&cond_slab, p);
	}
	return 0;
}

static int old_cond_wait(cond_2_0_t *c, pthread_mutex_t *m)
{
	ensure_init();
	if (mode == MODE_GLIBC)
		return real.old_cond_wait(c, m);
	return cond_wait_common(old_cond(c), m, OP_LOCK, CLOCK_REALTIME, NULL, SITE());
}

static int old_cond_timedwait(cond_2_0_t *c, pthread_mutex_t *m, const struct timespec *abs)
{
	ensure_init();
	if (mode == MODE_GLIBC)
		return real.old_cond_timedwait(c, m, abs);
	return cond_wait_common(old_cond(c), m, OP_TIMED, CLOCK_REALTIME, abs, SITE());
}

static int old_cond_signal(cond_2_0_t *c)
{
	ensure_init();
	if (mode == MODE_GLIBC)
		return real.old_cond_signal(c);
	return cond_wake(old_cond(c), false, SITE());
}

static int old_cond_broadcast(cond_2_0_t *c)
{
	ensure_init();
	if (mode == MODE_GLIBC)
		return real.old_cond_broadcast(c);
	return cond_wake(old_cond(c), true, SITE());
}
#endif

/* ---- fork ------------------------------------------------------------------------------------------ */

static void atfork_prepare(void)
{
#if LAB_HAVE_ABSL
	/* finishes absl's lazy globals (absl_mode.cc); not on a thread a signal handler interrupted
	 * inside absl's lock, whose measurement may be the one we would wait for */
	if (absl_on && !in_blocking_lock)
		shim_absl_prefork();
#endif
	/* the slabs are not locked around fork(): slab_lock() says why */
}

static void atfork_parent(void)
{
}

static void atfork_child(void)
{
	tid_cache = 0;
	/* relaxed: the child's only thread */
	atomic_fetch_add_explicit(&fork_gen, 1, memory_order_relaxed);
	if (shim_stat_on)
		shim_stat_fork_child();
}

/* ---- introspection (exported as LOCKLAB_PRELOAD_0) ------------------------------------------------- */

__attribute__((visibility("default"))) const char *locklab_preload_lock(void)
{
	ensure_init();
	return lock_name;
}

__attribute__((visibility("default"))) int locklab_preload_stat(void)
{
	ensure_init();
	return shim_stat_on;
}

/* ---- the exported symbols, with glibc's versions ---------------------------------------------------- */

/* name@version (a compatibility version) or name@@version (the default): an alias of impl. */
#define EXPORT_AS(impl, al, name, ver)									\
	extern __typeof(impl) al __attribute__((alias(#impl), visibility("default")));			\
	__asm__(".symver " #al ", " name ver)

#if defined(__x86_64__)
EXPORT_AS(shim_mutex_init, x_mutex_init, "pthread_mutex_init", "@@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_init, x___mutex_init, "__pthread_mutex_init", "@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_destroy, x_mutex_destroy, "pthread_mutex_destroy", "@@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_destroy, x___mutex_destroy, "__pthread_mutex_destroy", "@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_lock, x_mutex_lock, "pthread_mutex_lock", "@@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_lock, x___mutex_lock, "__pthread_mutex_lock", "@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_trylock, x_mutex_trylock, "pthread_mutex_trylock", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_trylock, x_mutex_trylock_225, "pthread_mutex_trylock", "@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_trylock, x___mutex_trylock, "__pthread_mutex_trylock", "@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_timedlock, x_mutex_timedlock, "pthread_mutex_timedlock", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_timedlock, x_mutex_timedlock_225, "pthread_mutex_timedlock", "@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_clocklock, x_mutex_clocklock, "pthread_mutex_clocklock", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_clocklock, x_mutex_clocklock_230, "pthread_mutex_clocklock", "@GLIBC_2.30");
EXPORT_AS(shim_mutex_unlock, x_mutex_unlock, "pthread_mutex_unlock", "@@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_unlock, x___mutex_unlock, "__pthread_mutex_unlock", "@GLIBC_2.2.5");
EXPORT_AS(shim_mutex_consistent, x_mutex_consistent, "pthread_mutex_consistent", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_consistent, x_mutex_consistent_212, "pthread_mutex_consistent", "@GLIBC_2.12");
EXPORT_AS(shim_mutex_consistent, x_mutex_consistent_np, "pthread_mutex_consistent_np", "@GLIBC_2.4");
EXPORT_AS(shim_cond_init, x_cond_init, "pthread_cond_init", "@@GLIBC_2.3.2");
EXPORT_AS(shim_cond_destroy, x_cond_destroy, "pthread_cond_destroy", "@@GLIBC_2.3.2");
EXPORT_AS(shim_cond_wait, x_cond_wait, "pthread_cond_wait", "@@GLIBC_2.3.2");
EXPORT_AS(shim_cond_timedwait, x_cond_timedwait, "pthread_cond_timedwait", "@@GLIBC_2.3.2");
EXPORT_AS(shim_cond_clockwait, x_cond_clockwait, "pthread_cond_clockwait", "@@GLIBC_2.34");
EXPORT_AS(shim_cond_clockwait, x_cond_clockwait_230, "pthread_cond_clockwait", "@GLIBC_2.30");
EXPORT_AS(shim_cond_signal, x_cond_signal, "pthread_cond_signal", "@@GLIBC_2.3.2");
EXPORT_AS(shim_cond_broadcast, x_cond_broadcast, "pthread_cond_broadcast", "@@GLIBC_2.3.2");
EXPORT_AS(old_cond_init, x_old_cond_init, "pthread_cond_init", "@GLIBC_2.2.5");
EXPORT_AS(old_cond_destroy, x_old_cond_destroy, "pthread_cond_destroy", "@GLIBC_2.2.5");
EXPORT_AS(old_cond_wait, x_old_cond_wait, "pthread_cond_wait", "@GLIBC_2.2.5");
EXPORT_AS(old_cond_timedwait, x_old_cond_timedwait, "pthread_cond_timedwait", "@GLIBC_2.2.5");
EXPORT_AS(old_cond_signal, x_old_cond_signal, "pthread_cond_signal", "@GLIBC_2.2.5");
EXPORT_AS(old_cond_broadcast, x_old_cond_broadcast, "pthread_cond_broadcast", "@GLIBC_2.2.5");
#elif defined(__aarch64__)
EXPORT_AS(shim_mutex_init, x_mutex_init, "pthread_mutex_init", "@@GLIBC_2.17");
EXPORT_AS(shim_mutex_init, x___mutex_init, "__pthread_mutex_init", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_destroy, x_mutex_destroy, "pthread_mutex_destroy", "@@GLIBC_2.17");
EXPORT_AS(shim_mutex_destroy, x___mutex_destroy, "__pthread_mutex_destroy", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_lock, x_mutex_lock, "pthread_mutex_lock", "@@GLIBC_2.17");
EXPORT_AS(shim_mutex_lock, x___mutex_lock, "__pthread_mutex_lock", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_trylock, x_mutex_trylock, "pthread_mutex_trylock", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_trylock, x_mutex_trylock_217, "pthread_mutex_trylock", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_trylock, x___mutex_trylock, "__pthread_mutex_trylock", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_timedlock, x_mutex_timedlock, "pthread_mutex_timedlock", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_timedlock, x_mutex_timedlock_217, "pthread_mutex_timedlock", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_clocklock, x_mutex_clocklock, "pthread_mutex_clocklock", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_clocklock, x_mutex_clocklock_230, "pthread_mutex_clocklock", "@GLIBC_2.30");
EXPORT_AS(shim_mutex_unlock, x_mutex_unlock, "pthread_mutex_unlock", "@@GLIBC_2.17");
EXPORT_AS(shim_mutex_unlock, x___mutex_unlock, "__pthread_mutex_unlock", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_consistent, x_mutex_consistent, "pthread_mutex_consistent", "@@GLIBC_2.34");
EXPORT_AS(shim_mutex_consistent, x_mutex_consistent_217, "pthread_mutex_consistent", "@GLIBC_2.17");
EXPORT_AS(shim_mutex_consistent, x_mutex_consistent_np, "pthread_mutex_consistent_np", "@GLIBC_2.17");
EXPORT_AS(shim_cond_init, x_cond_init, "pthread_cond_init", "@@GLIBC_2.17");
EXPORT_AS(shim_cond_destroy, x_cond_destroy, "pthread_cond_destroy", "@@GLIBC_2.17");
EXPORT_AS(shim_cond_wait, x_cond_wait, "pthread_cond_wait", "@@GLIBC_2.17");
EXPORT_AS(shim_cond_timedwait, x_cond_timedwait, "pthread_cond_timedwait", "@@GLIBC_2.17");
EXPORT_AS(shim_cond_clockwait, x_cond_clockwait, "pthread_cond_clockwait", "@@GLIBC_2.34");
EXPORT_AS(shim_cond_clockwait, x_cond_clockwait_230, "pthread_cond_clockwait", "@GLIBC_2.30");
EXPORT_AS(shim_cond_signal, x_cond_signal, "pthread_cond_signal", "@@GLIBC_2.17");
EXPORT_AS(shim_cond_broadcast, x_cond_broadcast, "pthread_cond_broadcast", "@@GLIBC_2.17");
#endif
