/* SPDX-License-Identifier: MIT */
/*
 * lab/main.c - locklab-bench, the contention lab's measuring driver.
 *
 *   locklab-bench list [--json]          the algorithm registry, with availability
 *   locklab-bench describe               every workload and its parameters, as JSON (the CLI's source)
 *   locklab-bench --version              version, git commit and build type (the commit stamped at
 *                                        build time; "unknown" when built outside a git checkout)
 *   locklab-bench WORKLOAD [--param value | --param=value]...
 *                                        one run; prints one JSON object (schema locklab-run/1)
 *
 * Parameters are validated against the workload's declared types and ranges before anything runs; bad
 * input prints one line naming the argument and what was expected and exits 2. A run's JSON goes to a
 * memory buffer first, so a run that fails prints nothing half-written to stdout.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lab.h"

/* CMakeLists.txt passes these to this file only, so a new commit rebuilds nothing else. */
#ifndef LOCKLAB_VERSION
#define LOCKLAB_VERSION "unknown"
#endif
#ifdef LOCKLAB_COMMIT_HEADER
#include "locklab_commit.h"	/* LOCKLAB_GIT_COMMIT at build time (cmake/gitcommit.cmake) */
#endif
#ifndef LOCKLAB_GIT_COMMIT
#define LOCKLAB_GIT_COMMIT "unknown"
#endif
#ifndef LOCKLAB_BUILD_TYPE
#define LOCKLAB_BUILD_TYPE "unknown"
#endif

#define LAB_WORKLOAD(sym) extern const struct lab_workload sym;
#include "workloads.def"
#undef LAB_WORKLOAD

static const struct lab_workload *const workloads[] = {
#define LAB_WORKLOAD(sym) &sym,
#include "workloads.def"
#undef LAB_WORKLOAD
	NULL,
};

static const char *ptype_name(enum lab_ptype t)
{
	switch (t) {
	case LAB_P_UINT: return "uint";
	case LAB_P_DOUBLE: return "double";
	case LAB_P_STR: return "str";
	case LAB_P_ALG: return "alg";
	}
	return "?";
}

static void usage(FILE *f)
{
	fprintf(f, "usage: locklab-bench list [--json]\n"
		   "       locklab-bench describe\n"
		   "       locklab-bench --version\n"
		   "       locklab-bench WORKLOAD [--param value]...   (locklab-bench WORKLOAD --help)\n"
		   "workloads:");
	for (int i = 0; workloads[i]; i++)
		fprintf(f, " %s", workloads[i]->name);
	fputc('\n', f);
}

/*
 * list, describe and --version take no argument but list's --json: one line naming the first
 * argument that does not belong, exit 2 (never silently ignored).
 */
static int extra_arg(const char *cmd, const char *arg, const char *known)
{
	if (arg[0] == '-' && known)
		fprintf(stderr, "locklab-bench: %s: unknown option for %s (known: %s)\n", arg, cmd, known);
	else if (arg[0] == '-')
		fprintf(stderr, "locklab-bench: %s: unknown option (%s takes none)\n", arg, cmd);
	else
		fprintf(stderr, "locklab-bench: %s: expected no arguments%s%s%s, got '%s'\n", cmd,
			known ? " (only " : "", known ? known : "", known ? ")" : "", arg);
	return 2;
}

static int cmd_list(int argc, char **argv)
{
	bool json = false;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && !json)
			json = true;
		else
			return extra_arg("list", argv[i], "--json");
	}
	if (json) {
		struct lab_json j;
		lj_init(&j, stdout);
		lj_obj_begin(&j, NULL);
		lj_str(&j, "schema", "locklab-list/1");
		lj_arr_begin(&j, "algorithms");
		for (size_t i = 0; i < lab_registry_len; i++) {
			const struct lab_alg *a = &lab_registry[i];
			lj_obj_begin(&j, NULL);
			lj_str(&j, "family", a->family);
			lj_str(&j, "name", a->name);
			lj_str(&j, "opstype", a->opstype);
			lj_str(&j, "desc", a->desc);
			lj_bool(&j, "available", a->missing == NULL);
			lj_str(&j, "missing", a->missing);
			lj_obj_end(&j);
		}
		lj_arr_end(&j);
		lj_obj_end(&j);
		putchar('\n');
		return 0;
	}
	printf("%-10s %-20s %-9s %s\n", "family", "name", "available", "description");
	for (size_t i = 0; i < lab_registry_len; i++) {
		const struct lab_alg *a = &lab_registry[i];
		printf("%-10s %-20s %-9s %s%s%s\n", a->family, a->name, a->missing ? "no" : "yes", a->desc,
		       a->missing ? " -- " : "", a->missing ? a->missing : "");
	}
	return 0;
}

static int cmd_describe(int argc, char **argv)
{
	struct lab_json j;

	if (argc > 2)
		return extra_arg("describe", argv[2], NULL);

	lj_init(&j, stdout);
	lj_obj_begin(&j, NULL);
	lj_str(&j, "schema", "locklab-describe/1");
	lj_arr_begin(&j, "workloads");
	for (int i = 0; workloads[i]; i++) {
		const struct lab_workload *w = workloads[i];
		lj_obj_begin(&j, NULL);
		lj_str(&j, "name", w->name);
		lj_str(&j, "help", w->help);
		lj_str(&j, "metric", w->metric);
		lj_bool(&j, "higher_is_better", w->higher_is_better);
		lj_arr_begin(&j, "params");
		for (const struct lab_param *p = w->params; p->name; p++) {
			lj_obj_begin(&j, NULL);
			lj_str(&j, "name", p->name);
			lj_str(&j, "type", ptype_name(p->type));
			lj_str(&j, "default", p->def);
			if (p->type == LAB_P_UINT || p->type == LAB_P_DOUBLE) {
				lj_dbl(&j, "min", p->min);
				lj_dbl(&j, "max", p->max);
			} else {
				lj_null(&j, "min");
				lj_null(&j, "max");
			}
			lj_str(&j, "choices", p->choices);
			lj_str(&j, "help", p->help);
			lj_bool(&j, "axis", p->axis);
			lj_obj_end(&j);
		}
		lj_arr_end(&j);
		lj_obj_end(&j);
	}
	lj_arr_end(&j);
	lj_obj_end(&j);
	putchar('\n');
	return 0;
}

static void workload_help(const struct lab_workload *w)
{
	printf("locklab-bench %s: %s\nprimary metric: %s (%s is better)\n", w->name, w->help, w->metric,
	       w->higher_is_better ? "higher" : "lower");
	for (const struct lab_param *p = w->params; p->name; p++) {
		printf("  --%-14s %-6s default %-10s %s", p->name, ptype_name(p->type), p->def ? p->def : "(required)",
		       p->help);
		if (p->type == LAB_P_UINT || p->type == LAB_P_DOUBLE)
			printf(" [%g, %g]", p->min, p->max);
		else if (p->choices)
			printf(" {%s}", p->choices);
		putchar('\n');
	}
}

static bool in_choices(const char *choices, const char *v)
{
	size_t n = strlen(v);

	for (const char *p = choices; p && *p;) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == n && strncmp(p, v, n) == 0)
			return true;
		p = end ? end + 1 : NULL;
	}
	return false;
}

/* Validates one value; returns 0 or 2 after printing the one-line error. */
static int validate(const struct lab_param *p, const char *v)
{
	char what[256];

	switch (p->type) {
	case LAB_P_UINT: {
		char *end;
		snprintf(what, sizeof(what), "an integer in [%.0f, %.0f]", p->min, p->max);
		if (!*v || *v == '-' || *v == '+' || *v == ' ')
			return lab_bad_arg(p->name, what, v);
		errno = 0;
		unsigned long long x = strtoull(v, &end, 10);
		if (errno || *end || (double)x < p->min || (double)x > p->max)
			return lab_bad_arg(p->name, what, v);
		return 0;
	}
	case LAB_P_DOUBLE: {
		char *end;
		snprintf(what, sizeof(what), "a number in [%g, %g]", p->min, p->max);
		errno = 0;
		double x = strtod(v, &end);
		if (!*v || errno || *end || !isfinite(x) || x < p->min || x > p->max)
			return lab_bad_arg(p->name, what, v);
		return 0;
	}
	case LAB_P_STR:
		if (p->choices && !in_choices(p->choices, v)) {
			snprintf(what, sizeof(what), "one of %s", p->choices);
			return lab_bad_arg(p->name, what, v);
		}
		return 0;
	case LAB_P_ALG: {
		const struct lab_alg *a = lab_find(p->choices, v);
		if (!a) {
			snprintf(what, sizeof(what), "an algorithm of family %s (see 'locklab-bench list')",
				 p->choices ? p->choices : "any");
			return lab_bad_arg(p->name, what, v);
		}
		if (a->missing) {
			fprintf(stderr, "locklab-bench: --%s: '%s' is not available in this build: %s\n", p->name, v,
				a->missing);
			return 2;
		}
		return 0;
	}
	}
	return 2;
}

static void emit_params(struct lab_json *j, const struct lab_run *r)
{
	lj_obj_begin(j, "params");
	for (int i = 0; r->wl->params[i].name; i++) {
		const struct lab_param *p = &r->wl->params[i];
		if (p->type == LAB_P_UINT)
			lj_u64(j, p->name, strtoull(r->values[i], NULL, 10));
		else if (p->type == LAB_P_DOUBLE)
			lj_dbl(j, p->name, strtod(r->values[i], NULL));
		else
			lj_str(j, p->name, r->values[i]);
	}
	lj_obj_end(j);
}

static void *nothing(void *arg)
{
	return arg;
}

/*
 * Makes the process multi-threaded for good before anything is timed. glibc (2.34 and later) skips
 * the atomic instructions of pthread_mutex_lock/unlock while the process has never had a second
 * thread (its SINGLE_THREAD_P path): 4 ns per lock+unlock instead of 14 on this lab's machine. A
 * single-threaded reference timing would then compare glibc's shortcut with everyone else's real
 * cost, which no program that needs a mutex ever sees.
 */
static int become_multithreaded(void)
{
	pthread_t t;
	int err = pthread_create(&t, NULL, nothing, NULL);

	if (err) {
		fprintf(stderr, "locklab-bench: could not start a thread: %s\n", strerror(err));
		return 1;
	}
	return pthread_join(t, NULL);
}

static int cmd_run(const struct lab_workload *w, int argc, char **argv)
{
	struct lab_run r = { .wl = w };
	int nparams = 0;

	while (w->params[nparams].name)
		nparams++;
	if (nparams > (int)(sizeof(r.values) / sizeof(r.values[0]))) {
		fprintf(stderr, "locklab-bench: internal error: workload %s has too many parameters\n", w->name);
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		char *arg = argv[i], *val = NULL;
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			workload_help(w);
			return 0;
		}
		if (strncmp(arg, "--", 2) != 0) {
			fprintf(stderr, "locklab-bench: %s: expected an option --name value, got '%s'\n", w->name, arg);
			return 2;
		}
		arg += 2;
		char *eq = strchr(arg, '=');
		if (eq) {
			*eq = 0;
			val = eq + 1;
		}
		int k = 0;
		for (; k < nparams && strcmp(w->params[k].name, arg) != 0; k++)
			;
		if (k == nparams) {
			char known[1024] = "";
			for (int q = 0; q < nparams; q++) {
				strncat(known, q ? ", --" : "--", sizeof(known) - strlen(known) - 1);
				strncat(known, w->params[q].name, sizeof(known) - strlen(known) - 1);
			}
			fprintf(stderr, "locklab-bench: --%s: unknown option for workload %s (known: %s)\n", arg,
				w->name, known);
			return 2;
		}
		if (!val) {
			if (i + 1 >= argc) {
				fprintf(stderr, "locklab-bench: --%s: expected a value after it\n", arg);
				return 2;
			}
			val = argv[++i];
		}
		if (validate(&w->params[k], val))
			return 2;
		r.values[k] = val;
	}
	for (int k = 0; k < nparams; k++) {
		if (!r.values[k]) {
			if (!w->params[k].def) {
				fprintf(stderr, "locklab-bench: --%s: expected a value (required for %s)\n",
					w->params[k].name, w->name);
				return 2;
			}
			r.values[k] = w->params[k].def;
			if (validate(&w->params[k], r.values[k]))
				return 2;
		}
	}

	if (become_multithreaded())
		return 1;

	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	struct lab_json j;
	const char *lock = NULL;

	for (int k = 0; k < nparams; k++)
		if (strcmp(w->params[k].name, "lock") == 0)
			lock = r.values[k];
	lj_init(&j, mem);
	lj_obj_begin(&j, NULL);
	lj_str(&j, "schema", LAB_SCHEMA_RUN);
	lj_str(&j, "workload", w->name);
	lj_str(&j, "lock", lock);
	emit_params(&j, &r);
	lab_emit_machine(&j);
	lj_obj_begin(&j, "driver");
	lj_str(&j, "version", LOCKLAB_VERSION);
	lj_str(&j, "commit", LOCKLAB_GIT_COMMIT);
	lj_str(&j, "build_type", LOCKLAB_BUILD_TYPE);
	lj_obj_end(&j);
	lj_obj_begin(&j, "result");
	int rc = w->run(&r, &j);
	lj_obj_end(&j);
	lj_obj_end(&j);
	fclose(mem);
	/* A run that failed its own check (e.g. mutual exclusion violated, exit 1) still prints its
	 * record: it is the evidence. Bad input (2) printed its one line and nothing else. */
	if (rc == 0 || rc == 1) {
		fwrite(buf, 1, len, stdout);
		putchar('\n');
	}
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		if (argc > 2)
			return extra_arg("--version", argv[2], NULL);
		printf("locklab-bench %s (git %s, %s)\n", LOCKLAB_VERSION, LOCKLAB_GIT_COMMIT,
		       LOCKLAB_BUILD_TYPE);
		return 0;
	}
	if (strcmp(argv[1], "list") == 0)
		return cmd_list(argc, argv);
	if (strcmp(argv[1], "describe") == 0)
		return cmd_describe(argc, argv);
	for (int i = 0; workloads[i]; i++)
		if (strcmp(workloads[i]->name, argv[1]) == 0) {
			const char *busy = getenv("LOCKLAB_BUSY_NS_PER_ITER");
			if (busy && *busy)
				(void)lab_busy_ns_per_iter();	/* a bad value stops every workload (exit 2) */
			return cmd_run(workloads[i], argc, argv);
		}
	fprintf(stderr, "locklab-bench: %s: expected a workload (", argv[1]);
	for (int i = 0; workloads[i]; i++)
		fprintf(stderr, "%s%s", i ? ", " : "", workloads[i]->name);
	fprintf(stderr, ") or list/describe\n");
	return 2;
}
