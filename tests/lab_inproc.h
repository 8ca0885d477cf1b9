/* SPDX-License-Identifier: MIT */
/*
 * tests/lab_inproc.h - run a lab workload inside a test program, as locklab-bench does after it has
 * validated the arguments: every parameter at its default except those the test names. For tests
 * that look at a run's record (and its stderr) without starting the driver.
 */
#ifndef LOCKLAB_TESTS_LAB_INPROC_H
#define LOCKLAB_TESTS_LAB_INPROC_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lab.h"

/*
 * Runs wl with `set` (name, value pairs, NULL-terminated; the rest at their defaults). Returns the
 * workload's exit status (-1 when the capture could not be set up); *rec gets the result object as
 * text (malloc'd, or NULL). With err non-NULL, what the run wrote to stderr goes there instead
 * (NUL-terminated, truncated to errlen - 1 bytes).
 */
static inline int lab_run_inproc(const struct lab_workload *wl, const char *const *set, char **rec,
				 char *err, size_t errlen)
{
	struct lab_run r = { .wl = wl };
	size_t reclen = 0;
	struct lab_json j;
	FILE *mem, *errf = NULL;
	int saved = -1, rc;

	*rec = NULL;
	for (int i = 0; wl->params[i].name; i++) {
		r.values[i] = wl->params[i].def;
		for (int k = 0; set[k]; k += 2)
			if (strcmp(wl->params[i].name, set[k]) == 0)
				r.values[i] = set[k + 1];
	}
	mem = open_memstream(rec, &reclen);
	if (err && (!(errf = tmpfile()) || (saved = dup(2)) < 0)) {
		if (errf)
			fclose(errf);
		errf = NULL;
	}
	if (!mem || (err && !errf)) {
		perror("lab_run_inproc: setup");
		if (mem)
			fclose(mem);
		free(*rec);
		*rec = NULL;
		return -1;
	}
	if (errf) {
		fflush(stderr);
		dup2(fileno(errf), 2);
	}
	lj_init(&j, mem);
	lj_obj_begin(&j, NULL);
	rc = wl->run(&r, &j);
	lj_obj_end(&j);
	fclose(mem);
	if (errf) {
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		rewind(errf);
		size_t n = fread(err, 1, errlen - 1, errf);
		err[n] = 0;
		fclose(errf);
	}
	return rc;
}

#endif /* LOCKLAB_TESTS_LAB_INPROC_H */
