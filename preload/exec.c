/* SPDX-License-Identifier: MIT */
/*
 * preload/exec.c - locklab-exec: runs one command and measures it, for `locklab apps` (and later
 * `locklab advise`): the Python front end never times anything itself.
 *
 *	locklab-exec --record FILE [--stdin FILE] [--stdout FILE] [--timeout SECONDS] -- CMD [ARGS...]
 *	locklab-exec --machine
 *
 * The command runs in its own process group with the environment it was given (the caller sets
 * LD_PRELOAD, LOCKLAB_LOCK, ...), stdin/stdout optionally redirected from/to files, stderr shared.
 * When it has exited, one JSON object is written to FILE:
 *
 *	{"schema": "locklab-exec/1", "argv": [...], "status": 0, "exit_code": 0, "signal": null,
 *	 "timed_out": false, "wall_ns": ..., "user_ns": ..., "sys_ns": ..., "maxrss_kb": ...,
 *	 "minflt": ..., "majflt": ..., "nvcsw": ..., "nivcsw": ...}
 *
 * wall_ns: CLOCK_MONOTONIC from just before the spawn to the reaping of the command; user/sys and the
 * rest: wait4()'s rusage of the command and every descendant it waited for. status is the shell's:
 * the exit code, 128+N for a death by signal N, 127 when CMD was not found, 126 when it could not be
 * executed; locklab-exec exits with it. --timeout kills the whole process group (SIGKILL) when the
 * time is up: timed_out is then true. --machine prints the machine description the lab's run records
 * carry. Bad arguments: one line on stderr, exit 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lab.h"

extern char **environ;

static int usage(const char *what, const char *got)
{
	fprintf(stderr, "locklab-exec: %s, got '%s' (usage: locklab-exec --record FILE [--stdin FILE] "
			"[--stdout FILE] [--timeout SECONDS] -- CMD [ARGS...])\n", what, got);
	return 2;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

int main(int argc, char **argv)
{
	const char *record = NULL, *in = NULL, *out = NULL;
	double timeout = 0;
	int i;

	if (argc == 2 && strcmp(argv[1], "--machine") == 0) {
		struct lab_json j;
		lj_init(&j, stdout);
		lj_obj_begin(&j, NULL);
		lj_str(&j, "schema", "locklab-machine/1");
		lab_emit_machine(&j);
		lj_obj_end(&j);
		fputc('\n', stdout);
		return 0;
	}
	for (i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *opt = argv[i];
		if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0)
			return usage("expected a value after the option", opt);
		const char *val = argv[++i];
		if (strcmp(opt, "--record") == 0) {
			record = val;
		} else if (strcmp(opt, "--stdin") == 0) {
			in = val;
		} else if (strcmp(opt, "--stdout") == 0) {
			out = val;
		} else if (strcmp(opt, "--timeout") == 0) {
			char *end;
			timeout = strtod(val, &end);
			if (end == val || *end || !(timeout > 0) || timeout > 1e6)
				return usage("--timeout: expected a number of seconds in (0, 1e6]", val);
		} else {
			return usage("expected --record, --stdin, --stdout or --timeout", opt);
		}
	}
	if (!record)
		return usage("--record: required", "");
	if (i >= argc || i + 1 >= argc)
		return usage("expected -- CMD [ARGS...]", i < argc ? argv[i] : "");
	char **cmd = argv + i + 1;

	FILE *rec = fopen(record, "w");
	if (!rec) {
		fprintf(stderr, "locklab-exec: --record: cannot write '%s': %s\n", record, strerror(errno));
		return 2;
	}

	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t chld, old;
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	if (in)
		posix_spawn_file_actions_addopen(&fa, 0, in, O_RDONLY, 0);
	if (out)
		posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawnattr_setpgroup(&at, 0);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	posix_spawnattr_setsigmask(&at, &old);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);

	pid_t pid;
	int status = 0, code = -1, sig = -1, st = 0;
	bool timed_out = false;
	struct rusage ru;
	memset(&ru, 0, sizeof(ru));
	uint64_t t0 = mono_ns();
	int err = posix_spawnp(&pid, cmd[0], &fa, &at, cmd, environ);
	uint64_t t1 = t0;

	if (err) {
		fprintf(stderr, "locklab-exec: %s: %s\n", cmd[0], strerror(err));
		st = err == ENOENT ? 127 : 126;
	} else {
		uint64_t deadline = timeout > 0 ? t0 + (uint64_t)(timeout * 1e9) : 0;
		for (;;) {
			pid_t w = wait4(pid, &status, WNOHANG, &ru);
			if (w == pid)
				break;
			if (w < 0 && errno != EINTR) {
				fprintf(stderr, "locklab-exec: wait4: %s\n", strerror(errno));
				return 1;
			}
			if (deadline && mono_ns() >= deadline && !timed_out) {
				kill(-pid, SIGKILL);
				timed_out = true;
				continue;
			}
			struct timespec slice = { 0, 100000000 };
			if (deadline && !timed_out) {
				uint64_t left = deadline - mono_ns();
				if (left < 100000000ull)
					slice.tv_nsec = (long)left + 1;
			}
			/* sleeps until the command exits (SIGCHLD) or the slice ends */
			sigtimedwait(&chld, NULL, &slice);
		}
		t1 = mono_ns();
		if (WIFEXITED(status)) {
			code = WEXITSTATUS(status);
			st = code;
		} else if (WIFSIGNALED(status)) {
			sig = WTERMSIG(status);
			st = 128 + sig;
		}
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);

	struct lab_json j;
	lj_init(&j, rec);
	lj_obj_begin(&j, NULL);
	lj_str(&j, "schema", "locklab-exec/1");
	lj_arr_begin(&j, "argv");
	for (char **a = cmd; *a; a++)
		lj_str(&j, NULL, *a);
	lj_arr_end(&j);
	lj_i64(&j, "status", st);
	if (code >= 0)
		lj_i64(&j, "exit_code", code);
	else
		lj_null(&j, "exit_code");
	if (sig >= 0)
		lj_i64(&j, "signal", sig);
	else
		lj_null(&j, "signal");
	lj_bool(&j, "spawned", err == 0);
	lj_bool(&j, "timed_out", timed_out);
	lj_u64(&j, "wall_ns", t1 - t0);
	lj_u64(&j, "user_ns", tv_ns(ru.ru_utime));
	lj_u64(&j, "sys_ns", tv_ns(ru.ru_stime));
	lj_i64(&j, "maxrss_kb", ru.ru_maxrss);
	lj_i64(&j, "minflt", ru.ru_minflt);
	lj_i64(&j, "majflt", ru.ru_majflt);
	lj_i64(&j, "nvcsw", ru.ru_nvcsw);
	lj_i64(&j, "nivcsw", ru.ru_nivcsw);
	lj_obj_end(&j);
	fputc('\n', rec);
	if (fclose(rec) != 0) {
		fprintf(stderr, "locklab-exec: --record: cannot write '%s'\n", record);
		return 2;
	}
	return st;
}
