/* SPDX-License-Identifier: MIT */
/*
 * tests/preload_test.h - how a tests/test_preload_*.c program runs under liblocklab-preload.so.
 *
 * ctest starts the program without the shim. lkp_main() then re-executes the same program once per
 * lock the shim supports (asked from the shim itself: LOCKLAB_SHIM_LIST=1), with LD_PRELOAD and
 * LOCKLAB_LOCK set, and with LKP_NATIVE also once without the shim ("native": plain glibc), so that
 * every expectation a test states is also checked against glibc's own behaviour. Each child runs the
 * test body (lkp_main returns the lock's name there) and the parent exits 0 when every child passed,
 * 77 when every child skipped, 1 otherwise, naming the failing lock.
 *
 * The shim is $LOCKLAB_PRELOAD (set by preload/preload.cmake), else liblocklab-preload.so next to the
 * test; in a sanitizer build it is instrumented like the test. AddressSanitizer's runtime must be the
 * first object in the process (it checks): LD_PRELOAD="libasan.so shim". ThreadSanitizer is the
 * other way round: LD_PRELOAD names only the shim, so the program's pthread calls reach the shim
 * before TSan's interceptors, and TSan judges the shim's own atomics - the locks themselves, which is
 * the point (behind TSan's interceptors it would trust the pthread API instead, and its cond_wait
 * interceptor runs the real function with synchronization tracking off). The mutexes the shim passes
 * to glibc still meet TSan's interceptors: the shim finds them with dlsym(RTLD_NEXT). Under TSan the
 * "glibc" and "native" runs are left out: they exercise glibc through TSan's own interceptors, not the
 * shim (the normal and ASan builds run them), and TSan reports the tests' deliberate misuse there.
 *
 * LKP_LOCKS=a,b restricts the locks (debugging). Children get LKP_SPINS=1 when their lock spins
 * instead of sleeping: tests scale thread counts down for those on this 2-CPU machine.
 *
 * Under an emulator. A cross build's tests run under qemu-user (ctest prefixes them with
 * CMAKE_CROSSCOMPILING_EMULATOR), and qemu-user cannot exec a foreign binary by itself (only a
 * binfmt_misc registration, which CI machines may not have, would let the kernel run an arm64 ELF).
 * So LOCKLAB_TEST_EMULATOR, when set (preload/preload.cmake sets it to the cross build's emulator
 * command, e.g. "qemu-aarch64-static -cpu max -L /usr/aarch64-linux-gnu"), prefixes every child
 * this harness starts, and the child's LD_PRELOAD goes to the guest through qemu's -E: in the
 * emulator's own environment the host's loader would try to preload the arm64 shim into qemu itself
 * (when qemu is dynamically linked). Every other variable reaches the guest unchanged.
 */
#ifndef LOCKLAB_PRELOAD_TEST_H
#define LOCKLAB_PRELOAD_TEST_H

#define _GNU_SOURCE
#include <sched.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lktest.h"

extern char **environ;

#define LKP_NATIVE	0x1u	/* also run once without the shim (plain glibc) */

/* The lock the shim runs in this process, "native" for the LKP_NATIVE run, NULL otherwise. */
static inline const char *lkp_lock(void)
{
	const char *(*f)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "locklab_preload_lock");

	if (f)
		return f();
	return getenv("LKP_NATIVE") ? "native" : NULL;
}

/* Whether this child's lock spins (fewer threads on a 2-CPU machine). */
static inline bool lkp_spins(void)
{
	const char *s = getenv("LKP_SPINS");

	return s && *s == '1';
}

/* Whether this process may run on one CPU only (its affinity; `make test-pinned`). */
static inline bool lkp_one_cpu(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) == 1;
}

static inline bool lkp_is(const char *name)
{
	const char *l = lkp_lock();

	return l && strcmp(l, name) == 0;
}

static char lkp_shim_path[4096];
static char lkp_san_path[4096];

static int lkp_find_san(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (info->dlpi_name && (strstr(info->dlpi_name, "/libasan.so") || strstr(info->dlpi_name, "/libtsan.so"))) {
		snprintf(lkp_san_path, sizeof(lkp_san_path), "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* LD_PRELOAD value for a child: the sanitizer runtime (if any), then the shim. */
static inline const char *lkp_preload_value(void)
{
	static char v[8300];

	if (!v[0]) {
		const char *env = getenv("LOCKLAB_PRELOAD");
		if (env && *env) {
			snprintf(lkp_shim_path, sizeof(lkp_shim_path), "%s", env);
		} else {
			char self[4096];
			ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
			self[n > 0 ? n : 0] = 0;
			char *slash = strrchr(self, '/');
			if (slash)
				*slash = 0;
			snprintf(lkp_shim_path, sizeof(lkp_shim_path), "%.4000s/liblocklab-preload.so", self);
		}
		dl_iterate_phdr(lkp_find_san, NULL);
		if (strstr(lkp_san_path, "/libtsan.so"))
			lkp_san_path[0] = 0;	/* TSan: the shim first (see the header comment) */
		snprintf(v, sizeof(v), "%s%s%s", lkp_san_path, lkp_san_path[0] ? " " : "", lkp_shim_path);
	}
	return v;
}

#define LKP_EMU_MAX 32	/* words of LOCKLAB_TEST_EMULATOR, plus the -E options */

/*
 * The emulator prefix for a child (see "Under an emulator"): LOCKLAB_TEST_EMULATOR split at spaces
 * into argv, then "-E LD_PRELOAD=..." for each such entry of env (which are removed from env).
 * Returns the number of words (0: no emulator), or -1 when it does not fit.
 */
static inline int lkp_emulator(char **argv, char *buf, size_t buflen, char **env)
{
	const char *e = getenv("LOCKLAB_TEST_EMULATOR");
	int n = 0;

	if (!e || !*e)
		return 0;
	if (strlen(e) >= buflen)
		return -1;
	strcpy(buf, e);
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (n >= LKP_EMU_MAX - 4)
			return -1;
		argv[n++] = w;
	}
	size_t k = 0;
	for (size_t i = 0; env[i]; i++) {
		if (!strncmp(env[i], "LD_PRELOAD=", 11)) {
			if (n >= LKP_EMU_MAX - 2)
				return -1;
			argv[n++] = "-E";
			argv[n++] = env[i];
		} else {
			env[k++] = env[i];
		}
	}
	env[k] = NULL;
	return n;
}

/*
 * Runs argv with the environment minus the shim's and this harness's variables, plus `extra`
 * ("NAME=value" strings, NULL-terminated; may be NULL), under LOCKLAB_TEST_EMULATOR when that is set.
 * out/err: capture stdout/stderr (NUL-terminated, truncated to len) or NULL to share ours. Returns the
 * wait status, or -1 when it could not start.
 */
static inline int lkp_spawn(char *const argv[], const char *const extra[], char *out, size_t outlen, char *err,
			    size_t errlen)
{
	size_t n = 0, k = 0, ne = 0;
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, status = -1;
	pid_t pid;

	while (environ[n])
		n++;
	while (extra && extra[ne])
		ne++;
	char **env = calloc(n + ne + 1, sizeof(*env));
	if (!env)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "LD_PRELOAD=", 11) || !strncmp(environ[i], "LOCKLAB_LOCK=", 13) ||
		    !strncmp(environ[i], "LOCKLAB_STAT", 12) || !strncmp(environ[i], "LKP_NATIVE=", 11) ||
		    !strncmp(environ[i], "LKP_SPINS=", 10) || !strncmp(environ[i], "LOCKLAB_SHIM_LIST=", 18))
			continue;
		env[k++] = environ[i];
	}
	for (size_t i = 0; i < ne; i++)
		env[k++] = (char *)extra[i];
	env[k] = NULL;
	/* under an emulator: its words, -E LD_PRELOAD=..., then argv */
	char emu_buf[1024], **run_argv = (char **)argv;
	char *emu_argv[LKP_EMU_MAX + 64];
	int ne_emu = lkp_emulator(emu_argv, emu_buf, sizeof(emu_buf), env);
	if (ne_emu < 0) {
		fprintf(stderr, "LOCKLAB_TEST_EMULATOR: too long or too many words\n");
		free(env);
		return -1;
	}
	if (ne_emu > 0) {
		int a = ne_emu;
		for (int i = 0; argv[i]; i++) {
			if (a >= LKP_EMU_MAX + 63) {
				fprintf(stderr, "LOCKLAB_TEST_EMULATOR: too many arguments for the child\n");
				free(env);
				return -1;
			}
			emu_argv[a++] = argv[i];
		}
		emu_argv[a] = NULL;
		run_argv = emu_argv;
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (out && pipe(po) == 0) {
		posix_spawn_file_actions_adddup2(&fa, po[1], 1);
		posix_spawn_file_actions_addclose(&fa, po[0]);
	}
	if (err && pipe(pe) == 0) {
		posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
		posix_spawn_file_actions_addclose(&fa, pe[0]);
	}
	fflush(stdout);
	fflush(stderr);
	int rc = ne_emu > 0 ? posix_spawnp(&pid, run_argv[0], &fa, NULL, run_argv, env)
			    : posix_spawn(&pid, run_argv[0], &fa, NULL, run_argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (po[1] >= 0)
		close(po[1]);
	if (pe[1] >= 0)
		close(pe[1]);
	if (rc == 0) {
		/* drain both pipes at once (a child blocked on a full pipe would never exit) */
		size_t no = 0, nerr = 0;
		struct pollfd pf[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
		while (pf[0].fd >= 0 || pf[1].fd >= 0) {
			if (poll(pf, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				break;
			}
			for (int i = 0; i < 2; i++) {
				char tmp[4096];
				char *buf = i ? err : out;
				size_t *used = i ? &nerr : &no, len = i ? errlen : outlen;
				if (pf[i].fd < 0 || !pf[i].revents)
					continue;
				ssize_t r = read(pf[i].fd, tmp, sizeof(tmp));
				if (r <= 0) {
					pf[i].fd = -1;
				} else if (*used + 1 < len) {
					size_t c = (size_t)r < len - 1 - *used ? (size_t)r : len - 1 - *used;
					memcpy(buf + *used, tmp, c);
					*used += c;
				}
			}
		}
		if (out)
			out[no] = 0;
		if (err)
			err[nerr] = 0;
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	if (po[0] >= 0)
		close(po[0]);
	if (pe[0] >= 0)
		close(pe[0]);
	return rc == 0 ? status : -1;
}

/* This program under the shim with LOCKLAB_LOCK=lock (NULL: unset) plus `extra` variables. */
static inline int lkp_run_self(const char *lock, const char *const extra[], char *const args[], char *out,
			       size_t outlen, char *err, size_t errlen)
{
	char self[4096], pre[8400], lk[256];
	const char *env[40];
	char *argv[32];
	size_t e = 0, a = 0;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	self[n > 0 ? n : 0] = 0;
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", lkp_preload_value());
	env[e++] = pre;
	if (lock) {
		snprintf(lk, sizeof(lk), "LOCKLAB_LOCK=%.200s", lock);
		env[e++] = lk;
	}
	while (extra && *extra && e < 38)
		env[e++] = *extra++;
	env[e] = NULL;
	argv[a++] = self;
	while (args && *args && a < 30)
		argv[a++] = *args++;
	argv[a] = NULL;
	return lkp_spawn(argv, env, out, outlen, err, errlen);
}

struct lkp_lock_info {
	char name[64];
	bool spins;
};

/* The locks the shim supports in this build, from LOCKLAB_SHIM_LIST (and LKP_LOCKS). */
static inline int lkp_locks(struct lkp_lock_info *v, int max)
{
	static char out[65536];
	const char *const extra[] = { "LOCKLAB_SHIM_LIST=1", NULL };
	int st = lkp_run_self(NULL, extra, NULL, out, sizeof(out), NULL, 0);
	const char *only = getenv("LKP_LOCKS");
	int n = 0;

	if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || !strstr(out, "locklab-shim-locks/1"))
		return -1;
	for (char *line = strtok(out, "\n"); line && n < max; line = strtok(NULL, "\n")) {
		char *p = strstr(line, "\"name\": \"");
		if (!p || !strstr(line, "\"supported\": true"))
			continue;
		p += 9;
		size_t len = strcspn(p, "\"");
		if (len >= sizeof(v[n].name))
			continue;
		memcpy(v[n].name, p, len);
		v[n].name[len] = 0;
#if defined(LOCKLAB_SANITIZE_thread)
		if (strcmp(v[n].name, "glibc") == 0)
			continue;
#endif
		if (only && *only) {
			char list[1024];
			bool found = false;
			snprintf(list, sizeof(list), ",%s,", only);
			char want[80];
			snprintf(want, sizeof(want), ",%s,", v[n].name);
			found = strstr(list, want) != NULL;
			if (!found)
				continue;
		}
		v[n].spins = strstr(line, "\"spins\": true") != NULL;
		n++;
	}
	return n;
}

/*
 * Every test_preload_* main() starts with
 *	const char *lock = lkp_main(argc, argv, flags);
 * Under the shim (or in the native run) it returns the lock's name and the test body runs. Otherwise
 * it runs the per-lock children and does not return.
 */
static inline const char *lkp_main(int argc, char **argv, unsigned flags)
{
	const char *lock = lkp_lock();
	struct lkp_lock_info locks[64];
	int n, failed = 0, passed = 0, skipped = 0;
	char failures[2048] = "";

	if (lock)
		return lock;
	if (access(lkp_preload_value() + strlen(lkp_san_path) + (lkp_san_path[0] ? 1 : 0), R_OK) != 0) {
		printf("%s: skipped: the shim %s is not built\n", argv[0], lkp_shim_path);
		exit(77);
	}
#if defined(LOCKLAB_SANITIZE_thread)
	flags &= ~LKP_NATIVE;
#endif
	n = lkp_locks(locks, 63);
	if (n < 0 || (n == 0 && !(flags & LKP_NATIVE))) {
		fprintf(stderr, "%s: cannot get the shim's lock list (LOCKLAB_SHIM_LIST=1 under %s)\n", argv[0],
			lkp_preload_value());
		exit(1);
	}
	if (flags & LKP_NATIVE) {
		snprintf(locks[n].name, sizeof(locks[n].name), "native");
		locks[n++].spins = false;
	}
	for (int i = 0; i < n; i++) {
		int st;
		if (strcmp(locks[i].name, "native") == 0) {
			const char *const env[] = { "LKP_NATIVE=1", NULL };
			char self[4096];
			ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
			self[len > 0 ? len : 0] = 0;
			char *av[32] = { self };
			for (int a = 1; a < argc && a < 31; a++)
				av[a] = argv[a];
			st = lkp_spawn(av, env, NULL, 0, NULL, 0);
		} else if (locks[i].spins && lkp_one_cpu()) {
			/*
			 * `make test-pinned` (taskset to one CPU): a spinning lock there progresses only when
			 * the scheduler preempts a spinner - a FIFO one (ck_ticket) once per handover - so a
			 * child's 30 s watchdog measures the tick, not the lock (stop 24's fresh clone:
			 * ck_ticket in test_preload_fork). Spinning locks run in the unpinned pass.
			 */
			printf("%s [%s]: skipped (a spinning lock on one usable CPU)\n", argv[0], locks[i].name);
			fflush(stdout);
			skipped++;
			continue;
		} else {
			const char *env[] = { locks[i].spins ? "LKP_SPINS=1" : "LKP_SPINS=0", NULL };
			st = lkp_run_self(locks[i].name, env, argv + 1, NULL, 0, NULL, 0);
		}
		const char *what;
		if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
			passed++;
			what = "ok";
		} else if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 77) {
			skipped++;
			what = "skipped";
		} else {
			failed++;
			what = "FAILED";
			size_t l = strlen(failures);
			snprintf(failures + l, sizeof(failures) - l, " %.63s", locks[i].name);
		}
		if (st >= 0 && WIFSIGNALED(st))
			printf("%s [%s]: FAILED (killed by signal %d)\n", argv[0], locks[i].name, WTERMSIG(st));
		else
			printf("%s [%s]: %s\n", argv[0], locks[i].name, what);
		fflush(stdout);
	}
	if (failed) {
		fprintf(stderr, "%s: failed under:%s\n", argv[0], failures);
		exit(1);
	}
	exit(passed ? 0 : 77);
}

#endif /* LOCKLAB_PRELOAD_TEST_H */
