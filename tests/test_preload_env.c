/* SPDX-License-Identifier: MIT */
/*
 * tests/test_preload_env.c - liblocklab-preload.so's environment variables and their bad values.
 * This program starts itself under the shim with each setting ("child" mode prints which lock it
 * got, proving main ran) and checks:
 *
 *   LOCKLAB_LOCK unset / empty   lk_mutex (the default)
 *   LOCKLAB_LOCK=glibc|futex3    that lock
 *   LOCKLAB_LOCK=no_such_lock    exit status 2 before main runs, one line on stderr that names
 *                                LOCKLAB_LOCK, the bad value and the valid names
 *   LOCKLAB_LOCK=spin_mcs        a registry lock the shim cannot use: exit 2, one line saying why
 *   LOCKLAB_LOCK=glibc_normal    likewise (a glibc pthread mutex itself)
 *   LOCKLAB_STAT=2               exit 2, one line naming LOCKLAB_STAT
 *   LOCKLAB_SHIM_LIST=1          the supported locks as JSON on stdout, exit 0, main never runs
 *   LOCKLAB_MUTEX_SPIN_MAX_NS=x  (lk_mutex's policy knob) exit 2, naming the variable
 */
#define _GNU_SOURCE
#include <string.h>

#include "preload_test.h"

static char out[65536], err[65536];

static int run(const char *lock, const char *extra)
{
	const char *env[] = { extra, NULL };
	char *args[] = { "child", NULL };

	out[0] = err[0] = 0;
	return lkp_run_self(lock, extra ? env : NULL, args, out, sizeof(out), err, sizeof(err));
}

static int exit_code(int st)
{
	return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void expect_bad(const char *lock, const char *extra, const char *var, const char *mention)
{
	int st = run(lock, extra);

	CHECK_EQ(exit_code(st), 2);
	CHECK(strstr(out, "MAIN RAN") == NULL);		/* before main */
	CHECK(strstr(err, var) != NULL);
	CHECK(strstr(err, mention) != NULL);
	/* one line from the shim (a sanitizer runtime may add nothing; the lab adapter's own message
	 * for LOCKLAB_MUTEX_* is a second, explaining line) */
	CHECK(lines(err) >= 1 && lines(err) <= 2);
	if (lkt_failures)
		fprintf(stderr, "  with %s / %s: status %d, stderr: %s\n", lock ? lock : "-", extra ? extra : "-",
			exit_code(st), err);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		const char *l = lkp_lock();
		printf("MAIN RAN lock=%s\n", l ? l : "none");
		return 0;
	}
	if (lkp_lock())
		return 0;
	lkt_watchdog(60);
	if (access(lkp_preload_value() + strlen(lkp_san_path) + (lkp_san_path[0] ? 1 : 0), R_OK) != 0) {
		printf("test_preload_env: skipped: the shim %s is not built\n", lkp_shim_path);
		return 77;
	}

	CHECK_EQ(exit_code(run(NULL, NULL)), 0);
	CHECK(strstr(out, "MAIN RAN lock=lk_mutex\n") != NULL);
	CHECK_EQ(exit_code(run("", NULL)), 0);
	CHECK(strstr(out, "MAIN RAN lock=lk_mutex\n") != NULL);
	CHECK_EQ(exit_code(run("glibc", NULL)), 0);
	CHECK(strstr(out, "MAIN RAN lock=glibc\n") != NULL);
	CHECK_EQ(exit_code(run("futex3", NULL)), 0);
	CHECK(strstr(out, "MAIN RAN lock=futex3\n") != NULL);

	expect_bad("no_such_lock", NULL, "LOCKLAB_LOCK", "'no_such_lock'");
	CHECK(strstr(err, "lk_mutex") && strstr(err, "glibc") && strstr(err, "futex3") && strstr(err, "qspinlock"));
	expect_bad("spin_mcs", NULL, "LOCKLAB_LOCK", "per-thread");
	expect_bad("glibc_normal", NULL, "LOCKLAB_LOCK", "glibc pthread mutex");
	expect_bad(NULL, "LOCKLAB_STAT=2", "LOCKLAB_STAT", "'2'");
	expect_bad(NULL, "LOCKLAB_MUTEX_SPIN_MAX_NS=lots", "LOCKLAB_MUTEX_SPIN_MAX_NS", "lots");

	CHECK_EQ(exit_code(run(NULL, "LOCKLAB_SHIM_LIST=1")), 0);
	CHECK(strstr(out, "MAIN RAN") == NULL);
	CHECK(strstr(out, "\"schema\": \"locklab-shim-locks/1\"") != NULL);
	CHECK(strstr(out, "{\"name\": \"lk_mutex\", \"family\": \"mutex\", \"supported\": true") != NULL);
	CHECK(strstr(out, "{\"name\": \"glibc\", \"family\": \"mutex\", \"supported\": true") != NULL);
	CHECK(strstr(out, "{\"name\": \"spin_mcs\", \"family\": \"spinlock\", \"supported\": false") != NULL);
	return lkt_done("test_preload_env");
}
