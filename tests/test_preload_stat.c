/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_stat.c - the lock profile (LOCKLAB_STAT=1) counts exactly what a deterministic
 * program does, and names the lines that did it.
 *
 * Under each lock of the shim (a spinning lock never sleeps, which the contended step needs to
 * observe: spinning locks run without that step), this program runs its own workload ("work" mode) with LOCKLAB_STAT=1 and
 * LOCKLAB_STAT_FILE in a temporary directory, then reads the JSON profile (one object per line) and
 * checks, per object found by the file:line of its call site:
 *
 *   A  static, 100 lock/unlock          first-use site; acquisitions 100, contended 0, holds 100
 *   B  pthread_mutex_init, 50 lock/unlock, then one lock while a helper holds it (the helper waits
 *      until the main thread is asleep in the lock, from /proc)    init site; acquisitions 52
 *      (the helper's 1), contended 1, a wait time > 0, hold max >= the 2 ms the helper held it
 *   E  errorcheck: unlock of an unlocked mutex (EPERM), relock (EDEADLK)     misuse 1 and 1
 *   N  normal: double unlock (returns 0)                            misuse unlock_unlocked 1
 *   D  destroyed while held (EBUSY), then unlocked and destroyed    misuse destroy_locked 1, destroys 1
 *   R  recursive, locked 3 deep                                     acquisitions 1, recursive 2
 *   C  pthread_cond_init, 3 signals and 1 broadcast with no waiter, 2 timed waits that time out
 *   and the totals: misuse sums, objects_dropped 0, the lock's name, root true.
 * The workload prints each call site's line ("SITE A 123"); the profile must report that line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
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

/* ---- the workload (runs with the profile on) ----------------------------------------------------- */

static pthread_mutex_t A = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t E = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
static pthread_mutex_t N = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t R = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static pthread_mutex_t B, D, W = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t C;
static _Atomic int announce;
static pid_t main_tid;

#define SITE(name, call) do { printf("SITE %s %d\n", name, __LINE__); call; } while (0)

static char proc_state(pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	char st = '?';

	if (f && fgets(buf, sizeof(buf), f)) {
		char *p = strrchr(buf, ')');
		if (p && p[1] == ' ')
			st = p[2];
	}
	if (f)
		fclose(f);
	return st;
}

static void *holder(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&B);
	atomic_store(&announce, 1);
	/* the main thread's next step is pthread_mutex_lock(&B): wait until it sleeps in it */
	while (atomic_load(&announce) != 2)
		sched_yield();
	while (proc_state(main_tid) != 'S')
		sched_yield();
	struct timespec d = { 0, 2 * 1000 * 1000 };
	nanosleep(&d, NULL);
	pthread_mutex_unlock(&B);
	return NULL;
}

static int workload(bool contend)
{
	pthread_t t;

	main_tid = (pid_t)syscall(SYS_gettid);
	for (int i = 0; i < 100; i++) {
		if (i == 0)
			SITE("A", pthread_mutex_lock(&A));
		else
			pthread_mutex_lock(&A);
		pthread_mutex_unlock(&A);
	}

	SITE("B", pthread_mutex_init(&B, NULL));
	for (int i = 0; i < 50; i++) {
		pthread_mutex_lock(&B);
		pthread_mutex_unlock(&B);
	}
	if (contend) {
		pthread_create(&t, NULL, holder, NULL);
		while (atomic_load(&announce) != 1)
			sched_yield();
		atomic_store(&announce, 2);
		pthread_mutex_lock(&B);		/* contended: the holder has it */
		pthread_mutex_unlock(&B);
		pthread_join(t, NULL);
	}

	SITE("E", pthread_mutex_lock(&E));
	pthread_mutex_unlock(&E);
	if (pthread_mutex_unlock(&E) != EPERM)
		return 1;
	pthread_mutex_lock(&E);
	if (pthread_mutex_lock(&E) != EDEADLK)
		return 1;
	pthread_mutex_unlock(&E);

	SITE("N", pthread_mutex_lock(&N));
	pthread_mutex_unlock(&N);
	if (pthread_mutex_unlock(&N) != 0)
		return 1;

	SITE("D", pthread_mutex_init(&D, NULL));
	pthread_mutex_lock(&D);
	if (pthread_mutex_destroy(&D) != EBUSY)
		return 1;
	pthread_mutex_unlock(&D);
	if (pthread_mutex_destroy(&D) != 0)
		return 1;

	SITE("R", pthread_mutex_lock(&R));
	pthread_mutex_lock(&R);
	pthread_mutex_lock(&R);
	for (int i = 0; i < 3; i++)
		pthread_mutex_unlock(&R);

	SITE("C", pthread_cond_init(&C, NULL));
	for (int i = 0; i < 3; i++)
		pthread_cond_signal(&C);
	pthread_cond_broadcast(&C);
	pthread_mutex_lock(&W);
	for (int i = 0; i < 2; i++) {
		struct timespec ts = lkt_deadline_in(CLOCK_REALTIME, 1000000);
		while (pthread_cond_timedwait(&C, &W, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&W);
	fflush(stdout);
	return 0;
}

/* ---- checking the profile --------------------------------------------------------------------- */

static char profile[1 << 20];

/* The object line (one JSON object per line) whose call site is `line` of this file. */
static const char *object_at(const char *section, int line)
{
	const char *p = strstr(profile, section);

	for (p = p ? strchr(p, '\n') : NULL; p && p[1] == '{'; p = strchr(p + 1, '\n')) {
		const char *site = strstr(p + 1, "\"site\": {");
		const char *eol = strchr(p + 1, '\n');
		if (!site || (eol && site > eol))
			continue;
		const char *file = strstr(site, "\"file\": ");
		const char *l = strstr(site, "\"line\": ");
		if (!l || (eol && l > eol) || !file || !strstr(file, "test_preload_stat.c"))
			continue;
		if (atoi(l + 8) == line)
			return p + 1;
	}
	return NULL;
}

/* The integer after "key": in the object line (or anywhere after `obj` when whole is set). */
static long long field_in(const char *obj, const char *key, bool whole)
{
	char k[96];
	snprintf(k, sizeof(k), "\"%s\": ", key);
	const char *eol = strchr(obj, '\n');
	const char *p = strstr(obj, k);

	if (!p || (!whole && eol && p > eol))
		return -1;
	return strtoll(p + strlen(k), NULL, 10);
}

static long long field(const char *obj, const char *key)
{
	return field_in(obj, key, false);
}

static int site_line(const char *out, const char *name)
{
	char k[32];
	snprintf(k, sizeof(k), "SITE %s ", name);
	const char *p = strstr(out, k);

	return p ? atoi(p + strlen(k)) : -1;
}

#define EXPECT(obj, key, want) do {								\
		long long _v = (obj) ? field((obj), (key)) : -2;				\
		if (_v != (want)) {								\
			fprintf(stderr, "%s:%d: profile[%s] %s == %lld, expected %lld\n", __FILE__,	\
				__LINE__, #obj, (key), _v, (long long)(want));			\
			lkt_failures++;								\
		}										\
	} while (0)

static void check_profile(const char *lock, bool contend)
{
	static char out[65536];
	char dir[] = "/tmp/locklab-stat-test-XXXXXX", file[4200], fenv[4300];

	CHECK(mkdtemp(dir) != NULL);
	snprintf(file, sizeof(file), "%s/p.json", dir);
	snprintf(fenv, sizeof(fenv), "LOCKLAB_STAT_FILE=%s", file);
	const char *env[] = { "LOCKLAB_STAT=1", fenv, NULL };
	char *args[] = { contend ? "work" : "work-uncontended", NULL };
	int st = lkp_run_self(lock, env, args, out, sizeof(out), NULL, 0);
	CHECK(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);

	FILE *f = fopen(file, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	size_t n = fread(profile, 1, sizeof(profile) - 1, f);
	profile[n] = 0;
	fclose(f);
	unlink(file);
	rmdir(dir);

	char want_lock[96];
	snprintf(want_lock, sizeof(want_lock), "\"lock\": \"%s\"", lock);
	CHECK(strstr(profile, "\"schema\": \"locklab-lockstat/1\"") != NULL);
	CHECK(strstr(profile, want_lock) != NULL);
	CHECK(strstr(profile, "\"root\": true") != NULL);
	CHECK_EQ(field_in(profile, "objects_dropped", true), 0);

	const char *a = object_at("\"mutexes\": [", site_line(out, "A"));
	CHECK(a && strstr(a, "\"how\": \"first-use\""));
	EXPECT(a, "acquisitions", 100);
	EXPECT(a, "contended", 0);
	EXPECT(a, "holds", 100);
	EXPECT(a, "wait_ns_total", 0);

	const char *b = object_at("\"mutexes\": [", site_line(out, "B"));
	CHECK(b && strstr(b, "\"how\": \"init\""));
	EXPECT(b, "inits", 1);
	EXPECT(b, "acquisitions", contend ? 52 : 50);
	EXPECT(b, "contended", contend ? 1 : 0);
	EXPECT(b, "holds", contend ? 52 : 50);
	CHECK(b && field(b, "hold_ns_p99") <= field(b, "hold_ns_max") && field(b, "hold_ns_p50") > 0);
	if (contend) {
		CHECK(b && field(b, "wait_ns_total") > 0 && field(b, "wait_ns_max") == field(b, "wait_ns_total"));
		CHECK(b && field(b, "hold_ns_max") >= 2000000);	/* the helper held it 2 ms after we slept */
	}

	const char *e = object_at("\"mutexes\": [", site_line(out, "E"));
	CHECK(e && strstr(e, "\"type\": \"errorcheck\""));
	EXPECT(e, "acquisitions", 2);
	EXPECT(e, "unlock_unlocked", 1);
	EXPECT(e, "relock", 1);
	EXPECT(e, "unlock_not_owner", 0);

	const char *nn = object_at("\"mutexes\": [", site_line(out, "N"));
	EXPECT(nn, "acquisitions", 1);
	EXPECT(nn, "unlock_unlocked", 1);

	const char *d = object_at("\"mutexes\": [", site_line(out, "D"));
	EXPECT(d, "acquisitions", 1);
	EXPECT(d, "destroy_locked", 1);
	EXPECT(d, "destroys", 1);

	const char *r = object_at("\"mutexes\": [", site_line(out, "R"));
	CHECK(r && strstr(r, "\"type\": \"recursive\""));
	EXPECT(r, "acquisitions", 1);
	EXPECT(r, "recursive", 2);
	EXPECT(r, "holds", 1);

	const char *c = object_at("\"condvars\": [", site_line(out, "C"));
	EXPECT(c, "inits", 1);
	EXPECT(c, "signals", 3);
	EXPECT(c, "broadcasts", 1);
	EXPECT(c, "waits", 2);
	EXPECT(c, "timeouts", 2);
	if (strcmp(lock, "glibc") != 0)		/* glibc's own condvar: the shim cannot see its waiters */
		EXPECT(c, "wakes_without_waiters", 4);

	const char *tot = strstr(profile, "\"totals\"");
	CHECK(tot != NULL);
	if (tot) {
		CHECK_EQ(field_in(tot, "unlock_unlocked", true), 2);
		CHECK_EQ(field_in(tot, "relock", true), 1);
		CHECK_EQ(field_in(tot, "destroy_locked", true), 1);
		CHECK_EQ(field_in(tot, "unlock_not_owner", true), 0);
	}
	if (lkt_failures)
		fprintf(stderr, "profile:\n%s\nworkload output:\n%s\n", profile, out);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strncmp(argv[1], "work", 4) == 0)
		return workload(strcmp(argv[1], "work") == 0);
	const char *lock = lkp_main(argc, argv, 0);

	lkt_watchdog(120);
	/* a spinning lock never sleeps, which the contended step waits for: it runs without that step */
	check_profile(lock, !lkp_spins());
	return lkt_done("test_preload_stat");
}
