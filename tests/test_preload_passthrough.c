/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_passthrough.c - the mutexes liblocklab-preload.so leaves to glibc keep glibc's
 * behaviour, whichever lock the shim runs (and the same expectations hold in the native run):
 *
 *   robust     the owner thread exits holding it: the next lock returns EOWNERDEAD (and holds it),
 *              pthread_mutex_consistent() repairs it, it then works normally; a condvar wait whose
 *              relock finds the owner dead returns EOWNERDEAD from pthread_cond_wait
 *   PI         priority-inheritance: trylock EBUSY from another thread, errorcheck+PI relock EDEADLK
 *   pshared    a process-shared mutex and condvar in MAP_SHARED memory: parent and child (both under
 *              the shim) hand a token back and forth, each count exact
 *   ours       a mutex the shim implements is never robust: pthread_mutex_consistent() is EINVAL, and
 *              glibc's own pthread_mutex_getprioceiling() reads its kind and says EINVAL too
 *
 * The robust checks need the kernel's robust futex list, which marks a dead owner's mutex
 * (FUTEX_OWNER_DIED). qemu-user does not implement it (set_robust_list and get_robust_list are
 * ENOSYS: the list lives in guest memory and qemu cannot walk it when a thread dies), so under
 * `make check-arm64` glibc's own robust mutex cannot see its owner die and the next lock would sleep
 * forever, shim or no shim. Where get_robust_list() is ENOSYS the robust checks are skipped, saying
 * so; everything else still runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "preload_test.h"

#if defined(LOCKLAB_SANITIZE_thread)
/* This test misuses mutexes on purpose (and the native run's clocklock is not intercepted by this
 * TSan): its mutex-misuse reports are expected; data races are still reported. */
const char *__tsan_default_options(void)
{
	return "report_mutex_bugs=0:report_destroy_locked=0";
}
#endif

static void *lock_and_exit(void *arg)
{
	CHECK_EQ(pthread_mutex_lock(arg), 0);
	return NULL;		/* exits holding it */
}

static void init_robust(pthread_mutex_t *m)
{
	pthread_mutexattr_t a;

	pthread_mutexattr_init(&a);
	CHECK_EQ(pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST), 0);
	CHECK_EQ(pthread_mutex_init(m, &a), 0);
	pthread_mutexattr_destroy(&a);
}

static void check_robust(void)
{
	pthread_mutex_t m;
	pthread_t t;

	init_robust(&m);
	CHECK_EQ(pthread_create(&t, NULL, lock_and_exit, &m), 0);
	pthread_join(t, NULL);
	CHECK_EQ(pthread_mutex_lock(&m), EOWNERDEAD);
	CHECK_EQ(pthread_mutex_consistent(&m), 0);
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_mutex_lock(&m), 0);
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
}

struct rcond {
	pthread_mutex_t m;
	pthread_cond_t c;
	_Atomic int waiting;
};

static void *signal_and_die(void *arg)
{
	struct rcond *r = arg;

	while (!atomic_load(&r->waiting))
		sched_yield();
	CHECK_EQ(pthread_mutex_lock(&r->m), 0);	/* only possible once the waiter released it */
	pthread_cond_signal(&r->c);
	return NULL;				/* and die holding it */
}

static void check_robust_cond(void)
{
	struct rcond r = { .c = PTHREAD_COND_INITIALIZER };
	pthread_t t;

	init_robust(&r.m);
	CHECK_EQ(pthread_mutex_lock(&r.m), 0);
	CHECK_EQ(pthread_create(&t, NULL, signal_and_die, &r), 0);
	atomic_store(&r.waiting, 1);
	int rc;
	do
		rc = pthread_cond_wait(&r.c, &r.m);
	while (rc == 0);			/* a spurious wakeup: the signaller has not died yet */
	CHECK_EQ(rc, EOWNERDEAD);		/* the relock found its owner dead */
	CHECK_EQ(pthread_mutex_consistent(&r.m), 0);
	CHECK_EQ(pthread_mutex_unlock(&r.m), 0);
	pthread_join(t, NULL);
}

static void *try_other(void *arg)
{
	return (void *)(intptr_t)pthread_mutex_trylock(arg);
}

static void check_pi(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	pthread_t t;
	void *res;

	pthread_mutexattr_init(&a);
	CHECK_EQ(pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT), 0);
	CHECK_EQ(pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK), 0);
	int r = pthread_mutex_init(&m, &a);
	pthread_mutexattr_destroy(&a);
	if (r == ENOTSUP)
		return;
	CHECK_EQ(r, 0);
	CHECK_EQ(pthread_mutex_lock(&m), 0);
	CHECK_EQ(pthread_mutex_lock(&m), EDEADLK);
	CHECK_EQ(pthread_create(&t, NULL, try_other, &m), 0);
	pthread_join(t, &res);
	CHECK_EQ((intptr_t)res, EBUSY);
	CHECK_EQ(pthread_mutex_unlock(&m), 0);
	CHECK_EQ(pthread_mutex_unlock(&m), EPERM);
	CHECK_EQ(pthread_mutex_destroy(&m), 0);
}

struct shared {
	pthread_mutex_t m;
	pthread_cond_t c;
	int turn;		/* 0: parent's, 1: child's */
	int passes;
};

static void pass_token(struct shared *s, int me, int rounds)
{
	for (int i = 0; i < rounds; i++) {
		CHECK_EQ(pthread_mutex_lock(&s->m), 0);
		while (s->turn != me)
			CHECK_EQ(pthread_cond_wait(&s->c, &s->m), 0);
		s->passes++;
		s->turn = !me;
		pthread_cond_broadcast(&s->c);
		CHECK_EQ(pthread_mutex_unlock(&s->m), 0);
	}
}

static void check_pshared(int rounds)
{
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t a;
	pthread_condattr_t ca;

	CHECK(s != MAP_FAILED);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	CHECK_EQ(pthread_mutex_init(&s->m, &a), 0);
	pthread_mutexattr_destroy(&a);
	pthread_condattr_init(&ca);
	pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
	CHECK_EQ(pthread_cond_init(&s->c, &ca), 0);
	pthread_condattr_destroy(&ca);
	pid_t pid = fork();
	if (pid == 0) {
		pass_token(s, 1, rounds);
		_exit(lkt_failures ? 1 : 0);
	}
	CHECK(pid > 0);
	pass_token(s, 0, rounds);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(s->passes, 2 * rounds);
	munmap(s, sizeof(*s));
}

/* The kernel (or emulator) keeps robust futex lists: a dead owner's robust mutex is marked. */
static bool have_robust_list(void)
{
	void *head;
	size_t len;

	return syscall(SYS_get_robust_list, 0, &head, &len) == 0 || errno != ENOSYS;
}

int main(int argc, char **argv)
{
	const char *lock = lkp_main(argc, argv, LKP_NATIVE);
	int prio;

	lkt_watchdog(120);
	fprintf(stderr, "test_preload_passthrough: lock %s\n", lock);
	if (have_robust_list()) {
		check_robust();
		check_robust_cond();
	} else {
		fprintf(stderr, "test_preload_passthrough: robust: skipped: get_robust_list is ENOSYS (qemu-user "
			"keeps no robust futex list: a dead owner would never be seen)\n");
	}
	check_pi();
	check_pshared(lkt_sanitized() ? 200 : 2000);

	pthread_mutex_t ours = PTHREAD_MUTEX_INITIALIZER;
	CHECK_EQ(pthread_mutex_consistent(&ours), EINVAL);
	CHECK_EQ(pthread_mutex_getprioceiling(&ours, &prio), EINVAL);
	CHECK_EQ(pthread_mutex_lock(&ours), 0);
	CHECK_EQ(pthread_mutex_unlock(&ours), 0);
	return lkt_done("test_preload_passthrough");
}
